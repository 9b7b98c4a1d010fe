/**
 * One HTTP(S) server carrying everything `carlab start` offers: the built
 * web app, the relay (WebSocket), PeerJS signaling (HTTP + WebSocket) and
 * small JSON endpoints for health, metrics and client configuration.
 *
 * @module server/server
 */

import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { RELAY_LIMITS } from '../core/defaults.js';
import { NodeDirectory, createRelay, pathnameOf } from '../relay/index.js';
import { DirSceneStore, MemorySceneStore, SCENE_TTL_DEFAULT_MS } from './scene-store.js';
import { KvSceneStore, SCENE_BUCKET } from './scene-kv.js';
import { createSignaling } from '../signaling/index.js';
import { silentLogger } from './log.js';
import { createMetrics, wantsJson } from './metrics.js';
import { formatUrl, isWildcardHost, listLanAddresses, listLanUrls } from './net.js';
import { createStaticHandler, rawPathOf } from './static.js';
import { loadTlsCertificate } from './tls.js';
import { sendJson } from './json-response.js';
import { createStudyServices } from './study.js';
import { startTurnServer } from './turn.js';

const PROJECT_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The built web app served at `/`. */
export const DEFAULT_WEB_ROOT = path.join(PROJECT_ROOT, 'web', 'dist');

/** Read once: the version reported by /healthz. */
const VERSION = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')).version;

/** How long close() waits for clients to leave before cutting them off (--drain-timeout). */
export const DEFAULT_CLOSE_TIMEOUT_MS = 5000;

/**
 * HTTP timeouts (docs/operations.md). Node's defaults (60 s for headers, 300 s
 * for a request, checked every 30 s) let a slowloris hold a socket for
 * minutes; carlab's requests are small GETs, so the bounds can be tight.
 * WebSockets are not affected: an upgraded socket leaves the HTTP parser.
 */
/** @typedef {{ headersTimeoutMs: number, requestTimeoutMs: number, keepAliveTimeoutMs: number, checkIntervalMs: number }} HttpTimeouts */

/** @type {Readonly<HttpTimeouts>} */
export const HTTP_TIMEOUTS = Object.freeze({
  /** The whole header block must arrive within this (a slowloris never finishes it). */
  headersTimeoutMs: 10_000,
  /** The whole request, body included. */
  requestTimeoutMs: 30_000,
  /** An idle keep-alive connection is closed after this (Node's default; phones reconnect cheaply). */
  keepAliveTimeoutMs: 5_000,
  /** How often Node checks the two above (its default, 30 s, would let a slowloris stay 40 s). */
  checkIntervalMs: 1_000,
});

/** Methods the server answers at all; the rest get 405 and a closed connection. */
const METHODS = Object.freeze({ anywhere: ['GET', 'HEAD'], signaling: ['GET', 'HEAD', 'OPTIONS', 'POST'] });

/**
 * @typedef {import('./options.js').IceServer} IceServer
 */

