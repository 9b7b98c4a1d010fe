// The timeline and stability figures of a sim run: buckets of RT and server
// memory over the measured window, the progress tallies that fill them, and
// RT drift and memory growth from first bucket to last.

/** @typedef {import('../target/server-process.js').ServerChild} ServerChild */
/** @typedef {import('./generators.js').GeneratorMessage} GeneratorMessage */

/**
 * One bucket of a run's timeline: RT mean and count of the updates completed
 * in it, and the server's memory when it closed: RSS, V8's heap size, and the
 * live heap after V8's last full GC (none forced: a JS leak shows as a climb
 * there, while RSS also moves with V8's heap sizing and the allocator).
 * @typedef {{ t: number, s: number, rtMean: number | null, n: number, rssBytes: number | null,
 *   heapTotalBytes?: number | null, heapAfterGcBytes?: number | null, externalBytes?: number | null,
 *   liveHeapBytes?: number, nativeBytes?: number }} TimelineBucket
 */

/**
 * Live heap and external (Buffer) memory growth from the first bucket to the
 * last, when the buckets were taken after a forced GC (--live-heap); {} otherwise.
 * @param {TimelineBucket[]} timeline
 * @returns {{ liveHeapGrowthPct?: number, externalGrowthBytes?: number }}
 */
export function liveHeapGrowth(timeline) {
  const live = timeline.filter((b) => typeof b.liveHeapBytes === 'number');
  if (live.length < 2) return {};
  const [first, last] = [live[0], live[live.length - 1]];
  const [h0, h1] = [first.liveHeapBytes ?? 0, last.liveHeapBytes ?? 0];
  return {
    liveHeapGrowthPct: h0 > 0 ? (100 * (h1 - h0)) / h0 : 0,
    externalGrowthBytes: (last.externalBytes ?? 0) - (first.externalBytes ?? 0),
  };
}

/**
 * RT and memory stability over a run from its timeline: the mean RT of the
 * first and the last window (60 s, or a quarter of a shorter run) and the
 * server's RSS growth from the end of the warm-up to the end of the run.
 * @param {TimelineBucket[]} timeline
 * @param {number} rssWarmBytes server RSS when the measured window began
 * @param {number} durationS
 */
export function stabilityOf(timeline, rssWarmBytes, durationS) {
  const full = timeline.filter((b) => b.s >= (timeline[0]?.s ?? 0) * 0.5);
  if (full.length === 0) return null;
  const bucketS = full[0].s;
  const windowS = durationS >= 240 ? 60 : Math.max(bucketS, durationS / 4);
  const k = Math.max(1, Math.min(Math.floor(full.length / 2) || 1, Math.round(windowS / bucketS)));
  const meanOf = (/** @type {typeof timeline} */ bs) => {
    const n = bs.reduce((a, b) => a + b.n, 0);
    return n ? bs.reduce((a, b) => a + (b.rtMean ?? 0) * b.n, 0) / n : null;
  };
  const rtFirst = meanOf(full.slice(0, k));
  const rtLast = meanOf(full.slice(-k));
  const rss = timeline.map((b) => b.rssBytes).filter((v) => typeof v === 'number');
  const rssEnd = rss.length ? rss[rss.length - 1] : null;
  const rssMax = rss.length ? Math.max(...rss) : null;
  const heap = timeline.map((b) => b.heapAfterGcBytes).filter((v) => typeof v === 'number');
  const heapFirst = heap.length ? heap[0] : null;
  const heapLast = heap.length ? heap[heap.length - 1] : null;
  return {
    windowS: k * bucketS,
    rtFirst,
    rtLast,
    rtDriftPct: rtFirst && rtLast !== null ? (100 * Math.abs(rtLast - rtFirst)) / rtFirst : null,
    /** The last window's mean RT less the first's (ms): a relay falling behind its load grows it by its backlog. */
    rtDriftMs: rtFirst !== null && rtLast !== null ? rtLast - rtFirst : null,
    rssWarmBytes,
    rssEndBytes: rssEnd,
    rssMaxBytes: rssMax,
    rssGrowthPct: rssWarmBytes && rssEnd !== null ? (100 * (rssEnd - rssWarmBytes)) / rssWarmBytes : null,
    rssMaxGrowthPct: rssWarmBytes && rssMax !== null ? (100 * (rssMax - rssWarmBytes)) / rssWarmBytes : null,
    heapAfterGcFirstBytes: heapFirst,
    heapAfterGcLastBytes: heapLast,
    heapAfterGcGrowthPct: heapFirst && heapLast !== null ? (100 * (heapLast - heapFirst)) / heapFirst : null,
    ...liveHeapGrowth(timeline),
  };
}

