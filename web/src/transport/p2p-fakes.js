// Test doubles for the p2p unit tests (p2p*.test.js): a PeerJS Peer, its
// DataConnection, an RTCPeerConnection with its RTCDataChannels, and a
// relay that speaks the membership part of the protocol over a fake
// WebSocket. Nothing in the app imports this file; the real browser path is
// covered by e2e/p2p.spec.js.
//
// Fake peers meet in a FakeNetwork: `connect` on one makes the other emit
// 'connection', and carlab's negotiated channels on the two sides are
// paired by id, so what one side sends the other receives (a microtask later,
// as a browser delivers it asynchronously).

import { MsgType, ProtocolError, decode, encode } from '../../../core/protocol.js';

/** A tiny event emitter with PeerJS's `on` / `once` / `emit`. */
class Emitter {
  constructor() {
    /** @type {Map<string, { fn: (...args: any[]) => void, once: boolean }[]>} */
    this.listeners = new Map();
  }

  /** @param {string} event @param {(...args: any[]) => void} fn */
  on(event, fn) {
    this.listeners.set(event, [...(this.listeners.get(event) ?? []), { fn, once: false }]);
    return this;
  }

  /** @param {string} event @param {(...args: any[]) => void} fn */
  once(event, fn) {
    this.listeners.set(event, [...(this.listeners.get(event) ?? []), { fn, once: true }]);
    return this;
  }

  /** @param {string} event @param {...any} args */
  emit(event, ...args) {
    const list = this.listeners.get(event) ?? [];
    this.listeners.set(event, list.filter((l) => !l.once));
    for (const l of list) l.fn(...args);
  }
}

/** An RTCDataChannel: the parameters it was created with, what was sent on it, a twin that receives it. */
export class FakeChannel {
  /** @param {string} label @param {RTCDataChannelInit} init */
  constructor(label, init) {
    this.label = label;
    this.ordered = init.ordered ?? true;
    this.maxRetransmits = init.maxRetransmits ?? null;
    this.maxPacketLifeTime = init.maxPacketLifeTime ?? null;
    this.protocol = init.protocol ?? '';
    this.negotiated = init.negotiated ?? false;
    this.id = init.id ?? null;
    this.binaryType = 'blob';
    /** @type {RTCDataChannelState} */
    this.readyState = 'connecting';
    /** @type {Uint8Array[]} */
    this.sent = [];
    /** @type {FakeChannel | null} the other side's channel */
    this.twin = null;
    /** Make send() throw, as a browser does on a full buffer. */
    this.failSends = false;
    /** @type {(() => void) | null} */
    this.onopen = null;
    /** @type {(() => void) | null} */
    this.onclose = null;
    /** @type {((event: { data: any }) => void) | null} */
    this.onmessage = null;
  }

  /** The channel opens (both sides of a pair open together in FakeNetwork). */
  open() {
    this.readyState = 'open';
    this.onopen?.();
  }

  /** @param {Uint8Array} bytes */
  send(bytes) {
    if (this.failSends) throw new Error('send queue is full');
    this.sent.push(bytes);
    const twin = this.twin;
    const copy = bytes.slice().buffer; // what arrives is an ArrayBuffer (binaryType 'arraybuffer')
    if (twin) queueMicrotask(() => { if (twin.readyState === 'open') twin.onmessage?.({ data: copy }); });
  }

  close() {
    if (this.readyState === 'closed') return;
    this.readyState = 'closed';
    const twin = this.twin;
    // The other side sees its channel close, later.
    if (twin && twin.readyState !== 'closed') {
      queueMicrotask(() => {
        if (twin.readyState === 'closed') return;
        twin.readyState = 'closed';
        twin.onclose?.();
      });
    }
  }
}

/** An RTCPeerConnection: state changes dispatch the events the transport listens to. */
export class FakePeerConnection extends EventTarget {
  constructor() {
    super();
    /** @type {RTCSignalingState} */
    this.signalingState = 'have-local-offer';
    /** @type {RTCIceConnectionState} */
    this.iceConnectionState = 'new';
    /** @type {RTCPeerConnectionState} */
    this.connectionState = 'new';
    /** @type {FakeChannel[]} */
    this.channels = [];
    /** @type {object[]} what getStats reports */
    this.stats = [];
  }

  /** @param {string} label @param {RTCDataChannelInit} init */
  createDataChannel(label, init) {
    const channel = new FakeChannel(label, init);
    this.channels.push(channel);
    return channel;
  }

  async getStats() {
    return new Map(this.stats.map((s) => [/** @type {{ id: string }} */ (s).id, s]));
  }

