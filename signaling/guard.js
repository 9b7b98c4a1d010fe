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

/** Longest PeerJS id the PeerServer takes (characters). */
export const MAX_PEER_ID_LENGTH = 256;

/** Longest PeerJS token the PeerServer takes (characters); PeerJS makes ~11. */
export const MAX_PEER_TOKEN_LENGTH = 128;

/**
 * What a PeerJS id may look like: PeerJS 1.5's own rule (util.validateId:
 * letters and digits, single ' ', '_' or '-' between them), so every id a
 * PeerJS client accepts is accepted here and nothing else is.
 */
export const PEER_ID_PATTERN = /^[A-Za-z0-9]+(?:[ _-][A-Za-z0-9]+)*$/;

/** What a PeerJS token may look like: PeerJS makes base-36 ones; '-' and '_' are let through for other clients. */
export const PEER_TOKEN_PATTERN = /^[A-Za-z0-9_-]+$/;

/**
 * A refusal of a PeerServer socket: the close code and reason, and the
 * PeerJS message sent first (so a PeerJS client reports it as an error with text).
 * @typedef {{ code: number, reason: string, message: Record<string, unknown> }} PeerRefusal
 */

/**
 * @param {number} code @param {string} reason
 * @returns {PeerRefusal} an ERROR message with the reason as its text
 */
function refusal(code, reason) {
  return { code, reason, message: { type: 'ERROR', payload: { msg: reason } } };
}

/**
 * Checks the key, id and token a socket opens with (docs/security.md,
 * "Signaling"). Every refusal has its own close code and words.
 * @param {{ key: string | null, id: string | null, token: string | null }} params from the URL (null: absent)
 * @param {string} key the PeerServer key
 * @returns {PeerRefusal | null}
 */
export function checkPeerParams(params, key) {
  if (!params.key || !params.id || !params.token) {
    const missing = (/** @type {const} */ (['key', 'id', 'token'])).filter((k) => !params[k]);
    return refusal(CloseCode.PROTOCOL_VIOLATION, `No ${missing.join(', ')} supplied to the PeerServer WebSocket`);
  }
  if (params.key !== key) return refusal(CloseCode.FORBIDDEN, 'Invalid key provided');
  if (params.id.length > MAX_PEER_ID_LENGTH) return refusal(CloseCode.PROTOCOL_VIOLATION, `id longer than ${MAX_PEER_ID_LENGTH} characters`);
  if (!PEER_ID_PATTERN.test(params.id)) return refusal(CloseCode.PROTOCOL_VIOLATION, 'id has characters PeerJS ids do not have');
  if (params.token.length > MAX_PEER_TOKEN_LENGTH) return refusal(CloseCode.PROTOCOL_VIOLATION, `token longer than ${MAX_PEER_TOKEN_LENGTH} characters`);
  if (!PEER_TOKEN_PATTERN.test(params.token)) return refusal(CloseCode.PROTOCOL_VIOLATION, 'token has characters other than letters, digits, - and _');
  return null;
}

/**
 * Puts carlab's checks in front of the PeerServer's own message handler
 * (which it attached while handling 'connection'): a message that fails
 * them closes the socket and never reaches the PeerServer. In a cluster, a
 * message for a peer on another node goes there instead.
 * @param {import('ws').WebSocket} ws
 * @param {string} id the peer id the socket opened with
 * A socket that is no longer its id's live one (a newer claim took the id,
 * or it sent LEAVE) is still checked, but what it sends reaches nobody.
 * @param {{ limits: SignalingLimits, counters: SignalingCounters, directory: GuardDirectory | null,
 *   onClose?: (code: number, reason: string, id: string) => void, live?: Map<string, import('ws').WebSocket> }} deps
 *   onClose: told of each close (the log line); live: this node's live socket per id
 */
export function guardMessages(ws, id, { limits, counters, directory, onClose, live }) {
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
    if (live && live.get(id) !== ws) return;
    const message = JSON.parse(String(data));
    if (directory && directory.forward(id, message)) return;
    for (const f of theirs) f.call(ws, data, isBinary);
    // LEAVE without dst: the PeerServer forgot the id (its socket stays open, to nobody).
    if (live && message.type === 'LEAVE' && message.dst === undefined) forget(live, id, ws, counters);
  });
}

/**
 * What the upgrade handler works with.
 * @typedef {object} PeerUpgradeDeps
 * @property {string[] | undefined} allowedOrigins
 * @property {string} [key] the PeerServer key (checked here with its own close code; without it only the PeerServer checks)
 * @property {() => import('ws').WebSocketServer | null} wss the PeerServer's, once it created it
 * @property {GuardDirectory | null} directory the cluster's id directory
 * @property {Map<string, import('ws').WebSocket>} sockets this node's live socket per peer id: one per id
 * @property {SignalingCounters} counters
 * @property {SignalingLimits} limits
 * @property {(code: number, reason: string, id: string) => void} [onClose] told of each close guardMessages makes
 */

