// Superseded marks (docs/protocol.md §5.13): a blocked outbox that replaces a
// mode-relay sender's queued pose by a newer one writes a SUPERSEDED naming the
// replaced seqs just before the newer UPDATE, to a client that asked for it;
// never to one that did not. A relay-faithful sender's or receiver's poses are
// never replaced: that transport delivers every update.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FlushScheduler } from './flush.js';
import http from 'node:http';
import { once } from 'node:events';
import WebSocket from 'ws';
import { createRelay, relayContext, relayOptions } from './index.js';
import { Session } from './session.js';
import { RelayStats } from './stats.js';
import { HelloFlag, MsgType, decode, encode, unbatch } from '../core/protocol.js';

/** A socket whose send buffer is full until `drain()`; keeps what was written. */
function fakeSocket() {
  /** @type {Uint8Array[]} */
  const frames = [];
  return {
    frames, bufferedAmount: 1 << 30, readyState: 1,
    /** @param {Uint8Array} f */ send(f) { frames.push(f); },
    close() {},
    drain() { this.bufferedAmount = 0; },
  };
}

/**
 * A receiving session and the messages it is written once its socket drains, after `seqs` of
 * one sender were pushed to it while blocked.
 * @param {{ marks: boolean, senderBatched: boolean, receiverBatched?: boolean }} o @param {number[]} seqs
 */
function pushWhileBlocked(o, seqs) {
  const flusher = new FlushScheduler(1024, 60_000);
  /** @type {number[]} */
  const dropped = [];
  const ctx = relayContext(relayOptions({ queueSoftBytes: 1024 }), new RelayStats(), flusher, {
    detach() {},
    dropDestination: (/** @type {any} */ entry) => { dropped.push(entry.seq); },
  });
  const socket = fakeSocket();
  const receiver = new Session(socket, ctx);
  receiver.capabilities = o.marks ? HelloFlag.SUPERSEDED_MARKS : 0;
  receiver.batched = o.receiverBatched ?? true;
  const sender = /** @type {any} */ ({ id: 7, batched: o.senderBatched });
  receiver.out.push(encode({ type: MsgType.MEMBER_JOINED, id: 7, name: 's' }).subarray(1), null);
  receiver.out.flush(); // the socket is full: it blocks
  assert.equal(receiver.out.blocked, true);
  for (const seq of seqs) {
    const body = encode({ type: MsgType.UPDATE, sender: 7, seq, sendTime: 0, pose: [0, 0, 0, 0, 0, 0, 1], object: null }).subarray(1);
    receiver.out.push(body, /** @type {any} */ ({ sender, seq, dest: new Map([[receiver, NaN]]), acked: 0, dropped: 0, createdAt: 0 }));
  }
  socket.drain();
  receiver.out.flush();
  flusher.stop();
  const messages = socket.frames.flatMap((f) => unbatch(/** @type {any} */ (decode(f))));
  return { messages: messages.filter((m) => m.type !== MsgType.MEMBER_JOINED), dropped };
}

test('a blocked outbox marks the poses it replaced, just before the UPDATE that replaced them', () => {
  const { messages, dropped } = pushWhileBlocked({ marks: true, senderBatched: true }, [4, 5, 6, 9]);
  assert.deepEqual(dropped, [4, 5, 6], 'each replaced copy leaves its ACK set');
  assert.deepEqual(messages.map((m) => ({ ...m, body: undefined })), [
    { type: MsgType.SUPERSEDED, sender: 7, seq: 9, ranges: [4, 6], body: undefined },
    { type: MsgType.UPDATE, sender: 7, seq: 9, sendTime: 0, pose: [0, 0, 0, 0, 0, 0, 1], object: null, body: undefined },
  ]);
});

test('a gap in the replaced seqs is two ranges; the marks go in order', () => {
  const { messages } = pushWhileBlocked({ marks: true, senderBatched: true }, [4, 6, 7, 10]);
  assert.deepEqual(messages.filter((m) => m.type === MsgType.SUPERSEDED).map((m) => /** @type {any} */ (m).ranges), [[4, 4, 6, 7]]);
});

