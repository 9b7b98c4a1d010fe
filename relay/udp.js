// relay-udp, the relay's side: each relay-udp session (HELLO flag UDP) gets
// one WebRTC peer connection, terminated here with node-datachannel, carrying
// one pre-negotiated unordered channel with no retransmissions. The channel
// becomes the session's second socket (Session.dataOut): UPDATE, ACK and
// ACKED_ALL go over it, everything else stays on the WebSocket. Frames that
// come in on it go through the relay's own validation and group registry.
//
// node-datachannel calls back from native threads through the event loop; an
// exception thrown inside such a callback aborts the process, so every
// callback body here is wrapped (`guard`), and so is every native call.

import { CloseCode, MsgType, encode } from '../core/protocol.js';
import { Outbox } from './session.js';

/**
 * What a caught value says: its message, or the value itself.
 * @param {unknown} err
 */
function errorText(err) {
  // Anything may be thrown; only a `message` property is looked at.
  return String(/** @type {{ message?: unknown } | null | undefined} */ (err)?.message ?? err);
}

/** @type {typeof import('node-datachannel') | null} */
let ndc = null;
/** Why relay-udp is unavailable (the native module did not load), or ''. */
let unavailable = '';
try {
  ndc = await import('node-datachannel');
} catch (err) {
  unavailable = `node-datachannel did not load: ${errorText(err)}`;
}

/** The data channel both ends create: negotiated out of band, so no DCEP round trip. */
export const UDP_CHANNEL = Object.freeze({ label: 'carlab-udp', id: 0 });

/** Defaults of the relay's relay-udp options. */
export const UDP_DEFAULTS = Object.freeze({
  /**
   * Largest frame the relay writes to a data channel. With SCTP (28 bytes),
   * DTLS (about 37) and UDP/IP (28..48) headers one frame stays inside one
   * 1200-byte packet, so a lost packet loses few messages.
   */
  maxMessageBytes: 1100,
  /** A peer connection whose channel is not open by then is closed. */
  setupTimeoutMs: 20000,
  /** More offers than this within a minute close the session (4005). */
  maxOffersPerMinute: 10,
  /** ICE servers of the relay's own agent: strings like 'stun:host:3478'. */
  iceServers: /** @type {string[]} */ ([]),
  /**
   * Every peer connection on one UDP socket (portRangeBegin, or one port the
   * system picks). Without it libjuice gives each connection its own socket
   * and one thread polls them all on every packet: at 1000 clients in groups
   * of 25 that polling was 40 % of the relay's CPU (docs/results.md).
   */
  enableIceUdpMux: true,
});

/**
 * @typedef {object} UdpOptions
 * @property {number} [maxMessageBytes]
 * @property {number} [setupTimeoutMs]
 * @property {number} [maxOffersPerMinute]
 * @property {(string | { urls: string | string[], username?: string, credential?: string })[]} [iceServers]
 * @property {number} [portRangeBegin] UDP ports of the relay's ICE agent (0: any)
 * @property {number} [portRangeEnd]
 * @property {boolean} [enableIceUdpMux] every peer connection on one UDP port (portRangeBegin)
 * @property {string} [bindAddress]
 */

/**
 * One session's peer connection (one per offer; a new offer replaces it).
 * @typedef {object} Link
 * @property {number} attempt the client's attempt number from its offer
 * @property {import('node-datachannel').PeerConnection} pc
 * @property {import('node-datachannel').DataChannel | null} dc
 * @property {DataChannelSocket | null} socket
 * @property {boolean} open
 * @property {any} setupTimer
 */

/**
 * A node-datachannel DataChannel as a SessionSocket (see session.js).
 */
export class DataChannelSocket {
  /**
   * @param {import('node-datachannel').DataChannel} dc
   * @param {import('./stats.js').RelayStats} stats
   */
  constructor(dc, stats) {
    this.dc = dc;
    this.stats = stats;
    /** 1 while the channel is open, 3 once it is gone. */
    this.readyState = 1;
  }

