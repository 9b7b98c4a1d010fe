// relay-udp's session: joins over the relay's WebSocket (the control channel:
// WELCOME, MEMBER_*, SIGNAL), then keeps one data channel to the relay open,
// offering it again after a failure while the WebSocket is up. connect()
// resolves once the first channel is open. ../relay-udp.js wraps it as a
// core Transport.

import { HelloFlag, MsgType } from '../../../../core/protocol.js';
import { createRelayTransport } from '../relay.js';
import { readChannel, setupStats } from '../p2p.js';
import { newUdpCounters } from './constants.js';
import { UdpInbox, discardEveryOf } from './inbox.js';
import { UdpLink, errorText } from './link.js';
import { UdpMembers } from './members.js';
import { UdpOutbox } from './outbox.js';
import { SetupLog, channelInfoOf } from './report.js';
import { ChannelRetryPolicy } from './retry.js';
import { readRelaySignal, signalToRelay } from './signal.js';

/**
 * @typedef {import('../../../../core/client.js').TransportHandlers} TransportHandlers
 * @typedef {import('../../../../core/client.js').JoinParams} JoinParams
 * @typedef {import('../../../../core/protocol.js').WelcomeMsg} WelcomeMsg
 */

/**
 * Everything resolved: no option left out.
 * @typedef {object} UdpSessionOptions
 * @property {string} url
 * @property {RTCIceServer[]} iceServers
 * @property {import('./link.js').PeerConnectionClass} RTCPeerConnection
 * @property {any} WebSocket passed on to the relay transport (see RelayTransportOptions)
 * @property {() => number} now
 * @property {boolean} batched
 * @property {number} maxMessageBytes
 * @property {number} setupTimeoutMs
 * @property {number} retryBaseMs
 * @property {number} retryMaxMs
 * @property {number} connectTimeoutMs
 * @property {number | undefined} discardIncomingFraction
 * @property {boolean | import('../relay-reconnect.js').ReconnectOptions} [reconnect] the membership socket
 *   rejoins after an unexpected close, resuming its session (default false)
 * @property {import('../relay-connection.js').RelayConnectionOptions['network']} [network] where the
 *   network coming back is announced (the membership rejoins at once, and the channel is offered anew)
 */

/**
 * One relay-udp client: the membership socket, the current channel attempt, and the counters.
 * Implements LinkOwner for its links.
 */
export class RelayUdpSession {
  /** @param {UdpSessionOptions} options */
  constructor(options) {
    this.options = options;
    this.now = options.now;
    this.counters = newUdpCounters();
    this.membership = createRelayTransport({
      url: options.url, batched: options.batched, extraFlags: HelloFlag.UDP, WebSocket: options.WebSocket, now: options.now,
      onSignal: (m) => this.onSignal(m), reconnect: options.reconnect, network: options.network,
    });
    this.members = new UdpMembers();
    this.retry = new ChannelRetryPolicy({ baseMs: options.retryBaseMs, maxMs: options.retryMaxMs });
    this.log = new SetupLog();
    this.inbox = new UdpInbox({ discardEvery: discardEveryOf(options.discardIncomingFraction), now: options.now, counters: this.counters });
    this.outbox = new UdpOutbox({
      batched: options.batched, maxMessageBytes: options.maxMessageBytes, counters: this.counters, channel: () => this.openChannel,
    });
    this.closed = false;
    this.wsClosed = false;
    /** Channel attempts made. */
    this.attempts = 0;
    /** @type {UdpLink | null} the attempt under way, or the open channel */
    this.current = null;
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    this.retryTimer = undefined;
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    this.connectTimer = undefined;
    /** @type {null | { resolve: (w: WelcomeMsg) => void, reject: (e: Error) => void }} connect() waiting for the channel */
    this.pendingConnect = null;
    /** @type {WelcomeMsg | null} */
    this.welcomeMsg = null;
    /** @type {ReturnType<typeof readChannel> | null} what the last open channel reported */
    this.lastRead = null;
    this.lastError = '';
    /** @type {TransportHandlers | null} */
    this.handlers = null;
    /** A channel is being replaced while its members stay (after a resume): its failure takes them away. */
    this.replacing = false;
    /**
     * The channel being replaced: kept (and sent on while it is open) until the new one opens, so
     * that the relay sees the new offer first and keeps the member announced (docs/protocol.md §13.3).
     * @type {UdpLink | null}
     */
    this.retiring = null;
  }

  /** The open data channel, or null. */
  get openChannel() {
    if (this.current?.open) return this.current.channel;
    return this.retiring?.open ? this.retiring.channel : null;
  }

  /** Takes the channel being replaced down (the new one opened, or will not). */
  retire() {
    const old = this.retiring;
    this.retiring = null;
    old?.teardown();
  }

  // ------------------------------------------------------------ connect and close

