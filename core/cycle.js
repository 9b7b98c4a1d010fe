// The action cycle (docs/architecture.md: "The action cycle"), the one place it lives.
// Two modes:
// - gated (the paper's): every cycleMs take the newest pose; if every
//   neighbour acknowledged the previous update, or its ACK timeout expired,
//   send the next one to the group, else skip the cycle.
// - pipelined (the product's): every cycleMs send the newest pose, whatever
//   happened to earlier ones. Each update has its own seq and ACK set; RT is
//   per update; a late ACK still completes its own update but never blocks a
//   send. An update without every ACK after ackTimeoutMs is timed out.

import { SeqSet } from './seqset.js';

/** @typedef {'gated' | 'pipelined'} CycleMode */

/** The modes, the product's default first. */
export const CYCLE_MODES = Object.freeze(/** @type {CycleMode[]} */ (['pipelined', 'gated']));

/**
 * Most updates a pipelined cycle keeps waiting for ACKs; past it the oldest
 * is given up (counted as timed out). The ACK timeout bounds the set already
 * (ackTimeoutMs / cycleMs, 120 at the defaults); this is the floor under a
 * misconfiguration (a tiny cycle with a long timeout).
 */
export const MAX_PENDING = 512;

/**
 * The delivery horizon (docs/architecture.md "Loss"): an update is counted,
 * on both ends of its stream, once it is this old. A few times the sender's
 * RT p99 (its updates' time to the last neighbour's ACK, so at least any one
 * neighbour's), never under HORIZON_FLOOR_MS, never over HORIZON_MAX_MS, and
 * never the ACK timeout: an update still missing after it is lost.
 */
export const HORIZON_RT_FACTOR = 3;
/** The horizon's floor, ms: a quiet LAN's RT p99 is a few ms, a phone's scheduling is not. */
export const HORIZON_FLOOR_MS = 1000;
/** The horizon's ceiling, ms: an overloaded run still ends and counts within this. */
export const HORIZON_MAX_MS = 30_000;
/** RTs the horizon's p99 is taken over (the newest). */
const RT_WINDOW = 256;
/** Send times kept, by seq: the cutoff is found among the newest this many updates. */
const SENT_RING = 1024;

/**
 * @typedef {object} CycleOptions
 * @property {number} cycleMs action cycle period (167 fast phone, 698 slow phone)
 * @property {number} ackTimeoutMs give up on missing ACKs after this long
 * @property {number} warmupMs updates sent before this much time has passed
 *   since start are warm-up: their RT is reported apart
 * @property {() => number} now monotonic clock in ms (performance.now)
 * @property {() => number[]} neighbours ids of the other current group members
 * @property {(seq: number, sendTime: number) => void} send sends update `seq` to the group
 * @property {(rtMs: number, warmup: boolean) => void} onRt an update completed
 * @property {number} [maxUpdates] stop after sending this many (0 = no limit)
 * @property {CycleMode} [mode] default 'gated' (the paper's)
 */

/**
 * An update waiting for ACKs.
 * @typedef {{ seq: number, sentAt: number, waiting: Set<number>, acks: number, lastAckAt: number, warmup: boolean }} Pending
 */

/**
 * The sender side of the action cycle: sequence numbers, the ACK sets of the
 * updates in flight, timeouts and RT.
 */
