// Transports `p2p` and `p2p-reliable`: a full mesh of RTCDataChannels
// between the members of a working group, signaled through PeerJS and the
// project's PeerServer.
//
// Membership comes from the relay (a membership-only HELLO): one source of
// truth for groups, the same group code as the relayed transports, and a
// departure is known the moment the member's socket closes. PeerServer
// discovery knows no groups and is off by default.
//
// PeerJS's own `reliable: false` only sets ordered:false (retransmits stay
// unlimited), so on every PeerJS connection both sides open a pre-negotiated
// channel of their own with the parameters we want, and read them back.
//
// The parts, each testable on its own:
//   p2p-membership.js  the membership WebSocket to the relay
//   p2p-signaling.js   the PeerJS Peer and reconnecting to the PeerServer
//   p2p-mesh.js        members, one link per neighbour, who dials, retries
//   p2p-link.js        one neighbour's connection and channel
//   p2p-channel.js     the negotiated channel: open, time, read back, summarize
//   p2p-send.js        fan-out of updates, ACKs
//   p2p-receive.js     decoding, spoof checks, the discard knob
// This file composes them into the transport.

import { CloseCode, HelloFlag, MsgType } from '../../../core/protocol.js';
import { CHANNEL_PARAMS, summarizeChannels } from './p2p-channel.js';
import { P2PMesh, peerIdOf } from './p2p-mesh.js';
import { P2PSignaling } from './p2p-signaling.js';
import { P2PReceiver } from './p2p-receive.js';
import { fanOutUpdate, sendAck } from './p2p-send.js';
import { createMembership, membershipHandlers } from './p2p-membership.js';
import { SceneToServer } from './p2p-kept-scene.js';

export { CARLAB_CHANNEL_ID, CHANNEL_PARAMS, readChannel, setupStats } from './p2p-channel.js';
export { SETUP_TIMEOUT_MS } from './p2p-link.js';
export { FALLBACK_AFTER_MS, MEMBERSHIP_GRACE_MS, RETRY_BASE_MS, RETRY_MAX_MS, peerIdOf } from './p2p-mesh.js';
export { SIGNALING_RECONNECT } from './p2p-signaling.js';

/**
 * @typedef {object} P2PTransportOptions
 * @property {'p2p' | 'p2p-reliable'} [mode]
 * @property {string} relayUrl membership: ws(s) URL of the relay
 * @property {import('./p2p-signaling.js').PeerServerOptions} peerjs
 * @property {RTCIceServer[]} [iceServers] from the server's configuration; never PeerJS's public defaults
 * @property {import('./p2p-signaling.js').PeerClass} Peer the PeerJS Peer class
 * @property {any} [WebSocket] the browser's WebSocket or Node's `ws`, as createRelayTransport takes it
 * @property {boolean | import('./relay.js').ReconnectOptions} [reconnect] the membership WebSocket
 *   rejoins after the relay went away (default true); the PeerServer connection always does
 * @property {() => number} [now]
 * @property {number} [discardIncomingFraction] test knob: drop this fraction of
 *   received updates before they reach the client (deterministically, every
 *   round(1/f)-th), to prove loss is counted; counted in `discarded`
 * @property {boolean | { afterMs?: number }} [fallback] a link that cannot be made within
 *   `afterMs` (default FALLBACK_AFTER_MS), whose ICE fails or that dies carries its updates and
 *   ACKs through the relay until a channel opens (default true; false: the neighbour is missing)
 */

/** One neighbour (see p2p-link.js). @typedef {import('./p2p-link.js').P2PLink} Link */

/**
 * The transport's counters, one object shared by its parts (each part
 * declares the fields it writes), exposed as `counters` and in setupInfo().
 */
function createCounters() {
  return {
    connectAttempts: 0, failures: 0, retries: 0, discarded: 0, sendErrors: 0, updatesSeen: 0,
    // PeerServer: times it went away, reconnect() calls, and re-opens with our id
    signalingLost: 0, signalingAttempts: 0, signalingReconnects: 0,
    // relay (membership): rejoins after it went away
    membershipRejoins: 0,
    // the relay fallback: links moved onto it and back, UPDATE copies and ACKs sent through it
    fallbacks: 0, recoveries: 0, relayedUpdates: 0, relayedAcks: 0, iceRestarts: 0,
  };
}

/** @typedef {ReturnType<typeof createCounters>} P2PCounters */

/**
 * @typedef {import('../../../core/client.js').Transport & {
 *   counters: P2PCounters,
 *   links: Map<number, Link>,
 *   readonly peer: import('./p2p-signaling.js').PeerLike | null,
 *   linkPaths: () => ReturnType<P2PMesh['linkPaths']>,
 * }} P2PTransport
 */

/**
 * Creates a p2p transport (implements core/client.js Transport).
 * @param {P2PTransportOptions} options
 * @returns {P2PTransport}
 */
