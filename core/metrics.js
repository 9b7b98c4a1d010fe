// Measurements as docs/architecture.md defines them: RT statistics, per-stream loss,
// duplicates, reorders, RFC 3550 interarrival jitter and freshness at the receiver. Shared by every
// transport, the browser HUD, the Node clients and the bench aggregation.

import { SeqSet, intersect } from './seqset.js';
import { transportInfo } from './transports.js';

/**
 * @typedef {object} Summary
 * @property {number | null} mean
 * @property {number | null} dev standard deviation (population)
 * @property {number | null} p50
 * @property {number | null} p95
 * @property {number | null} p99
 * @property {number | null} max
 * @property {number} n
 */

/**
 * Nearest-rank percentile of an ascending array.
 * @param {ArrayLike<number>} sorted
 * @param {number} p 0..100
 */
export function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

/**
 * Mean, Dev (population standard deviation), p50/p95/p99, max and count.
 * @param {ArrayLike<number>} values
 * @returns {Summary}
 */
export function summarize(values) {
  const n = values.length;
  if (n === 0) return { mean: null, dev: null, p50: null, p95: null, p99: null, max: null, n: 0 };
  const sorted = Float64Array.from(values).sort();
  let sum = 0;
  for (let i = 0; i < n; i++) sum += sorted[i];
  const mean = sum / n;
  let sq = 0;
  for (let i = 0; i < n; i++) sq += (sorted[i] - mean) ** 2;
  return {
    mean,
    dev: Math.sqrt(sq / n),
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    max: sorted[n - 1],
    n,
  };
}

/**
 * One step of RFC 3550 interarrival jitter (section 6.4.1):
 * D(i-1,i) = (R_i - R_{i-1}) - (S_i - S_{i-1}), J += (|D| - J) / 16.
 * Send and arrival times may be on different clocks: the offset cancels.
 * @param {number} jitter J so far
 * @param {number} prevTransit R_{i-1} - S_{i-1}
 * @param {number} transit R_i - S_i
 */
export function jitterStep(jitter, prevTransit, transit) {
  const d = Math.abs(transit - prevTransit);
  return jitter + (d - jitter) / 16;
}

/**
 * What a receiver knows of one sender's stream of updates.
 */
export class ReceiveStream {
  constructor() {
    /** Distinct updates received. */
    this.received = 0;
    this.duplicates = 0;
    /** Arrived after a newer update from the same sender. */
    this.reorders = 0;
    /** Newest seq seen, -1 before the first. */
    this.newestSeq = -1;
    this.jitterMs = 0;
    /** @type {number | null} */
    this.lastTransit = null;
    /** The distinct seqs that arrived: whether an update arrived is the receiver's fact (docs/architecture.md "Loss"). */
    this.got = new SeqSet();
    /** Seqs the relay replaced by a newer pose of the sender that did arrive here (superseded, not lost). */
    this.superseded = new SeqSet();
    /** A superseded mark whose newer pose has not arrived yet (at most one: a newer mark replaces it). @type {{ seq: number, ranges: number[] } | null} */
    this.pendingMark = null;
    /** ACKs this receiver sent back to the sender. */
    this.acksSent = 0;
    /** Fresh updates applied, on the receiver's clock (see Freshness). */
    this.freshness = new Freshness();
  }

  /**
   * Records an arrival. Returns true if this is now the newest update from
   * the sender (apply it), false if it is a duplicate or older (drop it, still ACK).
   * @param {number} seq
   * @param {number} sendTime sender's clock, ms
   * @param {number} arrivalTime receiver's clock, ms
   */
  arrive(seq, sendTime, arrivalTime) {
    if (!this.got.add(seq)) {
      this.duplicates++;
      return false;
    }
    this.received++;
    if (this.pendingMark?.seq === seq) this.applyMark(this.pendingMark.ranges);
    const transit = arrivalTime - sendTime;
    if (this.lastTransit !== null) this.jitterMs = jitterStep(this.jitterMs, this.lastTransit, transit);
    this.lastTransit = transit;
    if (seq < this.newestSeq) {
      this.reorders++;
      return false;
    }
    this.newestSeq = seq;
    return true;
  }