  /** @param {Uint8Array} bytes */
  send(bytes) {
    if (this.readyState !== 1) return;
    try {
      this.dc.sendMessageBinary(bytes); // false only means "buffered", not lost
    } catch {
      this.stats.udp.sendErrors++;
    }
  }

  get bufferedAmount() {
    if (this.readyState !== 1) return 0;
    try {
      return this.dc.bufferedAmount();
    } catch {
      return 0;
    }
  }

  close() {
    this.readyState = 3;
    try { this.dc.close(); } catch { /* already closed */ }
  }
}

/**
 * ICE servers as libdatachannel takes them: 'stun:host:port', 'turn:user:pass@host:port'.
 * @param {UdpOptions['iceServers']} servers
 * @returns {string[]}
 */
export function nativeIceServers(servers = []) {
  /** @type {string[]} */
  const out = [];
  for (const s of servers) {
    if (typeof s === 'string') { out.push(s); continue; }
    for (const url of Array.isArray(s.urls) ? s.urls : [s.urls]) {
      if (s.username && s.credential) {
        const [scheme, rest] = url.split(/:(.*)/s);
        out.push(`${scheme}:${encodeURIComponent(s.username)}:${encodeURIComponent(s.credential)}@${rest}`);
      } else {
        out.push(url);
      }
    }
  }
  return out;
}

/**
 * The relay's relay-udp endpoint: signaling, peer connections, data channels.
 */
export class UdpEndpoint {
  /**
   * @param {import('./index.js').RelayContext} ctx
   * @param {UdpOptions} options
   * @param {object} hooks
   * @param {(s: import('./session.js').Session, data: Uint8Array | string, isBinary: boolean) => void} hooks.onFrame
   *   a frame that came in on a session's data channel
   * @param {(s: import('./session.js').Session) => void} hooks.announce the channel opened
   * @param {(s: import('./session.js').Session) => void} hooks.retract the channel is gone
   * @param {(s: import('./session.js').Session) => void} hooks.unqueue the channel is being replaced:
   *   what was queued on it will not be delivered
   */
  constructor(ctx, options, hooks) {
    this.ctx = ctx;
    this.options = { ...UDP_DEFAULTS, ...stripUndefined(options) };
    this.hooks = hooks;
    /** @type {Map<import('./session.js').Session, Link>} */
    this.links = new Map();
    /** Offer times per session, for the rate limit. @type {WeakMap<import('./session.js').Session, number[]>} */
    this.offerTimes = new WeakMap();
    /** @type {import('node-datachannel').RtcConfig} */
    this.rtcConfig = /** @type {any} */ (stripUndefined({
      iceServers: nativeIceServers(this.options.iceServers),
      portRangeBegin: this.options.portRangeBegin,
      portRangeEnd: this.options.portRangeEnd,
      enableIceUdpMux: this.options.enableIceUdpMux,
      bindAddress: this.options.bindAddress,
    }));
  }

  /** Whether this relay can serve relay-udp sessions at all. */
  get available() { return ndc !== null; }

  /** Why not, when it cannot. */
  get unavailableReason() { return unavailable; }

  /** Open data channels. */
  get openChannels() {
    let n = 0;
    for (const link of this.links.values()) if (link.open) n++;
    return n;
  }

  /**
   * Wraps a native callback: an exception must never reach node-datachannel.
   * @template {any[]} A
   * @param {(...args: A) => void} fn
   * @returns {(...args: A) => void}
   */
  guard(fn) {
    return (...args) => {
      try {
        fn(...args);
      } catch {
        this.ctx.stats.udp.callbackErrors++;
      }
    };
  }

