// The action cycle (docs/architecture.md: "The action cycle"), the one place it lives.
// Every cycleMs: take the newest pose; if every neighbour acknowledged the
// previous update, or its ACK timeout expired, send the next one to the group.

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
 */

/**
 * The sender side of the action cycle: sequence numbers, the outstanding
 * update's ACK set, timeouts and RT.
 */
export class ActionCycle {
  /** @param {CycleOptions} options */
  constructor(options) {
    this.options = options;
    this.seq = 0;
    /** @type {{ seq: number, sentAt: number, waiting: Set<number>, acks: number, lastAckAt: number, warmup: boolean } | null} */
    this.outstanding = null;
    this.startedAt = 0;
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.timer = null;
    this.running = false;
    this.updatesSent = 0;
    this.completed = 0;
    this.ackTimeouts = 0;
    /** Cycles that found the previous update still unacknowledged. */
    this.skippedCycles = 0;
    /** Paused: the connection is down, nothing is sent (see pause()). */
    this.paused = false;
    /** Cycles that passed while paused. */
    this.pausedCycles = 0;
    /** Outstanding updates given up because the connection dropped. */
    this.abandoned = 0;
    /** @type {Record<string, number>} updates sent per receiver id */
    this.sentTo = {};
    /** @type {Record<string, number>} ACKs received per receiver id */
    this.acksFrom = {};
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
   * The connection dropped: send nothing until resume(). The outstanding
   * update can never complete now; it is abandoned (its ACKs are lost, not
   * waited on), and the sequence numbers go on where they were.
   */
  pause() {
    this.paused = true;
    if (this.outstanding) {
      this.abandoned++;
      this.outstanding = null;
    }
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
    const out = this.outstanding;
    if (out) {
      if (now - out.sentAt < this.options.ackTimeoutMs) {
        this.skippedCycles++;
        return;
      }
      // Timed out: the missing ACKs count as lost, never waited on longer.
      this.ackTimeouts++;
      this.outstanding = null;
    }
    const max = this.options.maxUpdates ?? 0;
    if (max > 0 && this.updatesSent >= max) {
      this.stop();
      return;
    }
    const seq = ++this.seq;
    const waiting = new Set(this.options.neighbours());
    for (const id of waiting) this.sentTo[id] = (this.sentTo[id] ?? 0) + 1;
    this.updatesSent++;
    const warmup = now - this.startedAt < this.options.warmupMs;
    if (waiting.size > 0) {
      this.outstanding = { seq, sentAt: now, waiting, acks: 0, lastAckAt: now, warmup };
    }
    this.options.send(seq, now);
  }

  /**
   * A neighbour acknowledged one of our updates.
   * @param {number} acker
   * @param {number} seq
   */
  ack(acker, seq) {
    this.acksFrom[acker] = (this.acksFrom[acker] ?? 0) + 1;
    const out = this.outstanding;
    if (!out || out.seq !== seq || !out.waiting.delete(acker)) return;
    out.acks++;
    out.lastAckAt = this.options.now();
    if (out.waiting.size === 0) this.complete(out.lastAckAt);
  }

  /**
   * The relay says every neighbour acknowledged update `seq` (mode `relay`),
   * or left, or had the update replaced as stale (`dropped` of them).
   * @param {number} seq
   * @param {number} [dropped]
   */
  ackedAll(seq, dropped = 0) {
    const out = this.outstanding;
    if (!out || out.seq !== seq) return;
    // Only when nobody was dropped do we know each neighbour's ACK arrived.
    if (dropped === 0) for (const id of out.waiting) this.acksFrom[id] = (this.acksFrom[id] ?? 0) + 1;
    out.waiting.clear();
    this.complete(this.options.now());
  }

  /**
   * A member left: it leaves the ACK set at once.
   * @param {number} id
   */
  memberLeft(id) {
    const out = this.outstanding;
    if (!out || !out.waiting.delete(id)) return;
    if (out.waiting.size === 0) {
      // RT is the time to the last ACK that did arrive; none arrived, none recorded.
      if (out.acks > 0) this.complete(out.lastAckAt);
      else this.outstanding = null;
    }
  }

  /** @param {number} at time of the last ACK */
  complete(at) {
    const out = /** @type {NonNullable<ActionCycle['outstanding']>} */ (this.outstanding);
    this.outstanding = null;
    this.completed++;
    this.options.onRt(at - out.sentAt, out.warmup);
  }
}