  /**
   * Moves one of the states and fires its change event.
   * @param {'signalingState' | 'iceConnectionState' | 'connectionState'} which
   * @param {string} value
   */
  set(which, value) {
    /** @type {any} */ (this)[which] = value;
    this.dispatchEvent(new Event(`${which.toLowerCase()}change`));
  }
}

/** A PeerJS DataConnection: its peer connection, metadata, and 'error' / 'close'. */
export class FakeDataConnection extends Emitter {
  /** @param {string} peer remote PeerJS id @param {any} metadata */
  constructor(peer, metadata) {
    super();
    this.peer = peer;
    this.metadata = metadata;
    this.pc = new FakePeerConnection();
    // The transport reads it as an RTCPeerConnection; the fake has the members it uses.
    this.peerConnection = /** @type {RTCPeerConnection} */ (/** @type {unknown} */ (this.pc));
    this.closed = false;
  }

  close() { this.closed = true; }

  /** carlab's channel on this connection (the transport creates it on attach). */
  get channel() { return this.pc.channels[0] ?? null; }
}

/** Where fake peers find each other, like a PeerServer. */
export class FakeNetwork {
  constructor() {
    /** @type {Map<string, FakePeer>} */
    this.peers = new Map();
    /** Pair and open the channels of each new connection at once (false: the test does it). */
    this.autoOpen = true;
    /** New peers emit 'open' (registered at the PeerServer) a microtask after they are made. */
    this.openPeers = true;
    /** @type {false | 'silent' | 'fail'} */
    this.block = false;
    /** @type {[FakeDataConnection, FakeDataConnection][]} pairs dialled while the path was silently blocked */
    this.stalled = [];
  }

  /**
   * The direct path is blocked (UDP dropped, no TURN): channels do not open.
   * 'silent': ICE just does not connect, and connects if the path heals in time (as a browser's
   * checks, retried until ICE gives up, get through); 'fail': both ends report ICE failed.
   * @returns {false | 'silent' | 'fail'}
   */
  get blockDirect() { return this.block; }

  /** @param {false | 'silent' | 'fail'} value */
  set blockDirect(value) {
    this.block = value;
    if (value) return;
    for (const [a, b] of this.stalled.splice(0)) {
      const live = [a, b].every((c) => !c.closed && c.channel && c.channel.readyState !== 'closed');
      if (live && this.autoOpen) this.openPair(a, b);
    }
  }

  /** A Peer class bound to this network, as the transport's `Peer` option. */
  get Peer() {
    const network = this;
    return class extends FakePeer {
      /** @param {string} id @param {import('peerjs').PeerOptions} options */
      constructor(id, options) { super(network, id, options); }
    };
  }

  /**
   * Pairs the negotiated channels of a dialled and an answered connection and opens them.
   * @param {FakeDataConnection} a @param {FakeDataConnection} b
   */
  openPair(a, b) {
    const [ca, cb] = [a.channel, b.channel];
    if (!ca || !cb) throw new Error('both sides must have attached their channel');
    ca.twin = cb;
    cb.twin = ca;
    for (const pc of [a.pc, b.pc]) {
      pc.set('signalingState', 'stable');
      pc.set('iceConnectionState', 'connected');
      pc.set('connectionState', 'connected');
    }
    ca.open();
    cb.open();
  }
}

/** A PeerJS Peer on a FakeNetwork. */
export class FakePeer extends Emitter {
  /** @param {FakeNetwork} network @param {string} id @param {import('peerjs').PeerOptions} options */
  constructor(network, id, options) {
    super();
    this.network = network;
    this.id = id;
    this.options = options;
    this.destroyed = false;
    this.disconnected = false;
    this.reconnects = 0;
    /** @type {FakeDataConnection[]} connections we dialled */
    this.dialled = [];
    network.peers.set(id, this);
    if (network.openPeers) queueMicrotask(() => this.emit('open', id));
  }

  /** @param {string} id @param {{ reliable: boolean, metadata: any }} options */
  connect(id, options) {
    const conn = new FakeDataConnection(id, options.metadata);
    this.dialled.push(conn);
    const remote = this.network.peers.get(id);
    if (remote && !remote.destroyed) {
      // The answer comes later, as over a PeerServer; the transport attaches its channel meanwhile.
      queueMicrotask(() => {
        const answer = new FakeDataConnection(this.id, options.metadata);
        remote.emit('connection', answer);
        if (this.network.blockDirect === 'fail') {
          for (const pc of [conn.pc, answer.pc]) pc.set('iceConnectionState', 'failed');
        } else if (this.network.blockDirect === 'silent') {
          this.network.stalled.push([conn, answer]);
        } else if (this.network.autoOpen && conn.channel && answer.channel) {
          this.network.openPair(conn, answer);
        }
      });
    }
    return conn;
  }

