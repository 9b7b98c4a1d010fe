// Sending and receiving on p2p channels: fan-out to every open neighbour, a
// neighbour that leaves is dropped from it, incoming frames decoded and
// passed on, spoofing refused, and the discardIncomingFraction test knob.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { MsgType, decode, encode } from '../../../core/protocol.js';
import { fanOutUpdate, sendAck, sendOn } from './p2p-send.js';
import { P2PReceiver } from './p2p-receive.js';
import { P2PMesh, peerIdOf } from './p2p-mesh.js';
import { FakeChannel, FakeNetwork } from './p2p-fakes.js';

/** @param {number} sender @param {number} seq @returns {import('../../../core/protocol.js').UpdateMsg} */
const update = (sender, seq) => ({ type: MsgType.UPDATE, sender, seq, sendTime: 1.5, pose: [1, 2, 3, 0, 0, 0, 1], object: null });

/** @param {FakeChannel} c */
const asChannel = (c) => /** @type {RTCDataChannel} */ (/** @type {unknown} */ (c));

/** An open channel. */
function openChannel() {
  const c = new FakeChannel('carlab-p2p', { negotiated: true, id: 10, ordered: false, maxRetransmits: 0 });
  c.readyState = 'open';
  return c;
}

describe('sending', () => {
  test('sendOn: only on an open channel; a throwing send is counted, not thrown', () => {
    const counters = { sendErrors: 0 };
    const c = openChannel();
    assert.equal(sendOn(asChannel(c), new Uint8Array([1]), counters), true);
    assert.equal(sendOn(null, new Uint8Array([1]), counters), false);
    c.failSends = true;
    assert.equal(sendOn(asChannel(c), new Uint8Array([2]), counters), false);
    assert.equal(counters.sendErrors, 1);
    c.readyState = 'closing';
    assert.equal(sendOn(asChannel(c), new Uint8Array([3]), counters), false);
    assert.equal(counters.sendErrors, 1);
    assert.equal(c.sent.length, 1);
  });

  test('fanOutUpdate: one encoding to every reported neighbour with an open channel', () => {
    const counters = { sendErrors: 0 };
    const [a, b, closed, unreported] = [openChannel(), openChannel(), openChannel(), openChannel()];
    closed.readyState = 'closed';
    const links = [
      { reported: true, channel: asChannel(a) }, { reported: true, channel: asChannel(b) },
      { reported: true, channel: asChannel(closed) }, { reported: false, channel: asChannel(unreported) },
      { reported: true, channel: null },
    ].map((l, i) => ({ ...l, id: i + 1, path: 'direct' }));
    fanOutUpdate(links, update(7, 3), counters);
    assert.equal(a.sent.length, 1);
    assert.equal(a.sent[0], b.sent[0], 'encoded once');
    const m = /** @type {import('../../../core/protocol.js').UpdateMsg} */ (decode(a.sent[0]));
    assert.deepEqual([m.type, m.sender, m.seq, m.sendTime], [MsgType.UPDATE, 7, 3, 1.5]);
    assert.equal(closed.sent.length + unreported.sent.length, 0);
  });

  test('sendAck: an ACK frame on the sender\'s channel', () => {
    const c = openChannel();
    sendAck({ id: 4, reported: true, path: 'direct', channel: asChannel(c) }, 4, 11, 7, { sendErrors: 0 });
    const m = /** @type {import('../../../core/protocol.js').AckMsg} */ (decode(c.sent[0]));
    assert.deepEqual([m.type, m.sender, m.seq, m.acker], [MsgType.ACK, 4, 11, 7]);
  });

  test('a neighbour that leaves is dropped from the fan-out', async () => {
    const network = new FakeNetwork();
    network.autoOpen = false;
    network.openPeers = false;
    const peer = new network.Peer(peerIdOf('g', 5), {});
    const mesh = new P2PMesh({
      mode: 'p2p', now: () => 0, counters: { connectAttempts: 0, failures: 0, retries: 0, membershipRejoins: 0 }, peer: () => peer, onMessage() {},
    });
    mesh.group = 'g';
    mesh.myId = 5;
    mesh.handlers = { onMemberJoined() {}, onMemberLeft() {} };
    try {
      for (const id of [1, 2, 3]) mesh.memberAppeared(id, `m${id}`);
      const channels = peer.dialled.map((c) => c.channel);
      for (const c of channels) c?.open();
      const counters = { sendErrors: 0 };
      fanOutUpdate(mesh.links.values(), update(5, 1), counters);
      assert.deepEqual(channels.map((c) => c?.sent.length), [1, 1, 1]);
      mesh.memberGone(2);
      fanOutUpdate(mesh.links.values(), update(5, 2), counters);
      assert.deepEqual(channels.map((c) => c?.sent.length), [2, 1, 2]);
      assert.equal(counters.sendErrors, 0);
    } finally {
      mesh.close();
    }
  });
});

