// An ICE restart of a p2p link, signaled through the relay (SIGNAL between
// members, capability PEER_SIGNAL, docs/protocol.md §5.11): when a link's ICE
// goes `disconnected` (its path died: a phone changed networks), the dialling
// side offers new ICE credentials on the same RTCPeerConnection, with its
// candidates in the SDP, and the other side answers the same way (a side
// that doubts the path but does not dial asks the dialling side to). The
// connection and its data channel stay; only the selected candidate pair
// changes. PeerJS 1.5 closes a connection that gets a second offer through
// its own server, and closes it on ICE `failed`, so while a restart is under
// way PeerJS's candidate and ICE-state handlers are held back.

/** A link disconnected this long (not a blip) is restarted. */
export const RESTART_AFTER_MS = 300;
/** A restart not connected again after this long has failed: the link fails as it would have. */
export const RESTART_TIMEOUT_MS = 6000;
/** Longest wait for candidates before an offer or answer goes with what it has. */
export const GATHER_MAX_MS = 1500;
/** An unanswered restart offer goes again this often (until answered or RESTART_TIMEOUT_MS). */
export const RESEND_MS = 1000;
/** The selected pair is read this long after ICE connects again (a browser names the new pair a moment later). */
export const PAIR_SETTLE_MS = 250;
/** How often the selected pair is read while a restart whose ICE stayed connected waits for a new one. */
export const PAIR_POLL_MS = 100;

/**
 * What a restart that brought its link back reports: how long it took, and the selected candidate
 * pair before and after (null: unknown).
 * @typedef {{ ms: number, pairBefore: string | null, pairAfter: string | null }} RestartOutcome
 */

/**
 * A restart's SIGNAL payload. `request`: the answering side doubts the path (its channel fell
 * silent: its own network may have moved) and asks the dialling side to restart now; it has no SDP.
 * @typedef {{ kind: 'ice-restart', type: 'offer' | 'answer' | 'request', sdp: string, attempt: number }} RestartSignal
 */

/**
 * Resolves when the connection has gathered its candidates, or after maxMs.
 * @param {RTCPeerConnection} pc @param {number} maxMs
 */
export function gathered(pc, maxMs = GATHER_MAX_MS) {
  if (pc.iceGatheringState === 'complete') return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => { clearTimeout(timer); pc.removeEventListener('icegatheringstatechange', check); resolve(undefined); };
    const check = () => { if (pc.iceGatheringState === 'complete') done(); };
    const timer = setTimeout(done, maxMs);
    pc.addEventListener('icegatheringstatechange', check);
  });
}

/**
 * Reads a SIGNAL payload as a restart's, or null.
 * @param {string} payload
 * @returns {RestartSignal | null}
 */
export function readRestartSignal(payload) {
  let p;
  try { p = JSON.parse(payload); } catch { return null; }
  if (!p || p.kind !== 'ice-restart') return null;
  if (p.type === 'request') return { kind: 'ice-restart', type: 'request', sdp: '', attempt: Number(p.attempt) || 0 };
  if ((p.type !== 'offer' && p.type !== 'answer') || typeof p.sdp !== 'string' || p.sdp.length === 0) return null;
  return { kind: 'ice-restart', type: p.type, sdp: p.sdp, attempt: Number(p.attempt) || 0 };
}

/**
 * One link's restarts.
 */
export class IceRestart {
  /**
   * @param {object} o
   * @param {RTCPeerConnection} o.pc
   * @param {boolean} o.initiator this side offers (the dialling side: no glare)
   * @param {(payload: RestartSignal) => void} o.send over the relay to the neighbour
   * @param {(outcome: RestartOutcome) => void} o.onRestarted connected again after a restart
   * @param {(pc: RTCPeerConnection) => Promise<string | null>} [o.readPair] the selected candidate pair (p2p-channel.js selectedPair)
   * @param {(why: string) => void} o.onFailed the restart did not bring it back
   * @param {() => number} o.now
   * @param {(what: 'disconnected' | 'failed' | 'started' | 'moved') => void} [o.count] ICE went disconnected or failed; a
   *   restart began; a local candidate came after the link connected (our network moved)
   * @param {() => Promise<void>} [o.ready] resolves when the signaling path is up again (the relay
   *   connection may have died with the same network change; it is rejoined first)
   */
  constructor(o) {
    this.o = o;
    /** A restart is under way (PeerJS's handlers are held back). */
    this.active = false;
    this.attempt = 0;
    /** Restarts that brought the link back. */
    this.succeeded = 0;
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.timer = null;
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.pending = null;
    this.startedAt = 0;
    /** How long the last successful restart took (ms), or null. @type {number | null} */
    this.lastMs = null;
    /** The offer of the restart under way, sent again every RESEND_MS until answered. @type {RestartSignal | null} */
    this.offer = null;
    /** @type {ReturnType<typeof setInterval> | null} */
    this.resend = null;
    /** The last offer answered and our answer: a repeated offer gets the same answer. @type {{ attempt: number, answer: RestartSignal } | null} */
    this.answered = null;
    /** The link's ICE was connected once: a local candidate after that means our network changed. */
    this.wasConnected = false;
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.moved = null;
    /** Looks for the new selected pair once offer and answer are applied. @type {ReturnType<typeof setInterval> | null} */
    this.pairWatch = null;
    /** Restart requests sent (the answering side asks the dialling one); the one being repeated. */
    this.requests = 0;
    /** @type {ReturnType<typeof setInterval> | null} */
    this.requesting = null;
    /** The selected pair when the restart under way began. @type {Promise<string | null>} */
    this.pairBefore = Promise.resolve(null);
    this.hold(o.pc);
    o.pc.addEventListener('iceconnectionstatechange', () => this.onState());
    o.pc.addEventListener('icecandidate', (ev) => { if (/** @type {RTCPeerConnectionIceEvent} */ (ev).candidate) this.onLocalCandidate(); });
  }

