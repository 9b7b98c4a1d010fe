// The lab's own web server for its peer pages (lab/pages/dist), so a fleet
// can measure any carlab server, whatever serves it: `carlab bench --url`
// and every `carlab agent` open peer.html from here with `server=<URL>`,
// and the pages' relay and PeerJS connections go straight to that server.
//
// What crosses origins, and how (the product server sends no CORS headers):
// - /config.json and /reports are same-origin for the page: this host passes
//   them on to the server under test (GET and POST, bodies bounded), so the
//   server answers them as it answers a phone;
// - the relay's and PeerJS's WebSockets come from this host's origin, which
//   the server refuses unless started with --allowed-origins naming it (or
//   '*'): checkServerAllowsOrigin says exactly that before a point starts;
// - PeerJS's HTTP calls are allowed from any origin by the PeerServer itself.

import http from 'node:http';
import WebSocket from 'ws';

import { REPORT_LIMITS } from '../../core/defaults.js';
import { createStaticHandler } from '../../server/static.js';
import { LAB_PAGES_DIST } from '../pages/build.js';

/**
 * @typedef {object} PageHost
 * @property {string} url e.g. http://127.0.0.1:8097 (what the browsers load pages from)
 * @property {string} origin the pages' origin, as the server under test sees it in Origin headers
 * @property {number} port
 * @property {(serverUrl: string) => void} setServer the server the proxied requests go to
 * @property {() => string | null} server
 * @property {() => Promise<void>} close
 */

/** A server URL without its trailing slash. @param {string} url */
export function baseOf(url) {
  return url.replace(/\/+$/, '');
}

/**
 * Reads a request body up to `max` bytes; rejects above.
 * @param {http.IncomingMessage} req @param {number} max
 * @returns {Promise<Buffer>}
 */
