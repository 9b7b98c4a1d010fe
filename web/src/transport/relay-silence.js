// A dead path seen from the phone. When its network vanishes, the WebSocket
// stays "open": nothing closes it, and the browser exposes no pings. But in
// modes relay and relay-faithful every UPDATE is answered (ACKED_ALL, or the
// neighbours' ACKs), so a connection that sent UPDATEs and heard nothing at
// all for silenceMs is taken for dead: the transport gives it up and rejoins
// at once, resuming its session (docs/protocol.md §8.10) before the relay's
// own liveness timeout (15 s) ends it. A loaded relay answers late but keeps
// talking (its neighbours' updates), so load alone does not trip this.

/** Default: well under the relay's 15 s liveness timeout, far over any answer time seen under load. */
export const SILENCE_DEFAULT_MS = 8000;

/**
 * Whether the connection's sends go unanswered.
 */
export class SilenceWatch {
  /** @param {number} silenceMs 0: never */
  constructor(silenceMs) {
    this.silenceMs = silenceMs;
    /** When the oldest send since the last frame heard went out; null: none is waiting. @type {number | null} */
    this.waitingSince = null;
  }

  /** We sent something that asks for an answer (an UPDATE). @param {number} now */
  sent(now) {
    if (this.waitingSince === null) this.waitingSince = now;
  }

  /** A frame came: the path works. */
  heard() {
    this.waitingSince = null;
  }

  /** Whether a send has waited more than silenceMs with nothing heard. @param {number} now */
  isDead(now) {
    return this.silenceMs > 0 && this.waitingSince !== null && now - this.waitingSince > this.silenceMs;
  }
}
