// The p2p transports' connection to the PeerServer: the PeerJS Peer's
// lifecycle, and reconnecting with the same id after the server went away.
// Open channels never need the server; only new connections do.

import { RECONNECT_DEFAULTS, backoffDelay } from './relay.js';

/** PeerServer reconnection: the relay transport's backoff (full jitter, 250 ms doubling to 10 s). */
export const SIGNALING_RECONNECT = RECONNECT_DEFAULTS;

/**
 * Where the PeerServer is (carlab serves it beside the relay).
 * @typedef {object} PeerServerOptions
 * @property {string} host
 * @property {number} port
 * @property {string} path
 * @property {string} key
 * @property {boolean} secure
 */

/**
 * A PeerJS error: `type` names it ('peer-unavailable', 'network', ...).
 * @typedef {{ type?: string, message?: string }} PeerErrorLike
 */

/**
 * @typedef {((event: 'open', listener: (id: string) => void) => unknown)
 *   & ((event: 'connection', listener: (conn: import('./p2p-link.js').DataConnectionLike) => void) => unknown)
 *   & ((event: 'disconnected', listener: () => void) => unknown)
 *   & ((event: 'error', listener: (err: PeerErrorLike) => void) => unknown)} PeerListen
 */

/**
 * The part of a PeerJS Peer the transport uses (import('peerjs').Peer has it; tests pass fakes).
 * @typedef {import('./p2p-mesh.js').Dialer & {
 *   disconnected: boolean,
 *   reconnect: () => void,
 *   destroy: () => void,
 *   on: PeerListen,
 *   once: PeerListen,
 * }} PeerLike
 */

/**
 * The PeerJS Peer class, or a fake of it.
 * @typedef {new (id: string, options: import('peerjs').PeerOptions) => PeerLike} PeerClass
 */

/**
 * The PeerServer connection's counters, shared with the transport's.
 * @typedef {object} SignalingCounters
 * @property {number} signalingLost times the PeerServer went away
 * @property {number} signalingAttempts reconnect() calls
 * @property {number} signalingReconnects re-opens with our id
 */

/**
 * What the signaling connection tells the transport once open.
 * @typedef {object} SignalingEvents
 * @property {(conn: import('./p2p-link.js').DataConnectionLike) => void} onConnection a neighbour dialled us
 * @property {(namedPeerId: string, type: string | undefined) => void} onPeerError an error that names a peer id
 * @property {(status: import('../../../core/client.js').ConnectionStatus) => void} onStatus for display
 */

/**
 * @typedef {object} SignalingOptions
 * @property {PeerClass} Peer
 * @property {PeerServerOptions} peerjs
 * @property {RTCIceServer[]} iceServers never PeerJS's public defaults
 * @property {SignalingCounters} counters
 * @property {() => number} now
 * @property {() => number} [random] [0, 1) for the backoff jitter, default Math.random
 */

/** The PeerJS Peer of one transport, from `open` to `close`. */
export class P2PSignaling {
  /** @param {SignalingOptions} options */
  constructor(options) {
    this.options = options;
    this.counters = options.counters;
    /** @type {PeerLike | null} */
    this.peer = null;
    this.closed = false;
    /** @type {import('./p2p-link.js').Timer | null} */
    this.timer = null;
    /** Reconnect attempts since the PeerServer was last there; 0 while it is. */
    this.attempt = 0;
    /** @type {SignalingEvents | null} */
    this.events = null;
  }

  /**
   * Creates the Peer under `peerId` and waits until the PeerServer has
   * registered it; rejects on a PeerJS error before that.
   * @param {string} peerId
   * @param {SignalingEvents} events
   * @returns {Promise<number>} ms from creating the Peer to its 'open'
   */
  async open(peerId, events) {
    const { Peer, peerjs, iceServers, now } = this.options;
    this.events = events;
    const t0 = now();
    const peer = new Peer(peerId, {
      host: peerjs.host,
      port: peerjs.port,
      path: peerjs.path,
      key: peerjs.key,
      secure: peerjs.secure,
      config: { iceServers },
      debug: 0,
    });
    this.peer = peer;
    await new Promise((resolve, reject) => {
      peer.once('open', resolve);
      peer.once('error', (err) => reject(new Error(`signaling: ${err?.type ?? err}`)));
    });
    const signalingMs = now() - t0;
    peer.on('connection', (conn) => events.onConnection(conn));
    peer.on('disconnected', () => this.lost());
    peer.on('open', () => this.reopened());
    peer.on('error', (err) => {
      // 'peer-unavailable' names the peer id in its message.
      const m = /peer (\S+)/.exec(String(err?.message ?? ''));
      if (m) events.onPeerError(m[1], err.type);
    });
    return signalingMs;
  }

  /**
   * The PeerServer connection dropped (PeerJS 'disconnected', also after each
   * failed reconnect): reconnect with the same id after a backoff with full
   * jitter.
   */
  lost() {
    const peer = this.peer;
    if (this.closed || !peer || peer.destroyed || this.timer !== null) return;
    if (this.attempt === 0) this.counters.signalingLost++;
    const delayMs = backoffDelay(this.attempt++, SIGNALING_RECONNECT, this.options.random);
    this.events?.onStatus({ state: 'reconnecting', part: 'signaling', attempt: this.attempt, delayMs });
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.closed || peer.destroyed || !peer.disconnected) return;
      this.counters.signalingAttempts++;
      try {
        peer.reconnect();
      } catch {
        this.lost();
      }
    }, delayMs);
  }

  /** PeerServer re-registered our id after a reconnect (a restarted one answers OPEN). */
  reopened() {
    if (this.attempt === 0) return;
    this.attempt = 0;
    this.counters.signalingReconnects++;
    this.events?.onStatus({ state: 'connected', part: 'signaling' });
  }

  /** Stops reconnecting and destroys the Peer (which closes its connections). */
  close() {
    this.closed = true;
    clearTimeout(this.timer ?? undefined);
    try { this.peer?.destroy(); } catch { /* gone */ }
  }
}
