// Transport selection by name: the one place the app, the browser fleet page
// and the Node clients turn a transport name (core/transports.js) into a
// transport. The lab's baselines have their own factory (lab/sim/transports.js).

import { TRANSPORTS } from '../../../core/transports.js';
import { createRelayTransport } from './relay.js';
import { createP2PTransport } from './p2p.js';
import { createRelayUdpTransport } from './relay-udp.js';

export { TRANSPORTS };

/**
 * @typedef {object} ServerConfig what the server publishes at /config.json
 * @property {RTCIceServer[]} iceServers
 * @property {string} relayPath
 * @property {{ path: string, key: string }} peerjs
 */

/**
 * @typedef {object} TransportEnv
 * @property {string} baseUrl http(s) URL of the carlab server, e.g. location.origin
 * @property {string[]} [failoverBaseUrls] more servers of the same system (relay and relay-faithful move
 *   to the next one when a rejoin is needed; a load-generating client without a load balancer)
 * @property {ServerConfig} config
 * @property {any} [WebSocket] WebSocket constructor (Node: the `ws` package)
 * @property {any} [Peer] PeerJS Peer class (browsers only)
 * @property {any} [RTCPeerConnection] for relay-udp; default globalThis.RTCPeerConnection
 *   (Node: `RTCPeerConnection` from 'node-datachannel/polyfill')
 * @property {number} [discardIncomingFraction] test knob of the p2p and relay-udp transports
 * @property {boolean | import('./relay.js').ReconnectOptions} [reconnect] relay, relay-faithful and
 *   the p2p transports' membership socket: reconnect after the relay went away (default true; false
 *   to see the close at once). The p2p transports also reconnect to the PeerServer, always.
 * @property {import('./relay-connection.js').RelayConnectionOptions['network']} [network] where the
 *   network coming back is announced to the relay connections (default: the browser's window;
 *   the lab's Node clients pass their own, lab/sim/net-watch.js)
 */

/**
 * The ws: or wss: origin matching an http(s) URL.
 *
 * @param {URL} base
 * @returns {string} e.g. `wss://host:8443`
 */
export function webSocketBase(base) {
  return `${base.protocol === 'https:' ? 'wss:' : 'ws:'}//${base.host}`;
}

/**
 * @param {string} name one of TRANSPORTS
 * @param {TransportEnv} env
 * @returns {import('../../../core/client.js').Transport}
 */
export function createTransport(name, env) {
  const base = new URL(env.baseUrl);
  const relayUrl = `${webSocketBase(base)}${env.config.relayPath ?? '/relay'}`;
  switch (name) {
    case 'relay':
    case 'relay-faithful':
      return createRelayTransport({
        url: env.failoverBaseUrls?.length ? [relayUrl, ...env.failoverBaseUrls.map((u) => `${webSocketBase(new URL(u))}${env.config.relayPath ?? '/relay'}`)] : relayUrl,
        batched: name === 'relay', WebSocket: env.WebSocket, reconnect: env.reconnect ?? true, network: env.network,
      });
    case 'relay-udp': {
      const RTCPeerConnection = env.RTCPeerConnection ?? globalThis.RTCPeerConnection;
      if (!RTCPeerConnection) throw new Error(`transport ${name} needs WebRTC (RTCPeerConnection)`);
      return createRelayUdpTransport({
        url: relayUrl,
        iceServers: env.config.iceServers ?? [],
        RTCPeerConnection,
        WebSocket: env.WebSocket,
        discardIncomingFraction: env.discardIncomingFraction,
        reconnect: env.reconnect ?? true,
        network: env.network,
      });
    }
    case 'p2p':
    case 'p2p-reliable':
      if (!env.Peer) throw new Error(`transport ${name} needs WebRTC (a browser)`);
      return createP2PTransport({
        mode: name,
        relayUrl,
        WebSocket: env.WebSocket,
        Peer: env.Peer,
        iceServers: env.config.iceServers ?? [],
        peerjs: {
          host: base.hostname,
          port: Number(base.port) || (base.protocol === 'https:' ? 443 : 80),
          path: env.config.peerjs?.path ?? '/peerjs',
          key: env.config.peerjs?.key ?? 'peerjs',
          secure: base.protocol === 'https:',
        },
        discardIncomingFraction: env.discardIncomingFraction,
        reconnect: env.reconnect ?? true,
      });
    default:
      throw new Error(`unknown transport "${name}"; known: ${TRANSPORTS.join(', ')}`);
  }
}
