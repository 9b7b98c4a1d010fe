import test from 'node:test';
import assert from 'node:assert/strict';
import { createTimeline, liveHeapGrowth, tallyProgress } from './timeline.js';
import { serverCpuOf } from './sim.js';

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
  const server = /** @type {import('../target/server-process.js').ServerChild} */ (/** @type {unknown} */ ({
    metrics: async () => ({ rssBytes: rss, memory: { heapTotal: 50, external: 7 }, heapAfterMajorGc: { bytes: 20 } }),
  }));
  const bucket = { on: true, rtSum: 300, rtN: 3 };
  const timeline = createTimeline(() => server, bucket);
  await timeline.close(10_000);
  rss = 2000;
  await timeline.close(15_040);
  assert.deepEqual(timeline.buckets, [
    { t: 0, s: 10, rtMean: 100, n: 3, rssBytes: 1000, heapTotalBytes: 50, heapAfterGcBytes: 20, externalBytes: 7 },
    { t: 10, s: 5, rtMean: null, n: 0, rssBytes: 2000, heapTotalBytes: 50, heapAfterGcBytes: 20, externalBytes: 7 },
  ]);
  assert.equal(timeline.start, 15_040);
  assert.deepEqual(bucket, { on: true, rtSum: 0, rtN: 0 });
  assert.deepEqual(liveHeapGrowth(timeline.buckets), {}, 'no forced GC, no live heap');
});

test('with liveHeap each bucket forces a GC first and records the live heap and native memory; growth is first to last', async () => {
  const calls = /** @type {string[]} */ ([]);
  let live = 1000;
  let external = 100;
  const server = /** @type {import('../target/server-process.js').ServerChild} */ (/** @type {unknown} */ ({
    heap: async () => { calls.push('heap'); return { heapUsed: live, heapTotal: 3000, external, rss: 10_000 }; },
    metrics: async () => { calls.push('metrics'); return { rssBytes: 10_000, memory: { heapTotal: 3000, external }, heapAfterMajorGc: { bytes: null } }; },
  }));
  const timeline = createTimeline(() => server, { on: true, rtSum: 0, rtN: 0 }, true);
  timeline.close(5000);
  await timeline.settled(10_000);
  live = 1100; external = 600;
  timeline.close(10_000);
  await timeline.settled(10_000);
  assert.deepEqual(calls, ['heap', 'metrics', 'heap', 'metrics'], 'the GC comes before the sample');
  assert.equal(timeline.buckets[0].liveHeapBytes, 1000);
  assert.equal(timeline.buckets[0].nativeBytes, 10_000 - 3000 - 100);
  assert.deepEqual(liveHeapGrowth(timeline.buckets), { liveHeapGrowthPct: 10, externalGrowthBytes: 500 });
});

test('a server that does not answer never holds the window: the bucket keeps its RT, its memory stays null', async () => {
  const server = /** @type {import('../target/server-process.js').ServerChild} */ (/** @type {unknown} */ ({
    metrics: () => new Promise(() => {}), // an overloaded server that has not read the question
  }));
  const bucket = { on: true, rtSum: 30, rtN: 3 };
  const timeline = createTimeline(() => server, bucket);
  timeline.close(5000);
  assert.deepEqual([timeline.buckets.length, timeline.buckets[0].rtMean, timeline.start], [1, 10, 5000], 'closed at once');
  await timeline.settled(20);
  assert.equal(timeline.buckets[0].rssBytes, null);
});

test('serverCpuOf: the server\'s CPU over its own span, split; a cluster\'s sum has no split', () => {
  const late = serverCpuOf({ cpuWindow: { userUs: 2e6, systemUs: 1e6, ms: 20_000 } }, { cpuPctMean: 99 });
  assert.deepEqual(late, { server: 15, serverSplit: { userUs: 2e6, systemUs: 1e6 }, serverWindowS: 20 });
  assert.deepEqual(serverCpuOf({ serverCpuPct: 40, cpuWindow: { userUs: 1, systemUs: 1, ms: 1 } }, null), { server: 40, serverSplit: null, serverWindowS: null });
  assert.deepEqual(serverCpuOf({}, { cpuPctMean: 12 }), { server: 12, serverSplit: null, serverWindowS: null });
});