/**
 * @typedef {object} CarlabServerOptions
 * @property {boolean} [http] plain HTTP instead of HTTPS
 * @property {number} [port] default 0: any free port
 * @property {string} [host] default `127.0.0.1`; `0.0.0.0` to serve the LAN
 * @property {string} [cert] PEM certificate file (with `key`) instead of the self-signed one
 * @property {string} [key] PEM private key file
 * @property {string} [certDir] where the self-signed pair is kept; default `.carlab/certs`
 * @property {{ cert: string, key: string }} [tls] PEM pair in memory; wins over the files
 * @property {string} [webRoot] folder served at `/`; default `web/dist`
 * @property {string[]} [extraWebRoots] folders served at `/` for paths `webRoot` has no file
 *   for, in order (the lab serves its own pages this way; `carlab start` has none)
 * @property {IceServer[]} [iceServers] for /config.json; default []
 * @property {boolean | { port?: number, ttlS?: number }} [turn] also run coturn (server/turn.js)
 *   beside the server, stopped with it; /config.json then adds a TURN entry with fresh
 *   short-lived credentials on every request
 * @property {string} [relayPath] default `/relay`
 * @property {string} [peerjsPath] default `/peerjs`
 * @property {string} [peerjsKey] default `peerjs`
 * @property {number} [maxPayload] relay limit
 * @property {number} [queueSoftBytes] relay limit
 * @property {number} [queueHardBytes] relay limit
 * @property {number} [ackTimeoutMs] relay limit
 * @property {number} [maxMessagesPerSecond] relay per-socket message rate; the burst is twice that
 * @property {string[]} [allowedOrigins] WebSocket origins allowed by relay and signaling
 * @property {number} [closeTimeoutMs] bound on a graceful close(); default 5000
 * @property {import('../relay/broker.js').Broker} [broker] join a cluster through this broker (NATS):
 *   relay groups and PeerJS ids span every node on it. The caller owns and closes it.
 * @property {string[]} [extraUpgradePaths] upgrade paths (prefixes) other services attached to
 *   this server will take, so the 404 listener leaves them alone (the lab's baselines)
 * @property {import('./log.js').Logger} [logger] structured log (server/log.js); default: silent
 * @property {Partial<HttpTimeouts>} [httpTimeouts] override HTTP_TIMEOUTS (tests use short ones)
 * @property {string} [record] record every accepted client report under this folder (docs/study.md)
 * @property {string} [dashboardToken] the token /dashboard asks for; default: a random one (see `dashboardToken`)
 * @property {number} [reportIntervalMs] how often clients report, told by /config.json (default 5000; 0: only when leaving)
 * @property {{ dir: string | null, ttlMs?: number } | null} [keptScenes] keep each group's scene when its last member
 *   leaves and give it to its next first member (docs/operations.md "Kept scenes"): on disk under `dir`, across
 *   restarts, or in memory (`dir` null); with `broker` (a cluster) in a JetStream bucket instead; absent or null: not kept
 */

/**
 * @typedef {object} CarlabServer
 * @property {http.Server | https.Server} server the listening server
 * @property {string} url the local URL, e.g. `https://localhost:8443/`
 * @property {string[]} urls `url` first, then one URL per LAN address when listening on all interfaces
 * @property {Awaited<ReturnType<typeof createRelay>>} relay
 * @property {Awaited<ReturnType<typeof createSignaling>>} signaling
 * @property {{ certPath: string, source: 'provided' | 'reused' | 'generated' | 'memory' } | null} tls
 *   where the certificate came from (never the key); null for plain HTTP
 * @property {() => Promise<void>} close graceful shutdown (drain), bounded by `closeTimeoutMs`: stops
 *   accepting, tells WebSocket clients 1001 GOING_AWAY (they reconnect), waits for them, cuts off the rest
 * @property {import('./metrics.js').CarlabMetrics} metrics the Prometheus registry behind /metrics
 * @property {import('./study.js').StudyServices} study client reports, the recording and the dashboard
 * @property {string} dashboardUrl the live dashboard with its token: for the person running the study, never a phone
 * @property {SceneStore | null} sceneStore where groups' scenes are kept, or null
 */

/**
 * Create, compose and start the carlab server.
 *
 * @param {CarlabServerOptions} [options]
 * @returns {Promise<CarlabServer>}
 */