  /**
   * A local candidate gathered after the link connected: this side's network changed (the
   * browser gathers again on a new address, and tells the page nothing else). Its relay
   * connection may have died with the old address: rejoined now; the dialling side restarts.
   */
  onLocalCandidate() {
    if (!this.wasConnected || this.active || this.moved) return;
    this.moved = setTimeout(() => {
      this.moved = null;
      this.o.count?.('moved');
      void this.o.ready?.();
      if (this.o.initiator && !this.active) void this.start();
    }, RESTART_AFTER_MS);
  }

  /**
   * Puts a gate before PeerJS's own handlers: while a restart is under way its
   * trickled candidates (of the new credentials, before the other side has them)
   * and its close on ICE `failed` would end the connection.
   * @param {RTCPeerConnection} pc
   */
  hold(pc) {
    const peerjsCandidate = pc.onicecandidate;
    const peerjsState = pc.oniceconnectionstatechange;
    pc.onicecandidate = (ev) => { if (!this.active) peerjsCandidate?.call(pc, ev); };
    pc.oniceconnectionstatechange = (ev) => {
      if (this.active && pc.iceConnectionState !== 'connected' && pc.iceConnectionState !== 'completed') return;
      peerjsState?.call(pc, ev);
    };
  }

  /** Whether a failure now is one the restart answers (the link's own handlers ask). */
  holding() { return this.active; }

  onState() {
    const s = this.o.pc.iceConnectionState;
    if (s === 'disconnected' || s === 'failed') this.o.count?.(s);
    // Either side: its own relay connection may be what died with the path; it is rejoined now.
    if (s === 'disconnected' && !this.active) void this.o.ready?.();
    if (s === 'connected' || s === 'completed') {
      this.wasConnected = true;
      if (this.pending) { clearTimeout(this.pending); this.pending = null; }
      if (this.active) this.finish();
      return;
    }
    if (s === 'disconnected' && this.o.initiator && !this.active && !this.pending) {
      this.pending = setTimeout(() => {
        this.pending = null;
        if (this.o.pc.iceConnectionState === 'disconnected' || this.o.pc.iceConnectionState === 'failed') void this.start();
      }, RESTART_AFTER_MS);
    }
  }

  /**
   * The path is in doubt (the link fell silent, or the network changed): the dialling side restarts
   * at once; the other asks it to (once its relay connection is back), again every RESEND_MS until
   * an offer comes or RESTART_TIMEOUT_MS passes. The side whose network moved is as often the
   * answering one, and the dialling side's ICE may take many seconds to see the path dead.
   */
  networkChanged() {
    if (this.active || this.o.pc.connectionState === 'closed') return;
    if (this.o.initiator) { void this.start(); return; }
    if (this.requesting) return;
    this.requests++;
    const request = /** @type {RestartSignal} */ ({ kind: 'ice-restart', type: 'request', sdp: '', attempt: this.requests });
    const until = this.o.now() + RESTART_TIMEOUT_MS;
    this.requesting = setInterval(() => {
      if (this.active || this.o.now() > until) this.stopRequesting();
      else this.o.send(request);
    }, RESEND_MS);
    void Promise.resolve(this.o.ready?.()).then(() => { if (this.requesting && !this.active) this.o.send(request); });
  }

  stopRequesting() {
    if (this.requesting) clearInterval(this.requesting);
    this.requesting = null;
  }

  /** A restart begins here (offered or answered): the clock starts, the old pair is read, the timeout armed. */
  begin() {
    this.stopRequesting();
    this.active = true;
    this.startedAt = this.o.now();
    this.pairBefore = this.readPair();
    this.arm();
  }

  /** @returns {Promise<string | null>} */
  readPair() {
    return this.o.readPair ? this.o.readPair(this.o.pc).catch(() => null) : Promise.resolve(null);
  }