export class ActionCycle {
  /** @param {CycleOptions} options */
  constructor(options) {
    this.options = options;
    /** @type {CycleMode} */
    this.mode = options.mode ?? 'gated';
    this.seq = 0;
    /**
     * Updates waiting for ACKs, by seq, oldest first: at most one when gated,
     * at most MAX_PENDING (in practice ackTimeoutMs / cycleMs) when pipelined.
     * @type {Map<number, Pending>}
     */
    this.pending = new Map();
    this.startedAt = 0;
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.timer = null;
    this.running = false;
    this.updatesSent = 0;
    this.completed = 0;
    /** Updates whose ACK set did not complete within ackTimeoutMs (or, pipelined, pushed out past MAX_PENDING). */
    this.ackTimeouts = 0;
    /** Pipelined: updates given up early because MAX_PENDING were in flight (also in ackTimeouts). */
    this.evicted = 0;
    /** Completed after a newer update of ours had been sent (pipelined; gated never sends one before). */
    this.lateAcks = 0;
    /** Cycles that found the previous update still unacknowledged (gated: nothing sent). */
    this.skippedCycles = 0;
    /** Paused: the connection is down, nothing is sent (see pause()). */
    this.paused = false;
    /** Cycles that passed while paused. */
    this.pausedCycles = 0;
    /** Updates in flight given up because the connection dropped. */
    this.abandoned = 0;
    /** @type {Record<string, number>} ACKs received per receiver id */
    this.acksFrom = {};
    /**
     * Per receiver id, the seqs sent to it that count there (loss "expected",
     * before the cutoff): every one sent to it, less those taken back.
     * @type {Record<string, SeqSet>}
     */
    this.sentSeqs = {};
    /** Per receiver id, the seqs whose ACK from it arrived (per-ACK transports). @type {Record<string, SeqSet>} */
    this.ackedBy = {};
    /** The seqs whose ACKED_ALL arrived (mode relay: the relay answers once for all). */
    this.ackedAllSeqs = new SeqSet();
    /** Send time of seq s at s % SENT_RING (the cutoff's look-up). */
    this.sentAt = new Float64Array(SENT_RING);
    /** The newest RTs, ring of RT_WINDOW (the horizon's p99). */
    this.recentRts = new Float64Array(RT_WINDOW);
    this.rtCount = 0;
    /** Time of the last send (the end of a run waits the horizon past it). */
    this.lastSentAt = -Infinity;
    /**
     * Updates taken back out of `sentSeqs`: sent to a member that left before
     * it answered them (docs/architecture.md "Loss": not expected there).
     */
    this.takenBack = 0;
    /**
     * Mode relay: recent updates the relay answered (ACKED_ALL) with fewer
     * ACKs than receivers, and the receivers that may be missing. The relay
     * answers for a leaver before it announces the leave, so the leave that
     * explains them comes just after. Kept for one ACK timeout.
     * @type {{ to: Set<number>, missing: number, at: number, seq: number }[]}
     */
    this.unexplained = [];
  }

  /**
   * The oldest update still waiting for ACKs, or null: gated, the one
   * outstanding update; pipelined, whether anything is in flight.
   * @returns {Pending | null}
   */
  get outstanding() {
    for (const p of this.pending.values()) return p;
    return null;
  }

  /**
   * Starts ticking after `phaseMs` (phones are not synchronised; a random
   * phase keeps a simulated population from sending in lock-step).
   * @param {number} [phaseMs]
   */
  start(phaseMs = 0) {
    if (this.running) return;
    this.running = true;
    this.startedAt = this.options.now();
    let next = this.startedAt + phaseMs;
    const loop = () => {
      if (!this.running) return;
      this.tick();
      // Drift-free schedule; if we fell behind, skip to the next slot.
      next += this.options.cycleMs;
      const now = this.options.now();
      if (next < now) next = now + this.options.cycleMs - ((now - next) % this.options.cycleMs);
      this.timer = setTimeout(loop, next - now);
    };
    this.timer = setTimeout(loop, phaseMs);
  }

  stop() {
    this.running = false;
    if (this.timer !== null) clearTimeout(this.timer);
  }

  /**
   * The connection dropped: send nothing until resume(). The updates in
   * flight can never complete now; they are abandoned (their ACKs are lost,
   * not waited on), and the sequence numbers go on where they were.
   */
  pause() {
    this.paused = true;
    this.abandoned += this.pending.size;
    this.pending.clear();
  }

  resume() {
    this.paused = false;
  }

