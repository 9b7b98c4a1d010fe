// The soak and restart fields of a run record, from made-up inputs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { stabilityOf } from './timeline.js';
import { outageOf } from '../report/aggregate.js';
import { aggregateStreams } from '../../core/metrics.js';

test('stabilityOf: first and last window (a quarter of a short run, 60 s of a long one), RSS growth after warm-up', () => {
  /** @param {number} t @param {number} rtMean @param {number} rssBytes */
  const bucket = (t, rtMean, rssBytes, s = 10) => ({ t, s, rtMean, n: 100, rssBytes });
  const short = stabilityOf([bucket(0, 10, 100), bucket(10, 11, 101), bucket(20, 12, 102), bucket(30, 12, 105)], 100, 40);
  assert.ok(short);
  assert.equal(short.windowS, 10);
  assert.equal(short.rtFirst, 10);
  assert.equal(short.rtLast, 12);
  assert.equal(short.rtDriftPct, 20);
  assert.equal(short.rssGrowthPct, 5);
  assert.equal(short.rssMaxGrowthPct, 5);
  const long = stabilityOf(Array.from({ length: 60 }, (_, i) => bucket(i * 10, i < 6 ? 2 : 3, 1000 + i)), 1000, 600);
  assert.ok(long);
  assert.equal(long.windowS, 60, 'a minute at each end');
  assert.equal(long.rtFirst, 2);
  assert.equal(long.rtLast, 3);
  assert.equal(long.rtDriftPct, 50);
  // a short last bucket (the run's remainder) is left out of the comparison
  const tail = stabilityOf([bucket(0, 4, 1), bucket(10, 4, 1), bucket(20, 40, 1, 1)], 1, 21);
  assert.equal(tail?.rtLast, 4);
  assert.equal(stabilityOf([], 1, 10), null);
  assert.equal(short.heapAfterGcGrowthPct, null, 'no heap figures, no heap growth');
});

test('stabilityOf: live heap after V8\'s full GCs, first to last bucket that has one', () => {
  /** @param {number} t @param {number | null} heapAfterGcBytes */
  const bucket = (t, heapAfterGcBytes) => ({ t, s: 10, rtMean: 1, n: 10, rssBytes: 100, heapTotalBytes: 50, heapAfterGcBytes });
  const s = stabilityOf([bucket(0, null), bucket(10, 20), bucket(20, 21), bucket(30, 25), bucket(40, null)], 100, 50);
  assert.equal(s?.heapAfterGcFirstBytes, 20);
  assert.equal(s?.heapAfterGcLastBytes, 25);
  assert.equal(s?.heapAfterGcGrowthPct, 25);
});

test('outageOf: nothing without reconnects; counts, per-client outage and losses with them', () => {
  const streams = { ...aggregateStreams([]), lost: 7 }; // outageOf reads only `lost`
  assert.deepEqual(outageOf([{ reconnects: 0 }, {}], streams), {});
  const { outage } = /** @type {Extract<ReturnType<typeof outageOf>, { outage: object }>} */ (outageOf([
    { reconnects: 1, outages: [{ at: 0, ms: 800, code: 1006 }], abandoned: 1, pausedCycles: 5 },
    { reconnects: 2, outages: [{ at: 0, ms: 1200, code: 1006 }, { at: 9, ms: 400, code: 1001 }], abandoned: 0, pausedCycles: 9 },
    { reconnects: 0, reconnecting: true, outages: [], abandoned: 1, pausedCycles: 3 },
  ], streams));
  assert.equal(outage.clientsReconnected, 2);
  assert.equal(outage.reconnects, 3);
  assert.equal(outage.stillDown, 1);
  assert.equal(outage.outageMs.n, 3);
  assert.equal(outage.outageMs.max, 1200);
  assert.equal(outage.updatesLost, 7);
  assert.equal(outage.abandoned, 2);
  assert.equal(outage.pausedCycles, 17);
});
