// The relay transport's connection: one WebSocket at a time, joined with a
// HELLO, and after an unexpected close a rejoin with the same client id and
// token, paced by ReconnectPolicy. relay.js wraps it as a core Transport.

import { MsgType, ProtocolError, WelcomeFlag, decode, encode, unbatch } from '../../../core/protocol.js';
import { ResumeReplay } from './relay-replay.js';
import { RelayOutbox } from './relay-outbox.js';
import { REJOIN_WELCOME_TIMEOUT_MS, ReconnectPolicy } from './relay-reconnect.js';
import { SILENCE_DEFAULT_MS, SilenceWatch } from './relay-silence.js';
import { dispatchRelayMessage, helloMessage, listenForFrames, relayUrlForGroup } from './relay-socket.js';

/**
 * @typedef {import('../../../core/client.js').TransportHandlers} TransportHandlers
 * @typedef {import('../../../core/client.js').JoinParams} JoinParams
 * @typedef {import('../../../core/protocol.js').WelcomeMsg} WelcomeMsg
 * @typedef {import('./relay-socket.js').RelaySocket} RelaySocket
 */

/**
 * How connect() learns the outcome of the first socket.
 * @typedef {object} FirstJoin
 * @property {(w: WelcomeMsg) => void} resolve on WELCOME
 * @property {(e: Error) => void} reject on a close before it (no retry then)
 */

/**
 * One WebSocket and what happened on it.
 * @typedef {object} SocketAttempt
 * @property {RelaySocket} socket
 * @property {FirstJoin | null} first the connect() call's join; null for a rejoin
 * @property {boolean} welcomed
 * @property {ReturnType<typeof setTimeout> | null} giveUp a rejoin's wait for its WELCOME
 * @property {number | null} helloAt when its HELLO went (epochNow)
 */

/**
 * The server's clock as this client estimates it (Cristian's algorithm on
 * HELLO -> WELCOME): server time = local epoch ms + offsetMs, give or take
 * errorMs (half the round trip the estimate came from).
 * @typedef {import('../../../core/client.js').ServerClock} ServerClock
 */

/**
 * @typedef {object} RelayConnectionOptions
 * @property {string | string[]} url the relay; several: a rejoin tries the next one (the first is home)
 * @property {boolean} batched
 * @property {boolean} [membershipOnly]
 * @property {number} [extraFlags]
 * @property {new (url: string) => RelaySocket} WebSocket
 * @property {() => number} now
 * @property {(m: import('../../../core/protocol.js').SignalMsg) => void} [onSignal]
 * @property {boolean | import('./relay-reconnect.js').ReconnectOptions} [reconnect]
 * @property {number} [rejoinTimeoutMs] how long a rejoin waits for WELCOME (default REJOIN_WELCOME_TIMEOUT_MS)
 * @property {() => number} [epochNow] ms since 1970 on the clock the client core logs its scene with
 *   (default performance.timeOrigin + performance.now()): the server clock estimate is against it
 * @property {number} [silenceMs] with `reconnect`, a welcomed connection whose UPDATEs got no frame back
 *   for this long is given up and rejoined (relay-silence.js; default SILENCE_DEFAULT_MS, 0: never)
 * @property {{ addEventListener(type: 'online', cb: () => void): void, removeEventListener(type: 'online', cb: () => void): void }} [network]
 *   where the browser says its network came back (`window`): the connection is then rejoined at once
 */

/**
 * Joins the relay and keeps the membership through outages.
 */
