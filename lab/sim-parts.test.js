import test from 'node:test';
import assert from 'node:assert/strict';
import { createTimeline, reportFields, sumReportTallies, tallyProgress } from './sim.js';

test('tallyProgress adds progress to the live tally, and to the bucket only while measuring', () => {
  const live = { rtSum: 0, rtN: 0, sent: 0, done: 0 };
  const bucket = { on: false, rtSum: 0, rtN: 0 };
  tallyProgress(live, bucket, { type: 'progress', rtSum: 100, rtN: 2, sent: 5, done: false });
  assert.deepEqual(live, { rtSum: 100, rtN: 2, sent: 5, done: 0 });
  assert.deepEqual(bucket, { on: false, rtSum: 0, rtN: 0 });
  bucket.on = true;
  tallyProgress(live, bucket, { type: 'progress', rtSum: 30, rtN: 1, sent: 1, done: true });
  assert.deepEqual(live, { rtSum: 130, rtN: 3, sent: 6, done: 1 });
  assert.deepEqual(bucket, { on: true, rtSum: 30, rtN: 1 });
  tallyProgress(live, bucket, { type: 'connected', count: 3, meshed: true });
  assert.deepEqual(live, { rtSum: 130, rtN: 3, sent: 6, done: 1 });
});

test('createTimeline closes buckets with the RT mean and the memory of the server at that moment', async () => {
  let rss = 1000;
  const server = /** @type {import('./sim.js').ServerChild} */ (/** @type {unknown} */ ({
    metrics: async () => ({ rssBytes: rss, memory: { heapTotal: 50 }, heapAfterMajorGc: { bytes: 20 } }),
  }));
  const bucket = { on: true, rtSum: 300, rtN: 3 };
  const timeline = createTimeline(() => server, bucket);
  await timeline.close(10_000);
  rss = 2000;
  await timeline.close(15_040);
  assert.deepEqual(timeline.buckets, [
    { t: 0, s: 10, rtMean: 100, n: 3, rssBytes: 1000, heapTotalBytes: 50, heapAfterGcBytes: 20 },
    { t: 10, s: 5, rtMean: null, n: 0, rssBytes: 2000, heapTotalBytes: 50, heapAfterGcBytes: 20 },
  ]);
  assert.equal(timeline.start, 15_040);
  assert.deepEqual(bucket, { on: true, rtSum: 0, rtN: 0 });
});

test('report tallies add up over generators (or pages); a run records its report interval, and its reports when on', () => {
  assert.equal(sumReportTallies([null, undefined]), null, 'nobody reported');
  assert.deepEqual(sumReportTallies([
    { sent: 10, failed: 1, skipped: 0, failedBy: { 429: 1 } },
    null,
    { sent: 5, failed: 2, skipped: 1, failedBy: { 429: 1, network: 1 } },
  ]), { sent: 15, failed: 3, skipped: 1, failedBy: { 429: 2, network: 1 } });
  assert.deepEqual(reportFields(0, null), { reportsIntervalS: 0 });
  assert.deepEqual(reportFields(5, { sent: 3, failed: 0, skipped: 0, failedBy: {} }), { reportsIntervalS: 5, reports: { sent: 3, failed: 0, skipped: 0, failedBy: {} } });
  assert.deepEqual(reportFields(5, null), { reportsIntervalS: 5, reports: { sent: 0, failed: 0, skipped: 0, failedBy: {} } }, 'on, but no client got to report');
});