  reconnect() {
    this.reconnects++;
  }

  destroy() {
    this.destroyed = true;
    this.network.peers.delete(this.id);
  }
}

/**
 * The membership part of the relay: HELLO -> WELCOME, MEMBER_JOINED and
 * MEMBER_LEFT to the others, over FakeWebSockets it hands out.
 */
export class FakeRelay {
  constructor() {
    /** @type {Map<number, { socket: FakeWebSocket, name: string }>} */
    this.members = new Map();
    this.nextId = 1;
    /** Welcome a HELLO under the id it asks for (false: always a new one, as when that id is lost). */
    this.keepIds = true;
    /** @type {FakeWebSocket[]} */
    this.sockets = [];
    /** Every LINK the members sent (the fallback path). @type {import('../../../core/protocol.js').LinkMsg[]} */
    this.links = [];
  }

  /** A WebSocket class bound to this relay, as the transport's `WebSocket` option. */
  get WebSocket() {
    const relay = this;
    return class extends FakeWebSocket {
      /** @param {string} url */
      constructor(url) { super(relay, url); }
    };
  }

  /** @param {FakeWebSocket} socket @param {Uint8Array} bytes */
  receive(socket, bytes) {
    const m = decode(bytes);
    if (m instanceof ProtocolError) return;
    if (m.type === MsgType.LINK) {
      // The relay hands each named member the carried UPDATE or ACK itself (relay/link.js).
      this.links.push(m);
      for (const id of m.peers) this.members.get(id)?.socket.deliver(encode(m.message));
      return;
    }
    if (m.type !== MsgType.HELLO) return;
    const id = (this.keepIds && m.clientId) || this.nextId++;
    const others = [...this.members].map(([mid, x]) => ({ id: mid, name: x.name }));
    this.members.set(id, { socket, name: m.name });
    socket.clientId = id;
    socket.deliver(encode({ type: MsgType.WELCOME, clientId: id, serverTime: 0, members: [...others, { id, name: m.name }] }));
    for (const [mid, x] of this.members) if (mid !== id) x.socket.deliver(encode({ type: MsgType.MEMBER_JOINED, id, name: m.name }));
  }

  /** @param {FakeWebSocket} socket */
  left(socket) {
    if (this.members.get(socket.clientId)?.socket !== socket) return;
    this.members.delete(socket.clientId);
    for (const x of this.members.values()) x.socket.deliver(encode({ type: MsgType.MEMBER_LEFT, id: socket.clientId }));
  }

  /** The relay goes away: every socket closes with 1001 and the members are forgotten. */
  restart() {
    const sockets = [...this.members.values()].map((x) => x.socket);
    this.members.clear();
    for (const s of sockets) s.drop(1001, 'going away');
  }
}

/** A browser WebSocket connected to a FakeRelay. */
export class FakeWebSocket {
  /** @param {FakeRelay} relay @param {string} url */
  constructor(relay, url) {
    this.relay = relay;
    this.url = url;
    this.readyState = 0;
    this.binaryType = 'blob';
    this.clientId = 0;
    /** @type {(() => void) | null} */
    this.onopen = null;
    /** @type {((event: { data: any }) => void) | null} */
    this.onmessage = null;
    /** @type {(() => void) | null} */
    this.onerror = null;
    /** @type {((event: { code: number, reason: string }) => void) | null} */
    this.onclose = null;
    relay.sockets.push(this);
    queueMicrotask(() => {
      this.readyState = 1;
      this.onopen?.();
    });
  }

  /** @param {Uint8Array} bytes */
  send(bytes) {
    if (this.readyState === 1) this.relay.receive(this, bytes);
  }

  /** A frame from the relay. @param {Uint8Array} bytes */
  deliver(bytes) {
    const data = bytes.slice().buffer;
    queueMicrotask(() => { if (this.readyState === 1) this.onmessage?.({ data }); });
  }

  /** @param {number} [code] @param {string} [reason] */
  close(code = 1000, reason = '') {
    if (this.readyState >= 2) return;
    this.relay.left(this);
    this.drop(code, reason);
  }

  /** The connection ends with `code`. @param {number} code @param {string} reason */
  drop(code, reason) {
    this.readyState = 3;
    queueMicrotask(() => this.onclose?.({ code, reason }));
  }
}