function readBody(req, max) {
  return new Promise((resolve, reject) => {
    /** @type {Buffer[]} */
    const chunks = [];
    let size = 0;
    req.on('data', (/** @type {Buffer} */ c) => {
      size += c.length;
      if (size > max) { reject(Object.assign(new Error('body too large'), { status: 413 })); req.destroy(); return; }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/**
 * Passes one request on to the server under test and its answer back.
 * @param {http.IncomingMessage} req @param {http.ServerResponse} res
 * @param {string} target absolute URL
 */
async function passOn(req, res, target) {
  try {
    const body = req.method === 'POST' ? await readBody(req, REPORT_LIMITS.maxBytes + 1024) : undefined;
    /** @type {Record<string, string>} */
    const headers = {};
    for (const h of ['content-type', 'user-agent', 'accept']) {
      const v = req.headers[h];
      if (typeof v === 'string') headers[h] = v;
    }
    const answer = await fetch(target, { method: req.method, headers, body: body ? new Uint8Array(body) : undefined, signal: AbortSignal.timeout(10_000) });
    const bytes = Buffer.from(await answer.arrayBuffer());
    /** @type {Record<string, string>} */
    const out = { 'Content-Length': String(bytes.length), 'Cache-Control': 'no-store' };
    for (const h of ['content-type', 'retry-after']) {
      const v = answer.headers.get(h);
      if (v) out[h] = v;
    }
    res.writeHead(answer.status, out);
    res.end(bytes);
  } catch (err) {
    const status = /** @type {any} */ (err).status ?? 502;
    const text = `${status === 413 ? 'too large' : `the server under test did not answer: ${/** @type {Error} */ (err).message}`}\n`;
    if (!res.headersSent) res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  }
}

/**
 * Starts a page host: the lab pages as static files (server/static.js, sirv),
 * /config.json and /reports passed on to the current server.
 * @param {{ server?: string | null, host?: string, port?: number, root?: string }} [o]
 *   host: where browsers reach it (default 127.0.0.1: the browsers run on this machine)
 * @returns {Promise<PageHost>}
 */
export async function startPageHost(o = {}) {
  const host = o.host ?? '127.0.0.1';
  /** @type {string | null} */
  let server = o.server ? baseOf(o.server) : null;
  const serveStatic = createStaticHandler({ root: o.root ?? LAB_PAGES_DIST, index: 'peer.html' });
  const httpServer = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if ((path === '/config.json' && (req.method === 'GET' || req.method === 'HEAD')) || (path === '/reports' && req.method === 'POST')) {
      if (!server) { res.writeHead(503, { 'Content-Type': 'text/plain' }); res.end('no server under test yet\n'); return; }
      passOn(req, res, `${server}${req.url}`);
      return;
    }
    serveStatic(req, res).catch(() => { if (!res.headersSent) res.writeHead(500); res.end(); });
  });
  // keep-alive sockets of the browsers must not hold close() up
  httpServer.keepAliveTimeout = 2000;
  await new Promise((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(o.port ?? 0, host, () => resolve(undefined));
  });
  httpServer.unref();
  const port = /** @type {import('node:net').AddressInfo} */ (httpServer.address()).port;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  return {
    url,
    origin: url,
    port,
    setServer(s) { server = baseOf(s); },
    server: () => server,
    close: () => new Promise((resolve) => {
      httpServer.close(() => resolve(undefined));
      httpServer.closeAllConnections();
    }),
  };
}

/** Page hosts of this process by port asked (0: any), kept for the whole sweep so the pages' origin stays one. */
const hosts = new Map();

/**
 * The page host of this process for `port` (started once, reused by every
 * point so the origin the server must allow stays the same), pointed at `server`.
 * @param {string} server
 * @param {number} [port] 0: a free one
 * @returns {Promise<PageHost>}
 */
export async function sharedPageHost(server, port = 0) {
  let host = hosts.get(port);
  if (!host) {
    host = startPageHost({ port });
    hosts.set(port, host);
    host.catch(() => hosts.delete(port));
  }
  const h = await host;
  h.setServer(server);
  return h;
}

/**
 * The sentence a fleet says when the server refuses its pages' origin.
 * @param {string} server @param {string} origin
 */
export function originRefusedText(server, origin) {
  return `the server at ${server} refused WebSockets from the bench's peer pages (origin ${origin}, served by the lab, `
    + `not by that server): start it with --allowed-origins ${origin} (or --allowed-origins '*'; give the bench `
    + '--pages-port PORT to keep that origin the same from run to run)';
}

/**
 * Checks that the server under test lets pages of `origin` open the relay's
 * WebSocket (the same rule guards PeerJS's): one upgrade with that Origin,
 * closed at once. Throws originRefusedText when refused (403), or a plain
 * error when the server cannot be reached.
 * @param {string} server base URL
 * @param {string} origin
 * @param {{ timeoutMs?: number }} [o]
 */
export async function checkServerAllowsOrigin(server, origin, o = {}) {
  const base = baseOf(server);
  let config;
  try {
    const res = await fetch(`${base}/config.json`, { signal: AbortSignal.timeout(o.timeoutMs ?? 5000) });
    if (!res.ok) throw new Error(`GET /config.json: ${res.status}`);
    config = await res.json();
  } catch (err) {
    throw new Error(`cannot reach the server under test at ${base}: ${/** @type {Error} */ (err).message}`);
  }
  const u = new URL(base);
  const wsUrl = `${u.protocol === 'https:' ? 'wss:' : 'ws:'}//${u.host}${config.relayPath ?? '/relay'}?g=carlab-origin-check`;
  const status = await new Promise((resolve, reject) => {
    const ws = new WebSocket(wsUrl, { origin, handshakeTimeout: o.timeoutMs ?? 5000 });
    ws.once('open', () => { ws.terminate(); resolve(101); });
    ws.once('unexpected-response', (_req, res) => { resolve(res.statusCode ?? 0); ws.terminate(); });
    ws.once('error', (err) => reject(new Error(`cannot open the relay's WebSocket at ${wsUrl}: ${err.message}`)));
  });
  if (status === 403) throw new Error(originRefusedText(base, origin));
  if (status !== 101) throw new Error(`the relay's WebSocket at ${wsUrl} answered ${status}`);
}
