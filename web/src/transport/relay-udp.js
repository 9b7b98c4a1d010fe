// Transport `relay-udp`: the CAR paper's UDP server, done with WebRTC. The
// client joins over the relay's WebSocket as usual (HELLO with the UDP flag;
// WELCOME and MEMBER_* stay there, the control channel), then opens one
// RTCPeerConnection to the relay itself, signaled with SIGNAL messages on the
// same WebSocket, carrying one pre-negotiated data channel with
// ordered:false, maxRetransmits:0. UPDATEs and ACKs go over that channel
// both ways, in frames that fit one packet.
//
// Works with the browser's RTCPeerConnection and, in Node, with
// node-datachannel's polyfill (passed in). The relay announces a relay-udp
// member to its group only once that member's channel is open; likewise this
// transport resolves connect() (so the action cycle can start) only once its
// own channel is open, and while the channel is down it reports no members,
// so no update is ever counted as sent to a receiver that could not get it.

import { HelloFlag, MsgType, ProtocolError, decode, encode, encodeBatchOfBodies, frameOfBody } from '../../../core/protocol.js';
import { createRelayTransport } from './relay.js';
import { readChannel, setupStats } from './p2p.js';

/** The data channel: negotiated out of band (no DCEP), unordered, never retransmitted. */
export const UDP_CHANNEL = Object.freeze({
  label: 'carlab-udp', negotiated: true, id: 0, ordered: false, maxRetransmits: 0,
});

/** Largest frame sent on the channel: one frame per packet (see relay/udp.js). */
export const MAX_MESSAGE_BYTES = 1100;
/** A channel not open after this long is given up and offered again. */
export const SETUP_TIMEOUT_MS = 15000;
/** Re-offer backoff: first delay and cap (with 50..100 % jitter). */
export const RETRY_BASE_MS = 500;
export const RETRY_MAX_MS = 15000;
/** connect() fails if no channel opened within this long. */
export const CONNECT_TIMEOUT_MS = 60000;

/**
 * @typedef {object} RelayUdpTransportOptions
 * @property {string} url ws:// or wss:// URL of the relay
 * @property {RTCIceServer[]} [iceServers] from the server's configuration
 * @property {any} [RTCPeerConnection] default globalThis.RTCPeerConnection
 *   (Node: `RTCPeerConnection` from 'node-datachannel/polyfill')
 * @property {any} [WebSocket] WebSocket constructor, default globalThis.WebSocket
 * @property {() => number} [now]
 * @property {boolean} [batched] default true: ACKED_ALL aggregation and
 *   coalesced frames (as `relay`); false: every ACK forwarded (as `relay-faithful`)
 * @property {number} [maxMessageBytes]
 * @property {number} [setupTimeoutMs]
 * @property {number} [retryBaseMs]
 * @property {number} [retryMaxMs]
 * @property {number} [connectTimeoutMs]
 * @property {number} [discardIncomingFraction] test knob: drop every
 *   round(1/f)-th received update before the client sees it (counted in `discarded`)
 */

/**
 * One peer connection attempt.
 * @typedef {object} Link
 * @property {number} attempt
 * @property {RTCPeerConnection} pc
 * @property {RTCDataChannel} channel
 * @property {number} t0 when the attempt started (offer)
 * @property {boolean} open
 * @property {boolean} offerSent
 * @property {boolean} answered the relay's answer is applied
 * @property {RTCIceCandidate[]} localCandidates gathered before the answer was applied
 * @property {Promise<any>} ops signaling operations, in order
 * @property {any} setupTimer
 * @property {Record<string, any>} setup timings (ms from t0) and what the channel reports
 */

/**
 * Creates a relay-udp transport (implements core/client.js Transport).
 * @param {RelayUdpTransportOptions} options
 */
