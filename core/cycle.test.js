import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ActionCycle, HORIZON_FLOOR_MS, HORIZON_RT_FACTOR, MAX_PENDING } from './cycle.js';

/**
 * An ActionCycle on a hand-driven clock that records what it sends and the RTs.
 *
 * @param {Partial<import('./cycle.js').CycleOptions>} [overrides]
 */
function harness(overrides = {}) {
  let clock = 0;
  /** @type {[number, number][]} seq, send time */
  const sent = [];
  /** @type {[number, boolean][]} RT, warm-up */
  const rts = [];
  let neighbours = [2, 3];
  const cycle = new ActionCycle({
    cycleMs: 167, ackTimeoutMs: 1000, warmupMs: 0,
    now: () => clock,
    neighbours: () => neighbours,
    send: (seq, t) => sent.push([seq, t]),
    onRt: (rt, warmup) => rts.push([rt, warmup]),
    ...overrides,
  });
  return {
    cycle, sent, rts,
    /** @param {number} ms */
    advance(ms) { clock += ms; },
    /** @param {number[]} n */
    setNeighbours(n) { neighbours = n; },
  };
}

test('the next update waits for every neighbour\'s ACK; RT is to the last ACK', () => {
  const h = harness();
  h.cycle.tick();
  assert.deepEqual(h.sent, [[1, 0]]);
  h.advance(30); h.cycle.ack(2, 1);
  h.advance(167 - 30); h.cycle.tick(); // 3 has not acked: skip this cycle
  assert.equal(h.sent.length, 1);
  assert.equal(h.cycle.skippedCycles, 1);
  h.advance(10); h.cycle.ack(3, 1);
  assert.deepEqual(h.rts, [[177, false]]);
  h.cycle.tick();
  assert.deepEqual(h.sent[1], [2, 177]);
  assert.deepEqual(h.cycle.sentTo, { 2: 2, 3: 2 });
});

test('a missing ACK is given up after the ACK timeout, never waited on longer', () => {
  const h = harness();
  h.cycle.tick();
  h.cycle.ack(2, 1);
  h.advance(999); h.cycle.tick();
  assert.equal(h.sent.length, 1);
  h.advance(1); h.cycle.tick();
  assert.equal(h.sent.length, 2);
  assert.equal(h.cycle.ackTimeouts, 1);
  assert.equal(h.rts.length, 0);
});

test('a departed member leaves the ACK set at once', () => {
  const h = harness();
  h.cycle.tick();
  h.advance(20); h.cycle.ack(2, 1);
  h.advance(50); h.cycle.memberLeft(3);
  assert.deepEqual(h.rts, [[20, false]], 'RT is to the last ACK that arrived');
  h.cycle.tick();
  assert.equal(h.sent.length, 2);
});

test('ACKED_ALL completes; stale and duplicate ACKs do nothing', () => {
  const h = harness();
  h.cycle.tick();
  h.cycle.ack(2, 99);
  h.cycle.ack(2, 1);
  h.cycle.ack(2, 1);
  assert.equal(h.rts.length, 0);
  h.advance(40); h.cycle.ackedAll(1);
  assert.deepEqual(h.rts, [[40, false]]);
  h.cycle.ackedAll(1);
  assert.equal(h.rts.length, 1);
});

test('warm-up updates are flagged; maxUpdates stops the cycle; alone, nothing is awaited', () => {
  const h = harness({ warmupMs: 300, maxUpdates: 2 });
  h.cycle.start(0);
  h.cycle.stop();
  h.cycle.tick(); h.cycle.ackedAll(1);
  h.advance(400); h.cycle.tick(); h.cycle.ackedAll(2);
  h.cycle.tick();
  assert.deepEqual(h.rts.map((r) => r[1]), [true, false]);
  assert.equal(h.sent.length, 2);
  const alone = harness();
  alone.setNeighbours([]);
  alone.cycle.tick(); alone.cycle.tick();
  assert.equal(alone.sent.length, 2);
  assert.equal(alone.rts.length, 0);
});