  /**
   * The relay says it replaced the sender's queued updates `ranges` (flat
   * [from, to, ...]) by update `seq`: they count as superseded once `seq`
   * is here (docs/protocol.md SUPERSEDED).
   * @param {number} seq @param {number[]} ranges
   */
  supersededBy(seq, ranges) {
    if (this.got.has(seq)) this.applyMark(ranges);
    else this.pendingMark = { seq, ranges };
  }

  /** @param {number[]} ranges */
  applyMark(ranges) {
    this.pendingMark = null;
    for (let i = 0; i + 1 < ranges.length; i += 2) this.superseded.addRange(ranges[i], ranges[i + 1]);
  }

  /**
   * JSON-able counters.
   * @param {number} [now] receiver's clock: where a freshness window still open ends
   * @returns {StreamRecord & { fresh: FreshRecord }}
   */
  toJSON(now) {
    return {
      received: this.received,
      seqs: this.got.toJSON(),
      superseded: this.superseded.toJSON(),
      duplicates: this.duplicates,
      reorders: this.reorders,
      jitterMs: this.jitterMs,
      acksSent: this.acksSent,
      fresh: this.freshness.toJSON(now),
    };
  }
}

/**
 * One receiver's counters of one sender's stream (ReceiveStream.toJSON).
 * @typedef {object} StreamRecord
 * @property {number} received
 * @property {number[]} [seqs] the distinct seqs received, flat ranges (core/seqset.js); absent in older records
 * @property {number[]} [superseded] seqs the relay replaced by a newer pose that arrived, flat ranges
 * @property {number} duplicates
 * @property {number} reorders
 * @property {number} jitterMs
 * @property {number} acksSent
 * @property {FreshRecord} [fresh] absent in records from before freshness was measured
 */

/** A gap between fresh updates longer than this is a visible freeze (ms): the HUD marks the avatar stale. */
export const FREEZE_MS = 1000;

/**
 * The histogram bucket of a gap: whole ms below 1 s, 10 ms below 10 s, then
 * 100 ms. Percentiles read from it are exact to that resolution; the
 * histogram stays small (gaps cluster around the cycle).
 * @param {number} ms
 */
export function gapBucket(ms) {
  if (ms < 1000) return Math.round(ms);
  if (ms < 10000) return Math.round(ms / 10) * 10;
  return Math.round(ms / 100) * 100;
}

/**
 * What one receiver saw of one sender's fresh updates (docs/architecture.md
 * "Freshness"): every update applied (newer than any before it), by arrival
 * time on the receiver's own clock. No clocks are compared: only gaps between
 * arrivals on one clock. The gaps between consecutive fresh updates are the
 * freezes a person sees. Measured over a window [from, to] (the receiver's
 * measured window: after its warm-up, until its cycle stops or the sender
 * leaves): the gap that runs into the window from the last update before it,
 * and the gap still open at its end, count too, so a stream that got nothing
 * for the whole window is one long freeze, not an absent one. Without a window
 * start (a receiver that never sends) it starts at the first update.
 */
export class Freshness {
  constructor() {
    /** Fresh updates applied in the window. */
    this.n = 0;
    /** @type {number | null} window start (receiver's clock); null: the first fresh update */
    this.from = null;
    /** @type {number | null} window end; null: still measuring */
    this.to = null;
    /** @type {number | null} arrival of the newest fresh update (also before the window) */
    this.last = null;
    /** Sum of the in-window parts of the closed gaps longer than FREEZE_MS (ms). */
    this.frozenMs = 0;
    this.maxGapMs = 0;
    /** @type {Map<number, number>} gap bucket (gapBucket) -> count, closed gaps */
    this.gaps = new Map();
  }

  /**
   * Starts the measured window (counts so far are dropped; the newest update
   * before it still opens the first gap).
   * @param {number} from
   */
  startWindow(from) {
    this.from = from;
    this.to = null;
    this.n = 0;
    this.frozenMs = 0;
    this.maxGapMs = 0;
    this.gaps = new Map();
  }

  /** Ends the window (the cycle stopped, or the sender left). @param {number} to */
  endWindow(to) {
    if (this.to === null) this.to = to;
  }

