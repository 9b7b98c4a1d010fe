/**
 * The live study dashboard (docs/study.md): a page for the person running a
 * study, at `/dashboard?token=...`, its assets, and a Server-Sent Events feed
 * (`/dashboard/feed`) carrying a snapshot of the live study and then, at most
 * once per interval, what changed. Every request needs the dashboard token
 * (query `token` or `Authorization: Bearer`), compared in constant time.
 *
 * The page is static HTML and cannot carry the token (it must appear only in
 * the URLs the page's script requests itself), so its own assets (script,
 * style, Chart.js: public code, no data) are requested with an asset key
 * derived from the token (HMAC) that opens those assets and nothing else; the
 * feed, the only thing with data, needs the token itself.
 *
 * @module server/dashboard
 */

import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { isEmptyDelta } from './live-study.js';

/** Where the page's files live. */
const PAGE_DIR = fileURLToPath(new URL('./dashboard/', import.meta.url));

/** The feed's limits. */
export const DASHBOARD_LIMITS = Object.freeze({
  /** a feed whose socket holds more than this unsent (beyond its snapshot) is dropped (bytes) */
  maxBufferedBytes: 1024 * 1024,
  /** a comment line every this often keeps proxies and the browser from closing an idle feed (ms) */
  keepAliveMs: 15_000,
  /** EventSource waits this long before reconnecting (ms) */
  retryMs: 2000,
});

/** Headers on every dashboard response. */
const COMMON_HEADERS = Object.freeze({
  'Cache-Control': 'no-store',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
});

/** The page's policy: its own scripts, styles and feed only; no inline script or style. */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * @typedef {object} Asset
 * @property {string} type content type
 * @property {() => Buffer} body read from disk once per process
 */

/** @type {Map<string, Buffer>} */
const fileCache = new Map();

/** @param {string} file @returns {Buffer} */
function readOnce(file) {
  let body = fileCache.get(file);
  if (!body) {
    body = readFileSync(file);
    fileCache.set(file, body);
  }
  return body;
}

/**
 * Chart.js's browser bundle, found through the package (its exports name no
 * such subpath, so resolve the package and take the bundle beside it).
 */
export function chartJsPath() {
  const main = createRequire(import.meta.url).resolve('chart.js');
  return path.join(path.dirname(main), 'chart.umd.min.js');
}

/** The assets under /dashboard/ (besides the page and the feed). @type {Record<string, Asset>} */
const ASSETS = {
  '/dashboard/dashboard.js': { type: 'text/javascript; charset=utf-8', body: () => readOnce(path.join(PAGE_DIR, 'dashboard.js')) },
  '/dashboard/dashboard.css': { type: 'text/css; charset=utf-8', body: () => readOnce(path.join(PAGE_DIR, 'dashboard.css')) },
  '/dashboard/chart.js': { type: 'text/javascript; charset=utf-8', body: () => readOnce(chartJsPath()) },
};

/**
 * @typedef {object} Dashboard
 * @property {(req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => boolean} handleRequest
 *   answers /dashboard, /dashboard/ and everything under /dashboard/ (true); false, untouched, otherwise
 * @property {() => void} close ends every feed and stops the ticks; later feed requests get 503
 * @property {() => number} clients feeds open now
 */

/**
 * @typedef {object} Feed
 * @property {import('node:http').ServerResponse} res
 * @property {number} allowance bytes it may hold unsent before it is dropped
 */

/**
 * Creates the dashboard.
 *
 * @param {{ study: Pick<import('./live-study.js').LiveStudy, 'snapshot' | 'delta'>, token: string,
 *   logger?: Pick<import('./log.js').Logger, 'warn' | 'debug'>, intervalMs?: number }} options
 * @returns {Dashboard}
 */