export function createRelayUdpTransport(options) {
  const RTCPC = options.RTCPeerConnection ?? globalThis.RTCPeerConnection;
  if (!RTCPC) throw new Error('transport relay-udp needs WebRTC (RTCPeerConnection)');
  const now = options.now ?? (() => performance.now());
  const batched = options.batched ?? true;
  const maxMessageBytes = options.maxMessageBytes ?? MAX_MESSAGE_BYTES;
  const setupTimeoutMs = options.setupTimeoutMs ?? SETUP_TIMEOUT_MS;
  const retryBaseMs = options.retryBaseMs ?? RETRY_BASE_MS;
  const retryMaxMs = options.retryMaxMs ?? RETRY_MAX_MS;
  const connectTimeoutMs = options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS;
  const discardEvery = options.discardIncomingFraction ? Math.round(1 / options.discardIncomingFraction) : 0;

  const membership = createRelayTransport({
    url: options.url, batched, extraFlags: HelloFlag.UDP, WebSocket: options.WebSocket, now,
    onSignal: (m) => onSignal(m),
  });
  /** Group members the relay announced (their channels are open), id -> name. */
  const members = new Map();
  /** Membership events that came before the WELCOME was taken in. @type {null | Array<() => void>} */
  let early = [];
  let myId = 0;
  /** The client core knows the members: our channel is open. */
  let live = false;
  let closed = false;
  let wsClosed = false;
  let attempts = 0;
  let consecutiveFailures = 0;
  /** @type {Link | null} */
  let current = null;
  /** @type {any} */
  let retryTimer = null;
  /** @type {any} */
  let connectTimer = null;
  /** @type {null | { resolve: (w: any) => void, reject: (e: Error) => void }} */
  let pendingConnect = null;
  /** @type {any} */
  let welcomeMsg = null;
  /** @type {Record<string, any> | null} what the last open channel reported */
  let lastRead = null;
  let lastError = '';
  /** @type {import('../../../core/client.js').TransportHandlers} */
  let handlers;
  /** @type {Uint8Array[]} bodies waiting for the end of this turn */
  let outgoing = [];
  let flushQueued = false;
  const setupInfo = {
    signalingMs: /** @type {number | null} */ (null),
    /** One entry per channel that opened. */
    peers: /** @type {any[]} */ ([]),
    /** Attempts that failed or channels that went away (the last 20). */
    failures: /** @type {any[]} */ ([]),
  };
  const counters = {
    /** Offers made (peer connection attempts). */
    offers: 0,
    /** Offers made again after a failed attempt or a lost channel. */
    dtlsRetries: 0,
    /** Attempts whose channel never opened (timeout, ICE/DTLS failure). */
    setupFailures: 0,
    /** Open channels that closed or failed. */
    channelDrops: 0,
    sendErrors: 0,
    /** Messages the core asked to send while no channel was open. */
    notSent: 0,
    badFrames: 0,
    staleSignals: 0,
    badCandidates: 0,
    updatesSeen: 0,
    discarded: 0,
  };

  // ------------------------------------------------------------ membership

  /** @param {number} id @param {string} name */
  function memberJoined(id, name) {
    if (id === myId || members.has(id)) return;
    members.set(id, name);
    if (live) handlers.onMemberJoined({ id, name });
  }

  /** @param {number} id */
  function memberLeft(id) {
    if (!members.delete(id)) return;
    if (live) handlers.onMemberLeft(id);
  }

  // ------------------------------------------------------------ the channel

  function openChannel() {
    retryTimer = null;
    if (closed || wsClosed) return;
    attempts++;
    counters.offers++;
    if (attempts > 1) counters.dtlsRetries++;
    const t0 = now();
    /** @type {RTCPeerConnection} */
    let pc;
    /** @type {RTCDataChannel} */
    let channel;
    try {
      pc = new RTCPC({ iceServers: options.iceServers ?? [] });
      channel = pc.createDataChannel(UDP_CHANNEL.label, {
        negotiated: UDP_CHANNEL.negotiated, id: UDP_CHANNEL.id,
        ordered: UDP_CHANNEL.ordered, maxRetransmits: UDP_CHANNEL.maxRetransmits,
      });
    } catch (err) {
      lastError = `RTCPeerConnection: ${err?.message ?? err}`;
      counters.setupFailures++;
      scheduleRetry(false);
      return;
    }
    channel.binaryType = 'arraybuffer';
    /** @type {Link} */
    const link = {
      attempt: attempts, pc, channel, t0, open: false, offerSent: false, answered: false, localCandidates: [],
      ops: Promise.resolve(), setupTimer: null, setup: { attempt: attempts },
    };
    current = link;
    const setup = link.setup;
    pc.addEventListener('signalingstatechange', () => {
      if (pc.signalingState === 'stable' && link.offerSent && setup.offerAnswerMs === undefined) setup.offerAnswerMs = now() - t0;
    });
    pc.addEventListener('iceconnectionstatechange', () => {
      const s = pc.iceConnectionState;
      if ((s === 'connected' || s === 'completed') && setup.iceConnectedMs === undefined) setup.iceConnectedMs = now() - t0;
      if (s === 'failed') failed(link, 'ICE failed');
    });
    pc.addEventListener('connectionstatechange', () => {
      const s = pc.connectionState;
      if (s === 'connected' && setup.dtlsConnectedMs === undefined) setup.dtlsConnectedMs = now() - t0;
      if (s === 'failed' || s === 'closed') failed(link, `connection ${s}`);
    });
    pc.addEventListener('icecandidate', (/** @type {RTCPeerConnectionIceEvent} */ e) => {
      if (current !== link || !e.candidate || !e.candidate.candidate) return;
      if (link.answered) sendCandidate(link, e.candidate);
      else link.localCandidates.push(e.candidate);
    });
    channel.onopen = () => onOpen(link);
    channel.onclose = () => failed(link, 'channel closed');
    channel.onmessage = (e) => {
      if (current !== link) return;
      if (!link.open) onOpen(link); // a message is proof enough that the channel is open
      onChannelMessage(e.data);
    };
    link.setupTimer = setTimeout(() => failed(link, `channel not open after ${setupTimeoutMs} ms`), setupTimeoutMs);
    link.ops = (async () => {
      const offer = await pc.createOffer();
      await pc.setLocalDescription(offer);
      if (current !== link) return;
      signal({ type: 'offer', sdp: offer.sdp ?? pc.localDescription?.sdp, attempt: link.attempt });
      link.offerSent = true;
      setup.offerSentMs = now() - t0;
    })().catch((err) => failed(link, `offer: ${err?.message ?? err}`));
  }

  /** @param {Link} link @param {RTCIceCandidate} c */
  function sendCandidate(link, c) {
    signal({ type: 'candidate', candidate: c.candidate, mid: c.sdpMid ?? '0', attempt: link.attempt });
  }

  /** @param {object} payload */
  function signal(payload) {
    membership.sendSignal({ type: MsgType.SIGNAL, from: myId, to: 0, payload: JSON.stringify(payload) });
  }

  /** @param {import('../../../core/protocol.js').SignalMsg} m */
  function onSignal(m) {
    if (m.from !== 0 || m.to !== myId) return;
    let p;
    try {
      p = JSON.parse(m.payload);
    } catch {
      return;
    }
    const link = current;
    if (!link || !p || p.attempt !== link.attempt) {
      counters.staleSignals++;
      return;
    }
    if (p.type === 'answer' && typeof p.sdp === 'string') {
      link.ops = link.ops
        .then(() => link.pc.setRemoteDescription({ type: 'answer', sdp: p.sdp }))
        .then(() => {
          if (link.setup.offerAnswerMs === undefined) link.setup.offerAnswerMs = now() - link.t0;
          // Our candidates go out only now (docs/protocol.md §13.2). With them
          // earlier the relay, the DTLS client, could finish its ICE checks and
          // send its ClientHello before we have a DTLS transport: dropped, and
          // the handshake waits a whole second for the retransmission. Now it
          // learns our address from our own checks, when we are ready.
          link.answered = true;
          if (current !== link) return;
          for (const c of link.localCandidates) sendCandidate(link, c);
          link.localCandidates = [];
        })
        .catch((err) => failed(link, `answer: ${err?.message ?? err}`));
    } else if (p.type === 'candidate' && typeof p.candidate === 'string' && p.candidate) {
      link.ops = link.ops
        .then(() => link.pc.addIceCandidate({ candidate: p.candidate, sdpMid: typeof p.mid === 'string' ? p.mid : '0' }))
        .catch(() => { counters.badCandidates++; });
    }
  }

  /** @param {Link} link */
  function onOpen(link) {
    if (current !== link || link.open) return;
    link.open = true;
    clearTimeout(link.setupTimer);
    consecutiveFailures = 0;
    const setup = link.setup;
    setup.channelOpenMs = now() - link.t0;
    lastRead = readChannel(link.channel);
    Object.assign(setup, lastRead);
    setupInfo.peers.push(setup);
    setupStats(link.pc).then((s) => Object.assign(setup, s), () => { /* stats are best effort */ });
    live = true;
    if (pendingConnect) {
      const { resolve } = pendingConnect;
      pendingConnect = null;
      clearTimeout(connectTimer);
      // The members the client core starts with: those whose channels are open.
      resolve({
        ...welcomeMsg,
        members: [...[...members].map(([id, name]) => ({ id, name })), { id: myId, name: welcomeMsg.members.find((x) => x.id === myId)?.name ?? '' }],
      });
    } else {
      for (const [id, name] of members) handlers.onMemberJoined({ id, name });
    }
  }

  /**
   * An attempt failed or an open channel went away: tear it down, and offer
   * again after a backoff while the WebSocket is up.
   * @param {Link} link
   * @param {string} why
   */
  function failed(link, why) {
    if (current !== link) return;
    current = null;
    clearTimeout(link.setupTimer);
    lastError = why;
    link.setup.error = why;
    const wasOpen = link.open;
    setupInfo.failures.push({ attempt: link.attempt, afterMs: now() - link.t0, wasOpen, error: why, ...link.setup });
    if (setupInfo.failures.length > 20) setupInfo.failures.shift();
    teardown(link);
    if (wasOpen) {
      counters.channelDrops++;
      live = false;
      outgoing = [];
      // Nobody can be reached now: the core stops counting updates as sent to them.
      for (const id of members.keys()) handlers.onMemberLeft(id);
    } else {
      counters.setupFailures++;
    }
    scheduleRetry(wasOpen);
  }

  /** @param {boolean} wasOpen a channel that worked is offered again soon */
  function scheduleRetry(wasOpen) {
    if (closed || wsClosed) return;
    const base = wasOpen ? retryBaseMs : Math.min(retryMaxMs, retryBaseMs * 2 ** consecutiveFailures);
    consecutiveFailures++;
    retryTimer = setTimeout(openChannel, base * (0.5 + Math.random() / 2));
  }

  /** @param {Link} link */
  function teardown(link) {
    clearTimeout(link.setupTimer);
    try { link.channel.close(); } catch { /* already closed */ }
    try { link.pc.close(); } catch { /* already closed */ }
  }

  // ------------------------------------------------------------ data

  /** @param {any} data */
  function onChannelMessage(data) {
    const arrival = now();
    const frame = decode(data);
    if (frame instanceof ProtocolError) {
      // The relay sent garbage: as on the WebSocket, give up on the connection.
      counters.badFrames++;
      const ws = membership.ws;
      if (ws && ws.readyState <= 1) ws.close(frame.closeCode, frame.message.slice(0, 120));
      return;
    }
    const messages = frame.type === MsgType.BATCH ? frame.messages : [frame];
    for (const m of messages) {
      switch (m.type) {
        case MsgType.UPDATE:
          counters.updatesSeen++;
          if (discardEvery && counters.updatesSeen % discardEvery === 0) {
            counters.discarded++;
            continue;
          }
          handlers.onUpdate(m, arrival);
          break;
        case MsgType.ACK: handlers.onAck(m); break;
        case MsgType.ACKED_ALL: handlers.onAckedAll(m); break;
        default: break; // nothing else travels on the channel
      }
    }
  }

  /** @param {Uint8Array} bytes */
  function sendBytes(bytes) {
    const channel = current?.open ? current.channel : null;
    if (!channel || channel.readyState !== 'open') {
      counters.notSent++;
      return;
    }
    try {
      channel.send(/** @type {any} */ (bytes));
    } catch {
      counters.sendErrors++;
    }
  }

  /** Sends this turn's messages in frames of at most maxMessageBytes. */
  function flush() {
    flushQueued = false;
    const bodies = outgoing;
    outgoing = [];
    let start = 0;
    let size = 4;
    const write = (/** @type {number} */ to) => {
      if (to - start === 1) {
        sendBytes(frameOfBody(bodies[start]));
      } else if (to > start) {
        sendBytes(encodeBatchOfBodies(bodies.slice(start, to)));
      }
    };
    for (let i = 0; i < bodies.length; i++) {
      const len = 2 + bodies[i].length;
      if (i > start && size + len > maxMessageBytes) {
        write(i);
        start = i;
        size = 4;
      }
      size += len;
    }
    write(bodies.length);
  }

  /** @param {any} msg */
  function sendData(msg) {
    if (!live) {
      counters.notSent++;
      return;
    }
    if (!batched) {
      sendBytes(encode(msg));
      return;
    }
    outgoing.push(encode(msg).subarray(1));
    if (!flushQueued) {
      flushQueued = true;
      // Everything this turn produces (the ACKs for a whole BATCH) goes out together.
      queueMicrotask(flush);
    }
  }

  const transport = {
    name: 'relay-udp',
    counters,
    get ws() { return membership.ws; },
    /** The live data channel, or null. */
    get channel() { return current?.open ? current.channel : null; },
    get peerConnection() { return current?.pc ?? null; },
    async connect(join, h) {
      handlers = h;
      const t0 = now();
      const welcome = await membership.connect(join, {
        // The relay sends these on the data channel; take them from anywhere.
        onUpdate: (m, arrival) => h.onUpdate(m, arrival),
        onAck: (m) => h.onAck(m),
        onAckedAll: (m) => h.onAckedAll(m),
        onMemberJoined: (m) => (early ? early.push(() => memberJoined(m.id, m.name)) : memberJoined(m.id, m.name)),
        onMemberLeft: (id) => (early ? early.push(() => memberLeft(id)) : memberLeft(id)),
        onClose: (code, reason) => {
          wsClosed = true;
          clearTimeout(retryTimer);
          if (current) {
            const link = current;
            current = null;
            teardown(link);
          }
          live = false;
          if (pendingConnect) {
            const { reject } = pendingConnect;
            pendingConnect = null;
            clearTimeout(connectTimer);
            const err = new Error(`relay closed before the data channel opened: ${code} ${reason || ''}`.trim());
            /** @type {any} */ (err).code = code;
            reject(err);
          }
          h.onClose(code, reason);
        },
      });
      setupInfo.signalingMs = now() - t0;
      myId = welcome.clientId;
      welcomeMsg = welcome;
      for (const m of welcome.members) if (m.id !== myId) members.set(m.id, m.name);
      const replay = early ?? [];
      early = null;
      for (const f of replay) f();
      if (wsClosed) throw new Error('relay closed before the data channel opened');
      return new Promise((resolve, reject) => {
        pendingConnect = { resolve, reject };
        connectTimer = setTimeout(() => {
          if (!pendingConnect) return;
          pendingConnect = null;
          reject(new Error(`relay-udp: no data channel after ${connectTimeoutMs} ms (${lastError || 'no answer'})`));
          transport.close();
        }, connectTimeoutMs);
        openChannel();
      });
    },
    sendUpdate(update) { sendData(update); },
    sendAck(sender, seq, acker) { sendData({ type: MsgType.ACK, sender, seq, acker }); },
    sendStats(stats) { membership.sendStats?.(stats); },
    channelInfo() {
      const channel = current?.open ? current.channel : null;
      if (channel) return { kind: 'rtcdatachannel', ...readChannel(channel), channels: 1, uniform: true };
      return {
        kind: 'rtcdatachannel',
        ...(lastRead ?? { ordered: UDP_CHANNEL.ordered, maxRetransmits: UDP_CHANNEL.maxRetransmits, maxPacketLifeTime: null, protocol: '' }),
        channels: 0,
        uniform: true,
      };
    },
    setupInfo: () => ({
      signalingMs: setupInfo.signalingMs,
      peers: setupInfo.peers.slice(),
      failures: setupInfo.failures.slice(),
      counters: { ...counters },
      lastError: lastError || null,
    }),
    close() {
      if (closed) return;
      if (live && outgoing.length) flush();
      closed = true;
      clearTimeout(retryTimer);
      clearTimeout(connectTimer);
      if (current) {
        const link = current;
        current = null;
        teardown(link);
      }
      live = false;
      membership.close();
    },
  };
  return transport;
}