/**
 * Closes a socket the guard refuses, after the PeerJS message that says why.
 * @param {import('ws').WebSocket} ws
 * @param {PeerRefusal} r
 * @param {string} id
 * @param {Pick<PeerUpgradeDeps, 'counters' | 'onClose'>} deps
 */
function refuse(ws, r, id, deps) {
  deps.counters.closedByCode[r.code] = (deps.counters.closedByCode[r.code] ?? 0) + 1;
  deps.onClose?.(r.code, r.reason, id);
  sendTo(ws, r.message);
  ws.close(r.code, r.reason);
}

/**
 * The id has no live socket any more (it closed, was taken over, or left).
 * @param {Map<string, import('ws').WebSocket>} live
 * @param {string} id
 * @param {import('ws').WebSocket} ws
 * @param {SignalingCounters} counters
 */
function forget(live, id, ws, counters) {
  if (live.get(id) !== ws) return;
  live.delete(id);
  counters.peersConnected = live.size;
}

/** The close a socket gets when its id is claimed again with the same token (as the cluster does across nodes). */
export const ID_CLAIMED_AGAIN = Object.freeze({ code: CloseCode.ID_TAKEN, reason: 'id claimed again by a newer connection' });

/**
 * The PeerServer's upgrade handler: Origin check, then the key, id and token
 * (checkPeerParams), the id's claim (one live socket per id: another token
 * is refused with ID-TAKEN and 4007; the same token takes the id over and
 * the older socket is closed with 4007 'id claimed again by a newer
 * connection'; in a cluster also across nodes), then the PeerServer's own
 * 'connection' with carlab's guard in front of its message handler.
 * `peersConnected` is the number of ids with a live socket, always.
 * @param {PeerUpgradeDeps} deps
 * @returns {import('../relay/upgrade.js').UpgradeHandler}
 */
export function peerUpgradeHandler(deps) {
  const { directory, sockets, counters } = deps;
  /** The token each live socket claimed its id with. @type {WeakMap<import('ws').WebSocket, string>} */
  const tokens = new WeakMap();
  return (req, socket, head) => {
    if (!isOriginAllowed(req, deps.allowedOrigins)) {
      rejectUpgrade(socket, 403, 'Origin not allowed');
      return;
    }
    // The PeerServer creates it when mounted, which createSignaling does before any upgrade.
    const server = /** @type {import('ws').WebSocketServer} */ (deps.wss());
    const params = new URL(req.url ?? '', 'http://peerjs').searchParams;
    const id = params.get('id') ?? '';
    const token = params.get('token') ?? '';
    server.handleUpgrade(req, socket, head, (ws) => {
      // Refused with words a PeerJS client shows, and a close code a raw client reads.
      const bad = deps.key === undefined ? null : checkPeerParams({ key: params.get('key'), id: params.get('id'), token: params.get('token') }, deps.key);
      if (bad) { refuse(ws, bad, id, deps); return; }
      const older = id ? sockets.get(id) : undefined;
      if (older && tokens.get(older) !== token) {
        refuse(ws, { code: CloseCode.ID_TAKEN, reason: 'id is taken by another token', message: { type: 'ID-TAKEN', payload: { msg: 'ID is taken' } } }, id, deps);
        return;
      }
      if (directory && id && token && !directory.mayClaim(id, token)) {
        // Held on another node with another token: as for one here.
        refuse(ws, { code: CloseCode.ID_TAKEN, reason: 'id is taken by another token', message: { type: 'ID-TAKEN', payload: { msg: 'ID is taken' } } }, id, deps);
        return;
      }
      if (older) {
        // The same peer again (same token): the newer socket wins, the older is closed
        // at once, so the id never has two sockets and never none.
        forget(sockets, id, older, counters);
        counters.closedByCode[ID_CLAIMED_AGAIN.code] = (counters.closedByCode[ID_CLAIMED_AGAIN.code] ?? 0) + 1;
        deps.onClose?.(ID_CLAIMED_AGAIN.code, ID_CLAIMED_AGAIN.reason, id);
        older.close(ID_CLAIMED_AGAIN.code, ID_CLAIMED_AGAIN.reason);
      }
      counters.sockets++;
      ws.once('close', () => {
        counters.sockets--;
        forget(sockets, id, ws, counters);
      });
      server.emit('connection', ws, req);
      // The PeerServer re-attaches an id it still holds to the new socket
      // without an OPEN (it only sends one for a new client): say it, or a
      // PeerJS client that took its id over never reports 'open'.
      if (older && ws.readyState === ws.OPEN) ws.send(JSON.stringify({ type: 'OPEN' }));
      // The PeerServer refuses what we did not check (its connection limit) by closing at once.
      if (id && ws.readyState === ws.OPEN) {
        tokens.set(ws, token);
        sockets.set(id, ws);
        counters.peersConnected = sockets.size;
      }
      guardMessages(ws, id, { ...deps, live: sockets });
    });
  };
}
