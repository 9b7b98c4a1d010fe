/**
 * The worker's side of `carlab start --cluster N`'s routing: the primary owns
 * the public port, reads just enough of each connection to choose a worker
 * (server/route.js) and hands the socket over with `worker.send(message,
 * socket)`; here the socket becomes a connection of this process's web server,
 * with the bytes the primary already read put back in front (the pattern of
 * `@socket.io/sticky`'s setupWorker). The primary loads this module into every
 * worker before `carlab start` runs (`--import`), so the server needs no hook.
 *
 * @module server/cluster-worker
 */

import cluster from 'node:cluster';
import dc from 'node:diagnostics_channel';
import http from 'node:http';
import https from 'node:https';

import { ROUTED_CONNECTION, ROUTED_TAKEN } from './route.js';

/**
 * The web server a worker's handed connections go to: the first HTTP(S)
 * server that starts listening in the process, which in a worker is the one
 * `carlab start` composes (relay, signaling, pages). Found through Node's
 * documented `net.server.listen` tracing channel, before it listens, so it is
 * known before the primary hears the worker is up (the primary only hands
 * sockets to workers that are listening).
 *
 * @returns {() => http.Server | https.Server | null} the server, once known
 */
export function watchForWebServer() {
  /** @type {http.Server | https.Server | null} */
  let server = null;
  const noop = () => {};
  dc.tracingChannel('net.server.listen').subscribe({
    start: noop, end: noop, asyncEnd: noop, error: noop,
    asyncStart(/** @type {any} */ message) {
      const candidate = message?.server;
      if (!server && (candidate instanceof http.Server || candidate instanceof https.Server)) server = candidate;
    },
  });
  return () => server;
}

/**
 * Makes a handed-over socket a connection of `server`: the server's own
 * 'connection' handling (HTTP parser, or TLS first for HTTPS) takes it, and
 * the bytes the primary read come back first. Unshifted after the server took
 * the socket, so they are in front of anything the socket reads from now on.
 *
 * @param {http.Server | https.Server} server
 * @param {import('node:net').Socket} socket
 * @param {Buffer} head bytes the primary read (empty when it read none)
 */
export function adoptConnection(server, socket, head) {
  server.emit('connection', socket);
  if (head.length > 0) socket.unshift(head);
}

/**
 * Takes the primary's handed-over connections in this process.
 *
 * @param {NodeJS.Process} proc the worker's process (its IPC channel)
 * @param {() => http.Server | https.Server | null} webServer
 */
export function acceptRoutedConnections(proc, webServer) {
  proc.on('message', (/** @type {any} */ message, /** @type {import('node:net').Socket | undefined} */ socket) => {
    if (message?.cmd !== ROUTED_CONNECTION) return;
    // Taken (or gone): the primary closes its copy either way.
    proc.send?.({ cmd: ROUTED_TAKEN, id: message.id }, undefined, {}, () => {}); // a closed channel: the primary is gone anyway
    // No socket: the client left while it was on its way (Node's documented case).
    if (!socket) return;
    const server = webServer();
    if (!server) { socket.destroy(); return; }
    adoptConnection(server, socket, Buffer.from(typeof message.head === 'string' ? message.head : '', 'latin1'));
  });
}

if (cluster.isWorker) acceptRoutedConnections(process, watchForWebServer());
