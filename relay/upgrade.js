// Shared checks for WebSocket upgrades (relay and signaling).

import { STATUS_CODES } from 'node:http';

/**
 * Whether a browser Origin may open a WebSocket here. Requests without an
 * Origin header (Node clients, tools) are not browsers and are allowed; a
 * browser must come from the same origin as the Host it asked for, unless
 * `allowedOrigins` lists it or is ['*'].
 * @param {import('node:http').IncomingMessage} req
 * @param {string[] | undefined} allowedOrigins
 */
export function isOriginAllowed(req, allowedOrigins) {
  const origin = req.headers.origin;
  if (!origin) return true;
  if (allowedOrigins?.includes('*')) return true;
  if (allowedOrigins?.includes(origin)) return true;
  try {
    return new URL(origin).host === req.headers.host;
  } catch {
    return false;
  }
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
