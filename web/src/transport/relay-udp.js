// Transport `relay-udp`: the CAR paper's UDP server, done with WebRTC. The
// client joins over the relay's WebSocket as usual (HELLO with the UDP flag;
// WELCOME and MEMBER_* stay there, the control channel), then opens one
// RTCPeerConnection to the relay itself, signaled with SIGNAL messages on the
// same WebSocket, carrying one pre-negotiated data channel with
// ordered:false, maxRetransmits:0. UPDATEs and ACKs go over that channel
// both ways, in frames that fit one packet.
//
// Works with the browser's RTCPeerConnection and, in Node, with
// node-datachannel's polyfill (passed in). The relay announces a relay-udp
// member to its group only once that member's channel is open; likewise this
// transport resolves connect() (so the action cycle can start) only once its
// own channel is open, and while the channel is down it reports no members,
// so no update is ever counted as sent to a receiver that could not get it.
//
// The parts, in relay-udp/: session.js (the whole, as a class), link.js (one
// peer connection attempt), signal.js (SIGNAL payloads), members.js (who the
// core may reach), retry.js (when to offer again), outbox.js and inbox.js
// (frames out and in), report.js (setupInfo and channelInfo).

import { MsgType } from '../../../core/protocol.js';
import {
  CONNECT_TIMEOUT_MS, MAX_MESSAGE_BYTES, RETRY_BASE_MS, RETRY_MAX_MS, SETUP_TIMEOUT_MS,
} from './relay-udp/constants.js';
import { RelayUdpSession } from './relay-udp/session.js';

export {
  CONNECT_TIMEOUT_MS, MAX_MESSAGE_BYTES, RETRY_BASE_MS, RETRY_MAX_MS, SETUP_TIMEOUT_MS, UDP_CHANNEL,
} from './relay-udp/constants.js';

/**
 * @typedef {object} RelayUdpTransportOptions
 * @property {string} url ws:// or wss:// URL of the relay
 * @property {RTCIceServer[]} [iceServers] from the server's configuration
 * @property {new (config?: RTCConfiguration) => object} [RTCPeerConnection] default
 *   globalThis.RTCPeerConnection (Node: `RTCPeerConnection` from 'node-datachannel/polyfill')
 * @property {any} [WebSocket] WebSocket constructor, default globalThis.WebSocket
 *   (any: the browser's and the `ws` package's constructors have different types)
 * @property {() => number} [now]
 * @property {boolean} [batched] default true: ACKED_ALL aggregation and
 *   coalesced frames (as `relay`); false: every ACK forwarded (as `relay-faithful`)
 * @property {number} [maxMessageBytes]
 * @property {number} [setupTimeoutMs]
 * @property {number} [retryBaseMs]
 * @property {number} [retryMaxMs]
 * @property {number} [connectTimeoutMs]
 * @property {number} [discardIncomingFraction] test knob: drop every
 *   round(1/f)-th received update before the client sees it (counted in `discarded`)
 * @property {boolean | import('./relay-reconnect.js').ReconnectOptions} [reconnect] the membership
 *   socket rejoins after an unexpected close and resumes its session; the channel is then offered
 *   anew (default false)
 * @property {import('./relay-connection.js').RelayConnectionOptions['network']} [network] where the
 *   network coming back is announced (default: the browser's window; none in Node)
 */

/**
 * A relay-udp transport: a core Transport plus its counters, sockets and setup report.
 * @typedef {import('../../../core/client.js').Transport & {
 *   counters: import('./relay-udp/constants.js').UdpCounters,
 *   readonly ws: import('./relay-socket.js').RelaySocket | null,
 *   readonly channel: RTCDataChannel | null,
 *   readonly peerConnection: RTCPeerConnection | null,
 *   setupInfo: () => ReturnType<RelayUdpSession['setupInfo']>,
 * }} RelayUdpTransport
 */

/**
 * Creates a relay-udp transport (implements core/client.js Transport).
 * @param {RelayUdpTransportOptions} options
 * @returns {RelayUdpTransport}
 */
export function createRelayUdpTransport(options) {
  // node-datachannel's polyfill implements RTCPeerConnection, but its event types are its
  // own classes, not the DOM's, so TypeScript does not see it as one: hence the cast.
  const RTCPeerConnection = /** @type {import('./relay-udp/link.js').PeerConnectionClass | undefined} */ (
    options.RTCPeerConnection ?? globalThis.RTCPeerConnection);
  if (!RTCPeerConnection) throw new Error('transport relay-udp needs WebRTC (RTCPeerConnection)');
  const session = new RelayUdpSession({
    url: options.url,
    iceServers: options.iceServers ?? [],
    RTCPeerConnection,
    WebSocket: options.WebSocket,
    now: options.now ?? (() => performance.now()),
    batched: options.batched ?? true,
    maxMessageBytes: options.maxMessageBytes ?? MAX_MESSAGE_BYTES,
    setupTimeoutMs: options.setupTimeoutMs ?? SETUP_TIMEOUT_MS,
    retryBaseMs: options.retryBaseMs ?? RETRY_BASE_MS,
    retryMaxMs: options.retryMaxMs ?? RETRY_MAX_MS,
    connectTimeoutMs: options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS,
    discardIncomingFraction: options.discardIncomingFraction,
    reconnect: options.reconnect ?? false,
    network: options.network,
  });
  return {
    name: 'relay-udp',
    counters: session.counters,
    get ws() { return session.membership.ws; },
    get serverClock() { return session.membership.serverClock ?? null; },
    /** The live data channel, or null. */
    get channel() { return session.openChannel; },
    get peerConnection() { return session.current?.pc ?? null; },
    connect: (join, h) => session.connect(join, h),
    sendUpdate(update) { session.sendData(update); },
    sendAck(sender, seq, acker) { session.sendData({ type: MsgType.ACK, sender, seq, acker }); },
    sendStats(stats) { return session.membership.sendStats?.(stats) ?? false; },
    channelInfo: () => session.channelInfo(),
    setupInfo: () => session.setupInfo(),
    close() { session.close(); },
  };
}
