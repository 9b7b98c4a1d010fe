import { test } from 'node:test';
import assert from 'node:assert/strict';
import { summarize, percentile, jitterStep, ReceiveStream, aggregateStreams } from './metrics.js';

test('summarize: mean, population Dev, nearest-rank percentiles, max, n', () => {
  const s = summarize([2, 4, 4, 4, 5, 5, 7, 9]);
  assert.equal(s.mean, 5);
  assert.equal(s.dev, 2); // the textbook population standard deviation example
  assert.equal(s.p50, 4);
  assert.equal(s.p95, 9);
  assert.equal(s.max, 9);
  assert.equal(s.n, 8);
  const hundred = Array.from({ length: 100 }, (_, i) => 100 - i); // 100..1, unsorted
  assert.equal(summarize(hundred).p95, 95);
  assert.equal(summarize(hundred).p99, 99);
  assert.equal(percentile([], 50), null);
  assert.deepEqual(summarize([]), { mean: null, dev: null, p50: null, p95: null, p99: null, max: null, n: 0 });
});

test('RFC 3550 jitter: J += (|D| - J) / 16, by hand', () => {
  // transit times 10, 14, 9, 9 ms: |D| = 4, 5, 0
  let j = 0;
  j = jitterStep(j, 10, 14); assert.equal(j, 0.25);
  j = jitterStep(j, 14, 9); assert.equal(j, 0.25 + (5 - 0.25) / 16);
  j = jitterStep(j, 9, 9); assert.equal(j, 0.546875 - 0.546875 / 16);
});

test('RFC 3550 jitter: constant clock offset cancels, steady spacing gives 0', () => {
  const s = new ReceiveStream();
  for (let i = 1; i <= 50; i++) s.arrive(i, i * 167, 1e6 + i * 167 + 3);
  assert.equal(s.jitterMs, 0);
  // RFC 3550 A.8 behaviour: a single 16 ms step converges J towards |D| with gain 1/16
  const t = new ReceiveStream();
  t.arrive(1, 0, 100);
  t.arrive(2, 20, 136); // transit 100 -> 116
  assert.equal(t.jitterMs, 1);
});

test('ReceiveStream counts distinct, duplicates and reorders; only the newest is applied', () => {
  const s = new ReceiveStream();
  assert.equal(s.arrive(1, 0, 10), true);
  assert.equal(s.arrive(3, 0, 10), true);
  assert.equal(s.arrive(2, 0, 10), false); // late: counted, not applied
  assert.equal(s.arrive(3, 0, 10), false); // duplicate
  assert.equal(s.arrive(4, 0, 10), true);
  assert.deepEqual([s.received, s.duplicates, s.reorders, s.newestSeq], [4, 1, 1, 4]);
});

test('aggregateStreams: loss per stream from the sender\'s own count, ACK loss apart', () => {
  const a = {
    id: 1, group: 'g', rt: [], rtWarmup: [], updatesSent: 10, ackTimeouts: 0, skippedCycles: 0,
    sentTo: { 2: 10, 3: 10 }, acksFrom: { 2: 8, 3: 9 },
    recv: { 2: { received: 5, duplicates: 1, reorders: 0, jitterMs: 2, acksSent: 5 } },
  };
  const b = {
    id: 2, group: 'g', rt: [], rtWarmup: [], updatesSent: 5, ackTimeouts: 0, skippedCycles: 0,
    sentTo: { 1: 5 }, acksFrom: { 1: 5 },
    recv: { 1: { received: 9, duplicates: 0, reorders: 2, jitterMs: 4, acksSent: 9 } },
  };
  const c = {
    id: 3, group: 'g', rt: [], rtWarmup: [], updatesSent: 0, ackTimeouts: 0, skippedCycles: 0,
    sentTo: {}, acksFrom: {},
    recv: { 1: { received: 10, duplicates: 0, reorders: 0, jitterMs: 0, acksSent: 10 } },
  };
  // same ids in another group must not mix in
  const other = { ...c, group: 'h', recv: { 1: { received: 0, duplicates: 0, reorders: 0, jitterMs: 0, acksSent: 0 } } };
  const r = aggregateStreams([a, b, c, other]);
  // streams: 1->2: 10 sent, 9 got; 1->3: 10/10; 2->1: 5/5
  assert.equal(r.expected, 25);
  assert.equal(r.received, 24);
  assert.equal(r.lost, 1);
  assert.equal(r.lossPct, 4);
  assert.equal(r.duplicates, 1);
  assert.equal(r.reorders, 2);
  // ACKs: 2 sent 9 to 1, 1 got 8; 3 sent 10, 1 got 9; 1 sent 5 to 2, 2 got 5
  assert.equal(r.acksSent, 24);
  assert.equal(r.acksReceived, 22);
  assert.ok(Math.abs(r.ackLossPct - (100 * 2) / 24) < 1e-9);
  assert.equal(r.jitterMs, (4 + 0 + 2) / 3);
});
