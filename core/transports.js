/**
 * The transport registry: the one list of the transports a client can use,
 * with what each one is. The CLI's help and option parsing, the web app's
 * picker, the transport factory and the reports all read it; a new
 * transport is one entry here plus its factory in web/src/transport/.
 *
 * @module core/transports
 */

/**
 * @typedef {'relay' | 'relay-faithful' | 'relay-udp' | 'p2p' | 'p2p-reliable'} TransportName
 */

/**
 * @typedef {object} TransportInfo
 * @property {TransportName} name
 * @property {string} label one line for a person choosing (the landing page's picker)
 * @property {'server' | 'peer'} path through the relay, or phone to phone
 * @property {boolean} reliable ordered and reliable delivery: any loss is a bug
 * @property {boolean} needsBrowser needs PeerJS in a browser (no Node client)
 * @property {boolean} needsWebRtc needs RTCPeerConnection and RTCDataChannel: a browser without
 *   WebRTC (Debian's WebKitGTK, some in-app browsers) cannot run it
 * @property {boolean} ackedAll the relay answers an update once for all receivers (ACKED_ALL), not per ACK
 * @property {string} color the transport's colour in every chart
 */

/** @type {readonly TransportInfo[]} */
const REGISTRY = Object.freeze([
  { name: 'relay', ackedAll: true, label: 'WebSocket relay, batched', path: 'server', reliable: true, needsBrowser: false, needsWebRtc: false, color: '#2563eb' },
  { name: 'relay-faithful', ackedAll: false, label: 'WebSocket relay, one frame per message', path: 'server', reliable: true, needsBrowser: false, needsWebRtc: false, color: '#ea580c' },
  { name: 'relay-udp', ackedAll: true, label: 'server over unreliable data channels', path: 'server', reliable: false, needsBrowser: false, needsWebRtc: true, color: '#16a34a' },
  { name: 'p2p', ackedAll: false, label: 'peer-to-peer, unreliable', path: 'peer', reliable: false, needsBrowser: true, needsWebRtc: true, color: '#9333ea' },
  { name: 'p2p-reliable', ackedAll: false, label: 'peer-to-peer, reliable', path: 'peer', reliable: true, needsBrowser: true, needsWebRtc: true, color: '#dc2626' },
].map((info) => Object.freeze(/** @type {TransportInfo} */ (info))));

/**
 * Every transport name, in the order people are shown them.
 * @type {readonly string[]}
 */
export const TRANSPORTS = Object.freeze(REGISTRY.map((info) => info.name));

/**
 * Transports a Node client can run (the load generator).
 * @type {readonly string[]}
 */
export const NODE_TRANSPORTS = Object.freeze(REGISTRY.filter((info) => !info.needsBrowser).map((info) => info.name));

/**
 * Transports that need WebRTC (RTCPeerConnection and RTCDataChannel).
 * @type {readonly string[]}
 */
export const WEBRTC_TRANSPORTS = Object.freeze(REGISTRY.filter((info) => info.needsWebRtc).map((info) => info.name));

/**
 * What a transport is, or undefined for a name that is not one.
 *
 * @param {string} name
 * @returns {TransportInfo | undefined}
 */
export function transportInfo(name) {
  return REGISTRY.find((info) => info.name === name);
}

/**
 * Whether `name` is a transport of the registry.
 *
 * @param {string} name
 * @returns {name is TransportName}
 */
export function isTransport(name) {
  return transportInfo(name) !== undefined;
}
