// Slow consumers, all of the promise at once: a member that stops reading
// (it ACKs nothing and its socket fills up) does not stall its group (the
// others keep their RT), does not grow relay memory beyond the hard bound
// while its group keeps sending (its stale poses are replaced by the newest
// and counted as dropped), is closed with 4004 past the hard limit, and if
// it reads again before that, it gets the newest poses and is waited for again.
// A relay-faithful consumer is never sent a newer pose instead of an older one:
// it gets every update in order, or is closed with 4004 at the hard bound.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { once } from 'node:events';
import WebSocket from 'ws';
import { createRelay } from './index.js';
import { Session } from './session.js';
import { CarClient } from '../core/client.js';
import { createRelayTransport } from '../web/src/transport/relay.js';
import { summarize } from '../core/metrics.js';
import { startStallMeter, waitFor } from '../lab/shared/loop-stall.js';
import { socketBufferCeiling } from '../lab/shared/socket-buffers.js';
import { CloseCode, HelloFlag, MsgType, decode, encode } from '../core/protocol.js';

const pose = () => /** @type {any} */ ([0, 0, 0, 0, 0, 0, 1]);

/** @param {() => boolean} cond @param {number} [timeoutMs] */
const until = (cond, timeoutMs = 15000) => waitFor(cond, timeoutMs, () => String(cond).slice(6, 90));

/**
 * A member of this relay's group that is a Session of this node (throws otherwise).
 * @param {import('./index.js').Relay} relay @param {string} key @param {number} id
 */
function localSession(relay, key, id) {
  const member = relay.groups.groups.get(key)?.members.get(id);
  if (!(member instanceof Session)) throw new Error(`no local session ${id} in ${key}`);
  return member;
}

/** @param {number} ms */
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * A raw member; `read` false: it never reads its socket (the kernel buffers fill up).
 * @param {string} url @param {string} group @param {string} name
 * @param {{ flags?: number }} [o] HELLO flags: mode relay unless told
 */
async function rawMember(url, group, name, { flags = HelloFlag.BATCHED } = {}) {
  const ws = new WebSocket(url);
  let id = 0;
  /** @type {Map<number, number>} newest seq seen per sender */
  const newest = new Map();
  /** @type {number[]} every UPDATE's seq, in arrival order */
  const seqs = [];
  let updates = 0;
  ws.on('message', (data) => {
    const m = /** @type {any} */ (decode(/** @type {Buffer} */ (data)));
    for (const u of m.type === MsgType.BATCH ? m.messages : [m]) {
      if (u.type === MsgType.WELCOME) id = u.clientId;
      if (u.type === MsgType.UPDATE) {
        updates++;
        seqs.push(u.seq);
        newest.set(u.sender, Math.max(newest.get(u.sender) ?? 0, u.seq));
        ws.send(encode({ type: MsgType.ACK, sender: u.sender, seq: u.seq, acker: id }));
      }
    }
  });
  await once(ws, 'open');
  ws.send(encode({ type: MsgType.HELLO, flags, clientId: 0, group, name, token: '' }));
  await until(() => id !== 0);
  const socket = /** @type {any} */ (ws)._socket;
  return { ws, id: () => id, newest, seqs, updates: () => updates, pause: () => socket.pause(), resume: () => socket.resume() };
}

