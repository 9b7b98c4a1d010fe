// WebRTC signaling: the PeerServer from the npm package `peer`, mounted on
// carlab's own HTTP(S) server. Its REST API answers under `path`
// (`<path>/<key>/id`), its WebSocket under `<path>/peerjs`.

import { NodeDirectory, listenForUpgrades, pathnameOf, shutDownWebSockets } from '../relay/index.js';
import { CloseCode } from '../core/protocol.js';
import { PeerDirectory } from './cluster.js';
import { newSignalingCounters, peerUpgradeHandler, sendTo } from './guard.js';
import { mountPeerServer } from './peer-server.js';

// The checks in front of the PeerServer, public as before the split.
export { PEERJS_CLIENT_TYPES, checkPeerMessage } from './guard.js';

/** Defaults of the signaling server's limits. */
export const SIGNALING_DEFAULTS = Object.freeze({
  maxPayload: 64 * 1024,
  // A page joining a group of 25 sends an offer and a few candidates per
  // neighbour at once: a few hundred messages. Far below that is abuse.
  maxMessagesPerSecond: 500,
  maxMessagesBurst: 1000,
});

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
 * @property {import('../relay/index.js').RelayLogger} [logger] where signaling says why it closed a socket
 */

/**
 * @typedef {import('./guard.js').SignalingCounters & { path: string,
 *   cluster: ReturnType<PeerDirectory['snapshot']> | null }} SignalingMetrics
 */

/**
 * @typedef {object} Signaling
 * @property {string} path
 * @property {string} key
 * @property {string} wsPath pathname of the PeerServer WebSocket
 * @property {(req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => boolean} handleRequest
 *   serves the REST API; returns false (and does nothing) for paths outside `path`
 * @property {(req: import('node:http').IncomingMessage, socket: import('node:stream').Duplex, head: Buffer) => void} handleUpgrade
 * @property {() => SignalingMetrics} metrics counters and, in a cluster, the id directory's view
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
  const { path, key, wsPath, limits } = signalingConfig(options);
  const counters = newSignalingCounters();
  /** This node's live PeerServer socket per peer id (one per id; for messages from other nodes too). @type {Map<string, import('ws').WebSocket>} */
  const sockets = new Map();
  const directory = options.broker ? peerDirectory(options.broker, options.nodes, sockets) : null;
  directory?.start();
  const { app, wss } = mountPeerServer({
    server: options.server, path, key, aliveTimeoutMs: options.aliveTimeoutMs ?? 60000,
    maxPayload: limits.maxPayload, counters, directory,
  });
  const handleUpgrade = peerUpgradeHandler({
    key, allowedOrigins: options.allowedOrigins, wss, directory, sockets, counters, limits, onClose: closeLogger(options.logger),
  });
  const unlisten = options.server ? listenForUpgrades(options.server, wsPath, handleUpgrade) : null;

  return {
    path,
    key,
    wsPath,
    handleUpgrade,
    handleRequest(req, res) {
      if (!isUnderPath(pathnameOf(req.url), path)) return false;
      app(req, res);
      return true;
    },
    metrics: () => ({ path, ...counters, closedByCode: { ...counters.closedByCode }, cluster: directory?.snapshot() ?? null }),
    close() {
      unlisten?.();
      directory?.close();
      const server = wss();
      return server ? shutDownWebSockets(server, CloseCode.GOING_AWAY, 'signaling shutting down', 2000) : Promise.resolve();
    },
  };
}

/**
 * Where the signaling server answers and its per-socket limits, from its options.
 * @param {SignalingOptions} options
 */
export function signalingConfig(options) {
  const path = normalisePath(options.path ?? '/peerjs');
  return {
    path,
    key: options.key ?? 'peerjs',
    /** pathname of the PeerServer WebSocket */
    wsPath: `${path === '/' ? '' : path}/peerjs`,
    /** @type {import('./guard.js').SignalingLimits} */
    limits: {
      maxPayload: options.maxPayload ?? SIGNALING_DEFAULTS.maxPayload,
      maxMessagesPerSecond: options.maxMessagesPerSecond ?? SIGNALING_DEFAULTS.maxMessagesPerSecond,
      maxMessagesBurst: options.maxMessagesBurst ?? SIGNALING_DEFAULTS.maxMessagesBurst,
    },
  };
}

/**
 * Whether a request pathname is the mount path or below it.
 * @param {string} pathname
 * @param {string} path normalised mount path
 */
export function isUnderPath(pathname, path) {
  return pathname === path || pathname.startsWith(path === '/' ? '/' : `${path}/`);
}

/**
 * The cluster-wide id directory, delivering to and evicting this node's sockets.
 * @param {import('../relay/broker.js').Broker} broker
 * @param {import('../relay/cluster-nodes.js').NodeDirectory | undefined} nodes
 * @param {Map<string, import('ws').WebSocket>} sockets this node's open sockets by peer id
 */
function peerDirectory(broker, nodes, sockets) {
  return new PeerDirectory(broker, nodes ?? new NodeDirectory(broker), {
    deliver: (id, message) => sendTo(sockets.get(id), message),
    // The same peer (same token) opened a socket on another node: the newer one wins.
    evict: (id) => sockets.get(id)?.close(CloseCode.ID_TAKEN, 'id claimed again by a newer connection'),
  });
}

/**
 * One log line per socket the guard closes, shaped as the relay's (code,
 * reason, transport, group); the peer id is public, its token never logged.
 * @param {import('../relay/index.js').RelayLogger | undefined} logger
 * @returns {((code: number, reason: string, id: string) => void) | undefined}
 */
export function closeLogger(logger) {
  if (!logger) return undefined;
  return (code, reason, id) => logger.warn({ event: 'close', code, reason, transport: 'signaling', group: null, peerId: id || null }, 'signaling closed a socket');
}

/** @param {string} p */
function normalisePath(p) {
  const withSlash = p.startsWith('/') ? p : `/${p}`;
  return withSlash.length > 1 && withSlash.endsWith('/') ? withSlash.slice(0, -1) : withSlash;
}