test('no mark for a client that did not ask: its poses are still replaced', () => {
  const { messages, dropped } = pushWhileBlocked({ marks: false, senderBatched: true }, [1, 2, 3]);
  assert.deepEqual(messages.map((m) => [m.type, /** @type {any} */ (m).seq]), [[MsgType.UPDATE, 3]]);
  assert.deepEqual(dropped, [1, 2]);
});

test('a relay-faithful sender or receiver: every queued pose is kept, in order, none marked', () => {
  for (const o of [{ marks: true, senderBatched: false }, { marks: true, senderBatched: true, receiverBatched: false }]) {
    const { messages, dropped } = pushWhileBlocked(o, [1, 2, 3]);
    assert.deepEqual(messages.map((m) => [m.type, /** @type {any} */ (m).seq]), [[MsgType.UPDATE, 1], [MsgType.UPDATE, 2], [MsgType.UPDATE, 3]], JSON.stringify(o));
    assert.deepEqual(dropped, [], JSON.stringify(o));
  }
});

test('poses already queued when a relay-faithful outbox blocks: all stay', () => {
  const { frames, blocked } = queuedThenBlocked({ batched: false, marks: false }, () => { assert.fail('nothing is dropped'); });
  assert.equal(blocked, true);
  assert.deepEqual(frames.map((f) => /** @type {any} */ (decode(f)).seq), [1, 2, 3]);
});

/**
 * Poses 1..3 of one sender queued, then the outbox blocks and drains: what it wrote.
 * @param {{ batched: boolean, marks: boolean }} o both ends in mode relay, or both relay-faithful
 * @param {() => void} [onDrop] the registry's dropDestination
 */
function queuedThenBlocked(o, onDrop = () => {}) {
  const flusher = new FlushScheduler(1024, 60_000);
  const ctx = relayContext(relayOptions({ queueSoftBytes: 1024 }), new RelayStats(), flusher, { detach() {}, dropDestination: onDrop });
  const socket = fakeSocket();
  socket.bufferedAmount = 0;
  const receiver = new Session(socket, ctx);
  if (o.marks) receiver.capabilities = HelloFlag.SUPERSEDED_MARKS;
  receiver.batched = o.batched;
  const sender = /** @type {any} */ ({ id: 7, batched: o.batched });
  for (const seq of [1, 2, 3]) {
    const body = encode({ type: MsgType.UPDATE, sender: 7, seq, sendTime: 0, pose: [0, 0, 0, 0, 0, 0, 1], object: null }).subarray(1);
    receiver.out.queue.push({ body, entry: /** @type {any} */ ({ sender, seq, dest: new Map([[receiver, NaN]]), acked: 0, dropped: 0, createdAt: 0 }) });
  }
  socket.bufferedAmount = 1 << 30;
  receiver.out.flush(); // blocks
  const blocked = receiver.out.blocked;
  socket.drain();
  receiver.out.flush();
  flusher.stop();
  return { frames: socket.frames, blocked };
}

test('poses already queued when the outbox blocks: the stale ones are marked on the newest', () => {
  const messages = queuedThenBlocked({ batched: true, marks: true }).frames.flatMap((f) => unbatch(/** @type {any} */ (decode(f))));
  assert.deepEqual(messages.map((m) => [m.type, /** @type {any} */ (m).seq, /** @type {any} */ (m).ranges]), [
    [MsgType.SUPERSEDED, 3, [1, 2]], [MsgType.UPDATE, 3, undefined],
  ]);
});

test('the WELCOME answers a capability it was asked for, and only then carries the byte', async () => {
  const server = http.createServer();
  const relay = createRelay({ server, path: '/relay' });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `ws://127.0.0.1:${/** @type {any} */ (server.address()).port}/relay`;
  try {
    /** @param {number} flags */
    const welcomeFor = async (flags) => {
      const ws = new WebSocket(url);
      await once(ws, 'open');
      ws.send(encode({ type: MsgType.HELLO, flags, clientId: 0, group: 'caps', name: 'n', token: '' }));
      const [data] = await once(ws, 'message');
      ws.close();
      return /** @type {any} */ (unbatch(/** @type {any} */ (decode(data))).find((m) => m.type === MsgType.WELCOME));
    };
    assert.equal((await welcomeFor(1 | 8)).capabilities, 8);
    assert.equal((await welcomeFor(1)).capabilities, undefined, 'an older client reads the WELCOME it always did');
  } finally {
    await relay.close();
    server.close();
  }
});
