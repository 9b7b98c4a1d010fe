// carlab's checks around the PeerServer's WebSocket: which upgrades get a
// socket at all (Origin, cluster-wide id claims) and which messages reach the
// PeerServer (shape, rate). Apart from createSignaling so each can be driven
// with fake sockets (signaling/guard.test.js).

import { TokenBucket, isOriginAllowed, rejectUpgrade } from '../relay/index.js';
import { CloseCode } from '../core/protocol.js';

/** What a PeerJS client sends over the PeerServer WebSocket (peerjs 1.5 `ServerMessageType`). */
export const PEERJS_CLIENT_TYPES = Object.freeze(['HEARTBEAT', 'OFFER', 'ANSWER', 'CANDIDATE', 'LEAVE']);

/**
 * The signaling server's counters (metrics()).
 * @typedef {object} SignalingCounters
 * @property {number} peersConnected peers the PeerServer holds now
 * @property {number} peersTotal peers it ever accepted
 * @property {number} messages messages the PeerServer handled
 * @property {number} errors errors the PeerServer reported
 * @property {number} sockets PeerServer WebSockets open now
 * @property {number} badRequests REST requests answered with an error status
 * @property {Record<string, number>} closedByCode sockets closed by carlab's checks, by close code
 */

/** @returns {SignalingCounters} all zero */
export function newSignalingCounters() {
  return { peersConnected: 0, peersTotal: 0, messages: 0, errors: 0, sockets: 0, badRequests: 0, closedByCode: {} };
}

/**
 * The per-socket limits.
 * @typedef {object} SignalingLimits
 * @property {number} maxPayload
 * @property {number} maxMessagesPerSecond
 * @property {number} maxMessagesBurst
 */

/** What the guard needs of the cluster's PeerDirectory (signaling/cluster.js). @typedef {Pick<import('./cluster.js').PeerDirectory, 'mayClaim' | 'forward'>} GuardDirectory */

/**
 * Checks one message a PeerJS client sent. The PeerServer itself ignores
 * what it cannot parse; carlab closes the socket instead, with the relay's
 * close codes, so a misbehaving peer is cut off and counted.
 * @param {Buffer | ArrayBuffer | Buffer[]} data
 * @param {boolean} isBinary
 * @returns {[number, string] | null} a close code and reason, or null when fine
 */
export function checkPeerMessage(data, isBinary) {
  if (isBinary) return [CloseCode.BAD_FRAME, 'binary frames are not part of the PeerJS protocol'];
  let message;
  try {
    message = JSON.parse(String(data));
  } catch {
    return [CloseCode.BAD_FRAME, 'not JSON'];
  }
  if (message === null || typeof message !== 'object' || Array.isArray(message)) {
    return [CloseCode.BAD_FRAME, 'not a JSON object'];
  }
  if (!PEERJS_CLIENT_TYPES.includes(message.type)) {
    return [CloseCode.PROTOCOL_VIOLATION, `type ${JSON.stringify(message.type)?.slice(0, 40)} is not sent by PeerJS clients`];
  }
  if (message.dst !== undefined && typeof message.dst !== 'string') {
    return [CloseCode.PROTOCOL_VIOLATION, 'dst must be a peer id string'];
  }
  return null;
}

/**
 * The id and token a PeerJS client opens its socket with (`?key=&id=&token=`).
 * @param {string | undefined} url
 * @returns {{ id: string, token: string }}
 */
export function peerParams(url) {
  const params = new URL(url ?? '', 'http://peerjs').searchParams;
  return { id: params.get('id') ?? '', token: params.get('token') ?? '' };
}

/**
 * Sends a JSON message on an open socket.
 * @param {Pick<import('ws').WebSocket, 'readyState' | 'OPEN' | 'send'> | undefined} ws
 * @param {Record<string, unknown>} message
 * @returns {boolean} whether it went out
 */
export function sendTo(ws, message) {
  if (!ws || ws.readyState !== ws.OPEN) return false;
  ws.send(JSON.stringify(message));
  return true;
}

/**
 * Puts carlab's checks in front of the PeerServer's own message handler
 * (which it attached while handling 'connection'): a message that fails
 * them closes the socket and never reaches the PeerServer. In a cluster, a
 * message for a peer on another node goes there instead.
 * @param {import('ws').WebSocket} ws
 * @param {string} id the peer id the socket opened with
 * @param {{ limits: SignalingLimits, counters: SignalingCounters, directory: GuardDirectory | null,
 *   onClose?: (code: number, reason: string, id: string) => void }} deps onClose: told of each close (the log line)
 */
export function guardMessages(ws, id, { limits, counters, directory, onClose }) {
  const theirs = ws.listeners('message');
  ws.removeAllListeners('message');
  const rate = new TokenBucket(limits.maxMessagesPerSecond, limits.maxMessagesBurst);
  let closed = false;
  ws.on('message', (data, isBinary) => {
    if (closed) return;
    /** @type {[number, string] | null} */
    const problem = rate.take(1)
      ? checkPeerMessage(data, isBinary)
      : [CloseCode.RATE_LIMITED, `over ${limits.maxMessagesPerSecond} messages/s`];
    if (problem) {
      closed = true;
      counters.closedByCode[problem[0]] = (counters.closedByCode[problem[0]] ?? 0) + 1;
      onClose?.(problem[0], problem[1], id);
      ws.close(problem[0], problem[1]);
      return;
    }
    if (directory && directory.forward(id, JSON.parse(String(data)))) return;
    for (const f of theirs) f.call(ws, data, isBinary);
  });
}

/**
 * What the upgrade handler works with.
 * @typedef {object} PeerUpgradeDeps
 * @property {string[] | undefined} allowedOrigins
 * @property {() => import('ws').WebSocketServer | null} wss the PeerServer's, once it created it
 * @property {GuardDirectory | null} directory the cluster's id directory
 * @property {Map<string, import('ws').WebSocket>} sockets this node's open sockets by peer id
 * @property {SignalingCounters} counters
 * @property {SignalingLimits} limits
 * @property {(code: number, reason: string, id: string) => void} [onClose] told of each close guardMessages makes
 */

/**
 * The PeerServer's upgrade handler: Origin check, then (in a cluster) the
 * id's claim, then the PeerServer's own 'connection' with carlab's guard in
 * front of its message handler.
 * @param {PeerUpgradeDeps} deps
 * @returns {import('../relay/upgrade.js').UpgradeHandler}
 */
export function peerUpgradeHandler(deps) {
  const { directory, sockets, counters } = deps;
  return (req, socket, head) => {
    if (!isOriginAllowed(req, deps.allowedOrigins)) {
      rejectUpgrade(socket, 403, 'Origin not allowed');
      return;
    }
    // The PeerServer creates it when mounted, which createSignaling does before any upgrade.
    const server = /** @type {import('ws').WebSocketServer} */ (deps.wss());
    const { id, token } = peerParams(req.url);
    server.handleUpgrade(req, socket, head, (ws) => {
      if (directory && id && token && !directory.mayClaim(id, token)) {
        // Held on another node with another token: what the PeerServer says for one here.
        sendTo(ws, { type: 'ID-TAKEN', payload: { msg: 'ID is taken' } });
        ws.close();
        return;
      }
      counters.sockets++;
      ws.once('close', () => {
        counters.sockets--;
        if (sockets.get(id) === ws) sockets.delete(id);
      });
      if (id) sockets.set(id, ws);
      server.emit('connection', ws, req);
      guardMessages(ws, id, deps);
    });
  };
}