  /** One action cycle. Public so tests and the Node sim can drive it directly. */
  tick() {
    if (this.paused) {
      this.pausedCycles++;
      return;
    }
    const now = this.options.now();
    // Timed out: the missing ACKs count as lost, never waited on longer.
    for (const [seq, p] of this.pending) {
      if (now - p.sentAt < this.options.ackTimeoutMs) {
        if (this.mode === 'gated') {
          this.skippedCycles++;
          return;
        }
        break; // oldest first: the rest are younger
      }
      this.ackTimeouts++;
      this.pending.delete(seq);
    }
    const max = this.options.maxUpdates ?? 0;
    if (max > 0 && this.updatesSent >= max) {
      this.stop();
      return;
    }
    while (this.pending.size >= MAX_PENDING) {
      const oldest = /** @type {number} */ (this.pending.keys().next().value);
      this.pending.delete(oldest);
      this.ackTimeouts++;
      this.evicted++;
    }
    const seq = ++this.seq;
    const waiting = new Set(this.options.neighbours());
    for (const id of waiting) (this.sentSeqs[id] ??= new SeqSet()).add(seq);
    this.sentAt[seq % SENT_RING] = now;
    this.lastSentAt = now;
    this.updatesSent++;
    const warmup = now - this.startedAt < this.options.warmupMs;
    if (waiting.size > 0) {
      this.pending.set(seq, { seq, sentAt: now, waiting, acks: 0, lastAckAt: now, warmup });
    }
    this.options.send(seq, now);
  }

  /**
   * A neighbour acknowledged one of our updates: a late ACK (a newer update
   * was sent since) still completes its own update, and counts its RT.
   * @param {number} acker
   * @param {number} seq
   */
  ack(acker, seq) {
    this.acksFrom[acker] = (this.acksFrom[acker] ?? 0) + 1;
    (this.ackedBy[acker] ??= new SeqSet()).add(seq);
    const p = this.pending.get(seq);
    if (!p || !p.waiting.delete(acker)) return;
    p.acks++;
    p.lastAckAt = this.options.now();
    if (p.waiting.size === 0) this.complete(p, p.lastAckAt);
  }

  /**
   * The relay says every neighbour acknowledged update `seq` (mode `relay`),
   * or left, or had the update replaced as stale (`dropped` of them); `acked`
   * of them answered (every one we sent it to when not given).
   * @param {number} seq
   * @param {number} [dropped]
   * @param {number} [acked]
   */
  ackedAll(seq, dropped = 0, acked) {
    // The answer arrived, whatever became of the update: ACK loss counts answers, not deliveries.
    this.ackedAllSeqs.add(seq);
    const p = this.pending.get(seq);
    if (!p) return;
    const now = this.options.now();
    // Receivers the relay did not count: a leaver it dropped, or one that had
    // left before the update reached the relay. Which one, the leave tells.
    const missing = acked === undefined ? 0 : p.waiting.size - acked;
    // The set is kept as it is (p is done with): no copy on this per-update path.
    if (missing > 0) this.keepUnexplained(p.waiting, missing, now, seq);
    // Only when nobody was dropped or missing do we know each neighbour's ACK arrived.
    else if (dropped === 0) for (const id of p.waiting) this.acksFrom[id] = (this.acksFrom[id] ?? 0) + 1;
    this.complete(p, now);
  }

  /**
   * @param {Set<number>} to receivers of an update the relay answered for
   * @param {number} missing how many of them did not answer
   * @param {number} now
   * @param {number} seq the update's seq
   */
  keepUnexplained(to, missing, now, seq) {
    this.forgetUnexplained(now);
    if (this.unexplained.length >= MAX_PENDING) this.unexplained.shift();
    this.unexplained.push({ to, missing, at: now, seq });
  }

  /** Unexplained answers older than the ACK timeout are not a leaver's (a lagging member's). @param {number} now */
  forgetUnexplained(now) {
    const list = this.unexplained;
    while (list.length > 0 && now - list[0].at >= this.options.ackTimeoutMs) list.shift();
  }

  /**
   * A member left: it leaves the ACK set of every update in flight at once,
   * and every update it had not answered is taken back out of `sentSeqs`: it
   * was sent while the member was leaving or already gone (docs/architecture.md
   * "Loss"). In mode relay the sender cannot tell which of those the leaver
   * had answered (the relay answers once for all): all are taken back. The
   * seqs taken back leave `sentSeqs`, so the receiver's count skips them too.
   * @param {number} id
   */
  memberLeft(id) {
    const now = this.options.now();
    this.forgetUnexplained(now);
    for (const e of this.unexplained) {
      if (e.missing > 0 && e.to.delete(id)) {
        e.missing--;
        this.takeBack(id, e.seq);
      }
    }
    for (const p of [...this.pending.values()]) {
      if (!p.waiting.delete(id)) continue;
      // past its ACK timeout it was lost while the member was still there (a stopped cycle keeps it): expected
      if (now - p.sentAt < this.options.ackTimeoutMs) this.takeBack(id, p.seq);
      if (p.waiting.size > 0) continue;
      // RT is the time to the last ACK that did arrive; none arrived, none recorded.
      if (p.acks > 0) this.complete(p, p.lastAckAt);
      else this.pending.delete(p.seq);
    }
  }