/**
 * Progress the generators reported since the last progress line (live) and
 * since the timeline bucket being filled began (bucket, while measuring).
 * @typedef {{ rtSum: number, rtN: number, sent: number, done: number }} LiveTally
 * @typedef {{ on: boolean, rtSum: number, rtN: number }} BucketTally
 */

/**
 * Adds one generator's progress message to the live tally and, while
 * measuring, to the bucket being filled.
 * @param {LiveTally} live
 * @param {BucketTally} bucket
 * @param {GeneratorMessage} m
 */
export function tallyProgress(live, bucket, m) {
  if (m.type !== 'progress') return;
  live.rtSum += m.rtSum; live.rtN += m.rtN; live.sent += m.sent;
  if (bucket.on) { bucket.rtSum += m.rtSum; bucket.rtN += m.rtN; }
  if (m.done) live.done++;
}

/**
 * The run's timeline: buckets of timelineS seconds, each closed with the RT
 * mean of its bucket tally and the server's memory at that moment.
 * @param {() => ServerChild} currentServer the server now (a restart replaces it)
 * @param {BucketTally} bucket
 * @param {boolean} [liveHeap] force a full GC first and record the live heap (PointOptions.liveHeap in lab/sim/sim.js)
 */
export function createTimeline(currentServer, bucket, liveHeap = false) {
  /** @type {TimelineBucket[]} */
  const buckets = [];
  /** The server's answers still on their way, one per bucket. @type {Promise<void>[]} */
  const answers = [];
  const timeline = {
    buckets,
    /** Start of the bucket being filled, ms into the measured window. */
    start: 0,
    /**
     * Closes the bucket being filled: its RT mean now, the server's memory when it answers. An
     * overloaded server can take minutes to read the question (one turn of its loop reading every
     * socket's backlog); the window never waits for it, a bucket it has not answered by the end
     * (settled()) keeps its memory figures null.
     * @param {number} at
     */
    close(at) {
      /** @type {TimelineBucket} */
      const b = {
        t: Math.round(timeline.start / 100) / 10, s: Math.round((at - timeline.start) / 100) / 10,
        rtMean: bucket.rtN ? bucket.rtSum / bucket.rtN : null, n: bucket.rtN, rssBytes: null,
        heapTotalBytes: null, heapAfterGcBytes: null, externalBytes: null,
      };
      buckets.push(b);
      bucket.rtSum = 0; bucket.rtN = 0;
      timeline.start = at;
      const server = currentServer();
      answers.push((async () => {
        const live = liveHeap ? await server.heap() : null;
        const m = await server.metrics();
        Object.assign(b, {
          rssBytes: m.rssBytes ?? null, heapTotalBytes: m.memory?.heapTotal ?? null,
          heapAfterGcBytes: m.heapAfterMajorGc?.bytes ?? null, externalBytes: m.memory?.external ?? null,
          ...(live ? { liveHeapBytes: live.heapUsed, nativeBytes: live.rss - live.heapTotal - live.external } : {}),
        });
      })().catch(() => {}));
    },
    /** Waits up to `ms` for the server's answers. @param {number} ms */
    async settled(ms) {
      await Promise.race([Promise.all(answers), new Promise((r) => setTimeout(r, ms))]);
    },
  };
  return timeline;
}
