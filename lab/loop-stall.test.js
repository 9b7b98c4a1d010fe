import { test } from 'node:test';
import assert from 'node:assert/strict';
import { plusTwoStalls, startStallMeter } from './loop-stall.js';

test('the stall meter reports the longest time the loop was held up; a bound gains two of them', async () => {
  const meter = startStallMeter();
  await new Promise((r) => setTimeout(r, 30));
  const until = performance.now() + 120;
  while (performance.now() < until) { /* hold the loop */ }
  await new Promise((r) => setTimeout(r, 30));
  const soFar = meter.longest();
  assert.ok(soFar >= 100, `stall so far ${soFar} ms`);
  const stallMs = meter.stop();
  assert.ok(stallMs >= soFar, `stall ${stallMs} ms`);
  assert.equal(plusTwoStalls(1000, 40), 1080);
  // not started yet when stopped: nothing sampled
  assert.equal(startStallMeter({ afterMs: 1000 }).stop(), 0);
});
