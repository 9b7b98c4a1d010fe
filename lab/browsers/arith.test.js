import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  delta, deltas, failedFromStart, formatDuration, kbitPerSecond, memoryPerConnection, perSecond, slope, sumFields, summary,
} from './arith.js';

test('summary: mean, Dev (population), min, percentiles; skips non-numbers; null when empty', () => {
  const s = summary([2, 4, 4, 4, 5, 5, 7, 9, null, NaN, undefined]);
  assert.equal(s?.n, 8);
  assert.equal(s?.mean, 5);
  assert.equal(s?.dev, 2); // the textbook example: population standard deviation 2
  assert.equal(s?.min, 2);
  assert.equal(s?.max, 9);
  assert.equal(s?.p50, 4);
  assert.equal(summary([]), null);
  assert.equal(summary([null]), null);
});

test('m1 = (m_max - m_0) / d_max', () => {
  assert.equal(memoryPerConnection({ m0: 100_000_000, mMax: 111_100_000, dMax: 100 }), 111_000);
  assert.equal(memoryPerConnection({ m0: 10, mMax: 5, dMax: 5 }), -1); // memory may shrink: reported as is
  assert.equal(memoryPerConnection({ m0: 10, mMax: 50, dMax: 0 }), null);
  assert.equal(memoryPerConnection({ m0: null, mMax: 50, dMax: 3 }), null);
});

test('slope: least squares over points', () => {
  assert.equal(slope([{ x: 0, y: 1 }, { x: 1, y: 3 }, { x: 2, y: 5 }]), 2);
  assert.ok(Math.abs(/** @type {number} */ (slope([{ x: 0, y: 0 }, { x: 1, y: 1 }, { x: 2, y: 4 }])) - 2) < 1e-12);
  assert.equal(slope([{ x: 1, y: 1 }]), null);
  assert.equal(slope([{ x: 1, y: 1 }, { x: 1, y: 2 }]), null);
});

test('rates: per second and kbit/s over a window in ms', () => {
  assert.equal(perSecond(120, 60_000), 2);
  assert.equal(perSecond(null, 1000), null);
  assert.equal(perSecond(5, 0), null);
  assert.equal(kbitPerSecond(30_000, 60_000), 4); // 500 B/s = 4 kbit/s
  assert.equal(kbitPerSecond(750, 60_000), 0.1);
});

test('counter deltas keep missing fields null', () => {
  assert.equal(delta(5, 8), 3);
  assert.equal(delta(null, 8), null);
  assert.deepEqual(deltas({ a: 1, b: 2, c: null }, { a: 4, b: 2, d: 1 }), { a: 3, b: 0, c: null, d: null });
  assert.deepEqual(sumFields([{ a: 1, b: null }, { a: 2, b: null }, null]), { a: 3, b: null });
});

test('a cell gives up only when its first n attempts all failed', () => {
  assert.equal(failedFromStart([{ error: 'x' }, { error: 'y' }], 2), true);
  assert.equal(failedFromStart([{ error: 'x' }, {}], 2), false);
  assert.equal(failedFromStart([{ error: 'x' }], 2), false);
  assert.equal(failedFromStart([{}, { error: 'x' }, { error: 'x' }], 2), false);
});

test('durations read as h/min/s', () => {
  assert.equal(formatDuration(40), '40 s');
  assert.equal(formatDuration(125), '2 min 5 s');
  assert.equal(formatDuration(7170), '2 h 00 min');
  assert.equal(formatDuration(3725), '1 h 02 min');
});