  /**
   * A fresh update was applied.
   * @param {number} arrivalTime receiver's clock, ms
   */
  applied(arrivalTime) {
    if (this.from === null) this.from = arrivalTime;
    if (arrivalTime < this.from || (this.to !== null && arrivalTime > this.to)) {
      if (arrivalTime < this.from) this.last = arrivalTime;
      return;
    }
    this.n++;
    const start = this.last ?? this.from;
    if (arrivalTime > this.from || this.last !== null) this.addGap(arrivalTime - start, arrivalTime - Math.max(start, this.from), this.gaps);
    this.last = arrivalTime;
  }

  /**
   * @param {number} gap whole gap @param {number} inWindow its part inside the window
   * @param {Map<number, number>} into histogram
   */
  addGap(gap, inWindow, into) {
    const g = Math.max(0, gap);
    const key = gapBucket(g);
    into.set(key, (into.get(key) ?? 0) + 1);
    if (g > this.maxGapMs) this.maxGapMs = g;
    if (g > FREEZE_MS) this.frozenMs += Math.max(0, inWindow);
  }

  /**
   * Time since the newest fresh update (ms), null before the first.
   * @param {number} now receiver's clock
   */
  ageMs(now) {
    return this.last === null ? null : now - this.last;
  }

  /**
   * The window so far, with the gap still open at its end (at `to`, or at
   * `now` while measuring) counted as a freeze in progress.
   * @param {number} [now] receiver's clock; without it the open gap is left out
   * @returns {FreshRecord}
   */
  toJSON(now) {
    const end = this.to ?? now ?? this.last;
    if (this.from === null || end === null || end === undefined || end <= this.from) {
      return { n: this.n, spanMs: 0, frozenMs: 0, maxGapMs: 0, gaps: {} };
    }
    const saved = { frozenMs: this.frozenMs, maxGapMs: this.maxGapMs };
    const gaps = new Map(this.gaps);
    const start = this.last === null ? this.from : Math.max(this.last, this.from);
    if (end > start) this.addGap(end - (this.last ?? this.from), end - start, gaps);
    const record = { n: this.n, spanMs: end - this.from, frozenMs: this.frozenMs, maxGapMs: this.maxGapMs, gaps: Object.fromEntries(gaps) };
    this.frozenMs = saved.frozenMs;
    this.maxGapMs = saved.maxGapMs;
    return record;
  }
}

/**
 * One stream's freshness as JSON (Freshness.toJSON).
 * @typedef {object} FreshRecord
 * @property {number} n fresh updates applied in the window
 * @property {number} spanMs the window's length (ms)
 * @property {number} frozenMs time in gaps > FREEZE_MS, inside the window
 * @property {number} maxGapMs
 * @property {Record<string, number>} gaps histogram: gap bucket (ms) -> count
 */

/**
 * A run's (or one client's) freshness over streams, as results.json
 * reports it: fresh updates per stream per second (fresh updates of every
 * stream over their summed window time), freeze = the gaps between
 * consecutive fresh updates, the edge gaps included (p50, p99 nearest-rank
 * over all gaps, max), and frozenPct = the share of stream time spent in gaps
 * longer than FREEZE_MS. Null figures when no stream had a window.
 * @param {Iterable<FreshRecord | undefined>} records
 */
