// Test doubles for the relay and relay-udp unit tests: a WebSocket the test
// drives by hand (open it, hand it frames, drop it), and an RTCPeerConnection
// with its one data channel. Nothing in the app imports this file; the real
// paths are covered by relay/*.test.js over loopback.

import { decode, encode } from '../../../core/protocol.js';

/**
 * A browser-style WebSocket: nothing happens until the test calls open(),
 * receive() or drop(). Each class made by fakeWebSocketClass() keeps its own
 * list of instances.
 */
export class FakeWebSocket {
  /** @param {string} url */
  constructor(url) {
    this.url = url;
    this.readyState = 0;
    this.binaryType = 'blob';
    /** @type {Uint8Array[]} */
    this.sent = [];
    /** @type {{ code: number, reason: string } | null} what close() was called with */
    this.closedWith = null;
    /** @type {(() => void) | null} */
    this.onopen = null;
    /** @type {((event: { data: unknown }) => void) | null} */
    this.onmessage = null;
    /** @type {(() => void) | null} */
    this.onerror = null;
    /** @type {((event: { code: number, reason: string }) => void) | null} */
    this.onclose = null;
  }

  /** @param {Uint8Array} data */
  send(data) {
    if (this.readyState !== 1) throw new Error('not open');
    this.sent.push(data);
  }

  /** As a browser does: the close event comes later. @param {number} [code] @param {string} [reason] */
  close(code = 1005, reason = '') {
    if (this.readyState >= 2) return;
    this.readyState = 2;
    this.closedWith = { code, reason };
    queueMicrotask(() => this.drop(code, reason));
  }

  // ---------------------------------------------------------------- the test's side

  /** The connection is up. */
  open() {
    this.readyState = 1;
    this.onopen?.();
  }

  /** A frame from the relay. @param {import('../../../core/protocol.js').Message} msg */
  receive(msg) {
    const bytes = encode(msg);
    this.onmessage?.({ data: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) });
  }

  /** Raw data from the relay. @param {unknown} data */
  receiveRaw(data) {
    this.onmessage?.({ data });
  }

  /** The connection is gone. @param {number} code @param {string} [reason] */
  drop(code, reason = '') {
    this.readyState = 3;
    this.onclose?.({ code, reason });
  }

  /** What was sent, decoded. */
  messages() {
    return this.sent.map((b) => decode(b));
  }
}

/** A FakeWebSocket class with its own list of instances. */
export function fakeWebSocketClass() {
  /** @type {FakeWebSocket[]} */
  const instances = [];
  return {
    instances,
    WebSocket: class extends FakeWebSocket {
      /** @param {string} url */
      constructor(url) {
        super(url);
        instances.push(this);
      }
    },
  };
}

/** An RTCDataChannel the test opens and feeds. */
export class FakeDataChannel {
  /** @param {string} label @param {RTCDataChannelInit} init */
  constructor(label, init) {
    this.label = label;
    this.ordered = init.ordered ?? true;
    this.maxRetransmits = init.maxRetransmits ?? null;
    this.maxPacketLifeTime = init.maxPacketLifeTime ?? null;
    this.protocol = init.protocol ?? '';
    this.negotiated = init.negotiated ?? false;
    this.id = init.id ?? null;
    /** @type {RTCDataChannelState} */
    this.readyState = 'connecting';
    this.binaryType = 'blob';
    /** @type {unknown[]} */
    this.sent = [];
    /** @type {(() => void) | null} */
    this.onopen = null;
    /** @type {(() => void) | null} */
    this.onclose = null;
    /** @type {((event: { data: unknown }) => void) | null} */
    this.onmessage = null;
  }

  /** @param {unknown} data */
  send(data) {
    if (this.readyState !== 'open') throw new Error('channel not open');
    this.sent.push(data);
  }

  close() {
    if (this.readyState === 'closed') return;
    this.readyState = 'closed';
    queueMicrotask(() => this.onclose?.());
  }

  // ---------------------------------------------------------------- the test's side

  /** The channel opened. */
  openNow() {
    this.readyState = 'open';
    this.onopen?.();
  }

  /** A message from the relay. @param {Uint8Array} bytes */
  deliver(bytes) {
    this.onmessage?.({ data: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) });
  }
}

/**
 * An RTCPeerConnection that offers at once and does what the test says: the
 * states change and candidates appear only when the test calls the helpers.
 */
export class FakePeerConnection extends EventTarget {
  /** @param {RTCConfiguration} [config] */
  constructor(config) {
    super();
    this.config = config;
    this.signalingState = 'stable';
    this.iceConnectionState = 'new';
    this.connectionState = 'new';
    /** @type {RTCSessionDescriptionInit | null} */
    this.localDescription = null;
    /** @type {RTCSessionDescriptionInit | null} */
    this.remoteDescription = null;
    /** @type {RTCIceCandidateInit[]} the relay's candidates, added */
    this.remoteCandidates = [];
    this.closed = false;
    /** @type {FakeDataChannel | null} */
    this.channel = null;
  }

  /** @param {string} label @param {RTCDataChannelInit} init */
  createDataChannel(label, init) {
    this.channel = new FakeDataChannel(label, init);
    return this.channel;
  }

  async createOffer() {
    return { type: 'offer', sdp: 'fake offer' };
  }

  /** @param {RTCSessionDescriptionInit} d */
  async setLocalDescription(d) {
    this.localDescription = d;
    this.setState('signalingState', 'have-local-offer', 'signalingstatechange');
  }

  /** @param {RTCSessionDescriptionInit} d */
  async setRemoteDescription(d) {
    if (d.sdp === 'refused') throw new Error('bad answer');
    this.remoteDescription = d;
    this.setState('signalingState', 'stable', 'signalingstatechange');
  }

  /** @param {RTCIceCandidateInit} c */
  async addIceCandidate(c) {
    if (c.candidate === 'refused') throw new Error('bad candidate');
    this.remoteCandidates.push(c);
  }

  async getStats() {
    return new Map();
  }

  close() {
    this.closed = true;
    this.connectionState = 'closed'; // as in browsers: no event for our own close
  }

  // ---------------------------------------------------------------- the test's side

  /**
   * @param {'signalingState' | 'iceConnectionState' | 'connectionState'} key
   * @param {string} value
   * @param {string} event
   */
  setState(key, value, event) {
    this[key] = value;
    this.dispatchEvent(new Event(event));
  }

  /** A local candidate was gathered. @param {string} candidate */
  gather(candidate) {
    this.dispatchEvent(Object.assign(new Event('icecandidate'), { candidate: { candidate, sdpMid: '0' } }));
  }
}

/** A FakePeerConnection class with its own list of instances. */
export function fakePeerConnectionClass() {
  /** @type {FakePeerConnection[]} */
  const instances = [];
  return {
    instances,
    RTCPeerConnection: class extends FakePeerConnection {
      /** @param {RTCConfiguration} [config] */
      constructor(config) {
        super(config);
        instances.push(this);
      }
    },
  };
}

/** Lets pending promise callbacks and microtasks run. */
export async function settle() {
  for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 0));
}