export class RelayConnection {
  /** @param {RelayConnectionOptions} options */
  constructor(options) {
    this.options = options;
    /** @type {RelaySocket | null} the current socket */
    this.ws = null;
    this.outbox = new RelayOutbox(options.batched, () => this.ws);
    this.policy = new ReconnectPolicy(options.reconnect);
    /** The client closed us: never reconnect then. */
    this.closedByUs = false;
    /** @type {ReturnType<typeof setTimeout> | null} the wait before the next rejoin */
    this.retryTimer = null;
    /** Our id in the group once welcomed; a rejoin asks for it again. */
    this.myId = 0;
    /** The secret of our session from its last WELCOME ('' when the relay gave none): a rejoin takes the session back with it. */
    this.resumeSecret = '';
    /** @type {TransportHandlers | null} */
    this.handlers = null;
    /** @type {JoinParams | null} */
    this.joinParams = null;
    /** Rejoins that succeeded, attempts made, the last close code seen. */
    this.counters = { reconnects: 0, attempts: 0, lastCloseCode: /** @type {number | null} */ (null) };
    /** Which of several relay URLs the current socket went to. */
    this.urlIndex = 0;
    /** @type {ServerClock | null} the best estimate so far (the one from the shortest round trip) */
    this.serverClock = null;
    this.epochNow = options.epochNow ?? (() => performance.timeOrigin + performance.now());
    this.silence = new SilenceWatch(options.silenceMs ?? SILENCE_DEFAULT_MS);
    /** @type {ReturnType<typeof setInterval> | null} looks for silence while a connection is welcomed */
    this.silenceTimer = null;
    /** The current attempt (its socket is this.ws). @type {SocketAttempt | null} */
    this.attempt = null;
    /**
     * Sockets given up as dead but not closed: a close frame that did get through
     * would end the session at the relay before the rejoin resumes it. Closed once
     * the rejoin is welcomed (the relay has ended them by then).
     * @type {RelaySocket[]}
     */
    this.abandoned = [];
    /** What a resumed session makes good, both ways (relay-replay.js). */
    this.replay = new ResumeReplay();
    this.onOnline = () => { if (this.attempt?.welcomed) this.giveUp(this.attempt, 'the network changed'); };
    /** Waiting for the next WELCOME (rejoinNow). @type {(() => void)[]} */
    this.welcomeWaiters = [];
  }

  /**
   * The path may have moved (something else noticed: a p2p link's ICE): rejoins now, resuming the
   * session, as on `online`. Resolves at the next WELCOME (at once when not welcomed yet, or closed).
   * @param {string} [why]
   * @returns {Promise<void>}
   */
  rejoinNow(why = 'the path moved') {
    if (this.closedByUs || !this.policy.options) return Promise.resolve();
    const waiting = new Promise((resolve) => this.welcomeWaiters.push(() => resolve(undefined)));
    if (this.attempt?.welcomed) this.giveUp(this.attempt, why);
    return waiting;
  }

  /**
   * An UPDATE went out on the current connection: it should be answered, and
   * it is kept for a resume to send again.
   * @param {import('../../../core/protocol.js').UpdateMsg} update
   */
  sentUpdate(update) {
    this.silence.sent(this.options.now());
    this.replay.sent(update);
  }

  /**
   * Gives a welcomed connection up as dead (silent, or the network changed
   * under it) and rejoins, as after a close the relay did not send: its
   * close event, whenever it comes, belongs to an old attempt and is ignored.
   * @param {SocketAttempt} attempt @param {string} why
   */
  giveUp(attempt, why) {
    if (attempt.socket !== this.ws || this.closedByUs) return;
    this.onSocketClose(attempt, { code: 1006, reason: why });
    this.ws = null;
    this.abandoned.push(attempt.socket);
  }

  /** Closes the sockets given up earlier. */
  closeAbandoned() {
    for (const socket of this.abandoned.splice(0)) {
      try { socket.close(); } catch { /* closing already */ }
    }
  }

  /** @param {boolean} on */
  watchSilence(on) {
    if (this.silenceTimer !== null) clearInterval(this.silenceTimer);
    this.silenceTimer = null;
    this.silence.heard();
    // Without reconnection a given-up connection would just end: better to wait for it then.
    if (!on || this.silence.silenceMs <= 0 || !this.policy.options) return;
    const dead = () => this.attempt !== null && this.silence.isDead(this.options.now());
    this.silenceTimer = setInterval(() => {
      // Confirmed a turn later: after a stalled event loop, frames already here are read first.
      if (dead()) setTimeout(() => { if (dead()) this.giveUp(/** @type {SocketAttempt} */ (this.attempt), `no answer for ${this.silence.silenceMs} ms`); }, 0);
    }, Math.max(100, this.silence.silenceMs / 4));
    // In Node (the lab's clients) the check alone keeps no process alive; browsers have no unref.
    /** @type {{ unref?: () => void }} */ (/** @type {unknown} */ (this.silenceTimer)).unref?.();
  }

