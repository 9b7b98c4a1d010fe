// Soak, short form: `carlab sim` on relay with 60 clients for 15 s. The long
// form (300 clients, 600 s) is a command, see docs/reliability.md. Zero lost,
// duplicated or reordered updates (sequence-checked per stream) and no memory
// growth after the warm-up (live heap and Buffers after a full GC). RT stability
// is timing, held by the gate `soak` (lab/gates/gates.js), not here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runSimPoint } from './sim.js';

/** The clients' cycle, the CLI's default. */
const CYCLE_MS = 167;

/**
 * A sim run record with the fields simRunRecord adds under `extra` (runSimPoint's
 * inferred type does not carry them).
 * @typedef {Awaited<ReturnType<typeof runSimPoint>> & { timeline: import('./timeline.js').TimelineBucket[],
 *   stability: ReturnType<typeof import('./timeline.js').stabilityOf>, serverFaults: number }} SoakRun
 */

test('soak (short): 60 clients on relay for 15 s: nothing lost, memory and RT stable', { timeout: 90_000 }, async () => {
  const run = /** @type {SoakRun} */ (await runSimPoint({
    point: { transport: 'relay', clients: 60, group: 5, cycleMs: CYCLE_MS, cycleMode: 'pipelined', relays: 0, placement: 'spread' }, // the CLI's defaults
    durationS: 15, warmupS: 3, updates: 0, ackTimeoutMs: 20000, timelineS: 5, liveHeap: true,
  }));
  const s = run.stability;
  console.log(`soak: ${JSON.stringify({ rt: run.rt.mean, lossPct: run.lossPct, dups: run.dups, reorders: run.reorders,
    expected: run.updates.expected, stability: s, timeline: run.timeline })}`);
  assert.equal(run.connected, 60);
  assert.ok(run.updates.expected > 1000, `sequence-checked updates: ${run.updates.expected}`);
  assert.equal(run.lossPct, 0);
  assert.equal(run.updates.lost, 0);
  assert.equal(run.dups, 0);
  assert.equal(run.reorders, 0);
  assert.equal(run.timeline.length, 3, 'one bucket per 5 s');
  // the relay's heap beside its RSS: what tells a JS leak from V8/malloc keeping pages
  assert.ok(run.timeline.every((b) => typeof b.heapTotalBytes === 'number' && b.heapTotalBytes > 0));
  assert.ok(s, 'stability measured');
  const { rssGrowthPct, rtDriftPct, rtFirst, rtLast } = s;
  // (the messages below called toFixed on these: a null failed the test before, too)
  assert.ok(rssGrowthPct !== null && rtDriftPct !== null && rtFirst !== null && rtLast !== null, `stability measured: ${JSON.stringify(s)}`);
  // A leak is memory that stays after a full GC: the live heap (a JS leak) or
  // external Buffers (ws frames kept). Each bucket is taken right after a forced GC
  // (liveHeap), so V8's heap sizing and the allocator's pages are not in it.
  // Measured 2026-11-25, 3 runs: live heap 16.6 -> 16.7 MB (<= 0.6 %), external
  // +0.0 MB, while RSS grew 12-16 % (heapTotal +18 MB: V8 sizing its new space;
  // the failed CI run saw RSS +13.6 % the same way). A leak of 100 bytes per
  // delivered update (14 400 deliveries in these 10 s) is +1.4 MB, +8.7 %.
  // RSS is held only to 40 %, for gross native leaks; the long form holds it to 10 %.
  assert.ok(run.timeline.every((b) => typeof b.liveHeapBytes === 'number' && b.liveHeapBytes > 0), 'live heap sampled after a GC');
  const { liveHeapGrowthPct, externalGrowthBytes } = s;
  assert.ok(liveHeapGrowthPct !== undefined && liveHeapGrowthPct < 5, `live heap after a full GC grew ${liveHeapGrowthPct?.toFixed(1)} %`);
  assert.ok(externalGrowthBytes !== undefined && externalGrowthBytes < 1e6, `external memory grew ${((externalGrowthBytes ?? 0) / 1e6).toFixed(2)} MB`);
  assert.ok(rssGrowthPct < 40, `relay RSS grew ${rssGrowthPct.toFixed(1)} % after the warm-up`);
  assert.equal(run.serverFaults, 0);
});
