import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  summarize, percentile, jitterStep, ReceiveStream, aggregateStreams,
  Freshness, FREEZE_MS, gapBucket, summarizeFreshness, aggregateFreshness,
} from './metrics.js';

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

test('aggregateStreams: per stream, the sender\'s seqs at or below its cutoff against the seqs the receiver got', () => {
  const base = { group: 'g', rt: [], rtWarmup: [], ackTimeouts: 0, skippedCycles: 0, transport: 'relay-faithful', ackedAllSeqs: [] };
  const a = {
    ...base, id: 1, updatesSent: 10, cutoffSeq: 8,
    sentTo: { 2: 10, 3: 10 }, sentSeqs: { 2: [1, 10], 3: [1, 10] }, acksFrom: { 2: 8, 3: 9 }, ackedBy: { 2: [1, 4, 7, 8], 3: [1, 8] },
    recv: { 2: { received: 5, seqs: [1, 5], duplicates: 1, reorders: 0, jitterMs: 2, acksSent: 5 } },
  };
  const b = {
    ...base, id: 2, updatesSent: 5, cutoffSeq: 5,
    sentTo: { 1: 5 }, sentSeqs: { 1: [1, 5] }, acksFrom: { 1: 5 }, ackedBy: { 1: [1, 5] },
    recv: { 1: { received: 9, seqs: [1, 4, 6, 10], duplicates: 0, reorders: 2, jitterMs: 4, acksSent: 9 } },
  };
  const c = {
    ...base, id: 3, updatesSent: 0, cutoffSeq: 0, sentTo: {}, sentSeqs: {}, acksFrom: {}, ackedBy: {},
    // seq 11 arrived from a sender that had not counted us yet (a join race): it is in no count
    recv: { 1: { received: 11, seqs: [1, 11], duplicates: 0, reorders: 0, jitterMs: 0, acksSent: 11 } },
  };
  // same ids in another group must not mix in
  const other = { ...c, group: 'h', recv: { 1: { received: 0, seqs: [], duplicates: 0, reorders: 0, jitterMs: 0, acksSent: 0 } } };
  const r = aggregateStreams([a, b, c, other]);
  // streams: 1->2: seqs 1..8 sent, 1..4 and 6..8 got; 1->3: 1..8, all; 2->1: 1..5, all
  assert.equal(r.expected, 21);
  assert.equal(r.received, 20);
  assert.equal(r.lost, 1, 'seq 5 never reached 2');
  assert.equal(r.inFlight, 4, 'seqs 9 and 10 to 2 and 3: past the cutoff');
  assert.equal(r.lossPct, 100 / 21);
  assert.equal(r.duplicates, 1);
  assert.equal(r.reorders, 2);
  // ACKs of updates that arrived: 1->2 got 7, the ACK of 6 was lost; 1->3 got 8, all ACKed; 2->1 got 5, all
  assert.equal(r.acksSent, 20);
  assert.equal(r.acksReceived, 19);
  assert.equal(r.jitterMs, (4 + 0 + 2) / 3);
});

test('aggregateStreams: records from before seq sets are counted the old way, received at most expected', () => {
  const a = { id: 1, group: 'g', rt: [], rtWarmup: [], updatesSent: 10, ackTimeouts: 0, skippedCycles: 0, sentTo: { 2: 10 }, pendingTo: { 2: 1 }, acksFrom: { 2: 8 }, recv: {} };
  const b = { id: 2, group: 'g', rt: [], rtWarmup: [], updatesSent: 0, ackTimeouts: 0, skippedCycles: 0, sentTo: {}, acksFrom: {}, recv: { 1: { received: 10, duplicates: 0, reorders: 0, jitterMs: 0, acksSent: 10 } } };
  const r = aggregateStreams([a, b]);
  assert.deepEqual([r.expected, r.received, r.lost, r.inFlight, r.legacyStreams], [9, 9, 0, 1, 1]);
});

/** The duplicate detection written the obvious way (a Set of every seq seen): the reference. */
class SetReceiveStream {
  constructor() { this.newestSeq = -1; this.seen = new Set(); this.received = 0; this.duplicates = 0; this.reorders = 0; }
  /** @param {number} seq */
  arrive(seq) {
    if (this.seen.has(seq)) { this.duplicates++; return false; }
    this.seen.add(seq);
    this.received++;
    if (seq < this.newestSeq) { this.reorders++; return false; }
    this.newestSeq = seq;
    return true;
  }
}

