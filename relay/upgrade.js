// Shared checks for WebSocket upgrades (relay and signaling).

import { STATUS_CODES } from 'node:http';

/** Default ports by scheme: an origin with its scheme's default port names the same origin without one. */
const DEFAULT_PORTS = Object.freeze(/** @type {Record<string, string>} */ ({ 'http:': '80', 'https:': '443', 'ws:': '80', 'wss:': '443' }));

/**
 * An origin in one spelling: lower-case scheme and host, the port only when
 * it is not the scheme's default, no path. Null for what is not an http(s)
 * origin (`null`, `file://...`, garbage).
 * @param {string} origin
 * @returns {string | null}
 */
export function normaliseOrigin(origin) {
  let url;
  try {
    url = new URL(origin);
  } catch {
    return null;
  }
  // URL lower-cases scheme and host and drops a default port already.
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  if (url.username || url.password) return null;
  return `${url.protocol}//${url.host}`;
}

/**
 * A Host header as `host:port` in one spelling; without a port, the given
 * scheme's default. Null when it does not parse.
 * @param {string} host
 * @param {string} scheme 'http:' or 'https:'
 * @returns {string | null}
 */
function hostAndPort(host, scheme) {
  let url;
  try {
    url = new URL(`${scheme}//${host}`);
  } catch {
    return null;
  }
  if (url.username || url.password || url.pathname !== '/' || url.search || url.hash) return null;
  return `${url.hostname}:${url.port || DEFAULT_PORTS[scheme]}`;
}

/**
 * Whether a browser Origin may open a WebSocket here (docs/security.md,
 * "Origins"). The rules, after normalisation (lower-case scheme and host,
 * default port dropped):
 * - no Origin header: not a browser (Node clients, tools): allowed;
 * - an Origin header that is empty, `null`, or not an http(s) origin: refused;
 * - `allowedOrigins` containing '*': any origin allowed;
 * - an origin equal to an entry of `allowedOrigins` (normalised the same way): allowed;
 * - otherwise same origin: its host and port (the scheme's default when it
 *   names none) equal the Host header's (whose missing port means the
 *   origin scheme's default). The scheme itself is not compared with the
 *   connection's: behind a TLS-terminating proxy a page is https while the
 *   connection here is plain.
 * @param {import('node:http').IncomingMessage} req
 * @param {string[] | undefined} allowedOrigins
 */
export function isOriginAllowed(req, allowedOrigins) {
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  if (allowedOrigins?.includes('*')) return true;
  const normal = normaliseOrigin(origin);
  if (normal === null) return false;
  if (allowedOrigins?.some((allowed) => normaliseOrigin(allowed) === normal)) return true;
  const scheme = normal.slice(0, normal.indexOf('//'));
  const host = req.headers.host;
  if (!host) return false;
  return hostAndPort(normal.slice(scheme.length + 2), scheme) === hostAndPort(host, scheme);
}

/**
 * Answers an upgrade request with an HTTP error and closes the socket.
 * @param {import('node:stream').Duplex} socket
 * @param {number} status
 * @param {string} [reason]
 */
export function rejectUpgrade(socket, status, reason) {
  const text = reason ?? STATUS_CODES[status] ?? '';
  if (socket.writable) {
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nConnection: close\r\n` +
      `Content-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
      () => socket.destroy(),
    );
  } else {
    socket.destroy();
  }
}

/**
 * The path of a request URL, without its query.
 * @param {string | undefined} url
 */
export function pathnameOf(url) {
  const path = url ?? '/';
  const q = path.indexOf('?');
  return q === -1 ? path : path.slice(0, q);
}

/**
 * The group a WebSocket URL names in its query (`/relay?g=<group>`, URL-encoded),
 * or null when it names none (older clients, tools). A load balancer or the
 * cluster primary places the connection by it; the relay only holds the
 * HELLO to it (docs/protocol.md §5.1). An empty `g` names none: no group is empty.
 * @param {string | undefined} url the request target
 * @returns {string | null}
 */
export function groupOfRequestUrl(url) {
  if (url === undefined) return null;
  const hash = url.indexOf('#');
  const target = hash === -1 ? url : url.slice(0, hash);
  const q = target.indexOf('?');
  return q === -1 ? null : new URLSearchParams(target.slice(q + 1)).get('g') || null;
}

/**
 * @typedef {(req: import('node:http').IncomingMessage, socket: import('node:stream').Duplex, head: Buffer) => void} UpgradeHandler
 */

/**
 * Routes the server's upgrade requests for one exact pathname to `handle`;
 * others are left to the server's other 'upgrade' listeners, so several
 * WebSocket servers share one port.
 * @param {import('node:http').Server} server
 * @param {string} pathname
 * @param {UpgradeHandler} handle
 * @returns {() => void} removes the listener again
 */
export function listenForUpgrades(server, pathname, handle) {
  /** @type {UpgradeHandler} */
  const onUpgrade = (req, socket, head) => {
    if (pathnameOf(req.url) === pathname) handle(req, socket, head);
  };
  server.on('upgrade', onUpgrade);
  return () => { server.off('upgrade', onUpgrade); };
}

/**
 * Closes every client of a WebSocket server with a close frame, then the
 * server; clients that do not answer within `timeoutMs` are cut off.
 * @param {import('ws').WebSocketServer} wss
 * @param {number} code close code sent to every client
 * @param {string} reason
 * @param {number} timeoutMs
 * @returns {Promise<void>} resolves once the server closed
 */
export function shutDownWebSockets(wss, code, reason, timeoutMs) {
  return new Promise((resolve) => {
    for (const ws of wss.clients) ws.close(code, reason);
    const force = setTimeout(() => {
      for (const ws of wss.clients) ws.terminate();
    }, timeoutMs);
    wss.close(() => {
      clearTimeout(force);
      resolve();
    });
  });
}