export function summarizeFreshness(records) {
  let fresh = 0;
  let spanMs = 0;
  let frozenMs = 0;
  let max = 0;
  let streams = 0;
  /** @type {Map<number, number>} */
  const hist = new Map();
  for (const r of records) {
    if (!r || !(r.spanMs > 0)) continue;
    streams++;
    fresh += r.n;
    spanMs += r.spanMs;
    frozenMs += r.frozenMs;
    if (r.maxGapMs > max) max = r.maxGapMs;
    for (const [k, c] of Object.entries(r.gaps ?? {})) hist.set(Number(k), (hist.get(Number(k)) ?? 0) + c);
  }
  const keys = [...hist.keys()].sort((a, b) => a - b);
  const gaps = keys.reduce((sum, k) => sum + /** @type {number} */ (hist.get(k)), 0);
  if (streams === 0 || gaps === 0) {
    return { updatesPerStreamPerS: null, freezeMs: { p50: null, p99: null, max: null }, frozenPct: null, streams: 0, gaps: 0 };
  }
  const total = gaps;
  /** @param {number} p */
  const pct = (p) => {
    const rank = Math.max(1, Math.ceil((p / 100) * total));
    let seen = 0;
    for (const k of keys) {
      seen += /** @type {number} */ (hist.get(k));
      if (seen >= rank) return k;
    }
    return keys[keys.length - 1];
  };
  return {
    updatesPerStreamPerS: (1000 * fresh) / spanMs,
    // a bucket may round past the exact max: never report a percentile above it
    freezeMs: { p50: Math.min(pct(50), max), p99: Math.min(pct(99), max), max },
    frozenPct: (100 * frozenMs) / spanMs,
    streams,
    gaps,
  };
}

/** @typedef {ReturnType<typeof summarizeFreshness>} FreshnessSummary */

/**
 * Freshness of a run from its clients' records: every (receiver, sender)
 * stream of every client.
 * @param {{ recv?: Record<string, Partial<StreamRecord>> }[]} clients
 */
export function aggregateFreshness(clients) {
  return summarizeFreshness(clients.flatMap((c) => Object.values(c.recv ?? {}).map((s) => s.fresh)));
}

/**
 * The per-client record the bench aggregates (see `aggregateClients`).
 * @typedef {object} ClientStats
 * @property {number} id
 * @property {string} group
 * @property {number[]} rt measured RTs, ms
 * @property {number[]} rtWarmup RTs of warm-up updates, reported apart
 * @property {Record<string, number>} sentTo updates sent per receiver id that count there: a receiver
 *   that left before answering was taken out (core/cycle.js memberLeft)
 * @property {Record<string, number[]>} [sentSeqs] per receiver id, those seqs (flat ranges; core/seqset.js)
 * @property {number} [cutoffSeq] the count's cutoff (ActionCycle.cutoffSeq); with sentSeqs
 * @property {Record<string, number[]>} [ackedBy] per receiver id, the seqs it ACKed (flat ranges)
 * @property {number[]} [ackedAllSeqs] the seqs the relay answered for all (flat ranges)
 * @property {string} [transport] the sender's transport (core/transports.js): whether ACKs are aggregated
 * @property {Record<string, number>} [pendingTo] records from before seq sets: per receiver, updates still on their way
 * @property {Record<string, number>} acksFrom ACKs received per receiver id
 * @property {Record<string, StreamRecord>} recv per sender id
 * @property {number} updatesSent
 * @property {number} ackTimeouts updates whose ACK set never completed in time
 * @property {number} skippedCycles cycles that found the previous update unacknowledged
 * @property {string} [cycleMode] 'gated' | 'pipelined'
 */

/**
 * A sender's record of its streams as a count needs it (ActionCycle.lossRecord).
 * @typedef {object} SenderLossRecord
 * @property {number} cutoffSeq the newest seq at least one delivery horizon old when the record was taken
 * @property {Record<string, number>} [cutoffTo] per receiver id, an earlier cutoff to count that stream at
 *   (a recording: the sender's cutoff when the receiver's last report was taken)
 * @property {number} [horizonMs]
 * @property {Record<string, number[]>} sentSeqs per receiver id, the seqs sent that count there (flat ranges)
 * @property {Record<string, number[]>} [ackedBy] per receiver id, the seqs it ACKed (flat ranges)
 * @property {number[]} [ackedAllSeqs] the seqs the relay answered for all (ACKED_ALL), flat ranges
 */

/**
 * One sender->receiver stream counted as docs/architecture.md "Loss" defines
 * it: over the seqs sent to the receiver at or below the sender's cutoff,
 * expected = how many, received = how many of them the receiver got,
 * superseded = how many of the rest the relay replaced by a newer pose that
 * the receiver got; lost = the rest. inFlight = seqs sent past the cutoff
 * (too young to count on either end). Received can never exceed expected:
 * both are counted over the same seqs.
 * @param {SenderLossRecord} sender
 * @param {string} rid
 * @param {Partial<StreamRecord> | undefined} stream the receiver's record of the sender's stream
 */