export function createDashboard({ study, token, logger, intervalMs = 1000 }) {
  if (typeof token !== 'string' || token.length === 0) throw new Error('the dashboard needs a token');
  const tokenDigest = sha256(token);
  const assetKey = createHmac('sha256', token).update('carlab dashboard assets').digest('hex').slice(0, 32);
  const assetKeyDigest = sha256(assetKey);
  /** @type {Buffer | null} */
  let page = null;
  /** @type {Set<Feed>} */
  const feeds = new Set();
  /** @type {ReturnType<typeof setInterval> | null} */
  let tickTimer = null;
  /** @type {ReturnType<typeof setInterval> | null} */
  let keepAliveTimer = null;
  let closed = false;

  /** The page, with the asset key in its asset URLs (never the token). */
  function pageBody() {
    if (!page) page = Buffer.from(readOnce(path.join(PAGE_DIR, 'index.html')).toString('utf8').replaceAll('__ASSET_KEY__', assetKey));
    return page;
  }

  /**
   * @param {import('node:http').IncomingMessage} req
   * @param {URLSearchParams} query
   * @param {boolean} asset whether the asset key is enough
   */
  function authorized(req, query, asset) {
    const candidates = [];
    const q = query.get('token');
    if (q !== null) candidates.push(q);
    const auth = req.headers.authorization;
    if (typeof auth === 'string' && /^Bearer /i.test(auth)) candidates.push(auth.slice(7).trim());
    for (const c of candidates) if (timingSafeEqual(sha256(c), tokenDigest)) return true;
    const k = query.get('k');
    return asset && k !== null && timingSafeEqual(sha256(k), assetKeyDigest);
  }

  function startTimers() {
    if (!tickTimer) {
      tickTimer = setInterval(tick, intervalMs);
      tickTimer.unref();
    }
    if (!keepAliveTimer) {
      keepAliveTimer = setInterval(() => broadcast(': keep-alive\n\n'), DASHBOARD_LIMITS.keepAliveMs);
      keepAliveTimer.unref();
    }
  }

  function stopTimers() {
    if (tickTimer) clearInterval(tickTimer);
    if (keepAliveTimer) clearInterval(keepAliveTimer);
    tickTimer = null;
    keepAliveTimer = null;
  }

  /** One delta for every feed, computed only while one is open. */
  function tick() {
    if (feeds.size === 0) {
      stopTimers();
      return;
    }
    const d = study.delta();
    if (isEmptyDelta(d)) return;
    broadcast(`event: delta\ndata: ${JSON.stringify(d)}\n\n`);
  }

  /** Writes to every feed; a feed that cannot keep up is dropped, never waited for. @param {string} text */
  function broadcast(text) {
    for (const feed of feeds) {
      const buffered = feed.res.writableLength;
      if (buffered > feed.allowance) {
        feeds.delete(feed);
        logger?.warn({ event: 'dashboard-feed-dropped', buffered }, 'a dashboard feed could not keep up and was dropped');
        feed.res.destroy();
        continue;
      }
      // once its snapshot went out, a feed gets the plain allowance
      if (buffered < DASHBOARD_LIMITS.maxBufferedBytes) feed.allowance = DASHBOARD_LIMITS.maxBufferedBytes;
      feed.res.write(text);
    }
    if (feeds.size === 0) stopTimers();
  }

  /**
   * @param {import('node:http').IncomingMessage} req
   * @param {import('node:http').ServerResponse} res
   */
  function openFeed(req, res) {
    if (closed) {
      sendText(res, 503, 'the dashboard is closing\n', req.method === 'HEAD');
      return;
    }
    res.writeHead(200, {
      ...COMMON_HEADERS,
      'Content-Type': 'text/event-stream; charset=utf-8',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    });
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    req.socket.setNoDelay(true);
    // The first feed: what changed while nobody watched is in its snapshot.
    if (feeds.size === 0) study.delta();
    const text = `retry: ${DASHBOARD_LIMITS.retryMs}\nevent: snapshot\ndata: ${JSON.stringify(study.snapshot())}\n\n`;
    /** @type {Feed} */
    const feed = { res, allowance: DASHBOARD_LIMITS.maxBufferedBytes + Buffer.byteLength(text) };
    feeds.add(feed);
    res.on('close', () => {
      feeds.delete(feed);
      if (feeds.size === 0) stopTimers();
      logger?.debug({ event: 'dashboard-feed-closed', feeds: feeds.size }, 'dashboard feed closed');
    });
    res.write(text);
    startTimers();
    logger?.debug({ event: 'dashboard-feed-opened', feeds: feeds.size }, 'dashboard feed opened');
  }

  /**
   * @param {import('node:http').IncomingMessage} req
   * @param {import('node:http').ServerResponse} res
   * @returns {boolean}
   */
  function handleRequest(req, res) {
    const target = req.url ?? '/';
    const q = target.indexOf('?');
    const pathname = q === -1 ? target : target.slice(0, q);
    if (pathname !== '/dashboard' && !pathname.startsWith('/dashboard/')) return false;
    const query = new URLSearchParams(q === -1 ? '' : target.slice(q + 1));
    const head = req.method === 'HEAD';
    const isPage = pathname === '/dashboard' || pathname === '/dashboard/';
    const asset = Object.hasOwn(ASSETS, pathname) ? ASSETS[pathname] : undefined;
    if (!authorized(req, query, asset !== undefined)) {
      sendText(res, 401, 'the dashboard needs its token: /dashboard?token=...\n', head, { 'WWW-Authenticate': 'Bearer' });
      return true;
    }
    if (req.method !== 'GET' && !head) {
      sendText(res, 405, 'method not allowed\n', false, { Allow: 'GET, HEAD' });
      return true;
    }
    if (isPage) {
      send(res, 200, 'text/html; charset=utf-8', pageBody(), head, {
        'Content-Security-Policy': DASHBOARD_CSP,
        'X-Frame-Options': 'DENY',
      });
    } else if (asset) {
      send(res, 200, asset.type, asset.body(), head);
    } else if (pathname === '/dashboard/feed') {
      openFeed(req, res);
    } else {
      sendText(res, 404, 'not found\n', head);
    }
    return true;
  }

  function close() {
    closed = true;
    stopTimers();
    for (const feed of feeds) feed.res.end();
    feeds.clear();
  }

  return { handleRequest, close, clients: () => feeds.size };
}

/** @param {string} text */
function sha256(text) {
  return createHash('sha256').update(text).digest();
}

/**
 * @param {import('node:http').ServerResponse} res
 * @param {number} status
 * @param {string} type
 * @param {Buffer} body
 * @param {boolean} head
 * @param {Record<string, string>} [headers]
 */
function send(res, status, type, body, head, headers = {}) {
  res.writeHead(status, { ...COMMON_HEADERS, 'Content-Type': type, 'Content-Length': body.length, ...headers });
  res.end(head ? undefined : body);
}

/**
 * @param {import('node:http').ServerResponse} res
 * @param {number} status
 * @param {string} text
 * @param {boolean} head
 * @param {Record<string, string>} [headers]
 */
function sendText(res, status, text, head, headers = {}) {
  send(res, status, 'text/plain; charset=utf-8', Buffer.from(text), head, headers);
}
