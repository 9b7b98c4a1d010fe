// WebRTC signaling: the PeerServer from the npm package `peer`, mounted on
// carlab's own HTTP(S) server. Its REST API answers under `path`
// (`<path>/<key>/id`), its WebSocket under `<path>/peerjs`.

import express from 'express';
import { ExpressPeerServer } from 'peer';
import { WebSocketServer } from 'ws';
import { isOriginAllowed, rejectUpgrade } from '../relay/upgrade.js';
import { pathnameOf } from '../relay/index.js';

/**
 * @typedef {object} SignalingOptions
 * @property {import('node:http').Server} [server] HTTP(S) server to attach to
 * @property {string} [path] mount path, default '/peerjs'
 * @property {string} [key] PeerServer key clients must present, default 'peerjs'
 * @property {string[]} [allowedOrigins] as for the relay (same-origin by default)
 * @property {number} [aliveTimeoutMs] drop peers silent this long (PeerJS pings every 5 s)
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
  const counters = { peersConnected: 0, peersTotal: 0, messages: 0, errors: 0 };

  /** @type {WebSocketServer | null} */
  let wss = null;
  const peerApp = ExpressPeerServer(/** @type {any} */ (options.server ?? {}), {
    key,
    path: '/',
    allow_discovery: false,
    alive_timeout: options.aliveTimeoutMs ?? 60000,
    corsOptions: { origin: true },
    // We route upgrades ourselves so several WebSocket servers share one port.
    createWebSocketServer: (wsOptions) => {
      wss = new WebSocketServer({ noServer: true, path: wsOptions.path, maxPayload: 64 * 1024 });
      return wss;
    },
  });
  peerApp.on('connection', () => { counters.peersConnected++; counters.peersTotal++; });
  peerApp.on('disconnect', () => { counters.peersConnected = Math.max(0, counters.peersConnected - 1); });
  peerApp.on('message', () => { counters.messages++; });
  peerApp.on('error', () => { counters.errors++; });

  const root = express();
  root.disable('x-powered-by');
  root.use(path, peerApp); // fires 'mount': the PeerServer initialises here

  const handleUpgrade = (req, socket, head) => {
    if (!isOriginAllowed(req, options.allowedOrigins)) {
      rejectUpgrade(socket, 403, 'Origin not allowed');
      return;
    }
    const server = /** @type {WebSocketServer} */ (wss);
    server.handleUpgrade(req, socket, head, (ws) => server.emit('connection', ws, req));
  };

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
    metrics: () => ({ path, ...counters }),
    close() {
      if (onServerUpgrade) options.server?.off('upgrade', onServerUpgrade);
      return new Promise((resolve) => {
        if (!wss) return resolve();
        for (const ws of wss.clients) ws.close(1001, 'signaling shutting down');
        const force = setTimeout(() => { for (const ws of wss.clients) ws.terminate(); }, 2000);
        wss.close(() => { clearTimeout(force); resolve(); });
      });
    },
  };
}

/** @param {string} p */
function normalisePath(p) {
  const withSlash = p.startsWith('/') ? p : `/${p}`;
  return withSlash.length > 1 && withSlash.endsWith('/') ? withSlash.slice(0, -1) : withSlash;
}
