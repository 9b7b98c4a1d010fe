// One receiver drawing every neighbour in several playout modes at once, from
// the same arrivals, and measuring each drawing against the truth: how
// `carlab sim` and `carlab bench --playout` compare modes on identical input
// (docs/architecture.md, "Drawn error"). The meters add to tallies shared by
// every probe of a generator (one per mode), and to a timeline of the error
// per second with the updates found missing in that second.

import { DrawnErrorMeter, DrawnErrorTally } from './drawn-error.js';
import { StreamPlayout } from './playout.js';

/** @typedef {import('./protocol.js').Pose} Pose */
/** @typedef {import('./playout.js').PlayoutMode} PlayoutMode */

/**
 * The timeline's buckets: per second of the measured window, each mode's
 * error (sum, count, max, cm) and the updates receivers found missing
 * (a seq beyond the next expected one: lost, or late and reordered).
 * @typedef {{ s: number, missing: number, modes: Record<string, { sum: number, n: number, max: number }> }} DrawnBucket
 */

/** Per-second drawn error of many streams; buckets merge by their second. */
export class DrawnTimeline {
  /** @param {number} startMs the window's start (the probes' clock) */
  constructor(startMs) {
    this.startMs = startMs;
    /** @type {Map<number, DrawnBucket>} */
    this.buckets = new Map();
  }

  /** @param {number} t @returns {DrawnBucket | null} */
  bucketAt(t) {
    if (t < this.startMs) return null;
    const s = Math.floor((t - this.startMs) / 1000);
    let b = this.buckets.get(s);
    if (!b) this.buckets.set(s, b = { s, missing: 0, modes: {} });
    return b;
  }

  /** @param {number} t @param {string} mode @param {number} cm */
  error(t, mode, cm) {
    const b = this.bucketAt(t);
    if (!b) return;
    const m = (b.modes[mode] ??= { sum: 0, n: 0, max: 0 });
    m.sum += cm;
    m.n++;
    if (cm > m.max) m.max = cm;
  }

  /** @param {number} t @param {number} count */
  missing(t, count) {
    const b = this.bucketAt(t);
    if (b) b.missing += count;
  }

  /** @returns {DrawnBucket[]} */
  toJSON() {
    return [...this.buckets.values()].sort((a, b) => a.s - b.s);
  }

  /**
   * One timeline from many, bucket by bucket: [{ s, missing, <mode>: mean cm }].
   * @param {Iterable<DrawnBucket[] | null | undefined>} lists
   * @returns {{ s: number, missing: number, meanCm: Record<string, number | null>, maxCm: Record<string, number | null> }[]}
   */
  static merged(lists) {
    /** @type {Map<number, DrawnBucket>} */
    const all = new Map();
    for (const list of lists) {
      for (const b of list ?? []) {
        const into = all.get(b.s) ?? { s: b.s, missing: 0, modes: {} };
        into.missing += b.missing;
        for (const [mode, m] of Object.entries(b.modes)) {
          const t = (into.modes[mode] ??= { sum: 0, n: 0, max: 0 });
          t.sum += m.sum; t.n += m.n; t.max = Math.max(t.max, m.max);
        }
        all.set(b.s, into);
      }
    }
    return [...all.values()].sort((a, b) => a.s - b.s).map((b) => ({
      s: b.s,
      missing: b.missing,
      meanCm: Object.fromEntries(Object.entries(b.modes).map(([k, m]) => [k, m.n ? m.sum / m.n : null])),
      maxCm: Object.fromEntries(Object.entries(b.modes).map(([k, m]) => [k, m.n ? m.max : null])),
    }));
  }
}

/** What every probe of a generator adds to: one tally per mode, and the timeline. */
export class DrawnErrorLab {
  /** @param {readonly PlayoutMode[]} modes @param {number} windowStartMs */
  constructor(modes, windowStartMs) {
    this.modes = modes;
    /** @type {Record<string, DrawnErrorTally>} */
    this.tallies = Object.fromEntries(modes.map((m) => [m, new DrawnErrorTally()]));
    this.timeline = new DrawnTimeline(windowStartMs);
  }

  /** @returns {{ modes: Record<string, import('./drawn-error.js').DrawnTallyJson>, timeline: DrawnBucket[] }} */
  toJSON() {
    return { modes: Object.fromEntries(Object.entries(this.tallies).map(([m, t]) => [m, t.toJSON()])), timeline: this.timeline.toJSON() };
  }
}

/** One receiver's neighbours, each drawn in every mode of the lab. */
export class PlayoutProbe {
  /** @param {DrawnErrorLab} lab */
  constructor(lab) {
    this.lab = lab;
    /** @type {Map<number, { highestSeq: number, modes: { mode: PlayoutMode, playout: StreamPlayout, meter: DrawnErrorMeter }[] }>} by sender */
    this.streams = new Map();
  }

