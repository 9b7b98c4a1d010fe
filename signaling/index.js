// WebRTC signaling: the PeerServer from the npm package `peer`, mounted on
// carlab's own HTTP(S) server. Its REST API answers under `path`
// (`<path>/<key>/id`), its WebSocket under `<path>/peerjs`.

import express from 'express';
import { ExpressPeerServer } from 'peer';
import { WebSocketServer } from 'ws';
import { NodeDirectory, TokenBucket, isOriginAllowed, pathnameOf, rejectUpgrade } from '../relay/index.js';
import { CloseCode } from '../core/protocol.js';
import { PeerDirectory } from './cluster.js';

/** What a PeerJS client sends over the PeerServer WebSocket (peerjs 1.5 `ServerMessageType`). */
export const PEERJS_CLIENT_TYPES = Object.freeze(['HEARTBEAT', 'OFFER', 'ANSWER', 'CANDIDATE', 'LEAVE']);

/** Defaults of the signaling server's limits. */
export const SIGNALING_DEFAULTS = Object.freeze({
  maxPayload: 64 * 1024,
  // A page joining a group of 25 sends an offer and a few candidates per
  // neighbour at once: a few hundred messages. Far below that is abuse.
  maxMessagesPerSecond: 500,
  maxMessagesBurst: 1000,
});

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
 * @typedef {object} SignalingOptions
 * @property {import('node:http').Server} [server] HTTP(S) server to attach to
 * @property {string} [path] mount path, default '/peerjs'
 * @property {string} [key] PeerServer key clients must present, default 'peerjs'
 * @property {string[]} [allowedOrigins] as for the relay (same-origin by default)
 * @property {number} [aliveTimeoutMs] drop peers silent this long (PeerJS pings every 5 s)
 * @property {number} [maxPayload] largest WebSocket message (larger: close 1009)
 * @property {number} [maxMessagesPerSecond] per-socket message rate (token bucket refill); above: close 4005
 * @property {number} [maxMessagesBurst] the bucket's size
 * @property {import('../relay/broker.js').Broker} [broker] one PeerServer across processes: ids are
 *   unique cluster-wide and messages reach peers on other nodes (signaling/cluster.js)
 * @property {import('../relay/cluster-nodes.js').NodeDirectory} [nodes] the process's node directory
 *   (shared with the relay); default: its own
 */

/**
 * @typedef {object} Signaling
 * @property {string} path
 * @property {string} key
 * @property {string} wsPath pathname of the PeerServer WebSocket
 * @property {(req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => boolean} handleRequest
 *   serves the REST API; returns false (and does nothing) for paths outside `path`
 * @property {(req: import('node:http').IncomingMessage, socket: import('node:stream').Duplex, head: Buffer) => void} handleUpgrade
 * @property {() => object} metrics
 * @property {() => Promise<void>} close
 */

/**
 * Creates the signaling server. Note: the `peer` package keeps two
 * self-rescheduling timers it offers no way to stop, so a process that
 * created one exits by itself only through process.exit (carlab start does).
 * @param {SignalingOptions} [options]
 * @returns {Signaling}
 */