export async function createCarlabServer(options = {}) {
  const {
    port = 0,
    host = '127.0.0.1',
    webRoot = DEFAULT_WEB_ROOT,
    iceServers = [],
    closeTimeoutMs = DEFAULT_CLOSE_TIMEOUT_MS,
  } = options;
  const protocol = options.http ? 'http' : 'https';

  const logger = options.logger ?? silentLogger();
  const { server, tls } = await createHttpServer(options);
  const sockets = trackSockets(server);
  const metrics = createMetrics();
  // TURN first: a missing turnserver fails the start before anything listens.
  const turnOptions = typeof options.turn === 'object' ? options.turn : {};
  const turn = options.turn
    ? await startTurnServer({ host: isWildcardHost(host) ? '0.0.0.0' : host, publicHost: isWildcardHost(host) ? listLanAddresses()[0] ?? '127.0.0.1' : undefined, ...turnOptions })
    : null;
  const sceneStore = await openSceneStore(options, logger);
  const study = createStudyServices(options, { broker: options.broker, logger, version: VERSION, onReport: metrics.countReport });
  // The study first: the relay hands it the reports that come as STATS.
  const { relay, signaling } = await createServices(server, options, { logger, observer: metrics.observer, reports: { take: study.intake.takeStats }, sceneStore })
    .catch((err) => { study.close(); throw err; });
  const sceneSweep = sceneStore ? setInterval(() => sceneStore.sweep(), SCENE_SWEEP_MS) : null;
  sceneSweep?.unref();
  metrics.attach({ relay, signaling });
  const serveStatic = createStaticChain([webRoot, ...(options.extraWebRoots ?? [])]);
  let draining = false;
  const jsonRoutes = createJsonRoutes({
    relay, signaling, iceServers: turn ? () => [...iceServers, ...turn.iceServers()] : iceServers,
    startedAt: performance.now(), cpuMeter: createCpuMeter(),
    hasWebBuild: () => existsSync(path.join(webRoot, 'index.html')),
    isDraining: () => draining,
    reports: study.clientConfig,
    keptScenes: sceneStore ? { ttlS: Math.round(sceneStore.ttlMs / 1000) } : null,
  });
  server.on('request', createRequestListener(createRequestHandler({ signaling, jsonRoutes, serveStatic, metrics, study }), logger));
  server.on('connect', refuseConnect);
  // Registered after the relay's and signaling's own listeners: every other
  // upgrade gets an answer instead of a socket left hanging.
  server.on('upgrade', createUpgradeFallback({ relayPath: relay.path, signaling, extraUpgradePaths: options.extraUpgradePaths }));

  try {
    await listen(server, port, host);
  } catch (err) {
    await Promise.allSettled([relay.close(), signaling.close(), turn?.close()]);
    study.close();
    if (sceneSweep) clearInterval(sceneSweep);
    throw err;
  }

  const address = /** @type {import('node:net').AddressInfo} */ (server.address());
  const urls = urlsFor(protocol, host, address.port);

  /** @type {Promise<void> | undefined} */
  let closing;
  return {
    server,
    url: urls[0],
    urls,
    relay,
    signaling,
    tls,
    metrics,
    study,
    dashboardUrl: `${urls[0]}dashboard?token=${encodeURIComponent(study.dashboardToken)}`,
    sceneStore,
    close() {
      if (!closing) {
        draining = true;
        logger.info({ event: 'drain', clients: relay.wss.clients.size, timeoutMs: closeTimeoutMs }, 'draining: clients are told 1001 and reconnect');
        const startedAt = performance.now();
        study.closeFeeds(); // an open dashboard feed would hold the drain to its timeout
        closing = closeGracefully({ server, sockets, services: [relay, signaling], timeoutMs: closeTimeoutMs }).finally(async () => {
          study.close(); // after the clients left: their last reports are recorded
          if (sceneSweep) clearInterval(sceneSweep);
          await sceneStore?.flush(); // the scenes of the groups that emptied as their members left
          if (sceneStore instanceof KvSceneStore) sceneStore.close();
          await turn?.close();
          logger.info({ event: 'closed', ms: Math.round(performance.now() - startedAt) }, 'closed');
        });
      }
      return closing;
    },
  };
}

/** How often kept scenes past their time to live are removed. */
const SCENE_SWEEP_MS = 3600_000;

/** A store of kept scenes: files (one process), memory, or a JetStream bucket (a cluster). @typedef {DirSceneStore | MemorySceneStore | KvSceneStore} SceneStore */

/**
 * The store of kept scenes `options.keptScenes` asks for, opened (its files or its bucket read;
 * damaged scenes logged and skipped), or null: not asked for. In a cluster (`broker`) the scenes
 * are in a JetStream bucket every node shares; a NATS without JetStream fails the start, saying so.
 * @param {CarlabServerOptions} options @param {import('./log.js').Logger} logger
 * @returns {Promise<SceneStore | null>}
 */
