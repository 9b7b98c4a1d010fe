// Soak, short form: `carlab sim` on relay with 60 clients for 15 s. The long
// form (300 clients, 600 s) is a command, see docs/reliability.md. Zero lost,
// duplicated or reordered updates (sequence-checked per stream), no memory
// growth after the warm-up (live heap, and RSS beyond V8's heap, under 10 %), RT stable: the last window's mean RT
// within 20 % of the first's, or within 5 ms: on loopback RT is ~1-3 ms, where a
// scheduler hiccup on a shared machine is more than 20 % (the long form, at 60 s
// windows, is held to the 20 % alone).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runSimPoint } from './sim.js';

/**
 * A sim run record with the fields simRunRecord adds under `extra` (runSimPoint's
 * inferred type does not carry them).
 * @typedef {Awaited<ReturnType<typeof runSimPoint>> & { timeline: import('./sim.js').TimelineBucket[],
 *   stability: ReturnType<typeof import('./sim.js').stabilityOf>, serverFaults: number }} SoakRun
 */

test('soak (short): 60 clients on relay for 15 s: nothing lost, memory and RT stable', { timeout: 90_000 }, async () => {
  const run = /** @type {SoakRun} */ (await runSimPoint({
    point: { transport: 'relay', clients: 60, group: 5, cycleMs: 167, cycleMode: 'pipelined', relays: 0, placement: 'spread' }, // the CLI's defaults
    durationS: 15, warmupS: 3, updates: 0, ackTimeoutMs: 20000, timelineS: 5,
  }));
  const s = run.stability;
  console.log(`soak: ${JSON.stringify({ rt: run.rt.mean, lossPct: run.lossPct, dups: run.dups, reorders: run.reorders,
    expected: run.updates.expected, stability: s, timeline: run.timeline })}`);
  assert.equal(run.connected, 60);
  assert.ok(run.updates.expected > 15000, `sequence-checked updates: ${run.updates.expected}`);
  assert.equal(run.lossPct, 0);
  assert.equal(run.updates.lost, 0);
  assert.equal(run.dups, 0);
  assert.equal(run.reorders, 0);
  assert.equal(run.timeline.length, 3, 'one bucket per 5 s');
  // the relay's heap beside its RSS: what tells a JS leak from V8/malloc keeping pages
  assert.ok(run.timeline.every((b) => typeof b.heapTotalBytes === 'number' && b.heapTotalBytes > 0));
  assert.ok(s && s.windowS === 5, 'first and last 5 s compared');
  const { rssGrowthPct, rtDriftPct, rtFirst, rtLast } = s;
  // (the messages below called toFixed on these: a null failed the test before, too)
  assert.ok(rssGrowthPct !== null && rtDriftPct !== null && rtFirst !== null && rtLast !== null, `stability measured: ${JSON.stringify(s)}`);
  // A leak shows as live heap after V8's full GCs growing (a JS leak) or as RSS growing past what
  // V8's own heap grew (a native one). RSS alone is not the test: in a 15 s run V8 is still sizing
  // its young generation (measured 2026-11-25: RSS +12.3 MB, +12.8 %, all of it heapTotal, +16.8 MB,
  // with the live heap flat at 16.0 MB).
  const [first, last] = [run.timeline[0], run.timeline[run.timeline.length - 1]];
  const [rss0, rss1, heap0, heap1] = [first.rssBytes ?? 0, last.rssBytes ?? 0, first.heapTotalBytes ?? 0, last.heapTotalBytes ?? 0];
  const rssBeyondHeap = (rss1 - rss0) - Math.max(0, heap1 - heap0);
  assert.ok(rss0 > 0 && rssBeyondHeap < 0.1 * rss0,
    `relay RSS grew ${rssGrowthPct.toFixed(1)} % after the warm-up, ${(rssBeyondHeap / 1e6).toFixed(1)} MB of it outside V8's heap`);
  if (s.heapAfterGcGrowthPct !== null && s.heapAfterGcGrowthPct !== undefined) {
    assert.ok(s.heapAfterGcGrowthPct < 10, `live heap after full GCs grew ${s.heapAfterGcGrowthPct.toFixed(1)} %`);
  }
  assert.ok(rtDriftPct < 20 || Math.abs(rtLast - rtFirst) < 5,
    `RT first ${rtFirst.toFixed(2)} ms, last ${rtLast.toFixed(2)} ms (${rtDriftPct.toFixed(0)} %)`);
  assert.equal(run.serverFaults, 0);
});