  /**
   * Joins over the WebSocket, then resolves once the data channel is open.
   * @param {JoinParams} join
   * @param {TransportHandlers} h
   * @returns {Promise<WelcomeMsg>}
   */
  async connect(join, h) {
    this.handlers = h;
    this.members.handlers = h;
    const t0 = this.now();
    const welcome = await this.membership.connect(join, this.membershipHandlers(h));
    this.log.signalingMs = this.now() - t0;
    this.welcomeMsg = welcome;
    this.members.welcome(welcome);
    if (this.wsClosed) throw new Error('relay closed before the data channel opened');
    return new Promise((resolve, reject) => {
      this.pendingConnect = { resolve, reject };
      this.connectTimer = setTimeout(() => {
        if (!this.pendingConnect) return;
        this.pendingConnect = null;
        reject(new Error(`relay-udp: no data channel after ${this.options.connectTimeoutMs} ms (${this.lastError || 'no answer'})`));
        this.close();
      }, this.options.connectTimeoutMs);
      this.offer();
    });
  }

  /**
   * What the membership socket delivers: the control messages here, the data
   * wherever it comes from.
   * @param {TransportHandlers} h
   * @returns {TransportHandlers}
   */
  membershipHandlers(h) {
    return {
      // The relay sends these on the data channel; take them from anywhere.
      onUpdate: (m, arrival) => h.onUpdate(m, arrival),
      onAck: (m) => h.onAck(m),
      onAckedAll: (m) => h.onAckedAll(m),
      onMemberJoined: (m) => this.members.announced(m.id, m.name),
      onMemberLeft: (id) => this.members.departed(id),
      // The WebSocket's own messages to the client core: the group's kept scene, an ERROR.
      onKeptScene: (m) => h.onKeptScene?.(m),
      onServerError: (m) => h.onServerError?.(m),
      onClose: (code, reason) => this.onMembershipClose(code, reason),
      // The WebSocket is away: the core holds its cycle back until it is rejoined.
      onReconnecting: (info) => h.onReconnecting?.(info),
      onReconnected: (welcome) => this.onMembershipBack(welcome),
      onConnectionStatus: (status) => h.onConnectionStatus?.(status),
    };
  }

  /**
   * The membership socket rejoined. Resumed (same id, docs/protocol.md §8.10):
   * the member stayed in its group at the relay, so its members stay, and
   * its channel is offered anew, since the path the old one took may be gone
   * (a rejoin means it was in doubt). Not resumed (a new id): the relay ended
   * the old session and its channel, so this is a join: nobody is reachable
   * until a new channel opens.
   * @param {WelcomeMsg} welcome
   */
  onMembershipBack(welcome) {
    const h = /** @type {TransportHandlers} */ (this.handlers);
    const resumed = welcome.clientId === this.members.myId;
    this.members.rejoined(welcome);
    this.welcomeMsg = welcome;
    clearTimeout(this.retryTimer);
    if (resumed && this.members.live) {
      this.replaceChannel();
      h.onReconnected?.(this.members.welcomeForCore(welcome));
      return;
    }
    this.members.live = false;
    this.dropCurrent();
    h.onReconnected?.(this.members.welcomeForCore(welcome, false));
    this.offer();
  }

  /** Offers a new channel in place of the open one; the members stay unless it fails. */
  replaceChannel() {
    this.replacing = true;
    this.counters.channelReplacements++;
    this.retire();
    this.retiring = this.current?.open ? this.current : null;
    if (!this.retiring) this.dropCurrent();
    this.current = null;
    this.offer();
  }

  /**
   * The WebSocket is gone for good: so is the channel.
   * @param {number} code
   * @param {string} reason
   */
  onMembershipClose(code, reason) {
    this.wsClosed = true;
    clearTimeout(this.retryTimer);
    this.dropCurrent();
    this.members.live = false;
    if (this.pendingConnect) {
      const { reject } = this.pendingConnect;
      this.pendingConnect = null;
      clearTimeout(this.connectTimer);
      reject(Object.assign(new Error(`relay closed before the data channel opened: ${code} ${reason || ''}`.trim()), { code }));
    }
    this.handlers?.onClose(code, reason);
  }

  /** Leaves: sends what is queued, closes the channel and the WebSocket. */
  close() {
    if (this.closed) return;
    if (this.members.live && this.outbox.pending) this.outbox.flush();
    this.closed = true;
    clearTimeout(this.retryTimer);
    clearTimeout(this.connectTimer);
    this.dropCurrent();
    this.members.live = false;
    this.membership.close();
  }

  /** Tears down the current attempt, if any, without counting it as a failure. */
  dropCurrent() {
    this.retire();
    if (!this.current) return;
    const link = this.current;
    this.current = null;
    link.teardown();
  }

  // ------------------------------------------------------------ the channel