  /**
   * The URL a socket goes to: the first for the first join; with several,
   * every rejoin moves on to the next one, away from the relay that dropped us.
   * It carries the group (`?g=`), by which a balancer places the connection.
   * @param {boolean} rejoin
   * @returns {string}
   */
  nextUrl(rejoin) {
    const urls = Array.isArray(this.options.url) ? this.options.url : [this.options.url];
    if (rejoin) this.urlIndex = (this.urlIndex + 1) % urls.length;
    const group = /** @type {JoinParams} */ (this.joinParams).group; // set by connect(), which comes first
    return relayUrlForGroup(urls[this.urlIndex], group);
  }

  /**
   * Joins: resolves on WELCOME, rejects if the socket closes before it.
   * @param {JoinParams} join
   * @param {TransportHandlers} h
   * @returns {Promise<WelcomeMsg>}
   */
  connect(join, h) {
    this.joinParams = join;
    this.handlers = h;
    this.closedByUs = false;
    this.options.network?.addEventListener('online', this.onOnline);
    return new Promise((resolve, reject) => this.open({ resolve, reject }));
  }

  /**
   * Opens one WebSocket and joins. `first`: the connect() call; otherwise a
   * rejoin, which retries on its own until it is welcomed.
   * @param {FirstJoin | null} first
   */
  open(first) {
    const join = /** @type {JoinParams} */ (this.joinParams); // set by connect(), which comes first
    const socket = new this.options.WebSocket(this.nextUrl(first === null));
    this.ws = socket;
    /** @type {SocketAttempt} */
    const attempt = { socket, first, welcomed: false, giveUp: /** @type {ReturnType<typeof setTimeout> | null} */ (null), helloAt: /** @type {number | null} */ (null) };
    this.attempt = attempt;
    if (!first) {
      // Unanswered: closed here, and the close event plans the next attempt as for any other.
      attempt.giveUp = setTimeout(() => { if (this.ws === socket && !attempt.welcomed) socket.close(); }, this.options.rejoinTimeoutMs ?? REJOIN_WELCOME_TIMEOUT_MS);
    }
    socket.onopen = () => {
      // A rejoin keeps its id, so its neighbours' streams from it go on; a
      // new one only if the old one stays taken.
      const clientId = first ? join.clientId ?? 0 : this.policy.rejoinId(this.myId);
      attempt.helloAt = this.epochNow();
      const resume = !first && clientId === this.myId ? this.resumeSecret : '';
      socket.send(encode(helloMessage(this.options, join, clientId, resume)));
    };
    listenForFrames(socket, (data) => this.onFrame(attempt, data));
    socket.onerror = () => {}; // the close event follows and carries the reason
    socket.onclose = (event) => this.onSocketClose(attempt, event);
  }

  /**
   * @param {SocketAttempt} attempt
   * @param {unknown} data one frame
   */
  onFrame(attempt, data) {
    if (attempt.socket !== this.ws) return;
    const h = /** @type {TransportHandlers} */ (this.handlers); // set by connect()
    const arrival = this.options.now();
    this.silence.heard();
    // decode() checks what it gets: text or anything else not binary comes back as a ProtocolError.
    const frame = decode(/** @type {Uint8Array} */ (data));
    if (frame instanceof ProtocolError) {
      attempt.socket.close(frame.closeCode, frame.message.slice(0, 120));
      return;
    }
    const sinks = {
      handlers: h,
      onSignal: this.options.onSignal,
      onWelcome: (/** @type {WelcomeMsg} */ m) => this.onWelcome(attempt, m),
    };
    for (const m of unbatch(frame)) {
      if (m.type === MsgType.UPDATE && !this.replay.received(m)) continue;
      if (m.type === MsgType.MEMBER_LEFT) this.replay.left(m.id);
      dispatchRelayMessage(m, arrival, sinks);
    }
  }

