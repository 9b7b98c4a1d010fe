import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ActionCycle } from './cycle.js';

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
