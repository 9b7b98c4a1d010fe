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

import { CloseCode, MsgType, ProtocolError, decode, encode } from '../../../core/protocol.js';
import { RECONNECT_DEFAULTS, backoffDelay, createRelayTransport } from './relay.js';

/** Negotiated channel id both sides use for carlab traffic (PeerJS's own channel is in-band). */
export const CARLAB_CHANNEL_ID = 10;

/** Channel parameters per transport. */
export const CHANNEL_PARAMS = Object.freeze({
  p2p: Object.freeze({ ordered: false, maxRetransmits: 0 }),
  'p2p-reliable': Object.freeze({ ordered: true }),
});

/** Longest time a connection may take to open before it is retried. */
export const SETUP_TIMEOUT_MS = 15000;
/** Retry backoff: first delay and cap. */
export const RETRY_BASE_MS = 500;
export const RETRY_MAX_MS = 15000;
/**
 * After a relay restart the members come back one by one: one that is missing
 * from our rejoin's WELCOME but whose channel is still open gets this long to
 * rejoin before we drop it (a member that really left closes its channel).
 */
export const MEMBERSHIP_GRACE_MS = 20000;
/** PeerServer reconnection: the relay transport's backoff (full jitter, 250 ms doubling to 10 s). */
export const SIGNALING_RECONNECT = RECONNECT_DEFAULTS;

/**
 * PeerJS id of a client: group-scoped so ids of different groups never meet.
 * @param {string} group
 * @param {number} clientId
 */