  /**
   * Update `seq` will never count as expected at receiver `id`.
   * @param {number} id @param {number} seq
   */
  takeBack(id, seq) {
    if (this.sentSeqs[id]?.delete(seq)) this.takenBack++;
  }

  /** Per receiver id, how many updates sent to it count there (`sentSeqs`' sizes). @returns {Record<string, number>} */
  get sentTo() {
    /** @type {Record<string, number>} */
    const out = {};
    for (const [id, set] of Object.entries(this.sentSeqs)) out[id] = set.size;
    return out;
  }

  /**
   * The delivery horizon now, ms: HORIZON_RT_FACTOR x the p99 of the newest
   * RTs, within [HORIZON_FLOOR_MS, HORIZON_MAX_MS].
   */
  horizonMs() {
    const n = Math.min(this.rtCount, RT_WINDOW);
    if (n === 0) return HORIZON_FLOOR_MS;
    const sorted = this.recentRts.slice(0, n).sort();
    const p99 = sorted[Math.min(n - 1, Math.ceil(0.99 * n) - 1)];
    return Math.min(HORIZON_MAX_MS, Math.max(HORIZON_FLOOR_MS, HORIZON_RT_FACTOR * p99));
  }

  /**
   * The stream's cutoff for a count taken now (docs/architecture.md "Loss"):
   * the newest seq sent at least one horizon ago (0: none yet). Expected and
   * received are both counted at or below it.
   * @param {number} [now]
   * @param {number} [horizonMs]
   */
  cutoffSeq(now = this.options.now(), horizonMs = this.horizonMs()) {
    const before = now - horizonMs;
    const oldest = Math.max(1, this.seq - SENT_RING + 1);
    for (let s = this.seq; s >= oldest; s--) if (this.sentAt[s % SENT_RING] <= before) return s;
    return oldest - 1;
  }

  /**
   * What a count taken now needs from this sender: the horizon, the cutoff,
   * and per receiver the seqs sent (`sentSeqs`) and ACKed (`ackedBy`), and
   * the seqs the relay answered for all (`ackedAllSeqs`), as flat ranges.
   * @param {number} [now]
   */
  lossRecord(now = this.options.now()) {
    const horizonMs = this.horizonMs();
    /** @param {Record<string, SeqSet>} sets */
    const flat = (sets) => Object.fromEntries(Object.entries(sets).map(([id, set]) => [id, set.toJSON()]));
    return {
      horizonMs,
      cutoffSeq: this.cutoffSeq(now, horizonMs),
      sentSeqs: flat(this.sentSeqs),
      ackedBy: flat(this.ackedBy),
      ackedAllSeqs: this.ackedAllSeqs.toJSON(),
    };
  }

  /** Whether a count taken now covers every update sent: the last one is a horizon old. @param {number} [now] */
  settled(now = this.options.now()) {
    const age = now - this.lastSentAt;
    // the bounds first: the p99 sorts the RT window, and the end of a run asks this every 50 ms
    if (age < HORIZON_FLOOR_MS) return false;
    return age >= HORIZON_MAX_MS || age >= this.horizonMs();
  }

  /**
   * @param {Pending} p the update whose ACK set is complete
   * @param {number} at time of the last ACK
   */
  complete(p, at) {
    this.pending.delete(p.seq);
    this.completed++;
    if (p.seq !== this.seq) this.lateAcks++;
    this.recentRts[this.rtCount++ % RT_WINDOW] = at - p.sentAt;
    this.options.onRt(at - p.sentAt, p.warmup);
  }

  /** Updates waiting for ACKs now. */
  inFlight() {
    return this.pending.size;
  }
}