async function openSceneStore(options, logger) {
  const kept = options.keptScenes;
  if (!kept) return null;
  const ttlMs = kept.ttlMs ?? SCENE_TTL_DEFAULT_MS;
  if (options.broker) {
    if (!options.broker.keyValue) return null;
    return new KvSceneStore({ kv: await options.broker.keyValue(SCENE_BUCKET, { ttlMs }), ttlMs, log: logger }).open();
  }
  if (kept.dir === null) return new MemorySceneStore({ ttlMs }).open();
  return new DirSceneStore({ dir: kept.dir, ttlMs, log: logger }).open();
}

/**
 * The HTTP or HTTPS server for `options`, not yet listening, and where its
 * certificate came from: a pair in memory, files, or the self-signed one.
 *
 * @param {Pick<CarlabServerOptions, 'http' | 'tls' | 'cert' | 'key' | 'certDir' | 'httpTimeouts'>} options
 * @returns {Promise<{ server: http.Server | https.Server, tls: CarlabServer['tls'] }>}
 */
export async function createHttpServer(options) {
  const limits = httpServerOptions(options.httpTimeouts);
  if (options.http) return { server: http.createServer(limits), tls: null };
  if (options.tls) {
    return { server: https.createServer({ ...limits, cert: options.tls.cert, key: options.tls.key }), tls: { certPath: '', source: 'memory' } };
  }
  const material = await loadTlsCertificate({ certPath: options.cert, keyPath: options.key, certDir: options.certDir });
  return {
    server: https.createServer({ ...limits, cert: material.cert, key: material.key }),
    tls: { certPath: material.certPath, source: material.source },
  };
}

/**
 * node:http server options for HTTP_TIMEOUTS with `overrides` applied.
 *
 * @param {Partial<HttpTimeouts>} [overrides]
 * @returns {http.ServerOptions}
 */
export function httpServerOptions(overrides = {}) {
  const t = { ...HTTP_TIMEOUTS, ...overrides };
  return {
    headersTimeout: t.headersTimeoutMs,
    requestTimeout: t.requestTimeoutMs,
    keepAliveTimeout: t.keepAliveTimeoutMs,
    connectionsCheckingInterval: t.checkIntervalMs,
  };
}

/**
 * The 'connect' listener: carlab is no proxy. Without one Node drops the
 * socket silently; a status says why.
 *
 * @param {http.IncomingMessage} _req
 * @param {import('node:stream').Duplex} socket
 */
export function refuseConnect(_req, socket) {
  socket.on('error', () => {});
  socket.once('finish', () => socket.destroy());
  socket.end('HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, HEAD\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: 19\r\n\r\nMethod Not Allowed\n');
}

/**
 * Track the server's raw sockets: upgraded (WebSocket) ones escape
 * closeAllConnections(), so close() must be able to destroy them itself.
 *
 * @param {http.Server | https.Server} server
 * @returns {Set<import('node:net').Socket>} the open sockets, kept current
 */
export function trackSockets(server) {
  /** @type {Set<import('node:net').Socket>} */
  const sockets = new Set();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  return sockets;
}

/**
 * Attach the relay and signaling to `server`, passing only the options set
 * so the factories' own defaults apply.
 *
 * @param {http.Server | https.Server} server
 * @param {CarlabServerOptions} options
 * @param {{ logger: import('./log.js').Logger, observer: import('../relay/index.js').RelayObserver,
 *   reports?: import('../relay/index.js').ReportSink, sceneStore?: SceneStore | null }} hooks
 * @returns {Promise<{ relay: CarlabServer['relay'], signaling: CarlabServer['signaling'] }>}
 */