export function peerIdOf(group, clientId) {
  let h = 0x811c9dc5; // FNV-1a
  for (let i = 0; i < group.length; i++) {
    h ^= group.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return `carlab-${h.toString(36)}-${clientId}`;
}

/**
 * @typedef {object} P2PTransportOptions
 * @property {'p2p' | 'p2p-reliable'} [mode]
 * @property {string} relayUrl membership: ws(s) URL of the relay
 * @property {{ host: string, port: number, path: string, key: string, secure: boolean }} peerjs
 * @property {RTCIceServer[]} [iceServers] from the server's configuration; never PeerJS's public defaults
 * @property {any} Peer the PeerJS Peer class
 * @property {any} [WebSocket]
 * @property {boolean | import('./relay.js').ReconnectOptions} [reconnect] the membership WebSocket
 *   rejoins after the relay went away (default true); the PeerServer connection always does
 * @property {() => number} [now]
 * @property {number} [discardIncomingFraction] test knob: drop this fraction of
 *   received updates before they reach the client (deterministically, every
 *   round(1/f)-th), to prove loss is counted; counted in `discarded`
 */

/**
 * @typedef {object} Link one neighbour
 * @property {number} id
 * @property {string} name
 * @property {any} conn PeerJS DataConnection
 * @property {RTCDataChannel | null} channel
 * @property {boolean} initiator
 * @property {boolean} reported told the client core it joined
 * @property {number} attempts
 * @property {any} retryTimer
 * @property {any} setupTimer
 * @property {Record<string, any>} setup timings (ms from connect) and counters
 */

/**
 * Creates a p2p transport (implements core/client.js Transport).
 * @param {P2PTransportOptions} options
 */
export function createP2PTransport(options) {
  const mode = options.mode ?? 'p2p';
  const params = CHANNEL_PARAMS[mode];
  if (!params) throw new Error(`unknown p2p mode ${mode}`);
  const now = options.now ?? (() => performance.now());
  const membership = createRelayTransport({
    url: options.relayUrl, batched: false, membershipOnly: true, WebSocket: options.WebSocket, now,
    reconnect: options.reconnect ?? true,
  });
  /** @type {Map<number, Link>} */
  const links = new Map();
  /** Members the relay reports, id -> name. */
  const members = new Map();
  /** @type {any} */
  let peer = null;
  let myId = 0;
  let group = '';
  let closed = false;
  /** @type {import('../../../core/client.js').TransportHandlers} */
  let handlers;
  const setupInfo = { signalingMs: /** @type {number | null} */ (null), peers: /** @type {any[]} */ ([]) };
  const counters = {
    connectAttempts: 0, failures: 0, retries: 0, discarded: 0, sendErrors: 0, updatesSeen: 0,
    // PeerServer: times it went away, reconnect() calls, and re-opens with our id
    signalingLost: 0, signalingAttempts: 0, signalingReconnects: 0,
    // relay (membership): rejoins after it went away
    membershipRejoins: 0,
  };
  /** Members missing from a rejoin's WELCOME whose channels are still open: id -> timer. */
  const graceTimers = new Map();
  /** @type {any} */
  let signalingTimer = null;
  let signalingAttempt = 0;
  /** Why we closed ourselves, reported instead of the membership socket's own 1000. */
  let fatal = /** @type {{ code: number, reason: string } | null} */ (null);
  const discardEvery = options.discardIncomingFraction ? Math.round(1 / options.discardIncomingFraction) : 0;

  /** @param {Link} link */
  function report(link) {
    if (!link.reported) {
      link.reported = true;
      handlers.onMemberJoined({ id: link.id, name: link.name });
    }
  }

  /** @param {Link} link */
  function unreport(link) {
    if (link.reported) {
      link.reported = false;
      handlers.onMemberLeft(link.id);
    }
  }

  /** @param {Link} link */
  function teardown(link) {
    clearTimeout(link.setupTimer);
    clearTimeout(link.retryTimer);
    try { link.channel?.close(); } catch { /* already closed */ }
    try { link.conn?.close(); } catch { /* already closed */ }
    link.channel = null;
    link.conn = null;
  }

  /**
   * A connection failed or closed while the member is still in the group.
   * @param {Link} link
   * @param {string} why
   */
  function failed(link, why) {
    if (closed || links.get(link.id) !== link) return;
    counters.failures++;
    link.setup.lastError = why;
    unreport(link);
    teardown(link);
    if (!members.has(link.id) || !link.initiator) return; // the other side retries
    const delay = Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** link.attempts) * (0.5 + Math.random() / 2);
    counters.retries++;
    link.retryTimer = setTimeout(() => {
      link.retryTimer = null;
      if (links.get(link.id) === link) initiate(link);
    }, delay);
  }

  /**
   * Wires our negotiated channel and the timing probes onto a PeerJS connection.
   * @param {Link} link
   * @param {any} conn
   */
  function attach(link, conn) {
    const t0 = now();
    const setup = { id: link.id, initiator: link.initiator, attempt: link.attempts };
    link.setup = setup;
    link.conn = conn;
    const pc = /** @type {RTCPeerConnection} */ (conn.peerConnection);
    pc.addEventListener('signalingstatechange', () => {
      if (pc.signalingState === 'stable' && setup.offerAnswerMs === undefined) setup.offerAnswerMs = now() - t0;
    });
    pc.addEventListener('iceconnectionstatechange', () => {
      const s = pc.iceConnectionState;
      if ((s === 'connected' || s === 'completed') && setup.iceConnectedMs === undefined) setup.iceConnectedMs = now() - t0;
      if (s === 'failed') failed(link, 'ICE failed');
    });
    pc.addEventListener('connectionstatechange', () => {
      if (pc.connectionState === 'connected' && setup.dtlsConnectedMs === undefined) setup.dtlsConnectedMs = now() - t0;
      if (pc.connectionState === 'failed') failed(link, 'connection failed');
    });
    const channel = pc.createDataChannel(`carlab-${mode}`, { negotiated: true, id: CARLAB_CHANNEL_ID, ...params });
    channel.binaryType = 'arraybuffer';
    link.channel = channel;
    link.setupTimer = setTimeout(() => failed(link, `channel not open after ${SETUP_TIMEOUT_MS} ms`), SETUP_TIMEOUT_MS);
    channel.onopen = async () => {
      clearTimeout(link.setupTimer);
      setup.channelOpenMs = now() - t0;
      link.attempts = 0;
      Object.assign(setup, readChannel(channel));
      report(link);
      try {
        Object.assign(setup, await setupStats(pc));
      } catch { /* stats are best effort */ }
      setupInfo.peers.push(setup);
    };
    channel.onclose = () => failed(link, 'channel closed');
    channel.onmessage = (event) => onChannelMessage(link, event.data);
    conn.on('error', (/** @type {any} */ err) => failed(link, `peerjs: ${err?.type ?? err}`));
    conn.on('close', () => failed(link, 'peerjs connection closed'));
  }

  /** @param {Link} link */
  function initiate(link) {
    if (closed || !peer || peer.destroyed) return;
    link.attempts++;
    counters.connectAttempts++;
    const conn = peer.connect(peerIdOf(group, link.id), { reliable: true, metadata: { clientId: myId } });
    attach(link, conn);
  }

  /** @param {number} id @param {string} name */
  function memberAppeared(id, name) {
    if (id === myId) return;
    members.set(id, name);
    clearTimeout(graceTimers.get(id));
    graceTimers.delete(id);
    const existing = links.get(id);
    if (existing) {
      // A link that failed while the member was unknown (no retry then): dial again.
      if (existing.initiator && !existing.conn && existing.retryTimer === null) initiate(existing);
      return;
    }
    /** @type {Link} */
    const link = {
      id, name, conn: null, channel: null, initiator: myId > id, reported: false,
      attempts: 0, retryTimer: null, setupTimer: null, setup: {},
    };
    links.set(id, link);
    // The newer member (larger id) dials; the other side answers.
    if (link.initiator) initiate(link);
  }

  /** @param {number} id */
  function memberGone(id) {
    members.delete(id);
    clearTimeout(graceTimers.get(id));
    graceTimers.delete(id);
    const link = links.get(id);
    if (!link) return;
    links.delete(id);
    unreport(link);
    teardown(link);
  }

  /**
   * The membership WebSocket rejoined after the relay went away: learn the
   * members again. Links stay as they are (their channels never needed the
   * relay); members not (yet) back keep an open channel for MEMBERSHIP_GRACE_MS.
   * @param {import('../../../core/protocol.js').WelcomeMsg} w
   */
  function membershipRejoined(w) {
    counters.membershipRejoins++;
    if (w.clientId !== myId) {
      // Our PeerJS id names the old client id: others could no longer dial us.
      fatal = { code: CloseCode.ID_TAKEN, reason: 'rejoined the group with another id' };
      close();
      return;
    }
    const present = new Map(w.members.filter((m) => m.id !== myId).map((m) => [m.id, m.name]));
    for (const id of [...members.keys()]) {
      if (present.has(id)) continue;
      const link = links.get(id);
      if (link?.channel?.readyState !== 'open') {
        memberGone(id);
        continue;
      }
      members.delete(id); // unknown until it rejoins: its link is not retried meanwhile
      clearTimeout(graceTimers.get(id));
      graceTimers.set(id, setTimeout(() => { if (!members.has(id)) memberGone(id); }, MEMBERSHIP_GRACE_MS));
    }
    for (const [id, name] of present) memberAppeared(id, name);
  }

  /**
   * The PeerServer connection dropped (PeerJS 'disconnected', also after each
   * failed reconnect): reconnect with the same id after a backoff with full
   * jitter. Open channels are untouched; only new connections need the server.
   */
  function signalingLost() {
    if (closed || !peer || peer.destroyed || signalingTimer !== null) return;
    if (signalingAttempt === 0) counters.signalingLost++;
    const delayMs = backoffDelay(signalingAttempt++, SIGNALING_RECONNECT);
    handlers.onConnectionStatus?.({ state: 'reconnecting', part: 'signaling', attempt: signalingAttempt, delayMs });
    signalingTimer = setTimeout(() => {
      signalingTimer = null;
      if (closed || peer.destroyed || !peer.disconnected) return;
      counters.signalingAttempts++;
      try {
        peer.reconnect();
      } catch {
        signalingLost();
      }
    }, delayMs);
  }

  /** @param {any} conn */
  function onIncoming(conn) {
    const id = Number(conn.metadata?.clientId);
    if (!Number.isInteger(id) || id <= 0 || conn.peer !== peerIdOf(group, id) || id <= myId) {
      conn.close();
      return;
    }
    let link = links.get(id);
    if (!link) {
      // Its MEMBER_JOINED may still be on its way.
      link = {
        id, name: members.get(id) ?? '', conn: null, channel: null, initiator: false, reported: false,
        attempts: 0, retryTimer: null, setupTimer: null, setup: {},
      };
      links.set(id, link);
    } else {
      unreport(link);
      teardown(link);
    }
    attach(link, conn);
  }

  /** @param {Link} link @param {any} data */
  function onChannelMessage(link, data) {
    const arrival = now();
    const frame = decode(data);
    if (frame instanceof ProtocolError) return; // a peer's garbage never takes us down
    const messages = frame.type === MsgType.BATCH ? frame.messages : [frame];
    for (const m of messages) {
      if (m.type === MsgType.UPDATE) {
        if (m.sender !== link.id) continue; // spoofed
        counters.updatesSeen++;
        if (discardEvery && counters.updatesSeen % discardEvery === 0) {
          counters.discarded++;
          continue;
        }
        handlers.onUpdate(m, arrival);
      } else if (m.type === MsgType.ACK) {
        if (m.acker !== link.id) continue;
        handlers.onAck(m);
      }
    }
  }

  /** @param {RTCDataChannel | null} channel @param {Uint8Array} bytes */
  function sendOn(channel, bytes) {
    if (!channel || channel.readyState !== 'open') return false;
    try {
      channel.send(/** @type {any} */ (bytes));
      return true;
    } catch {
      counters.sendErrors++;
      return false;
    }
  }

  return {
    name: mode,
    counters,
    links,
    get peer() { return peer; },
    async connect(join, h) {
      handlers = h;
      group = join.group;
      const welcome = await membership.connect(join, {
        onUpdate: () => {},
        onAck: () => {},
        onAckedAll: () => {},
        onMemberJoined: (m) => memberAppeared(m.id, m.name),
        onMemberLeft: (id) => memberGone(id),
        onClose: (code, reason) => {
          for (const id of [...links.keys()]) memberGone(id);
          h.onClose(fatal?.code ?? code, fatal?.reason ?? reason);
        },
        // The relay is away: the channels carry on, so the cycle is not paused
        // (no onReconnecting to the client core); the display hears of it.
        onReconnected: (w) => membershipRejoined(w),
        onConnectionStatus: (st) => h.onConnectionStatus?.({ ...st, part: 'membership' }),
      });
      myId = welcome.clientId;
      const t0 = now();
      peer = new options.Peer(peerIdOf(group, myId), {
        host: options.peerjs.host,
        port: options.peerjs.port,
        path: options.peerjs.path,
        key: options.peerjs.key,
        secure: options.peerjs.secure,
        config: { iceServers: options.iceServers ?? [] },
        debug: 0,
      });
      await new Promise((resolve, reject) => {
        peer.once('open', resolve);
        peer.once('error', (/** @type {any} */ err) => reject(new Error(`signaling: ${err?.type ?? err}`)));
      });
      setupInfo.signalingMs = now() - t0;
      peer.on('connection', onIncoming);
      peer.on('disconnected', signalingLost);
      peer.on('open', () => {
        // PeerServer re-registered our id after a reconnect (a restarted one answers OPEN).
        if (signalingAttempt === 0) return;
        signalingAttempt = 0;
        counters.signalingReconnects++;
        h.onConnectionStatus?.({ state: 'connected', part: 'signaling' });
      });
      peer.on('error', (/** @type {any} */ err) => {
        // 'peer-unavailable' names the peer id in its message: fail that link so it retries.
        const m = /peer (\S+)/.exec(String(err?.message ?? ''));
        for (const link of links.values()) {
          if (m && m[1].startsWith(peerIdOf(group, link.id))) failed(link, `peerjs: ${err.type}`);
        }
      });
      // Members the WELCOME listed (the client core only hears of them once their channel opens).
      for (const m of welcome.members) memberAppeared(m.id, m.name);
      return { ...welcome, members: welcome.members.filter((m) => m.id === myId) };
    },
    sendUpdate(update) {
      const bytes = encode(update);
      for (const link of links.values()) if (link.reported) sendOn(link.channel, bytes);
    },
    sendAck(sender, seq, acker) {
      sendOn(links.get(sender)?.channel ?? null, encode({ type: MsgType.ACK, sender, seq, acker }));
    },
    channelInfo() {
      const open = [...links.values()].filter((l) => l.channel?.readyState === 'open').map((l) => readChannel(/** @type {RTCDataChannel} */ (l.channel)));
      if (open.length === 0) return { kind: 'rtcdatachannel', ...params, maxPacketLifeTime: null, protocol: '', channels: 0, uniform: true };
      const first = open[0];
      const uniform = open.every((c) => c.ordered === first.ordered && c.maxRetransmits === first.maxRetransmits
        && c.maxPacketLifeTime === first.maxPacketLifeTime);
      return { kind: 'rtcdatachannel', ...first, channels: open.length, uniform };
    },
    setupInfo: () => ({ signalingMs: setupInfo.signalingMs, peers: setupInfo.peers.slice(), counters: { ...counters } }),
    close,
  };

  function close() {
    closed = true;
    clearTimeout(signalingTimer);
    for (const timer of graceTimers.values()) clearTimeout(timer);
    graceTimers.clear();
    for (const link of links.values()) teardown(link);
    links.clear();
    try { peer?.destroy(); } catch { /* gone */ }
    membership.close();
  }
}