  /** @param {number} sender */
  streamOf(sender) {
    let s = this.streams.get(sender);
    if (!s) {
      s = {
        highestSeq: -1,
        modes: this.lab.modes.map((mode) => ({ mode, playout: new StreamPlayout(mode), meter: Object.assign(new DrawnErrorMeter(this.lab.tallies[mode]), { mode }) })),
      };
      this.streams.set(sender, s);
    }
    return s;
  }

  /**
   * An update arrived (every one, stale ones too: they refine the curve).
   * @param {number} sender @param {number} seq @param {number} sendTime @param {number} arrival @param {Pose} pose
   */
  arrive(sender, seq, sendTime, arrival, pose) {
    const s = this.streamOf(sender);
    if (s.highestSeq >= 0 && seq > s.highestSeq + 1) this.lab.timeline.missing(arrival, seq - s.highestSeq - 1);
    if (seq > s.highestSeq) s.highestSeq = seq;
    for (const m of s.modes) m.playout.push(seq, sendTime, arrival, pose);
  }

  /**
   * Draws every neighbour in every mode at `now` and measures it against its true pose.
   * @param {number} now the receiver's clock (that of the arrivals)
   * @param {(sender: number) => Pose | null} truthOf the sender's true pose at `now`, null if unknown
   */
  render(now, truthOf) {
    for (const [sender, s] of this.streams) {
      const truth = truthOf(sender);
      if (!truth) {
        // not judged (no truth here): the next judged frame starts a new run of frames
        for (const m of s.modes) m.meter.previous = null;
        continue;
      }
      for (const m of s.modes) {
        const drawn = m.playout.poseAt(now);
        if (!drawn) continue;
        this.lab.timeline.error(now, m.mode, m.meter.frame(now, drawn.pose, truth, drawn.state));
      }
    }
  }

  /** The sender left: its drawing ends (its figures stay in the tallies). @param {number} sender */
  forget(sender) {
    this.streams.delete(sender);
  }
}

/**
 * Where a sender really is at an epoch instant, as the receiver with index `k` knows it; null
 * where the drawing is not judged (an unknown sender, the marker out of the sender's view).
 * @typedef {(k: number, sender: number, epochMs: number) => Pose | null} TruthOf
 */

/**
 * --playout in a process or page of clients: each client's probe, fed every arrival from the
 * client's events, drawn at each frame (a timer at a fixed rate, or the page's own frames) from
 * the start of the measured window until stop, measured against `truthOf`.
 */
export class DrawnMeasurement {
  /**
   * @param {readonly PlayoutMode[]} modes
   * @param {TruthOf} truthOf
   * @param {{ accept?: (pose: Pose) => boolean }} [options] `accept`: a pose that fails it (a phone
   *   not tracking) starts the sender's drawing over, as the AR view does
   */
  constructor(modes, truthOf, options = {}) {
    this.lab = new DrawnErrorLab(modes, Infinity);
    this.truthOf = truthOf;
    this.accept = options.accept ?? (() => true);
    /** @type {PlayoutProbe[]} by client index */
    this.probes = [];
    /** @type {ReturnType<typeof setInterval> | undefined} */
    this.timer = undefined;
  }

  /**
   * A client's event (CarClient's onEvent): every arrival goes to its probe; a member that left is forgotten.
   * @param {number} k the client's index @param {string} event @param {any} detail
   */
  onClientEvent(k, event, detail) {
    if (event === 'update') {
      const m = detail.update;
      const probe = (this.probes[k] ??= new PlayoutProbe(this.lab));
      if (this.accept(m.pose)) probe.arrive(m.sender, m.seq, m.sendTime, detail.arrivalTime, m.pose);
      else probe.forget(m.sender);
    } else if (event === 'member-left') {
      this.probes[k]?.forget(detail.id);
    }
  }

  /**
   * Draws from `delayMs` on: every `1000 / fps` ms, or (fps 0) whenever frame() is called.
   * @param {number} delayMs the warm-up left @param {number} fps
   */
  start(delayMs, fps) {
    this.lab.timeline.startMs = performance.now() + delayMs;
    clearInterval(this.timer);
    if (fps > 0) this.timer = setInterval(() => this.frame(), 1000 / fps);
  }

  stop() {
    clearInterval(this.timer);
    this.lab.timeline.startMs = Infinity;
  }

  /** One frame of every client's drawing. @param {number} [now] performance.now() of the frame */
  frame(now = performance.now()) {
    if (now < this.lab.timeline.startMs) return;
    const epoch = performance.timeOrigin + now;
    this.probes.forEach((probe, k) => probe.render(now, (sender) => this.truthOf(k, sender, epoch)));
  }

  toJSON() {
    return this.lab.toJSON();
  }
}
