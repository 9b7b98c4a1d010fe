/**
 * The broker a cluster of relays talks through, and its NATS implementation.
 * The relay sees only the {@link Broker} interface (publish bytes on a
 * subject, subscribe to one, status), as Centrifugo's node sees its broker;
 * NATS is the one implementation (`nats` on npm, a real `nats-server`).
 *
 * @module relay/broker
 */

import { randomBytes } from 'node:crypto';

import { connect } from 'nats';

/**
 * @typedef {object} BrokerSubscription
 * @property {() => void} unsubscribe
 */

/**
 * @typedef {object} BrokerStatus
 * @property {boolean} connected
 * @property {string} url the server currently (or last) connected to
 * @property {string | null} serverVersion
 * @property {number} disconnects times the connection dropped since start
 * @property {number} outageMs total time spent disconnected
 * @property {string | null} lastError
 * @property {number} silentMs how long the server has said nothing (no message, no PONG), now
 * @property {number} stalls times it fell silent for more than BROKER_SILENCE_MS while connected
 * @property {number} droppedWhileSilent publications dropped because more than BROKER_SILENT_BUFFER_BYTES
 *   were waiting on a silent server (past the bound: said here, and counted)
 * @property {number} unconfirmedAtDisconnect publications since the server last spoke when the connection
 *   was given up as stale (they may be lost with it)
 */

/**
 * @typedef {object} Broker
 * @property {string} nodeId this process's id in the cluster (unique per start)
 * @property {(subject: string, data: Uint8Array) => void} publish
 * @property {(subject: string, handler: (data: Uint8Array) => void) => BrokerSubscription} subscribe
 * @property {() => BrokerStatus} status
 * @property {(listener: (connected: boolean) => void) => void} onConnectionChange
 * @property {() => void} probe asks the server for a sign of life (a PING): called once a heartbeat
 * @property {() => boolean} stalled the server is silent beyond BROKER_SILENCE_MS on a connection not
 *   given up yet: a stall, not a death (relay/cluster-nodes.js counts no peer's silence then)
 * @property {(bucket: string, options: { ttlMs: number }) => Promise<import('nats').KV>} [keyValue] a JetStream
 *   key-value bucket, made if missing (the cluster's kept scenes, server/scene-kv.js); rejects with code
 *   ERR_NO_JETSTREAM when the server runs without JetStream
 * @property {() => Promise<void>} close drains and closes the connection
 */

/** Error code when a key-value bucket is asked of a NATS server without JetStream. */
export const ERR_NO_JETSTREAM = 'ERR_NO_JETSTREAM';

/**
 * A server silent this long on a live connection is stalled (a PING a second goes unanswered).
 * The client gives such a connection up after MAX_PINGS_OUT pings of PING_INTERVAL_MS unanswered:
 * a stall of up to (MAX_PINGS_OUT) x PING_INTERVAL_MS = 6 s is always waited out, and what was
 * published meanwhile is delivered when the server runs again.
 */
export const BROKER_SILENCE_MS = 1500;
/** The client's PING period. */
export const PING_INTERVAL_MS = 2000;
/** PINGs unanswered before the connection is stale: 3 keeps a 6 s stall (the 5 s) alive. */
export const MAX_PINGS_OUT = 3;
/** Most bytes published to a silent server before further publications are dropped (and counted). */
export const BROKER_SILENT_BUFFER_BYTES = 32 * 1024 * 1024;

/** Error code when the first connection cannot be made. */
export const ERR_BROKER_UNREACHABLE = 'ERR_BROKER_UNREACHABLE';

/**
 * A fresh node id: 12 hex digits, unique per process start (a restarted
 * process is a new node, so its peers drop the old one's members cleanly).
 *
 * @returns {string}
 */
export function newNodeId() {
  return randomBytes(6).toString('hex');
}

/**
 * Connects to NATS. Rejects with code ERR_BROKER_UNREACHABLE when no server
 * answers within `timeoutMs`; after the first connection it reconnects
 * forever (the cluster keeps serving its own clients meanwhile).
 *
 * @param {{ url: string, name?: string, timeoutMs?: number }} options
 * @returns {Promise<Broker>}
 */
export async function connectNatsBroker({ url, name = 'carlab', timeoutMs = 5000 }) {
  const nodeId = newNodeId();
  let nc;
  try {
    nc = await connect({
      servers: url,
      name: `${name}-${nodeId}`,
      noEcho: true, // a node never needs its own publications back
      timeout: timeoutMs,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      // A cut link shows as missing PONGs: three missed 2 s pings (6-8 s) and the node
      // knows it is alone (/readyz 503) instead of waiting minutes for TCP; a shorter
      // stall is waited out (BROKER_SILENCE_MS).
      pingInterval: PING_INTERVAL_MS,
      maxPingOut: MAX_PINGS_OUT,
    });
  } catch (err) {
    const error = new Error(`cannot reach NATS at ${url}: ${/** @type {Error} */ (err).message}`);
    Object.assign(error, { code: ERR_BROKER_UNREACHABLE });
    throw error;
  }
  return wrapConnection(nc, url, nodeId);
}