export function countStream(sender, rid, stream) {
  const cutoff = sender.cutoffTo?.[rid] ?? sender.cutoffSeq;
  const sent = new SeqSet(sender.sentSeqs[rid]);
  const got = new SeqSet(stream?.seqs ?? []);
  const expected = sent.countUpTo(cutoff);
  const arrived = intersect(got, sent, cutoff);
  const superseded = new SeqSet(stream?.superseded ?? []).countCommonExcept(sent, got, cutoff);
  const acked = sender.ackedBy?.[rid] ? arrived.countCommon(new SeqSet(sender.ackedBy[rid])) : 0;
  return {
    expected,
    received: arrived.size,
    superseded,
    lost: expected - arrived.size - superseded,
    inFlight: sent.size - expected,
    acked,
    arrived,
  };
}

/**
 * ACK loss of a sender whose ACKs the relay aggregates (ACKED_ALL: `relay`,
 * `relay-udp`), counted where it can be seen: of its updates at or below the
 * cutoff that every receiver they were sent to got (the receivers' fact), how
 * many had their ACKED_ALL arrive (the sender's fact). The rest lost an ACK
 * on the way to the relay or the ACKED_ALL on the way back.
 * @param {SenderLossRecord} sender
 * @param {Map<string, SeqSet>} arrivedAt per receiver id, the seqs it got (countStream's `arrived`)
 */
export function countAggregatedAcks(sender, arrivedAt) {
  const rids = [...arrivedAt.keys()];
  const cutoff = Math.min(...rids.map((rid) => sender.cutoffTo?.[rid] ?? sender.cutoffSeq));
  const sent = rids.map((rid) => ({ sent: new SeqSet(sender.sentSeqs[rid]), got: /** @type {SeqSet} */ (arrivedAt.get(rid)) }));
  const answered = new SeqSet(sender.ackedAllSeqs ?? []);
  const all = new SeqSet();
  for (const s of sent) for (let i = 0; i < s.sent.flat.length; i += 2) {
    for (let q = s.sent.flat[i]; q <= Math.min(s.sent.flat[i + 1], cutoff); q++) all.add(q);
  }
  let expected = 0;
  let received = 0;
  for (let i = 0; i < all.flat.length; i += 2) {
    for (let q = all.flat[i]; q <= all.flat[i + 1]; q++) {
      if (!sent.every((s) => !s.sent.has(q) || s.got.has(q))) continue;
      expected++;
      if (answered.has(q)) received++;
    }
  }
  return { expected, received };
}

/**
 * Whether a sender's record, taken at `senderAt` with delivery horizon
 * `horizonMs`, may be counted against a receiver's record taken at
 * `receiverAt` (both on one clock: the server's, when reports arrive).
 * The sender's cutoff is a horizon before its record; what it covers landed
 * within a third of a horizon (a horizon is 3 RT p99), so the receiver's
 * record must be at most half a horizon older than the sender's.
 * @param {number} senderAt @param {number} horizonMs @param {number} receiverAt
 */
export function countableAgainst(senderAt, horizonMs, receiverAt) {
  return senderAt <= receiverAt + horizonMs / 2;
}

/**
 * Of a sender's count of updates sent to receiver `rid`, what is expected
 * there and what is still on its way, for records from before seq sets
 * (older study recordings): sentTo less pendingTo.
 * @param {Record<string, number>} sentTo
 * @param {Record<string, number> | undefined} pendingTo
 * @param {string} rid
 */
export function expectedAt(sentTo, pendingTo, rid) {
  const count = sentTo[rid] ?? 0;
  const inFlight = Math.min(count, pendingTo?.[rid] ?? 0);
  return { expected: count - inFlight, inFlight };
}

/**
 * Whether the sender's transport answers once for all receivers (ACKED_ALL).
 * @param {{ transport?: string }} sender
 */
function aggregatesAcks(sender) {
  return sender.transport !== undefined && (transportInfo(sender.transport)?.ackedAll ?? false);
}

