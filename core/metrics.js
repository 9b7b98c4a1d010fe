// Measurements as docs/architecture.md defines them: RT statistics, per-stream loss,
// duplicates, reorders and RFC 3550 interarrival jitter. Shared by every
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

  /** JSON-able counters. */
  toJSON() {
    return {
      received: this.received,
      duplicates: this.duplicates,
      reorders: this.reorders,
      jitterMs: this.jitterMs,
      acksSent: this.acksSent,
    };
  }
}

/**
 * The per-client record the bench aggregates (see `aggregateClients`).
 * @typedef {object} ClientStats
 * @property {number} id
 * @property {string} group
 * @property {number[]} rt measured RTs, ms
 * @property {number[]} rtWarmup RTs of warm-up updates, reported apart
 * @property {Record<string, number>} sentTo updates sent per receiver id (loss "expected")
 * @property {Record<string, number>} acksFrom ACKs received per receiver id
 * @property {Record<string, ReturnType<ReceiveStream['toJSON']>>} recv per sender id
 * @property {number} updatesSent
 * @property {number} ackTimeouts updates whose ACK set never completed in time
 * @property {number} skippedCycles cycles that found the previous update unacknowledged
 */

/**
 * Aggregates client records into the run's loss, ACK loss, duplicates,
 * reorders and jitter, exactly as docs/architecture.md defines them: per sender->receiver
 * stream, expected = what the sender reports sending to that receiver,
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
  let acksSent = 0;
  let acksReceived = 0;
  let duplicates = 0;
  let reorders = 0;
  const jitters = [];
  for (const sender of clients) {
    for (const [rid, count] of Object.entries(sender.sentTo)) {
      const receiver = byKey.get(`${sender.group}\u0000${rid}`);
      if (countReceiver && !(receiver && countReceiver(receiver))) continue;
      const stream = receiver?.recv[String(sender.id)];
      expected += count;
      // A receiver can hold at most what was sent to it (it may have had
      // an earlier life under the same id); clamp so loss never goes negative.
      const got = Math.min(count, stream?.received ?? 0);
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
    lossPct: expected ? (100 * (expected - received)) / expected : 0,
    acksSent,
    acksReceived,
    ackLossPct: acksSent ? (100 * (acksSent - acksReceived)) / acksSent : 0,
    duplicates,
    reorders,
    jitterMs: jitters.length ? jitters.reduce((a, b) => a + b, 0) / jitters.length : null,
  };
}
