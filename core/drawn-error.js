// The drawn error: how far the pose a receiver draws for a sender is from
// where the sender really is at that same instant (docs/architecture.md,
// "Drawn error"). One meter per (receiver, sender) stream and playout mode;
// it is given, at each render instant, the drawn pose and the true one.

import { summarize } from './metrics.js';
import { angleDeg, distance, quatOf } from './pose-math.js';

/** @typedef {import('./protocol.js').Pose} Pose */
/** @typedef {import('./playout.js').PlayoutState} PlayoutState */

/**
 * A render step is a jump when the drawn pose moves this much farther than the
 * true pose did over the same step, cm. A person walking at 1 m/s moves 1.7 cm
 * in a 60 fps frame; a drawing that snaps to a new update moves a cycle's worth.
 */
export const JUMP_EXCESS_CM = 2;

const STATES = /** @type {const} */ (['interpolating', 'extrapolating', 'holding', 'easing']);

export class DrawnErrorMeter {
  constructor() {
    /** @type {number[]} */ this.positionCm = [];
    /** @type {number[]} */ this.angleDeg = [];
    /** @type {number[]} */ this.jumpCm = [];
    /** @type {Record<PlayoutState, number>} ms spent in each state */
    this.stateMs = { interpolating: 0, extrapolating: 0, holding: 0, easing: 0 };
    /** @type {{ t: number, drawn: Pose, truth: Pose } | null} */
    this.previous = null;
    this.firstAt = NaN;
  }

  /**
   * One render instant.
   * @param {number} t ms @param {Pose} drawn @param {Pose} truth @param {PlayoutState} state
   */
  frame(t, drawn, truth, state) {
    this.positionCm.push(distance(drawn, truth) * 100);
    this.angleDeg.push(angleDeg(quatOf(drawn), quatOf(truth)));
    const p = this.previous;
    if (p) {
      this.stateMs[state] += t - p.t;
      const excessCm = (distance(drawn, p.drawn) - distance(truth, p.truth)) * 100;
      if (excessCm > JUMP_EXCESS_CM) this.jumpCm.push(excessCm);
    } else {
      this.firstAt = t;
    }
    this.previous = { t, drawn, truth };
  }

  /** The stream's figures: errors summarized, jumps counted and sized, time shares by state. */
  summary() {
    const durationMs = this.previous ? this.previous.t - this.firstAt : 0;
    const minutes = durationMs / 60_000;
    /** @type {Record<string, number | null>} */
    const shares = {};
    for (const s of STATES) shares[s] = durationMs > 0 ? this.stateMs[s] / durationMs : null;
    return {
      frames: this.positionCm.length,
      durationMs,
      positionCm: summarize(this.positionCm),
      angleDeg: summarize(this.angleDeg),
      jumps: this.jumpCm.length,
      jumpsPerMinute: minutes > 0 ? this.jumpCm.length / minutes : null,
      jumpCm: summarize(this.jumpCm),
      shares,
    };
  }
}
