// The PeerServer (npm `peer`) as carlab mounts it: on an express app of its
// own, with the WebSocket server created for our upgrade routing, its events
// counted (and, in a cluster, told to the id directory), and bad requests
// answered quietly.

import express from 'express';
import { ExpressPeerServer } from 'peer';
import { WebSocketServer } from 'ws';

/**
 * @typedef {object} PeerServerSetup
 * @property {import('node:http').Server | undefined} server the HTTP(S) server, when there is one
 * @property {string} path where the PeerServer's REST API is mounted
 * @property {string} key PeerServer key clients must present
 * @property {number} aliveTimeoutMs drop peers silent this long
 * @property {number} maxPayload largest WebSocket message
 * @property {import('./guard.js').SignalingCounters} counters
 * @property {Pick<import('./cluster.js').PeerDirectory, 'claimed' | 'released'> | null} directory
 */

/**
 * Mounts a PeerServer; its WebSocket server exists once this returns (the
 * PeerServer creates it when mounted).
 * @param {PeerServerSetup} setup
 * @returns {{ app: import('express').Express, wss: () => WebSocketServer | null }} app: serves the
 *   REST API under `path`; wss: the PeerServer's WebSocket server
 */
export function mountPeerServer({ server, path, key, aliveTimeoutMs, maxPayload, counters, directory }) {
  /** @type {WebSocketServer | null} */
  let wss = null;
  // The package's types want a Server; without one (handleRequest/handleUpgrade only) it gets
  // an empty object, which it only hands to its own WebSocket server factory, ours below.
  const peerApp = ExpressPeerServer(server ?? /** @type {import('node:http').Server} */ (/** @type {unknown} */ ({})), {
    key,
    path: '/',
    allow_discovery: false,
    alive_timeout: aliveTimeoutMs,
    corsOptions: { origin: true },
    // We route upgrades ourselves so several WebSocket servers share one port.
    createWebSocketServer: (wsOptions) => {
      wss = new WebSocketServer({ noServer: true, path: wsOptions.path, maxPayload, perMessageDeflate: false });
      return wss;
    },
  });
  countPeerEvents(peerApp, counters, directory);
  const app = express();
  app.disable('x-powered-by');
  app.use(path, restKeyCheck(key, counters));
  app.use(path, peerApp); // fires 'mount': the PeerServer initialises here
  app.use(quietErrorHandler(counters));
  return { app, wss: () => wss };
}

/**
 * Counts the PeerServer's peers and messages; tells the cluster's id
 * directory which ids this node holds.
 * @param {import('peer').PeerServerEvents} peerApp
 * @param {import('./guard.js').SignalingCounters} counters
 * @param {PeerServerSetup['directory']} directory
 */
export function countPeerEvents(peerApp, counters, directory) {
  // peersConnected is not counted here: a second claim of an id emits
  // 'connection' again without a 'disconnect', so the guard, which holds the
  // one live socket per id, sets it (signaling/guard.js).
  peerApp.on('connection', (client) => {
    counters.peersTotal++;
    directory?.claimed(client.getId(), client.getToken());
  });
  peerApp.on('disconnect', (client) => {
    directory?.released(client.getId());
  });
  peerApp.on('message', () => { counters.messages++; });
  peerApp.on('error', () => { counters.errors++; });
}

/**
 * The PeerServer's REST API, `<path>/<key>/id` and `<path>/<key>/peers`, checks
 * no key itself: this does, so a client of another deployment gets
 * `401 Invalid key provided` instead of an id.
 * @param {string} key
 * @param {Pick<import('./guard.js').SignalingCounters, 'badRequests'>} counters
 * @returns {import('express').RequestHandler}
 */
export function restKeyCheck(key, counters) {
  return (req, res, next) => {
    // req.path is below the mount path. Only the API's endpoints name a key
    // (`/<key>/id`, `/<key>/peers`); everything else (the banner, a plain GET of
    // the WebSocket path) is the PeerServer's to answer as before.
    const m = /^\/([^/]+)\/(?:id|peers)\/?$/.exec(req.path);
    if (!m) { next(); return; }
    const first = m[1];
    let given;
    try {
      given = decodeURIComponent(first);
    } catch {
      // Not percent-encoding: a bad request, as express itself would say (quietly).
      counters.badRequests++;
      res.status(400).type('text/plain').send('Bad Request');
      return;
    }
    if (given === key) { next(); return; }
    counters.badRequests++;
    res.status(401).type('text/plain').send('Invalid key provided');
  };
}

/**
 * Bad requests (e.g. a path that is not valid percent-encoding) end here
 * with their 4xx status, quietly: express's default handler would log a
 * stack trace per request, which anyone could use to flood the log.
 * @param {Pick<import('./guard.js').SignalingCounters, 'badRequests'>} counters
 * @returns {import('express').ErrorRequestHandler}
 */
export function quietErrorHandler(counters) {
  return (err, _req, res, _next) => {
    counters.badRequests++;
    const status = Number(err?.status ?? err?.statusCode);
    if (res.headersSent) { res.destroy(); return; }
    res.status(status >= 400 && status < 600 ? status : 500).type('text/plain').send(status >= 400 && status < 500 ? 'Bad Request' : 'Internal Server Error');
  };
}
