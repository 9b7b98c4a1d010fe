/**
 * Serve the built web app (web/dist) read-only, never outside its root:
 * the path checks are carlab's, the serving (compression, ETag, ranges) sirv's.
 *
 * @module server/static
 */

import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';

import sirv from 'sirv';

/** Content types of the files Vite emits and the app ships. */
export const CONTENT_TYPES = Object.freeze({
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.ico': 'image/x-icon',
  '.wasm': 'application/wasm',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.glb': 'model/gltf-binary',
  '.gltf': 'model/gltf+json',
  '.mp4': 'video/mp4',
  '.webm': 'video/webm',
  '.webmanifest': 'application/manifest+json',
  // AR.js data files: camera_para.dat and marker patterns.
  '.dat': 'application/octet-stream',
  '.patt': 'text/plain; charset=utf-8',
});

/**
 * Content type for a file name; unknown extensions are served as bytes.
 *
 * @param {string} file
 * @returns {string}
 */
export function contentTypeFor(file) {
  // Widened to look up any extension; unknown ones are undefined.
  const types = /** @type {Readonly<Record<string, string>>} */ (CONTENT_TYPES);
  return types[path.extname(file).toLowerCase()] ?? 'application/octet-stream';
}

/**
 * Where a request path leads: status 200 with the absolute path under the
 * root that may be served, or 400 / 404 with no file.
 *
 * @typedef {{ status: 200, file: string } | { status: 400 | 404, file: null }} ResolvedPath
 */

/**
 * Map a raw request path onto a file under `root`, lexically.
 *
 * The path is percent-decoded once; a bad escape or NUL is a 400, and any
 * `..` segment (raw, `%2e%2e`, or hidden behind an encoded `%2f` / `%5c`) is
 * a 404, so a request can never name a file outside `root`. A path that
 * ends in `/` names the `index` file of that folder.
 *
 * @param {string} root absolute folder being served
 * @param {string} rawPath request path without query, e.g. `/assets/a.js`
 * @param {string} [index] file served for folder paths
 * @returns {ResolvedPath}
 */
export function resolveStaticPath(root, rawPath, index = 'index.html') {
  let decoded;
  try {
    decoded = decodeURIComponent(rawPath);
  } catch {
    return { status: 400, file: null };
  }
  if (decoded.includes('\0')) return { status: 400, file: null };
  if (!decoded.startsWith('/')) return { status: 400, file: null };

  // Backslashes are separators on Windows; treat them as such everywhere.
  const segments = decoded.split(/[/\\]+/);
  if (segments.some((segment) => segment === '..')) return { status: 404, file: null };

  const relative = segments.filter((segment) => segment !== '' && segment !== '.').join('/');
  const wantsFolder = decoded.endsWith('/') || relative === '';
  const file = path.join(root, relative, wantsFolder ? index : '');

  // Belt and braces: the join above cannot leave root, but check anyway.
  if (!isInside(root, file)) return { status: 404, file: null };
  return { status: 200, file };
}

/**
 * @param {string} root
 * @param {string} file
 * @returns {boolean}
 */
function isInside(root, file) {
  const relative = path.relative(root, file);
  return relative !== '' && !relative.startsWith('..') && !path.isAbsolute(relative);
}

/**
 * @typedef {object} StaticOptions
 * @property {string} root folder to serve
 * @property {string} [index] file served for `/` and folder paths; default `index.html`
 * @property {(req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => Promise<void>} [onNotFound]
 *   answers a path this root has no file for (the next root), instead of a 404
 */

/** Cache-Control of Vite's content-hashed files: a new build gives them new names. */
export const IMMUTABLE = 'public, max-age=31536000, immutable';

/**
 * Create a request handler that serves files from `root`.
 *
 * Which file a request names is decided here (resolveStaticPath, then
 * stat and realpath: no `..`, no symlink out of the root); serving it is
 * sirv's: the precompressed `.br` / `.gz` twin when the client accepts it
 * (server/precompress.js writes them at build time), a weak ETag and 304s,
 * ranges. Only GET and HEAD are served (405 otherwise). Vite's hashed files
 * under `/assets/` are cached for a year; everything else is revalidated
 * (no-cache), so a rebuilt index.html is picked up at once.
 *
 * sirv runs in its per-request mode (`dev`): it stats on each request
 * instead of listing the tree once, so a rebuild while serving is seen, as
 * before; its Cache-Control is replaced by ours in setHeaders.
 *
 * @param {StaticOptions} options
 * @returns {(req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => Promise<void>}
 */