export function createP2PTransport(options) {
  const mode = options.mode ?? 'p2p';
  if (!CHANNEL_PARAMS[mode]) throw new Error(`unknown p2p mode ${mode}`);
  const now = options.now ?? (() => performance.now());
  const counters = createCounters();
  const membership = createMembership({
    relayUrl: options.relayUrl, WebSocket: options.WebSocket, now, reconnect: options.reconnect, onSignal: (m) => mesh.onPeerSignal(m),
  });
  const signaling = new P2PSignaling({ Peer: options.Peer, peerjs: options.peerjs, iceServers: options.iceServers ?? [], counters, now });
  const receiver = new P2PReceiver({ counters, now, discardIncomingFraction: options.discardIncomingFraction });
  /** @type {import('../../../core/client.js').TransportHandlers | null} */
  let handlers = null;
  /** A LINK on the membership WebSocket (sendSignal sends any message as it is). @param {import('../../../core/protocol.js').LinkMsg} msg */
  const relaySend = (msg) => membership.sendSignal(/** @type {any} */ (msg));
  const fallbackOption = options.fallback ?? true;
  const mesh = new P2PMesh({
    mode, now, counters,
    peer: () => signaling.peer,
    onMessage: (link, data) => { if (handlers) receiver.receive(link.id, data, handlers); },
    fallback: fallbackOption === false ? null
      : { send: relaySend, afterMs: typeof fallbackOption === 'object' ? fallbackOption.afterMs : undefined },
  });
  const relayPath = mesh.fallback ? relaySend : null;
  const sceneToServer = new SceneToServer((m) => membership.sendSignal(/** @type {any} */ (m)));
  /** @type {number | null} */
  let signalingMs = null;
  /** Why we closed ourselves, reported instead of the membership socket's own 1000. */
  let fatal = /** @type {{ code: number, reason: string } | null} */ (null);

  function close() {
    mesh.close();
    signaling.close();
    membership.close();
  }

  return {
    name: mode,
    counters,
    links: mesh.links,
    get peer() { return signaling.peer; },
    async connect(join, h) {
      handlers = h;
      mesh.handlers = h;
      mesh.group = join.group;
      const welcome = await membership.connect(join, membershipHandlers(mesh, h, {
        fatal: () => fatal,
        deliver: (fromId, m, arrival) => { if (handlers) receiver.deliver(fromId, m, arrival || now(), handlers); },
        onRejoined: (w, sameId) => sceneToServer.rejoined(w, sameId),
        onIdChanged: () => {
          // Our PeerJS id names the old client id: others could no longer dial us.
          fatal = { code: CloseCode.ID_TAKEN, reason: 'rejoined the group with another id' };
          close();
        },
      }));
      mesh.myId = welcome.clientId;
      sceneToServer.welcomed(welcome);
      if (((welcome.capabilities ?? 0) & HelloFlag.PEER_SIGNAL) !== 0) {
        // ICE restarts go through the relay (docs/protocol.md §5.11)
        mesh.peerSignal = (to, payload) => membership.sendSignal({ type: MsgType.SIGNAL, from: mesh.myId, to, payload: JSON.stringify(payload) });
        // a link whose ICE doubts its path doubts the relay connection's too: it is rejoined (resumed) first
        mesh.rejoinRelay = () => membership.rejoin('a link\'s ICE lost its path');
        mesh.watchSilence();
      }
      signalingMs = await signaling.open(peerIdOf(mesh.group, mesh.myId), {
        onConnection: (conn) => mesh.incoming(conn),
        onPeerError: (namedPeerId, type) => mesh.failNamed(namedPeerId, type),
        onStatus: (status) => h.onConnectionStatus?.(status),
      });
      // Members the WELCOME listed (the client core only hears of them once their channel opens).
      for (const m of welcome.members) mesh.memberAppeared(m.id, m.name, m.reach);
      return { ...welcome, members: welcome.members.filter((m) => m.id === mesh.myId) };
    },
    sendUpdate(update) {
      fanOutUpdate(mesh.links.values(), update, counters, relayPath);
      sceneToServer.sent(update, mesh.myId);
    },
    sendAck(sender, seq, acker) {
      sendAck(mesh.links.get(sender) ?? null, sender, seq, acker, counters, relayPath);
    },
    // reports (docs/study.md) go on the membership session, the client's own relay session
    sendStats: (stats) => membership.sendStats?.(stats) ?? false,
    get serverClock() { return membership.serverClock ?? null; },
    linkPaths: () => mesh.linkPaths(),
    // `links`: per neighbour, how its updates travel now (direct, turn, relay, connecting).
    channelInfo: () => ({ ...summarizeChannels(mesh.openChannels(), mode), links: mesh.linkPaths() }),
    setupInfo: () => ({
      signalingMs, peers: mesh.setupPeers.slice(), counters: { ...counters },
      // every path a link got onto and how long it took (results.json setupMs.paths)
      paths: mesh.pathRecords.slice(),
      links: mesh.linkPaths(),
    }),
    close,
  };
}