/**
 * The parameters of a live channel, as the browser reports them.
 * @param {RTCDataChannel} channel
 */
export function readChannel(channel) {
  return {
    ordered: channel.ordered,
    maxRetransmits: channel.maxRetransmits,
    maxPacketLifeTime: channel.maxPacketLifeTime,
    protocol: channel.protocol,
    negotiated: channel.negotiated,
    channelId: channel.id,
    label: channel.label,
  };
}

/**
 * Selected candidate-pair type and setup bytes/packets from getStats.
 * Chromium names the selected pair on the transport; Firefox marks it
 * `selected`; bytes are summed over all candidate pairs (Firefox has no
 * transport totals).
 * @param {RTCPeerConnection} pc
 */
export async function setupStats(pc) {
  const report = await pc.getStats();
  /** @type {Map<string, any>} */
  const byId = new Map();
  report.forEach((s) => byId.set(s.id, s));
  let selected = null;
  let bytesSent = 0; let bytesReceived = 0; let packetsSent = 0; let packetsReceived = 0;
  for (const s of byId.values()) {
    if (s.type === 'transport' && s.selectedCandidatePairId) selected = byId.get(s.selectedCandidatePairId);
    if (s.type === 'candidate-pair') {
      if (!selected && (s.selected || (s.nominated && s.state === 'succeeded'))) selected = s;
      bytesSent += s.bytesSent ?? 0;
      bytesReceived += s.bytesReceived ?? 0;
      packetsSent += s.packetsSent ?? 0;
      packetsReceived += s.packetsReceived ?? 0;
    }
  }
  const local = selected && byId.get(selected.localCandidateId);
  const remote = selected && byId.get(selected.remoteCandidateId);
  return {
    candidateType: local ? `${local.candidateType}/${remote?.candidateType ?? '?'}` : null,
    setupBytesSent: bytesSent,
    setupBytesReceived: bytesReceived,
    setupPacketsSent: packetsSent,
    setupPacketsReceived: packetsReceived,
  };
}
