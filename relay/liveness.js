// Dead paths. A phone whose network vanished (out of Wi-Fi, a new address
// after a handover) sends nothing, and nothing tells the relay: TCP only
// notices when it has data to send, and gives up minutes later. Until then the
// old session holds the member's id, so the phone's own rejoin is refused
// (4007). The relay therefore pings every WebSocket that was quiet for a ping
// interval and ends one from which nothing — no frame, no pong — came for the
// liveness timeout (docs/protocol.md §8.7). Browsers answer pings in their
// network stack, without the page's script, so a page in the background
// stays alive. A busy phone (an UPDATE every cycle) is never pinged.

/** Defaults: a member gone silent is ended between 15 and 20 s after it was last heard. */
export const LIVENESS_DEFAULTS = Object.freeze({
  /** How often quiet sockets are pinged and silent ones looked for; 0: never. */
  pingIntervalMs: 5000,
  /** A socket not heard from for this long is ended; 0: never. */
  livenessTimeoutMs: 15000,
});

/**
 * What the monitor needs of a session's socket (a `ws` WebSocket).
 * @typedef {{ ping(): void, terminate(): void, on(event: 'pong', listener: () => void): unknown }} PingableSocket
 */

/**
 * One watched connection: the tick it was last heard at.
 * @typedef {{ heardTick: number }} Heard
 */

/**
 * Pings quiet sockets and ends silent ones. Time is counted in ticks of the
 * ping interval, so marking a socket heard costs one store, no clock read.
 * @template {Heard} S
 */
export class LivenessMonitor {
  /**
   * @param {{ pingIntervalMs: number, livenessTimeoutMs: number }} options
   * @param {(session: S) => void} onSilent called once for a session not heard from
   *   for livenessTimeoutMs; the caller ends it (its socket is terminated right after)
   */
  constructor(options, onSilent) {
    this.options = options;
    this.onSilent = onSilent;
    /** The ping interval's count since start. */
    this.tick = 0;
    /** Ticks without a word after which a session is silent. */
    this.silentAfterTicks = Math.max(1, Math.ceil(options.livenessTimeoutMs / Math.max(1, options.pingIntervalMs)));
    /** @type {Map<S, PingableSocket>} */
    this.watched = new Map();
    /** Sessions ended as silent since start (the relay counts its window's in its stats). */
    this.silentEnded = 0;
    const on = options.pingIntervalMs > 0 && options.livenessTimeoutMs > 0;
    this.timer = on ? setInterval(() => this.round(), options.pingIntervalMs) : null;
    this.timer?.unref();
  }

  /** Whether the monitor runs at all (both settings non-zero). */
  get active() { return this.timer !== null; }

  /**
   * Starts watching a session's socket; its pongs count as hearing from it.
   * @param {S} session @param {PingableSocket} socket
   */
  watch(session, socket) {
    session.heardTick = this.tick;
    if (!this.active) return;
    this.watched.set(session, socket);
    socket.on('pong', () => { session.heardTick = this.tick; });
  }

  /** The session said something (any frame, on its WebSocket or data channel). @param {S} session */
  heard(session) { session.heardTick = this.tick; }

  /** @param {S} session */
  forget(session) { this.watched.delete(session); }

  /** One interval: silent sessions ended, quiet ones pinged. */
  round() {
    this.tick++;
    for (const [session, socket] of this.watched) {
      const quiet = this.tick - session.heardTick;
      if (quiet > this.silentAfterTicks) {
        this.watched.delete(session);
        this.silentEnded++;
        this.onSilent(session);
        socket.terminate();
      } else if (quiet >= 2) {
        // Nothing during the whole last interval (quiet 1 means it was heard in it).
        try { socket.ping(); } catch { /* closing already: its close event ends it */ }
      }
    }
  }

  stop() {
    if (this.timer) clearInterval(this.timer);
    this.watched.clear();
  }
}