test('ReceiveStream: its seq set decides like a Set of every seq seen, and holds exactly those seqs', () => {
  // seeded LCG: in-order runs, duplicates, late arrivals, far-behind and far-ahead jumps
  let x = 12345;
  const rand = () => { x = (Math.imul(x, 1103515245) + 12345) >>> 0; return x / 2 ** 32; };
  const s = new ReceiveStream();
  const ref = new SetReceiveStream();
  let next = 1;
  // 15 000 arrivals keep the set under SEQSET_MAX_RANGES, where it is exact
  for (let i = 0; i < 15000; i++) {
    const r = rand();
    let seq;
    if (r < 0.8) seq = next++;
    else if (r < 0.9) seq = Math.max(0, next - 1 - Math.floor(rand() * 50)); // recent: dup or late
    else if (r < 0.95) seq = Math.max(0, next - Math.floor(rand() * 8000)); // far behind
    else if (r < 0.99) { next += Math.floor(rand() * 100); seq = next++; } // a gap (loss)
    else { next += 4096 + Math.floor(rand() * 12000); seq = next++; } // a long jump
    assert.equal(s.arrive(seq, 0, 0), ref.arrive(seq), `arrival ${i}, seq ${seq}`);
  }
  assert.deepEqual([s.received, s.duplicates, s.reorders, s.newestSeq], [ref.received, ref.duplicates, ref.reorders, ref.newestSeq]);
  assert.equal(s.got.size, ref.seen.size);
  for (const seq of ref.seen) assert.ok(s.got.has(seq));
  assert.ok(s.duplicates > 500 && s.reorders > 500);
});

test('ReceiveStream: an in-order stream is one range however long (the 10-minute soak leak)', () => {
  // 20 000 updates = 56 min at 167 ms
  const s = new ReceiveStream();
  for (let seq = 1; seq <= 20000; seq++) s.arrive(seq, seq * 167, seq * 167 + 1);
  assert.equal(s.received, 20000);
  assert.deepEqual(s.got.toJSON(), [1, 20000]);
});

test('ReceiveStream: a superseded mark counts once its newer pose is here, in either order', () => {
  const s = new ReceiveStream();
  s.arrive(1, 0, 0);
  s.supersededBy(4, [2, 3]);
  assert.deepEqual(s.superseded.toJSON(), [], 'not before update 4 arrived');
  s.arrive(4, 0, 0);
  assert.deepEqual(s.superseded.toJSON(), [2, 3]);
  s.arrive(6, 0, 0);
  s.supersededBy(6, [5, 5]); // the mark after its update (frames cut apart on a data channel)
  assert.deepEqual(s.superseded.toJSON(), [2, 3, 5, 5]);
  s.supersededBy(8, [7, 7]);
  s.supersededBy(9, [7, 8]); // a newer mark replaces one whose update never came
  s.arrive(8, 0, 0);
  assert.deepEqual(s.superseded.toJSON(), [2, 3, 5, 5], 'update 8 arrived but its mark was replaced by 9\'s');
});

// ---------------------------------------------------------------------------
// Freshness at the receiver, on hand-made timelines.

test('Freshness: gaps between fresh updates on the receiver\'s clock; freezes over 1 s add to frozen time', () => {
  const f = new Freshness();
  // no window start (a receiver that never sends): it starts at the first update
  // arrivals: steady 167 ms, then a 2.5 s freeze, then 167 ms again
  for (const t of [1000, 1167, 1334, 1501, 4001, 4168]) f.applied(t);
  const r = f.toJSON();
  assert.deepEqual(r, { n: 6, spanMs: 3168, frozenMs: 2500, maxGapMs: 2500, gaps: { 167: 4, 2500: 1 } });
  assert.equal(f.ageMs(4500), 332);
  const s = summarizeFreshness([r]);
  assert.ok(Math.abs(/** @type {number} */ (s.updatesPerStreamPerS) - 6000 / 3168) < 1e-9);
  assert.deepEqual(s.freezeMs, { p50: 167, p99: 2500, max: 2500 });
  assert.ok(Math.abs(/** @type {number} */ (s.frozenPct) - (100 * 2500) / 3168) < 1e-9);
  assert.equal(s.streams, 1);
});

