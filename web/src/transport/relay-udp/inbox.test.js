// relay-udp's receiving alone: delivery per message type, the discard knob,
// and garbage.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MsgType, ProtocolError, encode } from '../../../../core/protocol.js';
import { newUdpCounters } from './constants.js';
import { UdpInbox, discardEveryOf } from './inbox.js';

/** @param {number} seq @returns {any} */
const update = (seq) => ({ type: MsgType.UPDATE, sender: 1, seq, sendTime: 0, pose: [0, 0, 0, 0, 0, 0, 1], object: null });

function recorder() {
  /** @type {string[]} */
  const calls = [];
  /** @type {import('../../../../core/client.js').TransportHandlers} */
  const handlers = {
    onUpdate: (m, at) => calls.push(`update ${m.seq} @${at}`),
    onAck: (m) => calls.push(`ack ${m.seq}`),
    onAckedAll: (m) => calls.push(`ackedAll ${m.seq}`),
    onMemberJoined: () => calls.push('joined'),
    onMemberLeft: () => calls.push('left'),
    onClose: () => calls.push('close'),
  };
  return { calls, handlers };
}

test('discardEveryOf', () => {
  assert.equal(discardEveryOf(undefined), 0);
  assert.equal(discardEveryOf(0), 0);
  assert.equal(discardEveryOf(0.1), 10);
  assert.equal(discardEveryOf(0.3), 3);
});

test('UPDATE, ACK and ACKED_ALL reach the core, with the arrival time; the rest is ignored', () => {
  const { calls, handlers } = recorder();
  const counters = newUdpCounters();
  const inbox = new UdpInbox({ discardEvery: 0, now: () => 3, counters });
  const frame = encode({
    type: MsgType.BATCH, messages: [update(1), { type: MsgType.ACK, sender: 2, seq: 4, acker: 1 },
      { type: MsgType.ACKED_ALL, sender: 2, seq: 5, acked: 1, dropped: 0 }, { type: MsgType.MEMBER_LEFT, id: 9 }],
  });
  assert.equal(inbox.receive(frame.buffer.slice(frame.byteOffset, frame.byteOffset + frame.length), handlers), null);
  assert.equal(inbox.receive(encode(update(2)), handlers), null);
  assert.deepEqual(calls, ['update 1 @3', 'ack 4', 'ackedAll 5', 'update 2 @3']);
  assert.equal(counters.updatesSeen, 2);
});

test('the discard knob drops every n-th update and counts it', () => {
  const { calls, handlers } = recorder();
  const counters = newUdpCounters();
  const inbox = new UdpInbox({ discardEvery: 3, now: () => 0, counters });
  for (let seq = 1; seq <= 7; seq++) inbox.receive(encode(update(seq)), handlers);
  assert.deepEqual(calls.map((c) => Number(c.split(' ')[1])), [1, 2, 4, 5, 7]);
  assert.deepEqual([counters.updatesSeen, counters.discarded], [7, 2]);
});

test('garbage is returned as the error and counted', () => {
  const { calls, handlers } = recorder();
  const counters = newUdpCounters();
  const inbox = new UdpInbox({ discardEvery: 0, now: () => 0, counters });
  const err = inbox.receive('text', handlers);
  assert.ok(err instanceof ProtocolError);
  assert.ok(inbox.receive(new Uint8Array([1, 200]), handlers) instanceof ProtocolError);
  assert.equal(counters.badFrames, 2);
  assert.deepEqual(calls, []);
});
