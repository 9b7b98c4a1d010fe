// One attempt at relay-udp's data channel: an RTCPeerConnection to the relay
// carrying the pre-negotiated channel, its offer, the relay's answer and the
// ICE candidates both ways, and the setup timings it records. What an attempt
// means for the transport (open, failed, a message) goes to its LinkOwner.

import { UDP_CHANNEL } from './constants.js';

/**
 * A peer connection constructor: the browser's RTCPeerConnection, or in Node
 * node-datachannel's polyfill (which implements the same interface).
 * @typedef {new (config?: RTCConfiguration) => RTCPeerConnection} PeerConnectionClass
 */

/**
 * Setup timings (ms from the attempt's start) and, once open, what the channel
 * and getStats report.
 * @typedef {{ attempt: number, offerSentMs?: number, offerAnswerMs?: number, iceConnectedMs?: number,
 *   dtlsConnectedMs?: number, channelOpenMs?: number, error?: string } & Record<string, unknown>} LinkSetup
 */

/**
 * What a link tells the transport that made it.
 * @typedef {object} LinkOwner
 * @property {(link: UdpLink) => boolean} isCurrent whether `link` is the attempt under way
 *   (events of older ones are ignored)
 * @property {(payload: import('./signal.js').OutgoingSignal) => void} signal send to the relay
 * @property {(link: UdpLink) => void} opened the channel is open
 * @property {(link: UdpLink, why: string) => void} failed the attempt failed or the channel went away
 * @property {(link: UdpLink, data: unknown) => void} message a message on the channel
 * @property {() => void} badCandidate the relay's candidate was refused
 */

/**
 * One peer connection attempt.
 */
export class UdpLink {
  /**
   * Creates the peer connection and its channel; throws what the constructor throws.
   * @param {PeerConnectionClass} PeerConnection
   * @param {RTCIceServer[]} iceServers
   * @param {number} attempt its number (1 = the first)
   * @param {number} t0 when it started
   */
  constructor(PeerConnection, iceServers, attempt, t0) {
    this.attempt = attempt;
    this.t0 = t0;
    this.pc = new PeerConnection({ iceServers });
    this.channel = this.pc.createDataChannel(UDP_CHANNEL.label, {
      negotiated: UDP_CHANNEL.negotiated, id: UDP_CHANNEL.id,
      ordered: UDP_CHANNEL.ordered, maxRetransmits: UDP_CHANNEL.maxRetransmits,
    });
    this.channel.binaryType = 'arraybuffer';
    this.open = false;
    this.offerSent = false;
    /** The relay's answer is applied. */
    this.answered = false;
    /** @type {RTCIceCandidate[]} gathered before the answer was applied */
    this.localCandidates = [];
    /** @type {Promise<unknown>} signaling operations, in order */
    this.ops = Promise.resolve();
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    this.setupTimer = undefined;
    /** @type {LinkSetup} */
    this.setup = { attempt };
  }

  /**
   * Wires the connection's and the channel's events to `owner`, arms the
   * setup timeout, and makes the offer.
   * @param {LinkOwner} owner
   * @param {() => number} now
   * @param {number} setupTimeoutMs
   */
  start(owner, now, setupTimeoutMs) {
    this.watchConnection(owner, now);
    this.watchChannel(owner);
    this.setupTimer = setTimeout(() => owner.failed(this, `channel not open after ${setupTimeoutMs} ms`), setupTimeoutMs);
    this.ops = (async () => {
      const offer = await this.pc.createOffer();
      await this.pc.setLocalDescription(offer);
      if (!owner.isCurrent(this)) return;
      owner.signal({ type: 'offer', sdp: offer.sdp ?? this.pc.localDescription?.sdp, attempt: this.attempt });
      this.offerSent = true;
      this.setup.offerSentMs = now() - this.t0;
    })().catch((err) => owner.failed(this, `offer: ${errorText(err)}`));
  }

