// One WebSocket to the relay, the parts that do not depend on the transport's
// state: the HELLO a join sends, how frames are taken from the browser's
// WebSocket or Node's `ws`, and which handler each decoded message goes to.

import { HelloFlag, MoreFlag, MsgType } from '../../../core/protocol.js';

/**
 * What the transport uses of a WebSocket: the browser's and the `ws` package's
 * both have it (`on` only the latter).
 * @typedef {object} RelaySocket
 * @property {number} readyState 0 connecting, 1 open, 2 closing, 3 closed
 * @property {string} binaryType
 * @property {(data: Uint8Array) => void} send
 * @property {(code?: number, reason?: string) => void} close
 * @property {(() => void) | null} onopen
 * @property {((event: { data: unknown }) => void) | null} onmessage
 * @property {(() => void) | null} onerror
 * @property {((event: { code: number, reason: string }) => void) | null} onclose
 * @property {(event: 'message', listener: (data: unknown, isBinary: boolean) => void) => void} [on]
 */

/**
 * What a HELLO says about the transport.
 * @typedef {object} HelloMode
 * @property {boolean} batched mode `relay` (the server coalesces frames, aggregates ACKs)
 * @property {boolean} [membershipOnly] the p2p transports' membership join
 * @property {number} [extraFlags] more flags (relay-udp adds UDP)
 */

/**
 * The HELLO that joins `join.group`.
 * @param {HelloMode} mode
 * @param {import('../../../core/client.js').JoinParams} join
 * @param {number} clientId the id to ask for (0: the server assigns one)
 * @param {string} [resume] the secret of the session this HELLO takes over (docs/protocol.md §8.10), for `clientId`
 * @returns {import('../../../core/protocol.js').HelloMsg}
 */
export function helloMessage(mode, join, clientId, resume = '') {
  return {
    type: MsgType.HELLO,
    // A connection that gets UPDATEs asks for superseded marks (docs/protocol.md §5.13): loss counts them apart.
    // Every connection asks for RESUME: a rejoin after a network change takes its session back (§8.10).
    // A p2p member asks how each member can be reached: it dials only those that accept peers (§5.2).
    // Every connection asks for its group's kept scene, should it be the first one back (§5.14).
    flags: (mode.batched ? HelloFlag.BATCHED : 0) | (mode.membershipOnly ? HelloFlag.MEMBERSHIP_ONLY | HelloFlag.REACHABILITY | HelloFlag.PEER_SIGNAL : HelloFlag.SUPERSEDED_MARKS)
      | HelloFlag.RESUME | HelloFlag.MORE | (mode.extraFlags ?? 0),
    more: MoreFlag.KEPT_SCENE,
    clientId,
    group: join.group,
    name: join.name,
    token: join.token ?? '',
    ...(resume && clientId !== 0 ? { resume } : {}),
  };
}

/**
 * The relay URL for a join: `url` with the group in its query (`?g=<group>`,
 * URL-encoded, replacing any `g` it had), so a load balancer or the cluster
 * primary can place every member of a group on the same process before a byte
 * of WebSocket flows (docs/scale-out.md). The HELLO still names the group and is
 * what the relay goes by; it refuses a HELLO for another group (close 4009).
 * @param {string} url ws:// or wss:// URL of the relay
 * @param {string} group
 * @returns {string}
 */
export function relayUrlForGroup(url, group) {
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    return url; // not absolute: the WebSocket constructor will say so itself
  }
  parsed.searchParams.set('g', group);
  return parsed.href;
}

/**
 * Hands every frame the socket receives to `onFrame`.
 * @param {RelaySocket} socket
 * @param {(data: unknown) => void} onFrame an ArrayBuffer (browser), a Buffer (Node's `ws`), or a string for text
 */
export function listenForFrames(socket, onFrame) {
  if (typeof socket.on === 'function') {
    // Node's `ws` (the load generator): the frame as a Buffer, without the
    // ArrayBuffer copy and the MessageEvent per frame; text stays a string.
    socket.binaryType = 'nodebuffer';
    socket.on('message', (data, isBinary) => onFrame(isBinary ? data : String(data)));
  } else {
    socket.binaryType = 'arraybuffer';
    socket.onmessage = (event) => onFrame(event.data);
  }
}

/**
 * Where the messages of a relay connection go.
 * @typedef {object} RelayMessageSinks
 * @property {import('../../../core/client.js').TransportHandlers} handlers the client core's
 * @property {(m: import('../../../core/protocol.js').WelcomeMsg) => void} onWelcome
 * @property {((m: import('../../../core/protocol.js').SignalMsg) => void) | undefined} onSignal
 */

/**
 * Delivers one decoded message from the relay.
 * @param {import('../../../core/protocol.js').Message} m
 * @param {number} arrival when its frame arrived
 * @param {RelayMessageSinks} sinks
 */
export function dispatchRelayMessage(m, arrival, sinks) {
  const h = sinks.handlers;
  switch (m.type) {
    case MsgType.WELCOME: sinks.onWelcome(m); break;
    case MsgType.UPDATE: h.onUpdate(m, arrival); break;
    case MsgType.ACK: h.onAck(m); break;
    case MsgType.ACKED_ALL: h.onAckedAll(m); break;
    case MsgType.SUPERSEDED: h.onSuperseded?.(m); break;
    case MsgType.MEMBER_JOINED: h.onMemberJoined(m); break;
    case MsgType.MEMBER_LEFT: h.onMemberLeft(m.id); break;
    case MsgType.SIGNAL: sinks.onSignal?.(m); break;
    case MsgType.ERROR: h.onServerError?.(m); break; // informational: the session stays open
    case MsgType.KEPT_SCENE: h.onKeptScene?.(m); break;
    default: break;
  }
}