async function createServices(server, options, { logger, observer, reports, sceneStore }) {
  // One node directory per process: the relay and signaling share its heartbeats.
  const nodes = options.broker ? new NodeDirectory(options.broker) : undefined;
  const relay = await createRelay(withoutUndefined({
    server,
    broker: options.broker,
    nodes,
    path: options.relayPath,
    maxPayload: options.maxPayload,
    queueSoftBytes: options.queueSoftBytes,
    queueHardBytes: options.queueHardBytes,
    ackTimeoutMs: options.ackTimeoutMs,
    maxMessagesPerSecond: options.maxMessagesPerSecond,
    maxMessagesBurst: options.maxMessagesPerSecond === undefined ? undefined : RELAY_LIMITS.burstFactor * options.maxMessagesPerSecond,
    allowedOrigins: options.allowedOrigins,
    // Leave room inside the drain bound for signaling and the HTTP server after the relay.
    closeTimeoutMs: options.closeTimeoutMs === undefined ? undefined : Math.max(0, options.closeTimeoutMs - 500),
    logger,
    observer,
    reports,
    sceneStore,
  }));
  const signaling = await createSignaling(withoutUndefined({
    server,
    broker: options.broker,
    nodes,
    path: options.peerjsPath,
    key: options.peerjsKey,
    allowedOrigins: options.allowedOrigins,
    logger,
  }));
  return { relay, signaling };
}

/**
 * @typedef {(req: http.IncomingMessage, res: http.ServerResponse) => Promise<void>} RequestHandler
 */

/**
 * One static handler over several roots: the first root that has the file
 * answers; the last one answers 404.
 *
 * @param {string[]} roots at least one
 * @returns {RequestHandler}
 */
export function createStaticChain(roots) {
  let serveStatic = createStaticHandler({ root: roots[roots.length - 1] });
  for (const root of roots.slice(0, -1).reverse()) serveStatic = createStaticHandler({ root, onNotFound: serveStatic });
  return serveStatic;
}

/**
 * A JSON body with a status other than 200 (a route may return one).
 */
export class JsonAnswer {
  /** @param {number} status @param {unknown} body */
  constructor(status, body) {
    this.status = status;
    this.body = body;
  }
}

/**
 * The JSON endpoints, by exact path; each returns the body to send (200),
 * or a JsonAnswer.
 *
 * @typedef {Record<string, () => unknown>} JsonRoutes
 */

/**
 * @param {object} parts
 * @param {{ path: string, metrics(): object, readiness?(): { ready: boolean, reason: string } }} parts.relay
 * @param {{ path: string, key: string, metrics(): object }} parts.signaling
 * @param {IceServer[] | (() => IceServer[])} parts.iceServers handed to browsers by /config.json
 *   (a function: asked on every request, so TURN credentials are fresh)
 * @param {number} parts.startedAt performance.now() at start, for /healthz's uptime
 * @param {() => number} parts.cpuMeter this process's CPU % since the last call
 * @param {() => boolean} [parts.hasWebBuild] whether the pages are there to serve
 * @param {() => boolean} [parts.isDraining] whether close() began (then /readyz says 503)
 * @param {() => { intervalMs: number, recording: boolean }} [parts.reports] client reports: how often, and
 *   whether this server records them (the pages say so)
 * @param {{ ttlS: number } | null} [parts.keptScenes] whether this server keeps groups' scenes, and how long (the pages say so)
 * @returns {JsonRoutes}
 */
export function createJsonRoutes({ relay, signaling, iceServers, startedAt, cpuMeter, hasWebBuild = () => true, isDraining = () => false, reports, keptScenes = null }) {
  return {
    '/healthz': () => ({
      status: 'ok',
      version: VERSION,
      uptimeS: roundTo((performance.now() - startedAt) / 1000, 3),
    }),
    '/readyz': () => readiness(relay, hasWebBuild, isDraining),
    '/metrics': () => ({
      relay: relay.metrics(),
      signaling: signaling.metrics(),
      process: { pid: process.pid, rssBytes: process.memoryUsage.rss(), cpuPct: cpuMeter() },
    }),
    '/config.json': () => ({
      iceServers: typeof iceServers === 'function' ? iceServers() : iceServers,
      relayPath: relay.path,
      peerjs: { path: signaling.path, key: signaling.key },
      ...(reports ? { reports: reports() } : {}),
      // only when scenes are kept: the pages say so (web/src/ui/kept-notice.js)
      ...(keptScenes ? { keptScenes } : {}),
    }),
  };
}