test('paused (the connection dropped): the outstanding update is abandoned, nothing is sent, seq goes on after resume', () => {
  const h = harness();
  h.cycle.tick();
  h.cycle.pause();
  assert.equal(h.cycle.outstanding, null);
  assert.equal(h.cycle.abandoned, 1);
  h.advance(167); h.cycle.tick();
  h.advance(167); h.cycle.tick();
  assert.deepEqual(h.sent.map(([seq]) => seq), [1], 'nothing sent while paused');
  assert.equal(h.cycle.pausedCycles, 2);
  h.cycle.ack(2, 1); // a late ACK of the abandoned update changes nothing
  assert.equal(h.rts.length, 0);
  h.cycle.resume();
  h.advance(167); h.cycle.tick();
  assert.deepEqual(h.sent.map(([seq]) => seq), [1, 2], 'the next seq');
  assert.equal(h.cycle.ackTimeouts, 0);
});

// ---------------------------------------------------------------------------
// Pipelined (the product's cycle): every cycle sends, each update is ACKed on its own.

test('pipelined: every cycle sends whatever earlier updates are waiting on; each update has its own ACK set and RT', () => {
  const h = harness({ mode: 'pipelined' });
  h.cycle.tick(); // seq 1 at 0
  h.advance(167); h.cycle.tick(); // seq 2 at 167, 1 unacknowledged
  h.advance(167); h.cycle.tick(); // seq 3 at 334
  assert.deepEqual(h.sent, [[1, 0], [2, 167], [3, 334]]);
  assert.equal(h.cycle.skippedCycles, 0);
  assert.equal(h.cycle.inFlight(), 3);
  // update 2 completes first (its own ACKs), 1 is still waiting
  h.advance(10); h.cycle.ack(2, 2); h.cycle.ack(3, 2);
  assert.deepEqual(h.rts, [[177, false]]);
  // an ACK of update 2 does nothing to 1 or 3
  assert.deepEqual(h.cycle.outstanding?.waiting, new Set([2, 3]));
  assert.deepEqual(h.cycle.sentTo, { 2: 3, 3: 3 });
  assert.deepEqual(h.cycle.acksFrom, { 2: 1, 3: 1 });
});

test('pipelined: a late ACK for an old update still counts its RT, and never held a send back', () => {
  const h = harness({ mode: 'pipelined' });
  h.cycle.tick(); // 1 at 0
  h.cycle.ack(2, 1);
  for (let i = 0; i < 4; i++) { h.advance(167); h.cycle.tick(); } // 2..5 go out meanwhile
  assert.equal(h.sent.length, 5);
  h.advance(50); h.cycle.ack(3, 1); // 718 ms after update 1 was sent
  assert.deepEqual(h.rts, [[718, false]]);
  assert.equal(h.cycle.lateAcks, 1, 'completed after newer updates had gone out');
  assert.equal(h.cycle.completed, 1);
  h.cycle.ack(3, 1); // a duplicate ACK changes nothing
  assert.equal(h.rts.length, 1);
});

test('pipelined: an update without every ACK after ackTimeoutMs is timed out; pending stays bounded', () => {
  const h = harness({ mode: 'pipelined', ackTimeoutMs: 1000 });
  for (let i = 0; i < 30; i++) { h.cycle.tick(); h.advance(167); } // no ACK ever
  // at most ceil(1000 / 167) = 6 wait at once; the rest timed out
  assert.ok(h.cycle.inFlight() <= 7, `${h.cycle.inFlight()} in flight`);
  assert.equal(h.cycle.ackTimeouts + h.cycle.inFlight(), 30);
  assert.equal(h.sent.length, 30);
  h.cycle.ack(2, 1); h.cycle.ack(3, 1); // after its timeout: no RT
  assert.equal(h.rts.length, 0);
  // a tiny cycle with a huge timeout: MAX_PENDING caps the set
  const big = harness({ mode: 'pipelined', ackTimeoutMs: 1e9 });
  for (let i = 0; i < MAX_PENDING + 20; i++) { big.cycle.tick(); big.advance(1); }
  assert.equal(big.cycle.inFlight(), MAX_PENDING);
  assert.equal(big.cycle.evicted, 20);
  assert.equal(big.cycle.ackTimeouts, 20);
});