  /**
   * A SIGNAL from a relay-udp session's WebSocket.
   * @param {import('./session.js').Session} session
   * @param {import('../core/protocol.js').SignalMsg} msg
   * @returns {[number, string] | null} a close code and reason if the client misbehaved
   */
  onSignal(session, msg) {
    if (msg.from !== session.id) return [CloseCode.SPOOFED_SENDER, `SIGNAL from ${session.id} claims to be from ${msg.from}`];
    if (msg.to !== 0) return [CloseCode.PROTOCOL_VIOLATION, 'SIGNAL must go to 0, the relay'];
    let p;
    try {
      p = JSON.parse(msg.payload);
    } catch {
      return [CloseCode.PROTOCOL_VIOLATION, 'SIGNAL payload is not JSON'];
    }
    if (!p || typeof p !== 'object' || !Number.isSafeInteger(p.attempt) || p.attempt < 1) {
      return [CloseCode.PROTOCOL_VIOLATION, 'SIGNAL payload needs an attempt number >= 1'];
    }
    if (p.type === 'offer') {
      if (typeof p.sdp !== 'string' || p.sdp.length === 0) return [CloseCode.PROTOCOL_VIOLATION, 'SIGNAL offer without sdp'];
      const now = Date.now();
      const times = (this.offerTimes.get(session) ?? []).filter((t) => now - t < 60000);
      times.push(now);
      this.offerTimes.set(session, times);
      if (times.length > this.options.maxOffersPerMinute) {
        return [CloseCode.RATE_LIMITED, `more than ${this.options.maxOffersPerMinute} offers in a minute`];
      }
      return this.offer(session, p.attempt, p.sdp);
    }
    if (p.type === 'candidate') {
      if (typeof p.candidate !== 'string') return [CloseCode.PROTOCOL_VIOLATION, 'SIGNAL candidate without candidate'];
      const link = this.links.get(session);
      if (!link || link.attempt !== p.attempt) {
        this.ctx.stats.udp.staleSignals++;
        return null;
      }
      if (p.candidate === '') return null; // end of candidates
      try {
        link.pc.addRemoteCandidate(p.candidate, typeof p.mid === 'string' && p.mid ? p.mid : '0');
      } catch {
        this.ctx.stats.udp.badCandidates++;
      }
      return null;
    }
    return [CloseCode.PROTOCOL_VIOLATION, `SIGNAL payload type ${JSON.stringify(p.type)} is not offer or candidate`];
  }

  /**
   * Answers an offer with a new peer connection (replacing the session's old one).
   * @param {import('./session.js').Session} session
   * @param {number} attempt
   * @param {string} sdp
   * @returns {[number, string] | null}
   */
  offer(session, attempt, sdp) {
    const stats = this.ctx.stats;
    stats.udp.offers++;
    // An open channel the member replaces (its path moved) keeps it announced: what is fanned out
    // to it until the new one opens is lost like packets; if that one never opens, it is retracted.
    const previous = this.links.get(session);
    if (previous) this.lost(session, previous, 'replaced by a new offer', previous.open);
    let pc;
    try {
      pc = new /** @type {NonNullable<typeof ndc>} */ (ndc).PeerConnection(`carlab-${session.id}-${attempt}`, this.rtcConfig);
    } catch {
      stats.udp.setupFailures++; // e.g. out of ports: the client times out and offers again
      return null;
    }
    /** @type {Link} */
    const link = { attempt, pc, dc: null, socket: null, open: false, setupTimer: null };
    this.links.set(session, link);
    const current = () => this.links.get(session) === link && !session.closed;
    try {
      pc.onLocalDescription(this.guard((desc, type) => {
        if (current()) this.signal(session, { type: String(type).toLowerCase(), sdp: desc, attempt });
      }));
      pc.onLocalCandidate(this.guard((candidate, mid) => {
        // libdatachannel writes the SDP attribute form; browsers want the bare candidate.
        if (current()) this.signal(session, { type: 'candidate', candidate: candidate.replace(/^a=/, ''), mid, attempt });
      }));
      pc.onStateChange(this.guard((state) => {
        if (state === 'failed' || state === 'closed') this.lost(session, link, `connection ${state}`);
      }));
      // Only the pre-negotiated channel is part of the protocol.
      pc.onDataChannel(this.guard((dc) => { try { dc.close(); } catch { /* gone */ } }));
      pc.setRemoteDescription(sdp, 'offer');
      const dc = pc.createDataChannel(UDP_CHANNEL.label, {
        negotiated: true, id: UDP_CHANNEL.id, unordered: true, maxRetransmits: 0,
      });
      link.dc = dc;
      dc.onOpen(this.guard(() => this.opened(session, link)));
      dc.onClosed(this.guard(() => this.lost(session, link, 'channel closed')));
      dc.onError(this.guard(() => this.lost(session, link, 'channel error')));
      dc.onMessage(this.guard((data) => {
        if (!current()) return;
        // Each native callback has its own queue: a message may overtake the open event.
        if (!link.open) this.opened(session, link);
        if (typeof data === 'string') this.hooks.onFrame(session, data, false);
        else this.hooks.onFrame(session, data instanceof ArrayBuffer ? new Uint8Array(data) : data, true);
      }));
    } catch (err) {
      this.lost(session, link, 'offer refused');
      return [CloseCode.PROTOCOL_VIOLATION, `SIGNAL offer refused: ${errorText(err)}`];
    }
    link.setupTimer = setTimeout(() => {
      if (!link.open) this.lost(session, link, 'setup timeout');
    }, this.options.setupTimeoutMs);
    link.setupTimer.unref?.();
    return null;
  }