  /**
   * Records the setup timings and reports failures of the peer connection;
   * holds back our candidates until the answer is applied.
   * @param {LinkOwner} owner
   * @param {() => number} now
   */
  watchConnection(owner, now) {
    const { pc, setup, t0 } = this;
    pc.addEventListener('signalingstatechange', () => {
      if (pc.signalingState === 'stable' && this.offerSent && setup.offerAnswerMs === undefined) setup.offerAnswerMs = now() - t0;
    });
    pc.addEventListener('iceconnectionstatechange', () => {
      const s = pc.iceConnectionState;
      if ((s === 'connected' || s === 'completed') && setup.iceConnectedMs === undefined) setup.iceConnectedMs = now() - t0;
      if (s === 'failed') owner.failed(this, 'ICE failed');
    });
    pc.addEventListener('connectionstatechange', () => {
      const s = pc.connectionState;
      if (s === 'connected' && setup.dtlsConnectedMs === undefined) setup.dtlsConnectedMs = now() - t0;
      if (s === 'failed' || s === 'closed') owner.failed(this, `connection ${s}`);
    });
    pc.addEventListener('icecandidate', (e) => {
      if (!owner.isCurrent(this) || !e.candidate || !e.candidate.candidate) return;
      if (this.answered) this.sendCandidate(owner, e.candidate);
      else this.localCandidates.push(e.candidate);
    });
  }

  /** @param {LinkOwner} owner */
  watchChannel(owner) {
    this.channel.onopen = () => owner.opened(this);
    this.channel.onclose = () => owner.failed(this, 'channel closed');
    this.channel.onmessage = (e) => {
      if (!owner.isCurrent(this)) return;
      if (!this.open) owner.opened(this); // a message is proof enough that the channel is open
      owner.message(this, e.data);
    };
  }

  /**
   * @param {LinkOwner} owner
   * @param {RTCIceCandidate} c
   */
  sendCandidate(owner, c) {
    owner.signal({ type: 'candidate', candidate: c.candidate, mid: c.sdpMid ?? '0', attempt: this.attempt });
  }

  /**
   * Applies the relay's answer (after the offer), then sends the candidates held back.
   * @param {LinkOwner} owner
   * @param {string} sdp
   * @param {() => number} now
   */
  applyAnswer(owner, sdp, now) {
    this.ops = this.ops
      .then(() => this.pc.setRemoteDescription({ type: 'answer', sdp }))
      .then(() => {
        if (this.setup.offerAnswerMs === undefined) this.setup.offerAnswerMs = now() - this.t0;
        // Our candidates go out only now (docs/protocol.md §13.2). With them
        // earlier the relay, the DTLS client, could finish its ICE checks and
        // send its ClientHello before we have a DTLS transport: dropped, and
        // the handshake waits a whole second for the retransmission. Now it
        // learns our address from our own checks, when we are ready.
        this.answered = true;
        if (!owner.isCurrent(this)) return;
        for (const c of this.localCandidates) this.sendCandidate(owner, c);
        this.localCandidates = [];
      })
      .catch((err) => owner.failed(this, `answer: ${errorText(err)}`));
  }

  /**
   * Adds one of the relay's candidates, in order after the answer.
   * @param {LinkOwner} owner
   * @param {string} candidate
   * @param {string} mid
   */
  addRemoteCandidate(owner, candidate, mid) {
    this.ops = this.ops
      .then(() => this.pc.addIceCandidate({ candidate, sdpMid: mid }))
      .catch(() => owner.badCandidate());
  }

  /**
   * The channel opened: stops the setup timeout and records how long it took.
   * @param {number} at now
   */
  markOpen(at) {
    this.open = true;
    clearTimeout(this.setupTimer);
    this.setup.channelOpenMs = at - this.t0;
  }

  /** Closes the channel and the connection (either may already be closed). */
  teardown() {
    clearTimeout(this.setupTimer);
    try { this.channel.close(); } catch { /* already closed */ }
    try { this.pc.close(); } catch { /* already closed */ }
  }
}

/**
 * The message of whatever was thrown.
 * @param {unknown} err
 */
export function errorText(err) {
  const message = err !== null && typeof err === 'object' && 'message' in err ? err.message : undefined;
  return `${message ?? err}`;
}