test('pipelined: ACKED_ALL, a departed member and a dropped connection act on every update in flight', () => {
  const h = harness({ mode: 'pipelined' });
  h.cycle.tick(); h.advance(100); h.cycle.tick(); h.advance(100); h.cycle.tick();
  h.cycle.ackedAll(2);
  assert.deepEqual(h.rts, [[100, false]]);
  h.cycle.ack(2, 1); // 1: 2 acked, 3 pending; 3: nobody acked yet
  h.advance(5); h.cycle.memberLeft(3);
  assert.deepEqual(h.rts.map((r) => r[0]), [100, 200], 'update 1 completes at its last ACK');
  assert.deepEqual(h.cycle.outstanding?.waiting, new Set([2]), 'update 3 now waits for 2 alone');
  h.advance(5); h.cycle.ack(2, 3);
  assert.deepEqual(h.rts.map((r) => r[0]), [100, 200, 10]);
  assert.equal(h.cycle.inFlight(), 0);
  h.setNeighbours([2]);
  h.cycle.tick(); h.cycle.tick();
  h.cycle.pause();
  assert.equal(h.cycle.abandoned, 2);
  assert.equal(h.cycle.outstanding, null);
  h.cycle.tick();
  assert.equal(h.cycle.pausedCycles, 1);
  h.cycle.resume(); h.cycle.tick();
  assert.deepEqual(h.sent.map(([seq]) => seq), [1, 2, 3, 4, 5, 6]);
});

test('the delivery horizon and the cutoff: a few times the RT p99, at least a second; the newest seq that old', () => {
  const h = harness({ mode: 'pipelined' });
  assert.equal(h.cycle.horizonMs(), HORIZON_FLOOR_MS, 'no RT yet: the floor');
  for (let i = 0; i < 30; i++) { h.cycle.tick(); h.advance(50); h.cycle.ack(2, i + 1); h.cycle.ack(3, i + 1); h.advance(117); }
  assert.equal(h.cycle.horizonMs(), HORIZON_FLOOR_MS, 'RT 50 ms: 3 x 50 is under the floor');
  assert.equal(h.cycle.cutoffSeq(), 25, 'sent at 0, 167, ...: seq 25 (at 4008 ms) is the newest a second before 5010 ms');
  assert.equal(h.cycle.settled(), false);
  const slow = harness({ mode: 'pipelined' });
  for (let i = 0; i < 10; i++) { slow.cycle.tick(); slow.advance(600); slow.cycle.ack(2, i + 1); slow.cycle.ack(3, i + 1); }
  assert.equal(slow.cycle.horizonMs(), HORIZON_RT_FACTOR * 600);
  slow.advance(HORIZON_RT_FACTOR * 600);
  assert.equal(slow.cycle.settled(), true, 'the last update is a horizon old');
  assert.equal(slow.cycle.cutoffSeq(), 10);
});

test('gated stays the paper\'s: the default mode, one update at a time', () => {
  const h = harness();
  assert.equal(h.cycle.mode, 'gated');
  h.cycle.tick(); h.advance(167); h.cycle.tick(); h.advance(167); h.cycle.tick();
  assert.equal(h.sent.length, 1);
  assert.equal(h.cycle.skippedCycles, 2);
  assert.equal(h.cycle.inFlight(), 1);
});

