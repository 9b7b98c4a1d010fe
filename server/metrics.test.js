// The RTS histogram the relay tallies itself, as Prometheus reads it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import client from 'prom-client';

import { RtsTally } from '../relay/index.js';
import { RTS_BUCKETS_S, TallyHistogram } from './metrics.js';

test('RtsTally puts each sample in the first bucket at or over it', () => {
  const t = new RtsTally([1, 10]);
  for (const ms of [0.2, 1, 1.01, 10, 11, 5000]) t.add(ms);
  assert.deepEqual([...t.counts], [2, 2, 2]);
  assert.deepEqual(t.cumulative(), [2, 4]);
  assert.equal(t.count, 6);
  assert.ok(Math.abs(t.sumMs - 5023.21) < 1e-9);
});

test('a tallied histogram reads like a prom-client one: cumulative buckets in seconds, +Inf, sum and count', async () => {
  const registry = new client.Registry();
  const tally = new RtsTally();
  const h = new TallyHistogram({ name: 'x_rts_seconds', help: 'RTS', buckets: RTS_BUCKETS_S }, () => tally);
  registry.registerMetric(/** @type {client.Metric} */ (/** @type {unknown} */ (h)));
  const reference = new client.Histogram({ name: 'y_rts_seconds', help: 'RTS', buckets: [...RTS_BUCKETS_S], registers: [registry] });
  for (const ms of [0.5, 3, 167, 168, 30000]) {
    tally.add(ms);
    reference.observe(ms / 1000);
  }
  const text = await registry.metrics();
  const ours = text.split('\n').filter((l) => l.startsWith('x_rts_seconds')).map((l) => l.replace('x_', ''));
  const theirs = text.split('\n').filter((l) => l.startsWith('y_rts_seconds')).map((l) => l.replace('y_', ''));
  assert.equal(ours.length, RTS_BUCKETS_S.length + 3);
  // The sums differ in float rounding only (ms / 1000 summed vs summed then divided).
  const sum = (/** @type {string[]} */ lines) => Number(lines.find((l) => l.startsWith('rts_seconds_sum'))?.split(' ')[1]);
  assert.ok(Math.abs(sum(ours) - sum(theirs)) < 1e-9);
  const noSum = (/** @type {string[]} */ lines) => lines.filter((l) => !l.startsWith('rts_seconds_sum'));
  assert.deepEqual(noSum(ours), noSum(theirs));
  assert.match(text, /# TYPE x_rts_seconds histogram/);
});