  /** Offers new ICE credentials on the same connection. */
  async start() {
    const pc = this.o.pc;
    this.attempt++;
    this.o.count?.('started');
    this.begin();
    try {
      const offer = await pc.createOffer({ iceRestart: true });
      await pc.setLocalDescription(offer);
      await Promise.all([gathered(pc), this.o.ready?.()]);
      if (!this.active) return;
      this.offer = { kind: 'ice-restart', type: 'offer', sdp: /** @type {RTCSessionDescription} */ (pc.localDescription).sdp, attempt: this.attempt };
      this.o.send(this.offer);
      // the other side's relay connection may still be rejoining: the offer goes again until answered
      if (this.resend) clearInterval(this.resend);
      this.resend = setInterval(() => { if (this.active && this.offer) this.o.send(this.offer); }, RESEND_MS);
    } catch (err) {
      this.give(`ICE restart offer: ${/** @type {Error} */ (err)?.message ?? err}`);
    }
  }

  /**
   * The neighbour's offer or answer.
   * @param {RestartSignal} s
   */
  async onSignal(s) {
    const pc = this.o.pc;
    try {
      if (s.type === 'request') {
        // the other side doubts the path: restart now, or send the offer under way again
        if (!this.o.initiator) return;
        if (this.active) { if (this.offer) this.o.send(this.offer); } else if (pc.connectionState !== 'closed') await this.start();
        return;
      }
      if (s.type === 'offer') {
        if (this.answered?.attempt === s.attempt) {
          this.o.send(this.answered.answer);
          return;
        }
        this.begin();
        await pc.setRemoteDescription({ type: 'offer', sdp: s.sdp });
        await pc.setLocalDescription(await pc.createAnswer());
        await Promise.all([gathered(pc), this.o.ready?.()]);
        const answer = /** @type {RestartSignal} */ ({ kind: 'ice-restart', type: 'answer', sdp: /** @type {RTCSessionDescription} */ (pc.localDescription).sdp, attempt: s.attempt });
        this.answered = { attempt: s.attempt, answer };
        this.o.send(answer);
        this.watchPair();
      } else if (this.active && this.offer && s.attempt === this.attempt) {
        this.offer = null;
        this.quiet();
        await pc.setRemoteDescription({ type: 'answer', sdp: s.sdp });
        this.watchPair();
      }
    } catch (err) {
      this.give(`ICE restart ${s.type}: ${/** @type {Error} */ (err)?.message ?? err}`);
    }
  }

  arm() {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.give(`no ICE after a restart in ${RESTART_TIMEOUT_MS} ms`), RESTART_TIMEOUT_MS);
  }

  /**
   * Offer and answer are applied: the restart is done when ICE holds a pair other than the old one.
   * A side whose ICE never went disconnected (it had not yet seen the path die) stays `connected`
   * through the restart and fires no state change; the selected pair is what shows it moved.
   */
  watchPair() {
    if (this.pairWatch) clearInterval(this.pairWatch);
    this.pairWatch = setInterval(() => void this.checkPair(), PAIR_POLL_MS);
  }

  async checkPair() {
    const s = this.o.pc.iceConnectionState;
    if (!this.active) { this.stopPairWatch(); return; }
    if (s !== 'connected' && s !== 'completed') return;
    const [before, now] = await Promise.all([this.pairBefore, this.readPair()]);
    if (this.active && now !== null && now !== before) this.finish();
  }

  stopPairWatch() {
    if (this.pairWatch) clearInterval(this.pairWatch);
    this.pairWatch = null;
  }

  /** No more resends. */
  quiet() {
    if (this.resend) clearInterval(this.resend);
    this.resend = null;
  }

  /** The restart under way is over (done, given up or stopped): no resend, no watch, no timeout. */
  end() {
    this.stopPairWatch();
    this.active = false;
    this.offer = null;
    this.quiet();
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  finish() {
    this.end();
    this.succeeded++;
    const ms = this.o.now() - this.startedAt;
    this.lastMs = ms;
    const before = this.pairBefore;
    const after = new Promise((resolve) => setTimeout(resolve, this.o.readPair ? PAIR_SETTLE_MS : 0)).then(() => this.readPair());
    void Promise.all([before, after]).then(([pairBefore, pairAfter]) => this.o.onRestarted({ ms, pairBefore, pairAfter }));
  }

  /** @param {string} why */
  give(why) {
    if (!this.active) return;
    this.end();
    // A restart begun on a doubt (a silent channel) that never got an answer fails nothing while
    // ICE still holds a pair: the link goes on as it was.
    const s = this.o.pc.iceConnectionState;
    if (s === 'connected' || s === 'completed') return;
    this.o.onFailed(why);
  }

  stop() {
    this.end();
    this.stopRequesting();
    if (this.moved) clearTimeout(this.moved);
    this.moved = null;
    if (this.pending) clearTimeout(this.pending);
    this.pending = null;
  }
}