/**
 * Route one request: signaling's HTTP API under its path, then the JSON
 * routes, then the static files.
 *
 * @param {object} parts
 * @param {{ path: string, handleRequest(req: http.IncomingMessage, res: http.ServerResponse): boolean }} parts.signaling
 * @param {JsonRoutes} parts.jsonRoutes
 * @param {RequestHandler} parts.serveStatic
 * @param {Pick<import('./metrics.js').CarlabMetrics, 'text' | 'contentType'>} [parts.metrics] the exposition
 *   /metrics answers unless the client asks for JSON
 * @param {Pick<import('./study.js').StudyServices, 'handleRequest'>} [parts.study] /reports and /dashboard
 * @returns {RequestHandler}
 */
export function createRequestHandler({ signaling, jsonRoutes, serveStatic, metrics, study }) {
  return async function handleRequest(req, res) {
    // Reports are POSTed; the dashboard checks its token itself. Both before the method rule.
    if (study?.handleRequest(req, res)) return;
    const pathname = rawPathOf(req.url ?? '/');
    const underSignaling = isUnder(pathname, signaling.path);
    const allowed = underSignaling ? METHODS.signaling : METHODS.anywhere;
    if (!allowed.includes(req.method ?? '')) {
      // No body is read, so the connection cannot be reused: close it.
      sendJson(res, 405, { error: 'method not allowed' }, { Allow: allowed.join(', '), Connection: 'close' });
      return;
    }
    if (underSignaling) {
      if (!signaling.handleRequest(req, res)) sendJson(res, 404, { error: 'not found' });
      return;
    }
    if (pathname === '/metrics' && metrics && !wantsJson(req)) {
      await sendText(res, metrics.contentType, await metrics.text());
      return;
    }
    const route = Object.hasOwn(jsonRoutes, pathname) ? jsonRoutes[pathname] : undefined;
    if (route) {
      answerJsonRoute(req, res, route);
      return;
    }
    await serveStatic(req, res);
  };
}

/**
 * @param {http.ServerResponse} res
 * @param {string} contentType
 * @param {string} text
 * @returns {Promise<void>}
 */
async function sendText(res, contentType, text) {
  res.writeHead(200, {
    'Content-Type': contentType,
    'Content-Length': Buffer.byteLength(text),
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
  });
  res.end(text);
}

/**
 * Answer a JSON route: GET and HEAD only.
 *
 * @param {http.IncomingMessage} req
 * @param {http.ServerResponse} res
 * @param {() => unknown} route
 */
function answerJsonRoute(req, res, route) {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    sendJson(res, 405, { error: 'method not allowed' }, { Allow: 'GET, HEAD' });
    return;
  }
  const answer = route();
  if (answer instanceof JsonAnswer) sendJson(res, answer.status, answer.body);
  else sendJson(res, 200, answer);
}

/**
 * /readyz: ready to take clients (listening and not draining, since it
 * answers; the web build there; in a cluster, NATS reachable). 503 says which
 * check failed, so a balancer stops sending clients to a draining node.
 *
 * @param {{ readiness?(): { ready: boolean, reason: string } }} relay
 * @param {() => boolean} hasWebBuild
 * @param {() => boolean} [isDraining]
 * @returns {JsonAnswer}
 */
export function readiness(relay, hasWebBuild, isDraining = () => false) {
  const cluster = relay.readiness?.() ?? { ready: true, reason: 'single process' };
  const checks = {
    listening: isDraining() ? { ok: false, reason: 'draining: shutting down' } : { ok: true },
    webBuild: { ok: hasWebBuild(), ...(hasWebBuild() ? {} : { reason: 'no index.html in the web root (build the app)' }) },
    cluster: { ok: cluster.ready, reason: cluster.reason },
  };
  const ready = Object.values(checks).every((check) => check.ok);
  return new JsonAnswer(ready ? 200 : 503, { status: ready ? 'ready' : 'not ready', checks });
}