/**
 * Aggregates client records into the run's loss, ACK loss, duplicates,
 * reorders and jitter, exactly as docs/architecture.md "Loss" defines them:
 * every sender->receiver stream counted by {@link countStream}, summed over
 * the run. Records from before seq sets (no `sentSeqs`) are counted the old
 * way, received at most expected, and reported in `legacyStreams`.
 * @param {ClientStats[]} clients
 * @param {(receiver: ClientStats) => boolean} [countReceiver] only the streams
 *   into receivers it accepts (a per-browser split of a mixed fleet); streams
 *   to a receiver that left no record count only when no filter is given
 */
export function aggregateStreams(clients, countReceiver) {
  /** @type {Map<string, ClientStats>} */
  const byKey = new Map();
  for (const c of clients) byKey.set(`${c.group}\u0000${c.id}`, c);
  const t = { expected: 0, received: 0, superseded: 0, inFlight: 0, streams: 0, legacyStreams: 0, acksExpected: 0, acksReceived: 0, duplicates: 0, reorders: 0 };
  const jitters = [];
  for (const sender of clients) {
    /** @type {Map<string, SeqSet>} */
    const arrivedAt = new Map();
    for (const rid of Object.keys(sender.sentSeqs ?? sender.sentTo)) {
      const receiver = byKey.get(`${sender.group}\u0000${rid}`);
      if (countReceiver && !(receiver && countReceiver(receiver))) continue;
      const stream = receiver?.recv[String(sender.id)];
      t.streams++;
      if (sender.sentSeqs && sender.cutoffSeq !== undefined) {
        const c = countStream(/** @type {SenderLossRecord} */ (sender), rid, stream);
        t.expected += c.expected;
        t.received += c.received;
        t.superseded += c.superseded;
        t.inFlight += c.inFlight;
        arrivedAt.set(rid, c.arrived);
        if (!aggregatesAcks(sender)) { t.acksExpected += c.received; t.acksReceived += c.acked; }
      } else {
        countLegacyStream(t, sender, rid, stream);
      }
      if (stream) {
        t.duplicates += stream.duplicates ?? 0;
        t.reorders += stream.reorders ?? 0;
        jitters.push(stream.jitterMs ?? 0);
      }
    }
    if (aggregatesAcks(sender) && sender.sentSeqs && arrivedAt.size > 0) {
      const a = countAggregatedAcks(/** @type {SenderLossRecord} */ (sender), arrivedAt);
      t.acksExpected += a.expected;
      t.acksReceived += a.received;
    }
  }
  const lost = t.expected - t.received - t.superseded;
  return {
    expected: t.expected,
    received: t.received,
    superseded: t.superseded,
    lost,
    inFlight: t.inFlight,
    streams: t.streams,
    legacyStreams: t.legacyStreams,
    lossPct: t.expected ? (100 * lost) / t.expected : 0,
    acksSent: t.acksExpected,
    acksReceived: t.acksReceived,
    ackLossPct: t.acksExpected ? (100 * (t.acksExpected - t.acksReceived)) / t.acksExpected : 0,
    duplicates: t.duplicates,
    reorders: t.reorders,
    jitterMs: jitters.length ? jitters.reduce((a, b) => a + b, 0) / jitters.length : null,
  };
}

/**
 * A stream of a record from before seq sets: expected = sentTo less
 * pendingTo, received = what the receiver got, at most that; ACKs as counted.
 * @param {{ expected: number, received: number, inFlight: number, legacyStreams: number, acksExpected: number, acksReceived: number }} t
 * @param {ClientStats} sender @param {string} rid @param {Partial<StreamRecord> | undefined} stream
 */
function countLegacyStream(t, sender, rid, stream) {
  const at = expectedAt(sender.sentTo, sender.pendingTo, rid);
  t.legacyStreams++;
  t.inFlight += at.inFlight;
  t.expected += at.expected;
  t.received += Math.min(at.expected, stream?.received ?? 0);
  if (stream) {
    t.acksExpected += stream.acksSent ?? 0;
    t.acksReceived += Math.min(stream.acksSent ?? 0, sender.acksFrom[rid] ?? 0);
  }
}
