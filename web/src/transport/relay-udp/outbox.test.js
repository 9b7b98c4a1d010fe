// relay-udp's sending alone: packing into packet-sized frames, one frame per
// turn or per message, and the counters when the channel is not there.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MsgType, decode, unbatch } from '../../../../core/protocol.js';
import { newUdpCounters } from './constants.js';
import { UdpOutbox, packBodies } from './outbox.js';

/** @param {number} n @param {number} size */
const bodies = (n, size) => Array.from({ length: n }, (_, i) => new Uint8Array(size).fill(i));

test('packBodies: in order, never over the limit, a lone body as a plain frame', () => {
  assert.deepEqual(packBodies([], 100), []);
  const one = packBodies(bodies(1, 10), 100);
  assert.equal(one.length, 1);
  assert.equal(one[0].length, 11, 'version + body');
  // 4 + 3 * (2 + 30) = 100 fits exactly; a fourth does not.
  const frames = packBodies(bodies(7, 30), 100);
  assert.deepEqual(frames.map((f) => f.length), [100, 100, 31]);
  assert.ok(frames.every((f) => f.length <= 100));
  assert.deepEqual(frames.map((f) => f[1]), [MsgType.BATCH, MsgType.BATCH, 6], 'the last frame is the 7th body alone');
  assert.equal(packBodies(bodies(2, 500), 100).length, 2, 'an oversized body still goes, alone');
});

/** @param {string} readyState */
function channel(readyState = 'open') {
  /** @type {Uint8Array[]} */
  const sent = [];
  return {
    sent,
    readyState: /** @type {RTCDataChannelState} */ (readyState),
    /** @param {any} data */
    send(data) { if (this.readyState === 'closing') throw new Error('busy'); sent.push(data); },
  };
}

/** @param {number} seq @returns {import('../../../../core/protocol.js').Message} */
const ack = (seq) => ({ type: MsgType.ACK, sender: 1, seq, acker: 2 });

test('batched: a turn goes out in as few frames as fit', async () => {
  const ch = channel();
  const counters = newUdpCounters();
  const box = new UdpOutbox({ batched: true, maxMessageBytes: 40, channel: () => ch, counters });
  for (let seq = 1; seq <= 5; seq++) box.send(ack(seq));
  assert.ok(box.pending);
  await Promise.resolve();
  assert.equal(box.pending, false);
  const seqs = ch.sent.map((f) => { const m = decode(f); assert.ok(!(m instanceof Error)); return unbatch(m).map((x) => x.type === MsgType.ACK && x.seq); });
  assert.deepEqual(seqs.flat(), [1, 2, 3, 4, 5]);
  assert.ok(ch.sent.length > 1 && ch.sent.every((f) => f.length <= 40));
});

test('unbatched: each message at once', () => {
  const ch = channel();
  const box = new UdpOutbox({ batched: false, maxMessageBytes: 1100, channel: () => ch, counters: newUdpCounters() });
  box.send(ack(1));
  box.send(ack(2));
  assert.equal(ch.sent.length, 2);
});

test('no open channel: counted as not sent; a throwing send: counted as a send error', () => {
  const counters = newUdpCounters();
  /** @type {ReturnType<typeof channel> | null} */
  let ch = null;
  const box = new UdpOutbox({ batched: false, maxMessageBytes: 1100, channel: () => ch, counters });
  box.send(ack(1));
  ch = channel('connecting');
  box.send(ack(2));
  ch = channel('closing');
  ch.readyState = 'open';
  ch.send = () => { throw new Error('busy'); };
  box.send(ack(3));
  assert.deepEqual([counters.notSent, counters.sendErrors], [2, 1]);
});

test('clear() drops the turn', async () => {
  const ch = channel();
  const box = new UdpOutbox({ batched: true, maxMessageBytes: 1100, channel: () => ch, counters: newUdpCounters() });
  box.send(ack(1));
  box.clear();
  await Promise.resolve();
  assert.equal(ch.sent.length, 0);
});