test('a consumer that stops reading: its group goes on, relay memory stays bounded, stale poses are replaced', { timeout: 150_000 }, async () => {
  const server = http.createServer();
  const queueHardBytes = 1024 * 1024;
  const relay = createRelay({
    server, path: '/relay', slowAckMs: 1000, queueSoftBytes: 16 * 1024, queueHardBytes, maxPayload: 1024 * 1024,
    maxMessagesPerSecond: 1e9, maxMessagesBurst: 1e9, // the flood below is on purpose
    maxUpdatesPerSecond: 1e9, maxUpdatesBurst: 1e9, maxGroupForwardsPerSecond: 1e12,
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `ws://127.0.0.1:${/** @type {any} */ (server.address()).port}/relay`;
  try {
    /** @type {CarClient[]} */
    const good = [];
    for (let i = 0; i < 4; i++) {
      const c = new CarClient({
        transport: createRelayTransport({ url, batched: true, WebSocket }),
        group: 'slow', name: `good${i}`, cycleMs: 50, ackTimeoutMs: 20000, pose,
      });
      await c.connect();
      good.push(c);
    }
    const slow = await rawMember(url, 'slow', 'slow');
    await until(() => good.every((c) => c.members.size === 4));
    for (const c of good) c.start();
    await until(() => good.every((c) => c.rt.length >= 20));
    const before = summarize(good.flatMap((c) => c.rt));

    // 1. It stops reading. After slowAckMs its neighbours stop waiting for it.
    slow.pause();
    const mark = good.map((c) => c.rt.length);
    // members and relay share this process: a stall of it delays their ACKs whatever the relay does
    const stallMeter = startStallMeter();
    await sleep(3000);
    const stallMs = stallMeter.stop();
    const during = good.flatMap((c, i) => c.rt.slice(mark[i]));
    const waited = during.filter((rt) => rt >= 900).length;
    const others = summarize(during.filter((rt) => rt < 900));
    console.log(`slow consumer: RT before ${before.mean?.toFixed(2)} ms; while it does not read: ${others.n} updates at ${others.mean?.toFixed(2)} ms`
      + ` (p95 ${others.p95?.toFixed(2)}), ${waited} waited for it up to slowAckMs; this process stalled up to ${stallMs} ms`);
    assert.ok(waited <= good.length, `at most the update in flight per sender waits for it: ${waited}`);
    // 3 s at 50 ms, minus the one wait of slowAckMs: up to ~40 per sender (fewer on a loaded
    // machine). Without the policy each sender would complete none: it would wait for the
    // silent member until its 20 s ACK timeout.
    assert.ok(others.n >= good.length * 5, `the group went on: ${others.n} updates in 3 s`);
    // how fast the others are then (under 250 ms) is the gate `slow-consumer` (lab/gates/gates.js)
    assert.ok(good.every((c) => c.cycle.ackTimeouts === 0), 'nobody ran into its ACK timeout');
    const m1 = relay.metrics();
    assert.equal(m1.slowConsumers, 1);
    assert.equal(m1.lagging, 1);

    // 2. Its group keeps sending, much more: here a second slow member and a
    // flooding sender in a group of their own (so the flood costs the good
    // clients nothing). The slow socket fills up, its queue keeps one pose per
    // sender, the relay holds no more than the hard bound for it.
    const slow2 = await rawMember(url, 'flood', 'slow2');
    const flooder = await rawMember(url, 'flood', 'flood');
    slow2.pause();
    const session = localSession(relay, 'g:flood', slow2.id());
    let maxHeld = 0;
    let seq = 0;
    // Bounded by what the relay wrote (the kernel's buffers for the socket fill first; see
    // lab/shared/socket-buffers.js), not by a stopwatch a loaded machine can run out; and in time only
    // so that the loop is.
    const floodBytes = relay.stats.bytesOut + 2 * socketBufferCeiling();
    const deadline = Date.now() + 100_000;
    while (relay.stats.droppedUpdates < 1000 && relay.stats.bytesOut < floodBytes && Date.now() < deadline) {
      const msgs = [];
      for (let i = 0; i < 4000; i++) msgs.push({ type: MsgType.UPDATE, sender: flooder.id(), seq: ++seq, sendTime: 0, pose: pose(), object: null });
      flooder.ws.send(encode({ type: MsgType.BATCH, messages: msgs }));
      await sleep(5);
      maxHeld = Math.max(maxHeld, session.out.queuedBytes + session.socket.bufferedAmount);
    }
    assert.ok(relay.stats.droppedUpdates >= 1000, `stale poses replaced and counted: ${relay.stats.droppedUpdates}`);
    assert.ok(session.out.blocked, 'held back as a slow consumer');
    assert.ok(session.queue.filter((q) => q.body[0] === MsgType.UPDATE).length <= 1, 'one pose per sender waits');
    assert.ok(maxHeld <= queueHardBytes, `relay held at most ${maxHeld} bytes for it (hard bound ${queueHardBytes})`);
    assert.equal(slow2.ws.readyState, WebSocket.OPEN, 'poses alone never reach the hard bound');
    console.log(`slow consumer: ${relay.stats.droppedUpdates} stale poses replaced; at most ${maxHeld} bytes held for it (hard bound ${queueHardBytes})`);

    // 3. It reads again: it gets the newest pose, ACKs, and is waited for again.
    await until(() => session.lagging, 40000); // it has not ACKed for slowAckMs by now
    const lastSeq = seq;
    slow2.resume();
    await until(() => (slow2.newest.get(flooder.id()) ?? 0) === lastSeq, 40000);
    await until(() => !session.lagging, 40000);
    assert.ok(relay.metrics().slowConsumersRecovered >= 1);

    // 4. Past the hard limit it is closed (4004): it stops reading again and
    // sends updates; the flooder ACKs them, and the ACKED_ALLs to it (never
    // replaced, unlike poses) pile up.
    slow2.pause();
    for (let k = 0; k < 200 && !relay.stats.closedByCode[CloseCode.SLOW_CONSUMER]; k++) {
      const ups = [];
      for (let i = 0; i < 4000; i++) ups.push({ type: MsgType.UPDATE, sender: slow2.id(), seq: k * 4000 + i + 1, sendTime: 0, pose: pose(), object: null });
      slow2.ws.send(encode({ type: MsgType.BATCH, messages: ups }));
      await sleep(5);
    }
    await until(() => (relay.stats.closedByCode[CloseCode.SLOW_CONSUMER] ?? 0) === 1, 40000);
    slow2.ws.terminate();
    assert.ok(good.every((c) => c.closedWith === null), 'nobody else was closed');
    assert.equal(slow.ws.readyState, WebSocket.OPEN);
    for (const c of good) c.close();
    flooder.ws.close();
    slow.ws.terminate();
  } finally {
    await relay.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
});

test('a relay-faithful consumer that stops reading keeps every pose, in order, until the hard bound closes it', { timeout: 150_000 }, async () => {
  const server = http.createServer();
  const queueHardBytes = 512 * 1024;
  const relay = createRelay({
    server, path: '/relay', queueSoftBytes: 16 * 1024, queueHardBytes, maxPayload: 1024 * 1024,
    maxMessagesPerSecond: 1e9, maxMessagesBurst: 1e9, maxUpdatesPerSecond: 1e9, maxUpdatesBurst: 1e9, maxGroupForwardsPerSecond: 1e12,
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `ws://127.0.0.1:${/** @type {any} */ (server.address()).port}/relay`;
  try {
    const slow = await rawMember(url, 'faithful', 'slow', { flags: 0 });
    const sender = await rawMember(url, 'faithful', 'sender', { flags: 0 });
    const session = localSession(relay, 'g:faithful', slow.id());
    let seq = 0;
    /** Sends `n` UPDATEs of `sender` in one frame. @param {number} n */
    const send = (n) => {
      const ups = [];
      for (let i = 0; i < n; i++) ups.push({ type: MsgType.UPDATE, sender: sender.id(), seq: ++seq, sendTime: 0, pose: pose(), object: null });
      sender.ws.send(encode({ type: MsgType.BATCH, messages: ups }));
    };
    // 1. Blocked with many poses of one sender queued, then it reads again: every one arrives, in order.
    slow.pause();
    for (let k = 0; k < 400 && !(session.out.blocked && session.out.queue.length >= 500); k++) { send(500); await sleep(5); }
    assert.ok(session.out.blocked && session.out.queue.length >= 500, `blocked, ${session.out.queue.length} queued`);
    slow.resume();
    await until(() => slow.seqs.length === seq, 40000);
    assert.deepEqual(slow.seqs, Array.from({ length: seq }, (_, i) => i + 1), 'every update, in order');
    assert.equal(relay.stats.droppedUpdates, 0);
    // 2. It stops reading for good: its queue grows, nothing is replaced, the hard bound closes it.
    slow.pause();
    for (let k = 0; k < 400 && !relay.stats.closedByCode[CloseCode.SLOW_CONSUMER]; k++) { send(2000); await sleep(5); }
    await until(() => (relay.stats.closedByCode[CloseCode.SLOW_CONSUMER] ?? 0) === 1, 40000);
    assert.equal(relay.stats.droppedUpdates, 0, 'no pose replaced on the way to the bound');
    assert.equal(sender.ws.readyState, WebSocket.OPEN, 'only the slow consumer is closed');
    slow.ws.terminate();
    sender.ws.close();
  } finally {
    await relay.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
});
