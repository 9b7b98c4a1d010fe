// Transport `relay` / `relay-faithful`: the WebSocket relay. Works with the
// browser's WebSocket and, in Node, with the `ws` package's (passed in).
//
// The parts: relay-connection.js (the socket, the join, rejoins),
// relay-reconnect.js (when and how soon to rejoin), relay-socket.js (HELLO,
// frames in, which handler gets what) and relay-outbox.js (frames out).

import { MsgType } from '../../../core/protocol.js';
import { RelayConnection } from './relay-connection.js';

export { RECONNECT_DEFAULTS, backoffDelay, isReconnectable } from './relay-reconnect.js';

/** @typedef {import('./relay-reconnect.js').ReconnectOptions} ReconnectOptions */

/**
 * @typedef {object} RelayTransportOptions
 * @property {string | string[]} url ws:// or wss:// URL of the relay; several: fail over to the next on a rejoin
 * @property {boolean} [batched] true = mode `relay` (the server coalesces
 *   frames and aggregates ACKs; we batch our ACKs per turn too);
 *   false = `relay-faithful` (one frame per message, every ACK forwarded)
 * @property {boolean} [membershipOnly] join for membership only (the p2p
 *   transport exchanges updates elsewhere); sendUpdate/sendAck must not be used
 * @property {string} [name] transport name to report (default from `batched`)
 * @property {any} [WebSocket] WebSocket constructor, default globalThis.WebSocket
 *   (any: the browser's and the `ws` package's constructors have different types)
 * @property {() => number} [now] clock for arrival times, default performance.now
 * @property {number} [extraFlags] more HELLO flags (relay-udp adds UDP)
 * @property {(m: import('../../../core/protocol.js').SignalMsg) => void} [onSignal] SIGNALs from the relay (relay-udp)
 * @property {boolean | ReconnectOptions} [reconnect] reconnect after an unexpected close (default
 *   false): the transport re-sends HELLO with the same client id and token, and reports the
 *   outage through the handlers' onReconnecting / onReconnected, and every attempt through
 *   onConnectionStatus
 * @property {number} [silenceMs] UPDATEs unanswered this long: the connection is given up and rejoined
 *   (relay-silence.js; default 8 s, 0: never)
 * @property {import('./relay-connection.js').RelayConnectionOptions['network']} [network] where the
 *   network coming back is announced (default: the browser's window; none in Node)
 */

/**
 * A relay transport: a core Transport plus the socket, SIGNALs out (relay-udp)
 * and the reconnection counters.
 * @typedef {import('../../../core/client.js').Transport & {
 *   readonly ws: import('./relay-socket.js').RelaySocket | null,
 *   sendSignal: (m: import('../../../core/protocol.js').SignalMsg) => void,
 *   reconnectInfo: () => { reconnects: number, attempts: number, lastCloseCode: number | null },
 *   rejoin: (why?: string) => Promise<void>,
 * }} RelayTransport
 */

/**
 * Creates a relay transport (implements core/client.js Transport).
 * @param {RelayTransportOptions} options
 * @returns {RelayTransport}
 */
export function createRelayTransport(options) {
  const batched = options.batched ?? true;
  const connection = new RelayConnection({
    url: options.url,
    batched,
    membershipOnly: options.membershipOnly,
    extraFlags: options.extraFlags,
    WebSocket: options.WebSocket ?? globalThis.WebSocket,
    now: options.now ?? (() => performance.now()),
    onSignal: options.onSignal,
    reconnect: options.reconnect,
    silenceMs: options.silenceMs,
    // A browser says when its network comes back; Node has no such event.
    network: options.network ?? (typeof (/** @type {any} */ (globalThis)).addEventListener === 'function' ? /** @type {any} */ (globalThis) : undefined),
  });
  const outbox = connection.outbox;
  return {
    name: options.name ?? (batched ? 'relay' : 'relay-faithful'),
    get ws() { return connection.ws; },
    get serverClock() { return connection.serverClock; },
    connect: (join, h) => connection.connect(join, h),
    sendUpdate(update) { if (outbox.send(update)) connection.sentUpdate(update); },
    sendAck(sender, seq, acker) { outbox.send({ type: MsgType.ACK, sender, seq, acker }); },
    sendStats(stats) {
      // A report names its member as clientId, the client core's end-of-run stats as id.
      const named = /** @type {{ clientId?: number, id?: number }} */ (stats);
      return outbox.send({ type: MsgType.STATS, clientId: named.clientId ?? named.id ?? 0, stats });
    },
    sendSignal(m) { outbox.send(m); },
    channelInfo: () => ({ kind: 'websocket', ordered: true, maxRetransmits: null, maxPacketLifeTime: null, protocol: '' }),
    /** Reconnection counters: rejoins that succeeded, attempts made, the last close code seen. */
    reconnectInfo: () => ({ ...connection.counters, ...connection.replay.counters }),
    /** Rejoins now, resuming the session (the path may have moved); resolves at the WELCOME. */
    rejoin: (why) => connection.rejoinNow(why),
    close() { connection.close(); },
  };
}
