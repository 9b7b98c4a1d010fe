// One neighbour of the p2p mesh: its PeerJS connection, carlab's channel on
// it, the setup timings, and the retry state the mesh keeps for it.

import { openCarlabChannel, readChannel, selectedPair, settledSetupStats, timeSetupPhases } from './p2p-channel.js';
import { IceRestart } from './p2p-ice-restart.js';

/** Longest time a connection may take to open before it is retried. */
export const SETUP_TIMEOUT_MS = 15000;

/**
 * The part of a PeerJS DataConnection the transport uses
 * (import('peerjs').DataConnection has it; tests pass fakes).
 * @typedef {object} DataConnectionLike
 * @property {string} peer the remote PeerJS id
 * @property {any} metadata what the dialler passed to `connect`; PeerJS types it `any`
 *   and it comes from the remote side, so it is checked where it is read
 * @property {RTCPeerConnection} peerConnection
 * @property {((event: 'error', listener: (err: { type?: string }) => void) => unknown)
 *   & ((event: 'close', listener: () => void) => unknown)} on
 * @property {() => void} close
 */

/**
 * Setup of one connection: who dialled, which attempt, the phase timings (ms
 * from connect), the channel's parameters read back, getStats' setup
 * figures, and the last error. Empty until the first connection.
 * @typedef {import('./p2p-channel.js').SetupPhases
 *   & Partial<import('./p2p-channel.js').ChannelParams>
 *   & Partial<Awaited<ReturnType<typeof import('./p2p-channel.js').setupStats>>>
 *   & { id?: number, initiator?: boolean, attempt?: number, channelOpenMs?: number, lastError?: string }} LinkSetup
 */

/**
 * What a link tells its owner; `mode` and `now` are the transport's.
 * @typedef {object} LinkEvents
 * @property {import('./p2p-channel.js').P2PMode} mode
 * @property {() => number} now
 * @property {(why: string) => void} onFailed the connection failed or closed
 * @property {() => void} onOpen the channel opened (parameters already read back)
 * @property {(setup: LinkSetup) => void} onSetup the setup record is complete (after getStats)
 * @property {(data: any) => void} onMessage a frame on the channel; MessageEvent.data is `any`
 * @property {(payload: import('./p2p-ice-restart.js').RestartSignal) => void} [signal] an ICE restart's offer or
 *   answer to the neighbour (through the relay); without it a dead link is only redialled
 * @property {(outcome: RestartRecord) => void} [onRestarted] an ICE restart brought the link back
 * @property {(what: 'disconnected' | 'failed' | 'started' | 'moved') => void} [onIce] ICE went disconnected or failed; a
 *   restart began; our network moved
 * @property {() => Promise<void>} [signalReady] the relay connection the restart signals over is up (rejoined if it
 *   was in doubt)
 */

/**
 * An ICE restart that brought a link back, and whether the data channel it came back on is the one
 * it had (a restart keeps the channel; a redial makes a new one).
 * @typedef {import('./p2p-ice-restart.js').RestartOutcome & { sameChannel: boolean }} RestartRecord
 */

/** @typedef {ReturnType<typeof setTimeout>} Timer */

/**
 * How a neighbour's updates travel now: `connecting` (no path yet: the client
 * core has not heard of it), `direct` (our data channel, host or STUN
 * candidates), `turn` (our data channel over a TURN relay candidate, read
 * from getStats) or `relay` (the fallback: LINK through the relay WebSocket).
 * @typedef {'connecting' | 'direct' | 'turn' | 'relay'} LinkPath
 */

/**
 * One neighbour. The fields are public: the mesh drives them, and the
 * transport exposes its links for inspection.
 */