/**
 * The server's 'request' listener: runs `handle` and turns a rejection into
 * a 500 (or a destroyed response once headers are out), so a handler bug
 * costs one response, never the process.
 *
 * @param {RequestHandler} handle
 * @param {Pick<import('./log.js').Logger, 'error'>} [logger] told of each failure
 * @returns {(req: http.IncomingMessage, res: http.ServerResponse) => void}
 */
export function createRequestListener(handle, logger) {
  return (req, res) => {
    handle(req, res).catch((/** @type {unknown} */ err) => {
      // No path: one under signaling's carries the PeerServer key.
      logger?.error({ event: 'request-error', method: req.method, code: errorCodeOf(err), err }, 'request failed');
      if (!res.headersSent) sendJson(res, 500, { error: 'internal error', code: errorCodeOf(err) ?? 'ERR_INTERNAL' });
      else res.destroy();
    });
  };
}

/**
 * @param {unknown} err
 * @returns {unknown} the error's `code`, when it has one
 */
function errorCodeOf(err) {
  return err === null || err === undefined ? undefined : /** @type {{ code?: unknown }} */ (err).code;
}

/**
 * The 'upgrade' listener registered after the services' own: answers 404 to
 * every upgrade neither the relay, signaling nor an extra service takes.
 *
 * @param {object} parts
 * @param {string} parts.relayPath
 * @param {{ path: string, wsPath?: string }} parts.signaling
 * @param {string[]} [parts.extraUpgradePaths] prefixes other attached services take
 * @returns {(req: http.IncomingMessage, socket: import('node:stream').Duplex) => void}
 */
export function createUpgradeFallback({ relayPath, signaling, extraUpgradePaths }) {
  // Signaling upgrades only its WebSocket path; the contract promises no more
  // than "under path", so fall back to the whole prefix when it is not exposed.
  const signalingUpgradePath = signaling.wsPath ?? signaling.path;
  return (req, socket) => {
    if (belongsToServices(req.url ?? '/', relayPath, signalingUpgradePath, signalingUpgradePath !== signaling.path)) return;
    // Read the path as the services do (pathnameOf), or an odd target such as
    // `/floor#x` would pass here and then be ignored by the service too: a hang.
    const pathname = pathnameOf(req.url);
    if ((extraUpgradePaths ?? []).some((prefix) => pathname.startsWith(prefix))) return;
    refuseUpgrade(socket);
  };
}

/**
 * Answer an upgrade with a plain 404 and close the socket.
 *
 * @param {import('node:stream').Duplex} socket
 */
function refuseUpgrade(socket) {
  socket.on('error', () => {});
  socket.once('finish', () => socket.destroy());
  socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: 10\r\n\r\nNot Found\n');
}

/**
 * The URLs to print: the local one first (`localhost` for a wildcard host),
 * then one per LAN address when listening on every interface.
 *
 * @param {'http' | 'https'} protocol
 * @param {string} host the address listened on
 * @param {number} port the bound port
 * @returns {[string, ...string[]]}
 */
export function urlsFor(protocol, host, port) {
  const url = formatUrl(protocol, isWildcardHost(host) ? 'localhost' : host, port);
  return [url, ...(isWildcardHost(host) ? listLanUrls(protocol, port) : [])];
}

/**
 * Whether an upgrade request is one the relay or signaling will take.
 *
 * The path is read exactly as the services read it (`pathnameOf`: the
 * request target up to `?`, nothing normalised), so every upgrade gets an
 * answer: theirs, or this server's 404. The 404 must never race their
 * handshake, and no request may be left hanging because the two disagree
 * (`/./relay`, `/relay#x` or `http://host/relay` are not the relay's).
 *
 * @param {string} target request target (`req.url`)
 * @param {string} relayPath
 * @param {string} signalingPath signaling's WebSocket path, or its mount path
 *   (then anything under it counts)
 * @param {boolean} [signalingExact] `signalingPath` is the WebSocket path itself: only
 *   it counts (an upgrade to a path under it would otherwise get no answer at all)
 * @returns {boolean}
 */