test('loss counts only what could arrive: a leaver\'s unanswered updates are taken back out of sentTo', () => {
  const h = harness({ mode: 'pipelined' });
  h.cycle.tick(); h.advance(100); h.cycle.tick(); h.advance(100); h.cycle.tick();
  h.cycle.ack(2, 1); h.cycle.ack(3, 1); h.cycle.ack(2, 2); h.cycle.ack(2, 3);
  h.cycle.memberLeft(3);
  assert.deepEqual(h.cycle.sentTo, { 2: 3, 3: 1 }, '3 answered update 1 only: 2 and 3 never count there');
  assert.deepEqual(h.cycle.lossRecord().sentSeqs, { 2: [1, 3], 3: [1, 1] }, 'the seqs taken back leave the set the receiver is counted over');
  assert.deepEqual(h.cycle.lossRecord().ackedBy, { 2: [1, 3], 3: [1, 1] });
  assert.equal(h.cycle.takenBack, 2);
  // an update that timed out while its receiver was still there stays expected: it is lost
  const t = harness({ mode: 'pipelined', ackTimeoutMs: 300 });
  t.cycle.tick(); t.cycle.ack(2, 1);
  t.advance(300);
  t.cycle.tick();
  t.cycle.memberLeft(3);
  assert.deepEqual(t.cycle.sentTo, { 2: 2, 3: 1 }, 'update 1 timed out at 3 (counts), update 2 was on its way (taken back)');
  // a stopped cycle keeps its last updates pending: one past its ACK timeout at the leave is still lost
  const stopped = harness({ mode: 'pipelined', ackTimeoutMs: 300 });
  stopped.cycle.tick();
  stopped.advance(300);
  stopped.cycle.memberLeft(3);
  assert.deepEqual(stopped.cycle.sentTo, { 2: 1, 3: 1 });
  assert.equal(stopped.cycle.takenBack, 0);
});

test('mode relay: an ACKED_ALL short of a receiver is explained by the leave that follows it, in either order', () => {
  // The relay answers for the leaver (ACKED_ALL, acked 1 of 2), then announces the leave.
  const h = harness({ mode: 'pipelined' });
  h.cycle.tick(); h.advance(50); h.cycle.tick();
  h.cycle.ackedAll(1, 0, 2);
  h.cycle.ackedAll(2, 1, 1);
  assert.deepEqual(h.cycle.acksFrom, { 2: 1, 3: 1 }, 'only the full answer says who ACKed');
  h.cycle.memberLeft(3);
  assert.deepEqual(h.cycle.sentTo, { 2: 2, 3: 1 });
  h.cycle.memberLeft(2);
  assert.deepEqual(h.cycle.sentTo, { 2: 2, 3: 1 }, 'a full answer explains nothing later');
  // The update reached the relay after the leave: acked 1 of 2, nobody dropped.
  const late = harness({ mode: 'pipelined' });
  late.cycle.tick(); late.cycle.ackedAll(1, 0, 1);
  assert.deepEqual(late.cycle.acksFrom, {}, 'one receiver did not answer: nobody is credited');
  late.cycle.memberLeft(3);
  assert.deepEqual(late.cycle.sentTo, { 2: 1, 3: 0 });
  // The leave first: every update in flight is taken back for the leaver.
  const first = harness({ mode: 'pipelined' });
  first.cycle.tick(); first.cycle.memberLeft(3); first.cycle.ackedAll(1, 0, 1);
  assert.deepEqual(first.cycle.sentTo, { 2: 1, 3: 0 });
  assert.equal(first.cycle.takenBack, 1);
  // An unexplained answer is forgotten after the ACK timeout (a lagging member, not a leaver).
  const lag = harness({ mode: 'pipelined', ackTimeoutMs: 300 });
  lag.cycle.tick(); lag.cycle.ackedAll(1, 1, 1);
  lag.advance(300); lag.cycle.tick(); lag.cycle.ackedAll(2, 0, 2);
  lag.cycle.memberLeft(3);
  assert.deepEqual(lag.cycle.sentTo, { 2: 2, 3: 2 });
});