test('Freshness over a window: the gap into it and the gap open at its end count; warm-up and after-stop arrivals do not', () => {
  const f = new Freshness();
  f.applied(100); f.applied(267); // warm-up, before the window
  f.startWindow(1000);
  f.applied(1100); // gap from 267: 833 ms, 100 ms of it in the window
  f.applied(1300);
  f.endWindow(5300); // the sender went silent at 1300: a 4 s freeze still open at the end
  f.applied(6000); // after the window: ignored
  const r = f.toJSON(9999);
  assert.deepEqual(r, { n: 2, spanMs: 4300, frozenMs: 4000, maxGapMs: 4000, gaps: { 833: 1, 200: 1, 4000: 1 } });
  // a stream that got nothing in its whole window is one long freeze, not an absent one
  const silent = new Freshness();
  silent.startWindow(0);
  assert.deepEqual(silent.toJSON(20000), { n: 0, spanMs: 20000, frozenMs: 20000, maxGapMs: 20000, gaps: { 20000: 1 } });
  assert.deepEqual(silent.toJSON(20000), silent.toJSON(20000), 'reading it changes nothing');
  const s = summarizeFreshness([r, silent.toJSON(20000)]);
  assert.equal(s.updatesPerStreamPerS, (1000 * 2) / 24300);
  assert.equal(s.frozenPct, (100 * 24000) / 24300);
  assert.deepEqual(s.freezeMs, { p50: 833, p99: 20000, max: 20000 });
});

test('Freshness: a 1 s gap is not a freeze; buckets are whole ms below 1 s, 10 ms below 10 s, then 100 ms', () => {
  const f = new Freshness();
  f.applied(0); f.applied(1000); f.applied(1000.4);
  assert.equal(f.frozenMs, 0);
  assert.deepEqual([gapBucket(166.6), gapBucket(1234), gapBucket(23456)], [167, 1230, 23500]);
  assert.equal(FREEZE_MS, 1000);
});

test('summarizeFreshness over streams: rate = fresh updates / summed time, percentiles over every gap; empty gives nulls', () => {
  const a = new Freshness();
  a.startWindow(0);
  for (let t = 100; t <= 1000; t += 100) a.applied(t); // 10 updates, 10 gaps of 100 ms in 1 s
  const b = new Freshness();
  b.startWindow(0);
  b.applied(20000); // one 20 s freeze (a gated stream waiting out its ACK timeout)
  const s = summarizeFreshness([a.toJSON(1000), b.toJSON(20000), undefined]);
  assert.equal(s.streams, 2);
  assert.equal(s.gaps, 11);
  assert.ok(Math.abs(/** @type {number} */ (s.updatesPerStreamPerS) - (1000 * 11) / 21000) < 1e-9);
  assert.deepEqual(s.freezeMs, { p50: 100, p99: 20000, max: 20000 });
  assert.ok(Math.abs(/** @type {number} */ (s.frozenPct) - (100 * 20000) / 21000) < 1e-9);
  assert.deepEqual(summarizeFreshness([]), { updatesPerStreamPerS: null, freezeMs: { p50: null, p99: null, max: null }, frozenPct: null, streams: 0, gaps: 0 });
});

test('Freshness through ReceiveStream records: stale and duplicate arrivals are not fresh (aggregateFreshness)', () => {
  const s = new ReceiveStream();
  s.freshness.startWindow(0);
  /** @param {number} seq @param {number} at */
  const arrive = (seq, at) => { if (s.arrive(seq, 0, at)) s.freshness.applied(at); };
  arrive(1, 200); arrive(3, 400); arrive(2, 450); arrive(3, 460); arrive(4, 600);
  const rec = s.toJSON(800);
  assert.equal(rec.fresh.n, 3, 'seq 2 (stale) and the second 3 (duplicate) are dropped');
  assert.deepEqual(rec.fresh.gaps, { 200: 4 });
  const run = aggregateFreshness([{ recv: { 1: rec } }, { recv: { 2: { received: 1, duplicates: 0, reorders: 0, jitterMs: 0, acksSent: 1 } } }]);
  assert.equal(run.updatesPerStreamPerS, 3 / 0.8);
  assert.equal(run.freezeMs.p99, 200);
});