export function createSignaling(options = {}) {
  const path = normalisePath(options.path ?? '/peerjs');
  const key = options.key ?? 'peerjs';
  const wsPath = `${path === '/' ? '' : path}/peerjs`;
  const limits = {
    maxPayload: options.maxPayload ?? SIGNALING_DEFAULTS.maxPayload,
    maxMessagesPerSecond: options.maxMessagesPerSecond ?? SIGNALING_DEFAULTS.maxMessagesPerSecond,
    maxMessagesBurst: options.maxMessagesBurst ?? SIGNALING_DEFAULTS.maxMessagesBurst,
  };
  const counters = { peersConnected: 0, peersTotal: 0, messages: 0, errors: 0, sockets: 0, badRequests: 0 };
  /** @type {Record<string, number>} sockets closed by carlab's checks, by close code */
  const closedByCode = {};

  /** @type {WebSocketServer | null} */
  let wss = null;
  /** This node's open PeerServer sockets by peer id (for messages from other nodes). @type {Map<string, import('ws').WebSocket>} */
  const sockets = new Map();
  const directory = options.broker
    ? new PeerDirectory(options.broker, options.nodes ?? new NodeDirectory(options.broker), {
      deliver: (id, message) => sendTo(sockets.get(id), message),
      // The same peer (same token) opened a socket on another node: the newer one wins.
      evict: (id) => sockets.get(id)?.close(CloseCode.ID_TAKEN, 'id claimed again by a newer connection'),
    })
    : null;
  directory?.start();
  const peerApp = ExpressPeerServer(/** @type {any} */ (options.server ?? {}), {
    key,
    path: '/',
    allow_discovery: false,
    alive_timeout: options.aliveTimeoutMs ?? 60000,
    corsOptions: { origin: true },
    // We route upgrades ourselves so several WebSocket servers share one port.
    createWebSocketServer: (wsOptions) => {
      wss = new WebSocketServer({ noServer: true, path: wsOptions.path, maxPayload: limits.maxPayload, perMessageDeflate: false });
      return wss;
    },
  });
  peerApp.on('connection', (/** @type {import('peer').IClient} */ client) => {
    counters.peersConnected++;
    counters.peersTotal++;
    directory?.claimed(client.getId(), client.getToken());
  });
  peerApp.on('disconnect', (/** @type {import('peer').IClient} */ client) => {
    counters.peersConnected = Math.max(0, counters.peersConnected - 1);
    directory?.released(client.getId());
  });
  peerApp.on('message', () => { counters.messages++; });
  peerApp.on('error', () => { counters.errors++; });

  const root = express();
  root.disable('x-powered-by');
  root.use(path, peerApp); // fires 'mount': the PeerServer initialises here
  // Bad requests (e.g. a path that is not valid percent-encoding) end here
  // with their 4xx status, quietly: express's default handler would log a
  // stack trace per request, which anyone could use to flood the log.
  root.use((/** @type {any} */ err, /** @type {any} */ _req, /** @type {any} */ res, /** @type {any} */ _next) => {
    counters.badRequests++;
    const status = Number(err?.status ?? err?.statusCode);
    if (res.headersSent) { res.destroy(); return; }
    res.status(status >= 400 && status < 600 ? status : 500).type('text/plain').send(status >= 400 && status < 500 ? 'Bad Request' : 'Internal Server Error');
  });

  const handleUpgrade = (req, socket, head) => {
    if (!isOriginAllowed(req, options.allowedOrigins)) {
      rejectUpgrade(socket, 403, 'Origin not allowed');
      return;
    }
    const server = /** @type {WebSocketServer} */ (wss);
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
      guard(ws, id);
    });
  };

  /**
   * Puts carlab's checks in front of the PeerServer's own message handler
   * (which it attached while handling 'connection'): a message that fails
   * them closes the socket and never reaches the PeerServer. In a cluster, a
   * message for a peer on another node goes there instead.
   * @param {import('ws').WebSocket} ws
   * @param {string} id the peer id the socket opened with
   */
  function guard(ws, id) {
    const theirs = ws.listeners('message');
    ws.removeAllListeners('message');
    const rate = new TokenBucket(limits.maxMessagesPerSecond, limits.maxMessagesBurst);
    let closed = false;
    ws.on('message', (data, isBinary) => {
      if (closed) return;
      /** @type {[number, string] | null} */
      const problem = rate.take(1)
        ? checkPeerMessage(/** @type {any} */ (data), isBinary)
        : [CloseCode.RATE_LIMITED, `over ${limits.maxMessagesPerSecond} messages/s`];
      if (problem) {
        closed = true;
        closedByCode[problem[0]] = (closedByCode[problem[0]] ?? 0) + 1;
        ws.close(problem[0], problem[1]);
        return;
      }
      if (directory && directory.forward(id, JSON.parse(String(data)))) return;
      for (const f of theirs) f.call(ws, data, isBinary);
    });
  }

  /** @type {((req: any, socket: any, head: any) => void) | null} */
  let onServerUpgrade = null;
  if (options.server) {
    onServerUpgrade = (req, socket, head) => {
      if (pathnameOf(req.url) === wsPath) handleUpgrade(req, socket, head);
    };
    options.server.on('upgrade', onServerUpgrade);
  }

  return {
    path,
    key,
    wsPath,
    handleUpgrade,
    handleRequest(req, res) {
      const pathname = pathnameOf(req.url);
      if (pathname !== path && !pathname.startsWith(path === '/' ? '/' : `${path}/`)) return false;
      root(/** @type {any} */ (req), /** @type {any} */ (res));
      return true;
    },
    metrics: () => ({ path, ...counters, closedByCode: { ...closedByCode }, cluster: directory?.snapshot() ?? null }),
    close() {
      if (onServerUpgrade) options.server?.off('upgrade', onServerUpgrade);
      directory?.close();
      return new Promise((resolve) => {
        if (!wss) return resolve();
        for (const ws of wss.clients) ws.close(1001, 'signaling shutting down');
        const force = setTimeout(() => { for (const ws of wss.clients) ws.terminate(); }, 2000);
        wss.close(() => { clearTimeout(force); resolve(); });
      });
    },
  };
}

/**
 * The id and token a PeerJS client opens its socket with (`?key=&id=&token=`).
 * @param {string | undefined} url
 * @returns {{ id: string, token: string }}
 */
function peerParams(url) {
  const params = new URL(url ?? '', 'http://peerjs').searchParams;
  return { id: params.get('id') ?? '', token: params.get('token') ?? '' };
}

/**
 * Sends a JSON message on an open socket.
 * @param {import('ws').WebSocket | undefined} ws
 * @param {Record<string, unknown>} message
 * @returns {boolean} whether it went out
 */
function sendTo(ws, message) {
  if (!ws || ws.readyState !== ws.OPEN) return false;
  ws.send(JSON.stringify(message));
  return true;
}

/** @param {string} p */
function normalisePath(p) {
  const withSlash = p.startsWith('/') ? p : `/${p}`;
  return withSlash.length > 1 && withSlash.endsWith('/') ? withSlash.slice(0, -1) : withSlash;
}
