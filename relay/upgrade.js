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