export function createStaticHandler({ root, index = 'index.html', onNotFound }) {
  const absoluteRoot = path.resolve(root);
  const serveFile = sirv(absoluteRoot, {
    dev: true,
    etag: true,
    brotli: true,
    gzip: true,
    extensions: [],
    dotfiles: false,
    setHeaders(res, pathname) {
      res.setHeader('Content-Type', contentTypeFor(pathname));
      res.setHeader('Cache-Control', pathname.startsWith('/assets/') ? IMMUTABLE : 'no-cache');
      res.setHeader('X-Content-Type-Options', 'nosniff');
    },
  });

  return async function serveStatic(req, res) {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      sendStatus(res, 405, { Allow: 'GET, HEAD' });
      return;
    }
    const resolved = resolveStaticPath(absoluteRoot, rawPathOf(req.url ?? '/'), index);
    if (resolved.status !== 200) {
      sendStatus(res, resolved.status);
      return;
    }

    let file = resolved.file;
    let stats = await statOrNull(file);
    if (stats?.isDirectory()) {
      // `/sub` naming a folder: serve its index rather than a listing.
      file = path.join(file, index);
      stats = await statOrNull(file);
    }
    if (!stats?.isFile() || !(await realpathInside(absoluteRoot, file))) {
      if (onNotFound) await onNotFound(req, res);
      else sendStatus(res, 404);
      return;
    }
    await serveResolved(serveFile, req, res, canonicalTarget(absoluteRoot, file));
  };
}

/**
 * Hands one checked file to sirv under its canonical target, so sirv looks
 * up exactly the file checked here (never its own reading of the raw path).
 *
 * @param {(req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse, next: () => void) => void} serveFile
 * @param {import('node:http').IncomingMessage} req
 * @param {import('node:http').ServerResponse} res
 * @param {string} target e.g. `/assets/index-abc.js`
 * @returns {Promise<void>}
 */
function serveResolved(serveFile, req, res, target) {
  // sirv pipes a read stream into the response without an error listener: a
  // file removed between its stat and its open (a rebuild) must cost this
  // response, not the process.
  res.once('pipe', (source) => source.once('error', () => res.destroy()));
  const originalUrl = req.url;
  req.url = target;
  try {
    serveFile(req, res, () => sendStatus(res, 404));
  } finally {
    req.url = originalUrl;
  }
  return Promise.resolve();
}

/**
 * The target sirv is given for a file under the root: each segment
 * percent-encoded (sirv decodes with decodeURI once).
 *
 * @param {string} root
 * @param {string} file
 * @returns {string}
 */
export function canonicalTarget(root, file) {
  return `/${path.relative(root, file).split(path.sep).map(encodeURIComponent).join('/')}`;
}

/**
 * The path part of a request target, undecoded. Absolute-form targets
 * (`GET http://host/x`) are reduced to their path.
 *
 * @param {string} target
 * @returns {string}
 */
export function rawPathOf(target) {
  let rawPath = target;
  if (!rawPath.startsWith('/')) {
    const schemeEnd = rawPath.indexOf('://');
    if (schemeEnd === -1) return rawPath;
    const pathStart = rawPath.indexOf('/', schemeEnd + 3);
    rawPath = pathStart === -1 ? '/' : rawPath.slice(pathStart);
  }
  const end = rawPath.search(/[?#]/);
  return end === -1 ? rawPath : rawPath.slice(0, end);
}

/**
 * @param {string} file
 * @returns {Promise<import('node:fs').Stats | null>}
 */
async function statOrNull(file) {
  try {
    return await stat(file);
  } catch {
    return null;
  }
}

/**
 * @param {string} root
 * @param {string} file
 * @returns {Promise<boolean>}
 */
async function realpathInside(root, file) {
  try {
    const [realRoot, realFile] = await Promise.all([realpath(root), realpath(file)]);
    return isInside(realRoot, realFile);
  } catch {
    return false;
  }
}

/**
 * @param {import('node:http').ServerResponse} res
 * @param {number} status
 * @param {Record<string, string>} [headers]
 */
function sendStatus(res, status, headers = {}) {
  const body = `${status} ${STATUS_TEXT[status] ?? ''}\n`;
  res.writeHead(status, {
    'Content-Type': 'text/plain; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    'X-Content-Type-Options': 'nosniff',
    ...headers,
  });
  res.end(body);
}

/** @type {Record<number, string>} */
const STATUS_TEXT = { 400: 'Bad Request', 404: 'Not Found', 405: 'Method Not Allowed' };