/**
 * What was published since the server last spoke, and what a long silence cost.
 */
class SilenceBook {
  constructor() {
    this.heardAt = performance.now();
    this.bytesSince = 0;
    this.messagesSince = 0;
    this.stalls = 0;
    this.inStall = false;
    this.droppedWhileSilent = 0;
    this.unconfirmedAtDisconnect = 0;
  }

  /** The server spoke (a message, a PONG). */
  heard() {
    this.heardAt = performance.now();
    this.bytesSince = 0;
    this.messagesSince = 0;
    this.inStall = false;
  }

  silentMs() { return performance.now() - this.heardAt; }

  /** Whether the server is stalled; counts each stall once. */
  stalled() {
    const stalled = this.silentMs() > BROKER_SILENCE_MS;
    if (stalled && !this.inStall) { this.inStall = true; this.stalls++; }
    return stalled;
  }

  /** Whether a publication of `bytes` may go (false: past the bound, dropped and counted). @param {number} bytes */
  admit(bytes) {
    if (this.bytesSince + bytes > BROKER_SILENT_BUFFER_BYTES && this.silentMs() > BROKER_SILENCE_MS) {
      this.droppedWhileSilent++;
      return false;
    }
    this.bytesSince += bytes;
    this.messagesSince++;
    return true;
  }

  /** The connection was given up: what it carried since the server spoke may be lost. */
  disconnected() {
    this.unconfirmedAtDisconnect += this.messagesSince;
    this.bytesSince = 0;
    this.messagesSince = 0;
  }
}

/**
 * @param {import('nats').NatsConnection} nc
 * @param {string} url
 * @param {string} nodeId
 * @returns {Broker}
 */
function wrapConnection(nc, url, nodeId) {
  /** @type {((connected: boolean) => void)[]} */
  const listeners = [];
  const state = { connected: true, disconnects: 0, outageMs: 0, downSince: 0, lastError: /** @type {string | null} */ (null) };
  const book = new SilenceBook();
  const setConnected = (/** @type {boolean} */ connected) => {
    if (connected === state.connected) return;
    state.connected = connected;
    if (connected) { state.outageMs += performance.now() - state.downSince; book.heard(); }
    else { state.disconnects++; state.downSince = performance.now(); book.disconnected(); }
    for (const listener of listeners) listener(connected);
  };
  (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect') setConnected(false);
      else if (s.type === 'reconnect') setConnected(true);
      else if (s.type === 'error') state.lastError = String(s.data);
    }
  })().catch(() => {});
  nc.closed().then(() => setConnected(false), () => setConnected(false));

  return {
    nodeId,
    publish(subject, data) {
      if (!book.admit(data.length + subject.length)) return;
      // While reconnecting the client buffers; a closed connection drops.
      try { nc.publish(subject, data); } catch { /* closed: lost like any message in the gap */ }
    },
    subscribe(subject, handler) {
      const sub = nc.subscribe(subject, { callback: (err, msg) => { if (!err) { book.heard(); handler(msg.data); } } });
      return { unsubscribe: () => { try { sub.unsubscribe(); } catch { /* closed */ } } };
    },
    status: () => ({
      connected: state.connected,
      url: nc.getServer() || url,
      serverVersion: nc.info?.version ?? null,
      disconnects: state.disconnects,
      outageMs: Math.round(state.outageMs + (state.connected ? 0 : performance.now() - state.downSince)),
      lastError: state.lastError,
      silentMs: Math.round(book.silentMs()),
      stalls: book.stalls,
      droppedWhileSilent: book.droppedWhileSilent,
      unconfirmedAtDisconnect: book.unconfirmedAtDisconnect,
    }),
    onConnectionChange(listener) { listeners.push(listener); },
    probe() {
      if (!state.connected || nc.isClosed()) return;
      nc.flush().then(() => book.heard(), () => { /* stale or closed: the status says so */ });
    },
    stalled: () => state.connected && book.stalled(),
    async keyValue(bucket, { ttlMs }) {
      try {
        return await nc.jetstream().views.kv(bucket, { history: 1, ttl: ttlMs });
      } catch (err) {
        const message = /** @type {Error} */ (err).message;
        // a server without JetStream has no responder for its API: 503 (or says so in words)
        if (!/jetstream|^503$/i.test(message) && /** @type {{ code?: string }} */ (err).code !== '503') throw err;
        throw Object.assign(new Error(`NATS at ${nc.getServer() || url} has no JetStream (${message}): start nats-server with -js `
          + '(carlab start --cluster does), or run with --no-scene-store'), { code: ERR_NO_JETSTREAM });
      }
    },
    async close() {
      if (nc.isClosed()) return;
      await nc.drain().catch(() => nc.close());
    },
  };
}