  /**
   * @param {SocketAttempt} attempt
   * @param {WelcomeMsg} m
   */
  onWelcome(attempt, m) {
    const h = /** @type {TransportHandlers} */ (this.handlers);
    attempt.welcomed = true;
    if (attempt.giveUp !== null) clearTimeout(attempt.giveUp);
    this.myId = m.clientId;
    this.resumeSecret = m.resume ?? '';
    const resumed = ((m.capabilities ?? 0) & WelcomeFlag.RESUMED) !== 0;
    // Sent again before anything new: the relay drops the ones it had.
    for (const update of this.replay.welcomed(resumed)) this.outbox.send(update);
    this.watchSilence(true);
    this.closeAbandoned();
    this.takeClockSample(attempt.helloAt, m.serverTime);
    for (const resolve of this.welcomeWaiters.splice(0)) resolve();
    if (attempt.first) {
      h.onWelcome?.(m);
      attempt.first.resolve(m);
    } else {
      this.counters.reconnects++;
      this.policy.welcomed();
      h.onReconnected?.(m);
    }
    h.onConnectionStatus?.({ state: 'connected', part: 'relay' });
  }

  /**
   * Keeps a WELCOME's server time as the clock estimate when its round trip
   * was the shortest yet (a rejoin over a quieter network sharpens it).
   * @param {number | null} helloAt @param {number} serverTime
   */
  takeClockSample(helloAt, serverTime) {
    if (helloAt === null || !(serverTime > 0)) return;
    const at = this.epochNow();
    const errorMs = Math.max(0, at - helloAt) / 2;
    if (this.serverClock && this.serverClock.errorMs <= errorMs) return;
    this.serverClock = { offsetMs: serverTime + errorMs - at, errorMs };
  }

  /**
   * @param {SocketAttempt} attempt
   * @param {{ code: number, reason: string }} event
   */
  onSocketClose(attempt, event) {
    if (attempt.giveUp !== null) clearTimeout(attempt.giveUp);
    if (attempt.socket !== this.ws) return;
    const h = /** @type {TransportHandlers} */ (this.handlers);
    this.counters.lastCloseCode = event.code;
    this.watchSilence(false);
    if (attempt.first && !attempt.welcomed) {
      const err = Object.assign(new Error(`relay closed before WELCOME: ${event.code} ${event.reason || ''}`.trim()), { code: event.code });
      attempt.first.reject(err);
      h.onClose(event.code, event.reason);
      return;
    }
    const plan = this.closedByUs ? null : this.policy.afterClose(event.code, attempt.welcomed);
    if (!plan) {
      h.onClose(event.code, event.reason);
      return;
    }
    if (attempt.welcomed) h.onReconnecting?.({ code: event.code, reason: event.reason });
    h.onConnectionStatus?.({ state: 'reconnecting', part: 'relay', attempt: plan.attempt, delayMs: plan.delayMs, code: event.code });
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      if (this.closedByUs) return;
      this.counters.attempts++;
      this.open(null);
    }, plan.delayMs);
  }

  /** Leaves: sends what is queued, then closes the socket (or ends the wait for a rejoin). */
  close() {
    this.closedByUs = true;
    for (const resolve of this.welcomeWaiters.splice(0)) resolve();
    this.watchSilence(false);
    this.closeAbandoned();
    this.options.network?.removeEventListener('online', this.onOnline);
    this.outbox.flush();
    if (this.retryTimer !== null) {
      // Between two attempts there is no socket to close: report the close ourselves.
      clearTimeout(this.retryTimer);
      this.retryTimer = null;
      this.handlers?.onClose(1000, 'closed while reconnecting');
      return;
    }
    const ws = this.ws;
    if (ws && ws.readyState <= 1) ws.close(1000, 'bye');
  }
}
