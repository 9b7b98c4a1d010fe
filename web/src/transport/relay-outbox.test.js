// The relay transport's sending alone: a turn's messages in one frame in mode
// `relay`, one frame each in `relay-faithful`, nothing while the socket is not open.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MsgType } from '../../../core/protocol.js';
import { RelayOutbox } from './relay-outbox.js';
import { FakeWebSocket } from './relay-fakes.js';

/** @param {number} seq @returns {import('../../../core/protocol.js').Message} */
const ack = (seq) => ({ type: MsgType.ACK, sender: 1, seq, acker: 2 });

function openSocket() {
  const ws = new FakeWebSocket('ws://x');
  ws.open();
  return ws;
}

test('batched: a turn goes out as one BATCH, a lone message as itself', async () => {
  const ws = openSocket();
  const box = new RelayOutbox(true, () => ws);
  box.send(ack(1));
  box.send(ack(2));
  box.send(ack(3));
  assert.equal(ws.sent.length, 0, 'held until the end of the turn');
  await Promise.resolve();
  assert.equal(ws.sent.length, 1);
  const [frame] = ws.messages();
  assert.ok(!(frame instanceof Error) && frame.type === MsgType.BATCH);
  assert.deepEqual(frame.messages.map((m) => m.type === MsgType.ACK && m.seq), [1, 2, 3]);
  box.send(ack(4));
  await Promise.resolve();
  const second = ws.messages()[1];
  assert.ok(!(second instanceof Error) && second.type === MsgType.ACK && second.seq === 4);
});

test('faithful: every message at once in its own frame', () => {
  const ws = openSocket();
  const box = new RelayOutbox(false, () => ws);
  box.send(ack(1));
  box.send(ack(2));
  assert.deepEqual(ws.messages().map((m) => !(m instanceof Error) && m.type), [MsgType.ACK, MsgType.ACK]);
});

test('nothing is sent without an open socket, and a socket that closed within the turn drops the turn', async () => {
  /** @type {FakeWebSocket | null} */
  let ws = null;
  const box = new RelayOutbox(true, () => ws);
  box.send(ack(1)); // no socket
  ws = new FakeWebSocket('ws://x'); // connecting
  box.send(ack(2));
  ws.open();
  box.send(ack(3));
  ws.readyState = 2;
  await Promise.resolve();
  assert.equal(ws.sent.length, 0);
  assert.deepEqual(box.queued, []);
  ws.readyState = 1;
  box.flush();
  assert.equal(ws.sent.length, 0, 'the dropped turn is not sent later');
});