export function belongsToServices(target, relayPath, signalingPath, signalingExact = false) {
  const pathname = pathnameOf(target);
  return pathname === relayPath || (signalingExact ? pathname === signalingPath : isUnder(pathname, signalingPath));
}

/**
 * @param {string} pathname
 * @param {string} prefix
 * @returns {boolean}
 */
function isUnder(pathname, prefix) {
  return pathname === prefix || pathname.startsWith(prefix.endsWith('/') ? prefix : `${prefix}/`);
}

/**
 * @param {http.Server | https.Server} server
 * @param {number} port
 * @param {string} host
 * @returns {Promise<void>}
 */
function listen(server, port, host) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/**
 * Stop accepting, close the services, then the server; cut off whoever is
 * still connected when the deadline passes. Rejects with the first service's
 * close failure, unless the deadline passed first.
 *
 * @param {object} parts
 * @param {http.Server | https.Server} parts.server
 * @param {Set<import('node:net').Socket>} parts.sockets
 * @param {{ close(): Promise<void> }[]} parts.services
 * @param {number} parts.timeoutMs
 * @returns {Promise<void>}
 */
export async function closeGracefully({ server, sockets, services, timeoutMs }) {
  const deadline = Date.now() + timeoutMs;
  /** @type {Promise<void>} */
  const serverClosed = new Promise((resolve) => server.close(() => resolve()));
  server.closeIdleConnections?.();

  const results = await beforeDeadline(Promise.allSettled(services.map((service) => service.close())), deadline);
  server.closeIdleConnections?.();
  if ((await beforeDeadline(serverClosed, deadline)) === TIMED_OUT) {
    server.closeAllConnections?.();
    for (const socket of sockets) socket.destroy();
    await serverClosed;
  }

  const failure = results === TIMED_OUT ? null : results.find((result) => result.status === 'rejected');
  if (failure && failure.status === 'rejected') throw failure.reason;
}

const TIMED_OUT = Symbol('timed out');

/**
 * @template T
 * @param {Promise<T>} promise
 * @param {number} deadline epoch ms
 * @returns {Promise<T | typeof TIMED_OUT>}
 */
async function beforeDeadline(promise, deadline) {
  /** @type {NodeJS.Timeout | undefined} */
  let timer;
  const timeout = new Promise((resolve) => {
    timer = setTimeout(() => resolve(TIMED_OUT), Math.max(0, deadline - Date.now()));
  });
  try {
    return /** @type {T | typeof TIMED_OUT} */ (await Promise.race([promise, timeout]));
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A function returning this process's CPU use, in % of one core, since its
 * previous call (since creation for the first).
 *
 * @returns {() => number}
 */
export function createCpuMeter() {
  let lastUsage = process.cpuUsage();
  let lastTime = performance.now();
  return () => {
    const usage = process.cpuUsage();
    const now = performance.now();
    const cpuMicros = usage.user - lastUsage.user + (usage.system - lastUsage.system);
    const elapsedMicros = (now - lastTime) * 1000;
    lastUsage = usage;
    lastTime = now;
    return elapsedMicros > 0 ? roundTo((100 * cpuMicros) / elapsedMicros, 1) : 0;
  };
}

/**
 * @param {number} value
 * @param {number} digits
 * @returns {number}
 */
function roundTo(value, digits) {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

/**
 * Drop undefined fields so the factories' own defaults apply.
 *
 * @template {Record<string, unknown>} T
 * @param {T} object
 * @returns {T}
 */
function withoutUndefined(object) {
  return /** @type {T} */ (Object.fromEntries(Object.entries(object).filter(([, value]) => value !== undefined)));
}
