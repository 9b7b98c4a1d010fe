// Measurements as docs/architecture.md defines them: RT statistics, per-stream loss,
// duplicates, reorders, RFC 3550 interarrival jitter and freshness at the receiver. Shared by every
// transport, the browser HUD, the Node clients and the bench aggregation.

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

/** Sequence numbers remembered for duplicate detection, behind the newest. */
export const DUP_WINDOW = 4096;

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
    /**
     * Which seqs of the duplicate window (newestSeq - DUP_WINDOW, newestSeq]
     * arrived: bit (seq mod DUP_WINDOW). A fixed 512 bytes per stream; a Set
     * of seen seqs grew for the first 2 x DUP_WINDOW updates (over 20 min at
     * 167 ms), ~150 KB a stream, and slowed the load generator's GC (issue 8 soak).
     */
    this.seen = new Uint32Array(DUP_WINDOW / 32);
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
    if (this.newestSeq - seq >= DUP_WINDOW || (seq <= this.newestSeq && this.hasSeen(seq))) {
      this.duplicates++;
      return false;
    }
    if (seq > this.newestSeq) {
      // The window slides forward: the slots of the seqs it passes over are reused, clear them.
      const from = Math.max(this.newestSeq + 1, seq - DUP_WINDOW + 1);
      for (let s = from; s < seq; s++) this.markSeen(s, false);
    }
    this.markSeen(seq, true);
    this.received++;
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

  /** @param {number} seq inside the duplicate window */
  hasSeen(seq) {
    const slot = seq % DUP_WINDOW;
    return (this.seen[slot >>> 5] & (1 << (slot & 31))) !== 0;
  }

  /** @param {number} seq inside the duplicate window @param {boolean} seen */
  markSeen(seq, seen) {
    const slot = seq % DUP_WINDOW;
    if (seen) this.seen[slot >>> 5] |= 1 << (slot & 31);
    else this.seen[slot >>> 5] &= ~(1 << (slot & 31));
  }

  /**
   * JSON-able counters.
   * @param {number} [now] receiver's clock: where a freshness window still open ends
   * @returns {StreamRecord & { fresh: FreshRecord }}
   */
  toJSON(now) {
    return {
      received: this.received,
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
 * @property {Record<string, number>} sentTo updates sent per receiver id that count there (loss "expected",
 *   less `pendingTo`): a receiver that left before answering was taken out (core/cycle.js memberLeft)
 * @property {Record<string, number>} [pendingTo] per receiver, updates still on their way: not expected yet
 * @property {Record<string, number>} acksFrom ACKs received per receiver id
 * @property {Record<string, StreamRecord>} recv per sender id
 * @property {number} updatesSent
 * @property {number} ackTimeouts updates whose ACK set never completed in time
 * @property {number} skippedCycles cycles that found the previous update unacknowledged
 * @property {string} [cycleMode] 'gated' | 'pipelined'
 */

/**
 * Of a sender's count of updates sent to receiver `rid`, what is expected
 * there and what is still on its way (docs/architecture.md "Loss").
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
 * Aggregates client records into the run's loss, ACK loss, duplicates,
 * reorders and jitter, exactly as docs/architecture.md defines them: per sender->receiver
 * stream, expected = what the sender reports sending to that receiver while it
 * was there, less what is still on its way (`inFlight`, counted apart),
 * received = distinct updates the receiver got; summed over the run.
 * @param {ClientStats[]} clients
 * @param {(receiver: ClientStats) => boolean} [countReceiver] only the streams
 *   into receivers it accepts (a per-browser split of a mixed fleet); streams
 *   to a receiver that left no record count only when no filter is given
 */
export function aggregateStreams(clients, countReceiver) {
  /** @type {Map<string, ClientStats>} */
  const byKey = new Map();
  for (const c of clients) byKey.set(`${c.group}\u0000${c.id}`, c);
  let expected = 0;
  let received = 0;
  let inFlight = 0;
  let acksSent = 0;
  let acksReceived = 0;
  let duplicates = 0;
  let reorders = 0;
  const jitters = [];
  for (const sender of clients) {
    for (const rid of Object.keys(sender.sentTo)) {
      const receiver = byKey.get(`${sender.group}\u0000${rid}`);
      if (countReceiver && !(receiver && countReceiver(receiver))) continue;
      const stream = receiver?.recv[String(sender.id)];
      const at = expectedAt(sender.sentTo, sender.pendingTo, rid);
      inFlight += at.inFlight;
      expected += at.expected;
      // A receiver can hold more than is expected of it (what was on its way,
      // an update to a leaver that it did answer, an earlier life under the
      // same id): clamp so loss never goes negative.
      const got = Math.min(at.expected, stream?.received ?? 0);
      received += got;
      if (stream) {
        duplicates += stream.duplicates;
        reorders += stream.reorders;
        jitters.push(stream.jitterMs);
        acksSent += stream.acksSent;
        acksReceived += Math.min(stream.acksSent, sender.acksFrom[rid] ?? 0);
      }
    }
  }
  return {
    expected,
    received,
    lost: expected - received,
    inFlight,
    lossPct: expected ? (100 * (expected - received)) / expected : 0,
    acksSent,
    acksReceived,
    ackLossPct: acksSent ? (100 * (acksSent - acksReceived)) / acksSent : 0,
    duplicates,
    reorders,
    jitterMs: jitters.length ? jitters.reduce((a, b) => a + b, 0) / jitters.length : null,
  };
}
