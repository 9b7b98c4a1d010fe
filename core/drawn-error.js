// The drawn error: how far the pose a receiver draws for a sender is from
// where the sender really is at that same instant (docs/architecture.md,
// "Drawn error"). One meter per (receiver, sender) stream and playout mode;
// it is given, at each render instant, the drawn pose and the true one, and
// adds what it sees to a tally. A tally is mergeable: a browser keeps one per
// stream, `carlab sim` one per mode for all its streams, merged over its
// generators (position and angle in two-significant-digit histograms, so a
// run of a thousand streams at 60 fps stays a few kilobytes).

import { RtHistogram } from './report.js';
import { angleDeg, distance, quatOf } from './pose-math.js';

/** @typedef {import('./protocol.js').Pose} Pose */
/** @typedef {import('./playout.js').PlayoutState} PlayoutState */
/** @typedef {import('./report.js').RtHistogramJson} HistogramJson */

/**
 * A render step is a jump when the drawn pose moves this much farther than the
 * true pose did over the same step, cm, in a frame of JUMP_FRAME_MS; over a longer
 * step, proportionally more (an excess speed of 1.2 m/s), so that a stalled
 * renderer's long frame is not taken for a jump. A person walking at 1 m/s moves
 * 1.7 cm in a 60 fps frame; a drawing that snaps to a new update moves a cycle's worth.
 */
export const JUMP_EXCESS_CM = 2;
/** The frame JUMP_EXCESS_CM is given for: 60 fps, a phone's display. */
export const JUMP_FRAME_MS = 1000 / 60;

/** A render step of `stepMs` is a jump past this excess, cm. @param {number} stepMs */
export const jumpThresholdCm = (stepMs) => JUMP_EXCESS_CM * Math.max(1, stepMs / JUMP_FRAME_MS);

/** @type {readonly PlayoutState[]} */
export const PLAYOUT_STATES = Object.freeze(['interpolating', 'extrapolating', 'holding', 'easing']);

/**
 * A tally as JSON (results.json's `drawn.<mode>` before it is summarized; what generators send).
 * @typedef {object} DrawnTallyJson
 * @property {number} streams
 * @property {number} durationMs stream-time measured, summed over the streams
 * @property {number} jumps
 * @property {Record<PlayoutState, number>} stateMs
 * @property {HistogramJson} positionCm
 * @property {HistogramJson} angleDeg
 * @property {HistogramJson} jumpCm
 */

/** What one or many streams drew: errors, jumps and time by state. */
export class DrawnErrorTally {
  constructor() {
    this.streams = 0;
    this.durationMs = 0;
    this.jumps = 0;
    /** @type {Record<PlayoutState, number>} */
    this.stateMs = { interpolating: 0, extrapolating: 0, holding: 0, easing: 0 };
    this.positionCm = new RtHistogram();
    this.angleDeg = new RtHistogram();
    this.jumpCm = new RtHistogram();
  }

  /** @param {DrawnTallyJson} t */
  merge(t) {
    this.streams += t.streams;
    this.durationMs += t.durationMs;
    this.jumps += t.jumps;
    for (const s of PLAYOUT_STATES) this.stateMs[s] += t.stateMs[s] ?? 0;
    this.positionCm.merge(t.positionCm);
    this.angleDeg.merge(t.angleDeg);
    this.jumpCm.merge(t.jumpCm);
    return this;
  }

  /** @returns {DrawnTallyJson} */
  toJSON() {
    return {
      streams: this.streams, durationMs: this.durationMs, jumps: this.jumps, stateMs: { ...this.stateMs },
      positionCm: this.positionCm.toJSON(), angleDeg: this.angleDeg.toJSON(), jumpCm: this.jumpCm.toJSON(),
    };
  }

  /** The figures: errors summarized, jumps per minute of stream-time and sized, time shares by state. */
  summary() {
    const minutes = this.durationMs / 60_000;
    /** @type {Record<string, number | null>} */
    const shares = {};
    for (const s of PLAYOUT_STATES) shares[s] = this.durationMs > 0 ? this.stateMs[s] / this.durationMs : null;
    return {
      streams: this.streams,
      frames: this.positionCm.n,
      durationMs: this.durationMs,
      positionCm: this.positionCm.summary(),
      angleDeg: this.angleDeg.summary(),
      jumps: this.jumps,
      jumpsPerMinute: minutes > 0 ? this.jumps / minutes : null,
      jumpCm: this.jumpCm.summary(),
      shares,
    };
  }

  /** @param {Iterable<DrawnTallyJson | null | undefined>} list */
  static merged(list) {
    const t = new DrawnErrorTally();
    for (const item of list) if (item) t.merge(item);
    return t;
  }
}

/** One stream's meter: what it sees at each frame goes into its tally (its own, or one shared by many streams). */
export class DrawnErrorMeter {
  /** @param {DrawnErrorTally} [tally] */
  constructor(tally = new DrawnErrorTally()) {
    this.tally = tally;
    tally.streams++;
    /** @type {{ t: number, drawn: Pose, truth: Pose } | null} */
    this.previous = null;
  }

  /**
   * One render instant. Time between two frames counts for the state the second is in.
   * @param {number} t ms @param {Pose} drawn @param {Pose} truth @param {PlayoutState} state
   * @returns {number} the position error, cm
   */
  frame(t, drawn, truth, state) {
    const tally = this.tally;
    const positionCm = distance(drawn, truth) * 100;
    tally.positionCm.add(positionCm);
    tally.angleDeg.add(angleDeg(quatOf(drawn), quatOf(truth)));
    const p = this.previous;
    if (p) {
      tally.durationMs += t - p.t;
      tally.stateMs[state] += t - p.t;
      const excessCm = (distance(drawn, p.drawn) - distance(truth, p.truth)) * 100;
      if (excessCm > jumpThresholdCm(t - p.t)) {
        tally.jumps++;
        tally.jumpCm.add(excessCm);
      }
    }
    this.previous = { t, drawn, truth };
    return positionCm;
  }

  /** The figures of the tally (this stream's, unless shared). */
  summary() {
    return this.tally.summary();
  }
}
