/**
 * The lab's transport factory: the product's transports (core/transports.js)
 * plus the baselines measured against them (lab/target/baselines.js), which are
 * never offered to users.
 *
 * @module lab/transports
 */

import { createRelayTransport } from '../../web/src/transport/relay.js';
import { createTransport, webSocketBase } from '../../web/src/transport/index.js';
import { createSocketIoTransport } from './socketio-transport.js';

/** The baselines' names, in report order. */
export const BASELINE_TRANSPORTS = Object.freeze(['socketio', 'ws-floor', 'ws-floor-batched']);

/**
 * @typedef {import('../../web/src/transport/index.js').TransportEnv & { io?: import('./socketio-transport.js').SocketIoConnect }} LabTransportEnv
 *   `io`: socket.io-client's `io`, for the socketio baseline
 */

/**
 * A client transport by name: a baseline, or else the product's.
 *
 * @param {string} name
 * @param {LabTransportEnv} env
 * @returns {import('../../core/client.js').Transport}
 */
export function createLabTransport(name, env) {
  const base = new URL(env.baseUrl);
  switch (name) {
    case 'ws-floor':
      // the bare forwarder speaks the frames with relay-faithful semantics
      return createRelayTransport({ url: `${webSocketBase(base)}/floor`, batched: false, WebSocket: env.WebSocket, name });
    case 'ws-floor-batched':
      // mode relay's frames (BATCH per turn, ACKED_ALL) with nothing else: lab/target/floor-batched.js
      return createRelayTransport({ url: `${webSocketBase(base)}/floor-batched`, batched: true, WebSocket: env.WebSocket, name });
    case 'socketio':
      if (!env.io) throw new Error('transport socketio needs socket.io-client');
      return createSocketIoTransport({ url: base.origin, io: env.io });
    default:
      return createTransport(name, env);
  }
}