  /** Starts a channel attempt (while neither we nor the WebSocket closed). */
  offer() {
    this.retryTimer = undefined;
    if (this.closed || this.wsClosed) return;
    this.attempts++;
    this.counters.offers++;
    if (this.attempts > 1) this.counters.dtlsRetries++;
    let link;
    try {
      link = new UdpLink(this.options.RTCPeerConnection, this.options.iceServers, this.attempts, this.now());
    } catch (err) {
      this.lastError = `RTCPeerConnection: ${errorText(err)}`;
      this.counters.setupFailures++;
      this.scheduleRetry(false);
      return;
    }
    this.current = link;
    link.start(this, this.now, this.options.setupTimeoutMs);
  }

  /** @param {boolean} wasOpen a channel that worked is offered again soon */
  scheduleRetry(wasOpen) {
    if (this.closed || this.wsClosed) return;
    this.retryTimer = setTimeout(() => this.offer(), this.retry.nextDelay(wasOpen));
  }

  /** @param {UdpLink} link */
  isCurrent(link) {
    return this.current === link;
  }

  /** @param {import('./signal.js').OutgoingSignal} payload */
  signal(payload) {
    this.membership.sendSignal(signalToRelay(this.members.myId, payload));
  }

  badCandidate() {
    this.counters.badCandidates++;
  }

  /** @param {import('../../../../core/protocol.js').SignalMsg} m */
  onSignal(m) {
    const link = this.current;
    const s = readRelaySignal(m, this.members.myId, link ? link.attempt : null);
    if (s.kind === 'stale') this.counters.staleSignals++;
    if (!link) return;
    if (s.kind === 'answer') link.applyAnswer(this, s.sdp, this.now);
    else if (s.kind === 'candidate') link.addRemoteCandidate(this, s.candidate, s.mid);
  }

  /**
   * The channel is open: the core learns the members (or connect() resolves with them).
   * @param {UdpLink} link
   */
  opened(link) {
    if (this.current !== link || link.open) return;
    link.markOpen(this.now());
    this.retry.opened();
    const replaced = this.replacing;
    this.replacing = false;
    this.retire();
    const setup = link.setup;
    this.lastRead = readChannel(link.channel);
    Object.assign(setup, this.lastRead);
    this.log.opened(setup);
    setupStats(link.pc).then((s) => Object.assign(setup, s), () => { /* stats are best effort */ });
    const pending = this.pendingConnect;
    if (!replaced) this.members.goLive(!pending);
    if (pending) {
      this.pendingConnect = null;
      clearTimeout(this.connectTimer);
      // The members the client core starts with: those whose channels are open.
      pending.resolve(this.members.welcomeForCore(/** @type {WelcomeMsg} */ (this.welcomeMsg))); // taken in before the first offer
    }
  }

  /**
   * An attempt failed or an open channel went away: tear it down, and offer
   * again after a backoff while the WebSocket is up.
   * @param {UdpLink} link
   * @param {string} why
   */
  failed(link, why) {
    if (this.current !== link) return;
    this.current = null;
    clearTimeout(link.setupTimer);
    this.lastError = why;
    link.setup.error = why;
    const wasOpen = link.open;
    // Keys in this order, the setup's own after them (its attempt is the same number).
    this.log.failed(Object.assign({ attempt: link.attempt, afterMs: this.now() - link.t0, wasOpen, error: why }, link.setup));
    link.teardown();
    if (wasOpen) {
      this.counters.channelDrops++;
      this.outbox.clear();
      this.members.goDown();
    } else {
      this.counters.setupFailures++;
      // A replacement that does not open: the members it kept cannot be reached after all.
      if (this.replacing) { this.retire(); this.members.goDown(); }
    }
    this.replacing = false;
    this.scheduleRetry(wasOpen);
  }

  // ------------------------------------------------------------ data

  /**
   * A message on the channel.
   * @param {UdpLink} _link
   * @param {unknown} data
   */
  message(_link, data) {
    const error = this.inbox.receive(data, /** @type {TransportHandlers} */ (this.handlers)); // set before the first offer
    if (!error) return;
    // The relay sent garbage: as on the WebSocket, give up on the connection.
    const ws = this.membership.ws;
    if (ws && ws.readyState <= 1) ws.close(error.closeCode, error.message.slice(0, 120));
  }

  /**
   * An UPDATE or ACK from the core: dropped (and counted) while no channel is open.
   * @param {import('../../../../core/protocol.js').Message} msg
   */
  sendData(msg) {
    if (!this.members.live) {
      this.counters.notSent++;
      return;
    }
    this.outbox.send(msg);
  }

  /** channelInfo() of the transport. */
  channelInfo() {
    return channelInfoOf(this.openChannel, this.lastRead);
  }

  /** setupInfo() of the transport. */
  setupInfo() {
    return this.log.snapshot(this.counters, this.lastError);
  }
}
