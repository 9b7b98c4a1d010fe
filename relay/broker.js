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
 */

/**
 * @typedef {object} Broker
 * @property {string} nodeId this process's id in the cluster (unique per start)
 * @property {(subject: string, data: Uint8Array) => void} publish
 * @property {(subject: string, handler: (data: Uint8Array) => void) => BrokerSubscription} subscribe
 * @property {() => BrokerStatus} status
 * @property {(listener: (connected: boolean) => void) => void} onConnectionChange
 * @property {() => Promise<void>} close drains and closes the connection
 */

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
      // A cut link shows as missing PONGs: two missed 2 s pings and the node
      // knows it is alone (/readyz 503) instead of waiting minutes for TCP.
      pingInterval: 2000,
      maxPingOut: 2,
    });
  } catch (err) {
    const error = new Error(`cannot reach NATS at ${url}: ${/** @type {Error} */ (err).message}`);
    Object.assign(error, { code: ERR_BROKER_UNREACHABLE });
    throw error;
  }
  return wrapConnection(nc, url, nodeId);
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
  const setConnected = (/** @type {boolean} */ connected) => {
    if (connected === state.connected) return;
    state.connected = connected;
    if (connected) state.outageMs += performance.now() - state.downSince;
    else { state.disconnects++; state.downSince = performance.now(); }
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
      // While reconnecting the client buffers; a closed connection drops.
      try { nc.publish(subject, data); } catch { /* closed: lost like any message in the gap */ }
    },
    subscribe(subject, handler) {
      const sub = nc.subscribe(subject, { callback: (err, msg) => { if (!err) handler(msg.data); } });
      return { unsubscribe: () => { try { sub.unsubscribe(); } catch { /* closed */ } } };
    },
    status: () => ({
      connected: state.connected,
      url: nc.getServer() || url,
      serverVersion: nc.info?.version ?? null,
      disconnects: state.disconnects,
      outageMs: Math.round(state.outageMs + (state.connected ? 0 : performance.now() - state.downSince)),
      lastError: state.lastError,
    }),
    onConnectionChange(listener) { listeners.push(listener); },
    async close() {
      if (nc.isClosed()) return;
      await nc.drain().catch(() => nc.close());
    },
  };
}