describe('receiving', () => {
  /** @param {number} [discardIncomingFraction] */
  function makeReceiver(discardIncomingFraction) {
    const counters = { updatesSeen: 0, discarded: 0 };
    const receiver = new P2PReceiver({ counters, now: () => 42, discardIncomingFraction });
    /** @type {[import('../../../core/protocol.js').UpdateMsg, number][]} */
    const updates = [];
    /** @type {import('../../../core/protocol.js').AckMsg[]} */
    const acks = [];
    const sink = { onUpdate: (/** @type {any} */ m, /** @type {number} */ at) => updates.push([m, at]), onAck: (/** @type {any} */ m) => acks.push(m) };
    return { counters, receiver, updates, acks, sink };
  }

  test('frames are decoded (ArrayBuffer or bytes, single or BATCH) and passed on with the arrival time', () => {
    const { receiver, updates, acks, sink, counters } = makeReceiver();
    receiver.receive(7, encode(update(7, 1)).slice().buffer, sink);
    receiver.receive(7, encode({ type: MsgType.BATCH, messages: [update(7, 2), { type: MsgType.ACK, sender: 5, seq: 9, acker: 7 }] }), sink);
    assert.deepEqual(updates.map(([m, at]) => [m.sender, m.seq, m.sendTime, at]), [[7, 1, 1.5, 42], [7, 2, 1.5, 42]]);
    assert.deepEqual(acks.map((m) => [m.sender, m.seq, m.acker]), [[5, 9, 7]]);
    assert.equal(counters.updatesSeen, 2);
  });

  test('spoofed updates and ACKs (another sender than the channel\'s neighbour) and garbage are dropped', () => {
    const { receiver, updates, acks, sink, counters } = makeReceiver();
    receiver.receive(7, encode(update(8, 1)), sink);
    receiver.receive(7, encode({ type: MsgType.ACK, sender: 5, seq: 9, acker: 8 }), sink);
    receiver.receive(7, new Uint8Array([0xff, 0, 1]), sink);
    receiver.receive(7, new ArrayBuffer(0), sink);
    assert.equal(updates.length + acks.length, 0);
    assert.equal(counters.updatesSeen, 0);
  });

  test('discardIncomingFraction drops every round(1/f)-th update, counted in discarded; ACKs untouched', () => {
    const { receiver, updates, acks, sink, counters } = makeReceiver(0.2);
    for (let seq = 1; seq <= 12; seq++) {
      receiver.receive(7, encode(update(7, seq)), sink);
      receiver.receive(7, encode({ type: MsgType.ACK, sender: 5, seq, acker: 7 }), sink);
    }
    assert.deepEqual(updates.map(([m]) => m.seq), [1, 2, 3, 4, 6, 7, 8, 9, 11, 12]);
    assert.deepEqual(counters, { updatesSeen: 12, discarded: 2 });
    assert.equal(acks.length, 12);
    const none = makeReceiver(0);
    for (let seq = 1; seq <= 5; seq++) none.receiver.receive(7, encode(update(7, seq)), none.sink);
    assert.equal(none.updates.length, 5);
  });
});