  /**
   * The channel is open: it becomes the session's data path and the session a destination.
   * @param {import('./session.js').Session} session
   * @param {Link} link
   */
  opened(session, link) {
    if (this.links.get(session) !== link || session.closed || link.open || !link.dc) return;
    link.open = true;
    clearTimeout(link.setupTimer);
    link.socket = new DataChannelSocket(link.dc, this.ctx.stats);
    session.dataOut = new Outbox(session, link.socket, { kind: 'dc', maxFrameBytes: this.options.maxMessageBytes });
    this.ctx.stats.udp.channelsOpened++;
    this.hooks.announce(session);
  }

  /**
   * The link failed, closed, timed out or was replaced: take it down.
   * @param {import('./session.js').Session} session
   * @param {Link} link
   * @param {string} why counted in stats.udp.lost
   * @param {boolean} [replaced] an open channel the member offers anew: it stays announced
   */
  lost(session, link, why, replaced = false) {
    if (this.links.get(session) !== link) return;
    this.links.delete(session);
    clearTimeout(link.setupTimer);
    const stats = this.ctx.stats;
    const key = `${link.open ? 'open' : 'setup'}: ${why}`;
    stats.udp.lost[key] = (stats.udp.lost[key] ?? 0) + 1;
    if (link.open) {
      stats.udp.channelsClosed++;
      if (replaced) this.hooks.unqueue(session);
      else this.hooks.retract(session); // drops what was queued on the channel
    } else {
      stats.udp.setupFailures++;
      // The replacement of an open channel never opened: the member cannot be reached after all.
      if (session.ready && !session.dataOut) this.hooks.retract(session);
    }
    if (session.dataOut && session.dataOut.socket === link.socket) {
      session.dataOut.active = false;
      session.dataOut = null;
    }
    link.socket?.close();
    try { link.dc?.close(); } catch { /* gone */ }
    try { link.pc.close(); } catch { /* gone */ }
  }

  /**
   * Takes down a session's peer connection, if it has one (it closed, or offers anew).
   * @param {import('./session.js').Session} session
   * @param {string} [why]
   */
  drop(session, why = 'session closed') {
    const link = this.links.get(session);
    if (link) this.lost(session, link, why);
  }

  /**
   * Sends a SIGNAL to a session, over its WebSocket.
   * @param {import('./session.js').Session} session
   * @param {object} payload
   */
  signal(session, payload) {
    session.push(encode({ type: MsgType.SIGNAL, from: 0, to: session.id, payload: JSON.stringify(payload) }).subarray(1));
  }

  /** Closes every peer connection (relay shutdown). */
  close() {
    for (const [session, link] of [...this.links]) this.lost(session, link, 'relay closing');
  }
}

/**
 * @template T
 * @param {T} o
 * @returns {Partial<T>}
 */
function stripUndefined(o) {
  return /** @type {any} */ (Object.fromEntries(Object.entries(o ?? {}).filter(([, v]) => v !== undefined)));
}