export class P2PLink {
  /**
   * @param {number} id the neighbour's client id
   * @param {string} name
   * @param {boolean} initiator we dial (the newer member, with the larger id, dials)
   */
  constructor(id, name, initiator) {
    this.id = id;
    this.name = name;
    /** @type {DataConnectionLike | null} */
    this.conn = null;
    /** @type {RTCDataChannel | null} */
    this.channel = null;
    this.initiator = initiator;
    /** Told the client core it joined. */
    this.reported = false;
    /** Connection attempts since the channel was last open. */
    this.attempts = 0;
    /** @type {Timer | null} */
    this.retryTimer = null;
    /** @type {Timer | null} */
    this.setupTimer = null;
    /** @type {LinkSetup} */
    this.setup = {};
    /** @type {LinkPath} */
    this.path = 'connecting';
    /** When the link was made (mesh clock): the fallback bound counts from here. */
    this.createdAt = 0;
    /** When `path` last changed (mesh clock). */
    this.pathSince = 0;
    /** Moves the relay fallback after the bound if no channel opened. @type {Timer | null} */
    this.fallbackTimer = null;
    /** A channel of this link was open at some point (a later failure is a link that died). */
    this.everOpen = false;
    /** The heardAt its silence was last doubted at (the mesh doubts one silence once). */
    this.doubtedAt = -1;
    /** Its ICE restarts, when the relay carries them (p2p-ice-restart.js). @type {IceRestart | null} */
    this.restart = null;
    /** When its channel last delivered a frame (the transport's clock); 0: never. */
    this.heardAt = 0;
  }

  /**
   * Wires our negotiated channel and the timing probes onto a PeerJS
   * connection (one we dialled or one that came in).
   * @param {DataConnectionLike} conn
   * @param {LinkEvents} events
   */
  attach(conn, events) {
    const { now } = events;
    // While an ICE restart is under way, ICE and the connection may say failed: the restart answers that.
    const onFailed = (/** @type {string} */ why) => {
      if (this.restart?.holding() && /^(ICE failed|connection failed)$/.test(why)) return;
      events.onFailed(why);
    };
    const t0 = now();
    /** @type {LinkSetup} */
    const setup = { id: this.id, initiator: this.initiator, attempt: this.attempts };
    this.setup = setup;
    this.conn = conn;
    const pc = conn.peerConnection;
    this.restart?.stop();
    /** The channel this connection opens (set below): a restart that comes back on it kept it. @type {RTCDataChannel | null} */
    let opened = null;
    const onRestarted = (/** @type {import('./p2p-ice-restart.js').RestartOutcome} */ outcome) => {
      events.onRestarted?.({ ...outcome, sameChannel: opened !== null && this.channel === opened && opened.readyState === 'open' });
    };
    this.restart = events.signal
      ? new IceRestart({ pc, initiator: this.initiator, send: events.signal, onRestarted, onFailed: events.onFailed, now, count: events.onIce, ready: events.signalReady, readPair: selectedPair })
      : null;
    timeSetupPhases(pc, setup, t0, now, onFailed);
    const channel = openCarlabChannel(pc, events.mode);
    opened = channel;
    this.channel = channel;
    this.setupTimer = setTimeout(() => onFailed(`channel not open after ${SETUP_TIMEOUT_MS} ms`), SETUP_TIMEOUT_MS);
    channel.onopen = async () => {
      clearTimeout(this.setupTimer ?? undefined);
      setup.channelOpenMs = now() - t0;
      this.attempts = 0;
      this.everOpen = true;
      Object.assign(setup, readChannel(channel));
      events.onOpen();
      try {
        // settled: a TURN link can first show the other side's allocation as a hidden peer-reflexive
        Object.assign(setup, await settledSetupStats(pc));
      } catch { /* stats are best effort */ }
      events.onSetup(setup);
    };
    channel.onclose = () => onFailed('channel closed');
    channel.onmessage = (event) => { this.heardAt = now(); events.onMessage(event.data); };
    conn.on('error', (err) => onFailed(`peerjs: ${err?.type ?? err}`));
    conn.on('close', () => onFailed('peerjs connection closed'));
  }

  /**
   * Closes the channel and the connection and stops the timers. The timer
   * fields keep their values: the mesh reads `retryTimer === null` as "no
   * retry has been scheduled since the last one ran".
   */
  teardown() {
    clearTimeout(this.setupTimer ?? undefined);
    clearTimeout(this.retryTimer ?? undefined);
    this.restart?.stop();
    this.restart = null;
    try { this.channel?.close(); } catch { /* already closed */ }
    try { this.conn?.close(); } catch { /* already closed */ }
    this.channel = null;
    this.conn = null;
  }
}
