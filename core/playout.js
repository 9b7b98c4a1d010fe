// Playout: which pose to draw for a neighbour at a given instant, from the
// updates received so far. One buffer per (receiver, sender) stream; the
// browser's AR view and the Node clients of `carlab sim` share it.
//
// Clocks. An UPDATE carries the sender's own send time. The stream's lag
// (arrival - send time) is the clock offset plus the network delay; its
// minimum over a window of recent arrivals is the offset plus the shortest
// delay, which maps sender time onto the receiver's clock without any clock
// shared by the two. A lag far from that minimum is a clock step (a page
// reloaded, a clock set): the buffer starts over from the new timeline.
//
// Modes (PLAYOUT_MODES):
//   newest      the newest pose as it came, nothing in between: the baseline
//               every other mode is measured against;
//   ease        an exponential approach to the newest pose (the AR view's
//               drawing before playout);
//   interpolate draws the stream `delayMs` in the past, between buffered
//               poses (position by a cubic Hermite curve, rotation by slerp);
//               the delay follows the stream's measured cycle and jitter;
//   predict     draws the sender's present, extrapolated from its last two
//               poses for at most `maxAheadCycles` cycles, then holds.
// In interpolate and predict a new update never makes the drawing jump: the
// difference it makes at the instant last drawn is walked out over `blendMs`,
// or longer at `maxCorrectionSpeed`. Sender
// time drawn never goes backwards, so a late (reordered) update only refines
// the curve ahead; duplicates are ignored.

import { jumpThresholdCm } from './drawn-error.js';
import { percentile } from './metrics.js';
import { conjugate, distance, multiply, normalize, power, poseOf, quatOf, slerp } from './pose-math.js';

/** @typedef {import('./protocol.js').Pose} Pose */
/** @typedef {import('./pose-math.js').Quat} Quat */
/** @typedef {'newest' | 'ease' | 'interpolate' | 'predict'} PlayoutMode */
/**
 * What a drawn pose is: between two received poses, ahead of the newest,
 * held still (past the extrapolation limit, or before the second pose), or eased.
 * @typedef {'interpolating' | 'extrapolating' | 'holding' | 'easing'} PlayoutState
 */
/** @typedef {{ seq: number, sendTime: number, pose: Pose }} Sample sendTime on the sender's clock */

/** @type {readonly PlayoutMode[]} */
export const PLAYOUT_MODES = Object.freeze(['newest', 'ease', 'interpolate', 'predict']);

/**
 * The mode the AR view and the lab use unless told otherwise, chosen by measurement: the
 * lowest p95 drawn error at no more jumps than ease in 20 of the 22 transport, loss and cycle
 * points of docs/results.md "What a person sees", and over core/playout.test.js's scripted
 * paths. Its worst case is a path that bends within a slow phone's cycle (698 ms), where a
 * cycle's extrapolation overshoots.
 * @type {PlayoutMode}
 */
export const DEFAULT_PLAYOUT = 'predict';

/**
 * @typedef {{ easeMs: number, capacity: number, lagWindow: number, maxAheadCycles: number, blendMs: number,
 *   maxCorrectionSpeed: number, clockStepMs: number, delayGain: number, initialCycleMs: number }} PlayoutOptions
 */

/** @type {Readonly<PlayoutOptions>} */
export const PLAYOUT_DEFAULTS = Object.freeze({
  /** Time constant of `ease`, ms (the AR view's easing before playout). */
  easeMs: 90,
  /** Poses kept per stream: 32 cycles of 167 ms is 5 s. */
  capacity: 32,
  /** Arrivals over which the lag minimum is taken. */
  lagWindow: 64,
  /** Extrapolation limit, in cycles of the stream. */
  maxAheadCycles: 1.5,
  /** A correction is blended in over this long, ms, or longer at the speed below. */
  blendMs: 100,
  /** The fastest a correction moves the drawing, m/s: under a jump (JUMP_EXCESS_CM per frame) at 30 fps and up. */
  maxCorrectionSpeed: 0.5,
  /** A lag this far from the window's minimum is a clock step, ms. */
  clockStepMs: 2000,
  /** How fast `interpolate`'s delay follows its target, per update (0..1). */
  delayGain: 0.1,
  /** Assumed cycle until the stream has shown its own, ms. */
  initialCycleMs: 167,
});

/** @param {PlayoutMode} mode @returns {PlayoutMode} */
function checkedMode(mode) {
  if (!PLAYOUT_MODES.includes(mode)) throw new TypeError(`unknown playout mode "${mode}" (one of ${PLAYOUT_MODES.join(', ')})`);
  return mode;
}

/**
 * The pose on a cubic Hermite curve through p1 (t=0) and p2 (t=1), with
 * tangents from the neighbours p0 and p3 (non-uniform Catmull-Rom).
 * @param {Sample} s0 @param {Sample} s1 @param {Sample} s2 @param {Sample} s3 @param {number} at sender time
 */
export function hermiteAt(s0, s1, s2, s3, at) {
  const span = s2.sendTime - s1.sendTime || 1;
  const u = (at - s1.sendTime) / span;
  const h00 = 2 * u ** 3 - 3 * u ** 2 + 1;
  const h10 = u ** 3 - 2 * u ** 2 + u;
  const h01 = -2 * u ** 3 + 3 * u ** 2;
  const h11 = u ** 3 - u ** 2;
  /** @param {number} k */
  const tangent = (k) => ({
    at1: ((s2.pose[k] - s0.pose[k]) / (s2.sendTime - s0.sendTime || 1)) * span,
    at2: ((s3.pose[k] - s1.pose[k]) / (s3.sendTime - s1.sendTime || 1)) * span,
  });
  const position = [0, 1, 2].map((k) => {
    const m = tangent(k);
    return h00 * s1.pose[k] + h10 * m.at1 + h01 * s2.pose[k] + h11 * m.at2;
  });
  return poseOf(position, slerp(quatOf(s1.pose), quatOf(s2.pose), u));
}

/**
 * The fastest motion extrapolated, m/s: two poses that say a phone moves faster are more
 * likely a tracking error than a person, and carrying that on would draw a jump
 * (core/drawn-error.js: 1.2 m/s over the truth is one).
 */
export const MAX_EXTRAPOLATED_SPEED = 1.2;

/**
 * The pose `ahead` ms past `last`, continuing the motion from `prev` to `last` (its speed at most
 * MAX_EXTRAPOLATED_SPEED).
 * @param {Sample} prev @param {Sample} last @param {number} ahead
 */
export function extrapolate(prev, last, ahead) {
  const span = last.sendTime - prev.sendTime;
  if (span <= 0) return last.pose;
  const f = ahead / span;
  const speed = (distance(last.pose, prev.pose) / span) * 1000;
  const g = speed > MAX_EXTRAPOLATED_SPEED ? f * (MAX_EXTRAPOLATED_SPEED / speed) : f;
  const position = [0, 1, 2].map((k) => last.pose[k] + (last.pose[k] - prev.pose[k]) * g);
  const turn = power(multiply(quatOf(last.pose), conjugate(quatOf(prev.pose))), f);
  return poseOf(position, normalize(multiply(turn, quatOf(last.pose))));
}

/** One (receiver, sender) stream's playout. */
export class StreamPlayout {
  /**
   * @param {PlayoutMode} mode
   * @param {Partial<PlayoutOptions>} [options]
   */
  constructor(mode, options = {}) {
    this.mode = checkedMode(mode);
    this.options = { ...PLAYOUT_DEFAULTS, ...options };
    /** @type {Sample[]} ascending sendTime */
    this.samples = [];
    /** @type {number[]} recent lags, ring */
    this.lags = [];
    this.baseLagMs = 0;
    this.cycleMs = this.options.initialCycleMs;
    this.cyclesSeen = 0;
    this.jitterMs = 0;
    /** `interpolate`'s current delay behind the sender, ms. */
    this.delayMs = 0;
    /** Highest sender time drawn so far. */
    this.drawnSendTime = -Infinity;
    /** @type {Pose | null} */
    this.drawn = null;
    this.lastRenderAt = 0;
    /** @type {{ at: number, offset: number[], turn: Quat, durationMs: number } | null} blended-out difference */
    this.correction = null;
    this.changed = false;
    this.counts = { updates: 0, duplicates: 0, reordered: 0, clockSteps: 0 };
  }

  /**
   * Takes a received update.
   * @param {number} seq @param {number} sendTime sender's clock, ms @param {number} arrival receiver's clock, ms @param {Pose} pose
   */
  push(seq, sendTime, arrival, pose) {
    if (this.samples.some((s) => s.seq === seq)) { this.counts.duplicates++; return; }
    const lag = arrival - sendTime;
    if (this.samples.length > 0 && Math.abs(lag - this.baseLagMs) > this.options.clockStepMs) this.restartTimeline();
    this.counts.updates++;
    const newest = this.samples.at(-1);
    if (newest && sendTime < newest.sendTime) this.counts.reordered++;
    if (newest && seq > newest.seq && sendTime > newest.sendTime) this.observeCycle((sendTime - newest.sendTime) / (seq - newest.seq));
    this.insert({ seq, sendTime, pose });
    this.observeLag(lag);
    this.changed = true;
  }

  /** A clock step: what is buffered is on another timeline. The drawing carries on from where it is. */
  restartTimeline() {
    this.counts.clockSteps++;
    this.samples = [];
    this.lags = [];
    this.drawnSendTime = -Infinity;
  }

  /** @param {Sample} sample */
  insert(sample) {
    let i = this.samples.length;
    while (i > 0 && this.samples[i - 1].sendTime > sample.sendTime) i--;
    this.samples.splice(i, 0, sample);
    if (this.samples.length > this.options.capacity) this.samples.shift();
  }

  /** @param {number} intervalMs one cycle of the sender, from consecutive send times */
  observeCycle(intervalMs) {
    this.cycleMs = this.cyclesSeen++ === 0 ? intervalMs : this.cycleMs + (intervalMs - this.cycleMs) * 0.2;
  }

  /** The lag minimum (clock mapping) and the jitter above it (p95), and the delay they ask for. @param {number} lag */
  observeLag(lag) {
    this.lags.push(lag);
    if (this.lags.length > this.options.lagWindow) this.lags.shift();
    this.baseLagMs = Math.min(...this.lags);
    const above = this.lags.map((l) => l - this.baseLagMs).sort((a, b) => a - b);
    this.jitterMs = /** @type {number} */ (percentile(above, 95));
    const target = this.cycleMs + this.jitterMs;
    this.delayMs = this.lags.length === 1 || this.cyclesSeen <= 1 ? target : this.delayMs + (target - this.delayMs) * this.options.delayGain;
  }

  /**
   * How far behind the sender's present the drawing is at `now`, ms, beyond the network's
   * shortest delay (which no clock here can see): interpolate's delay; past the newest pose's
   * extrapolation limit, the time since; for ease, the newest pose's age and the easing lag.
   * The HUD's figure per neighbour.
   * @param {number} [now] receiver's clock (default: the last frame drawn)
   */
  behindMs(now = this.lastRenderAt) {
    const newest = this.samples.at(-1);
    if (!newest) return 0;
    const present = now - this.baseLagMs;
    if (this.mode === 'newest') return Math.max(0, present - newest.sendTime);
    if (this.mode === 'ease') return Math.max(0, present - newest.sendTime) + this.options.easeMs;
    const at = present - (this.mode === 'interpolate' ? this.delayMs : 0);
    return Math.max(0, present - Math.min(at, newest.sendTime + this.aheadLimitMs()));
  }

  /** The sender's speed between its two newest poses, m/s (0 before two). */
  speedMps() {
    const s = this.samples;
    if (s.length < 2) return 0;
    const span = s[s.length - 1].sendTime - s[s.length - 2].sendTime;
    return span > 0 ? (distance(s[s.length - 1].pose, s[s.length - 2].pose) / span) * 1000 : 0;
  }

  /** How far past the newest pose the drawing may be extrapolated, ms. */
  aheadLimitMs() {
    return this.options.maxAheadCycles * this.cycleMs;
  }

  /**
   * The pose to draw at `now` (receiver's clock), or null before the first update.
   * @param {number} now
   * @returns {{ pose: Pose, state: PlayoutState } | null}
   */
  poseAt(now) {
    if (this.samples.length === 0 && !this.drawn) return null;
    if (this.mode === 'newest') {
      this.drawn = this.samples.at(-1)?.pose ?? /** @type {Pose} */ (this.drawn);
      this.lastRenderAt = now;
      return { pose: this.drawn, state: 'holding' };
    }
    if (this.changed && this.drawn && this.mode !== 'ease') this.startCorrection();
    this.changed = false;
    const raw = this.mode === 'ease' ? this.eased(now) : this.curveAt(now);
    const pose = this.corrected(raw.pose, now);
    this.drawn = pose;
    this.lastRenderAt = now;
    return { pose, state: raw.state };
  }

  /** @param {number} now @returns {{ pose: Pose, state: PlayoutState }} */
  eased(now) {
    const target = this.samples.at(-1)?.pose ?? /** @type {Pose} */ (this.drawn);
    if (!this.drawn) return { pose: target, state: 'easing' };
    const k = 1 - Math.exp(-Math.min(1000, now - this.lastRenderAt) / this.options.easeMs);
    const d = this.drawn;
    const position = [0, 1, 2].map((i) => d[i] + (target[i] - d[i]) * k);
    return { pose: poseOf(position, slerp(quatOf(d), quatOf(target), k)), state: 'easing' };
  }

  /** The buffered curve at the sender time this mode draws at `now`. @param {number} now */
  curveAt(now) {
    const behind = this.mode === 'interpolate' ? this.delayMs : 0;
    const at = Math.max(now - this.baseLagMs - behind, this.drawnSendTime);
    this.drawnSendTime = at;
    return this.sampleAt(at);
  }

  /**
   * @param {number} at sender time
   * @returns {{ pose: Pose, state: PlayoutState }}
   */
  sampleAt(at) {
    const s = this.samples;
    if (s.length === 0) return { pose: /** @type {Pose} */ (this.drawn), state: 'holding' };
    if (at <= s[0].sendTime) return { pose: s[0].pose, state: 'holding' };
    const last = s[s.length - 1];
    if (at >= last.sendTime) return this.ahead(at - last.sendTime);
    let i = 1;
    while (s[i].sendTime < at) i++;
    const pose = hermiteAt(s[Math.max(0, i - 2)], s[i - 1], s[i], s[Math.min(s.length - 1, i + 1)], at);
    return { pose, state: 'interpolating' };
  }

  /** Past the newest pose: extrapolated up to the limit, then held there. @param {number} aheadMs */
  ahead(aheadMs) {
    const s = this.samples;
    if (s.length < 2) return { pose: s[0].pose, state: /** @type {PlayoutState} */ ('holding') };
    const limit = this.aheadLimitMs();
    const state = /** @type {PlayoutState} */ (aheadMs <= limit ? 'extrapolating' : 'holding');
    return { pose: extrapolate(s[s.length - 2], s[s.length - 1], Math.min(aheadMs, limit)), state };
  }

  /**
   * What a new update changed at the instant last drawn becomes a correction that
   * fades out from there, so the drawing continues from where it was instead of jumping.
   */
  startCorrection() {
    const drawn = /** @type {Pose} */ (this.drawn);
    const now = this.sampleAt(this.drawnSendTime).pose;
    const offset = [0, 1, 2].map((k) => drawn[k] - now[k]);
    this.correction = {
      at: this.lastRenderAt,
      offset,
      turn: normalize(multiply(quatOf(drawn), conjugate(quatOf(now)))),
      // a large correction is walked, not snapped: a jump a person sees is a fast drawn move
      durationMs: Math.max(this.options.blendMs, (Math.hypot(...offset) / this.options.maxCorrectionSpeed) * 1000),
    };
  }

  /** The curve's pose with the fading correction applied. @param {Pose} raw @param {number} now @returns {Pose} */
  corrected(raw, now) {
    const c = this.correction;
    if (!c) return raw;
    const fade = this.fadeAt(now);
    if (fade <= 0) { this.correction = null; return raw; }
    const position = [0, 1, 2].map((k) => raw[k] + c.offset[k] * fade);
    return poseOf(position, normalize(multiply(power(c.turn, fade), quatOf(raw))));
  }

  /** Share of the correction still applied at `t` (1 when it starts, 0 after blendMs). @param {number} t */
  fadeAt(t) {
    if (!this.correction) return 0;
    return Math.max(0, 1 - (t - this.correction.at) / this.correction.durationMs);
  }
}

/** Every neighbour's playout for one receiver, in one mode. */
export class Playout {
  /** @param {PlayoutMode} mode @param {Partial<PlayoutOptions>} [options] */
  constructor(mode, options = {}) {
    this.mode = checkedMode(mode); // here, not at the first update
    this.options = options;
    /** @type {Map<number, StreamPlayout>} by sender id */
    this.streams = new Map();
  }

  /** @param {number} sender @param {number} seq @param {number} sendTime @param {number} arrival @param {Pose} pose */
  push(sender, seq, sendTime, arrival, pose) {
    let stream = this.streams.get(sender);
    if (!stream) this.streams.set(sender, stream = new StreamPlayout(this.mode, this.options));
    stream.push(seq, sendTime, arrival, pose);
  }

  /** @param {number} sender @param {number} now */
  poseAt(sender, now) {
    return this.streams.get(sender)?.poseAt(now) ?? null;
  }

  /** @param {number} sender */
  behindMs(sender) {
    return this.streams.get(sender)?.behindMs() ?? 0;
  }

  /** A member left: its buffer goes. @param {number} sender */
  forget(sender) {
    this.streams.delete(sender);
  }
}

/**
 * Parses a list of playout modes ("ease,interpolate"), in the order given.
 * @param {string} text
 * @returns {PlayoutMode[]}
 */
export function parsePlayoutModes(text) {
  const modes = text.split(',').map((m) => m.trim()).filter(Boolean);
  const unknown = modes.filter((m) => !PLAYOUT_MODES.includes(/** @type {PlayoutMode} */ (m)));
  if (modes.length === 0 || unknown.length > 0) {
    throw new TypeError(`--playout takes a comma-separated list of ${PLAYOUT_MODES.join(', ')}; got "${text}"`);
  }
  return /** @type {PlayoutMode[]} */ ([...new Set(modes)]);
}

/**
 * What a receiver can know of its drawing of one neighbour without the truth (a phone in a study):
 * the time drawn in each state, how far behind the sender's present (time-weighted), and jumps: a
 * frame's drawn step beyond what the neighbour's own newest updates say it moved, by the drawn
 * error's jump threshold (core/drawn-error.js jumpThresholdCm).
 */
export class PlayoutWatch {
  constructor() {
    this.ms = 0;
    /** @type {Record<PlayoutState, number>} */
    this.stateMs = { interpolating: 0, extrapolating: 0, holding: 0, easing: 0 };
    this.behindMsSum = 0;
    this.jumps = 0;
    /** @type {{ t: number, pose: Pose } | null} */
    this.last = null;
  }

  /**
   * One frame drawn.
   * @param {number} now @param {Pose} pose @param {PlayoutState} state
   * @param {number} behindMs StreamPlayout.behindMs(now) @param {number} speedMps StreamPlayout.speedMps()
   */
  frame(now, pose, state, behindMs, speedMps) {
    const last = this.last;
    if (last && now > last.t) {
      const dt = now - last.t;
      this.ms += dt;
      this.stateMs[state] += dt;
      this.behindMsSum += behindMs * dt;
      const stepCm = distance(pose, last.pose) * 100;
      if (stepCm - speedMps * dt * 0.1 > jumpThresholdCm(dt)) this.jumps++;
    }
    this.last = { t: now, pose };
  }

  /** @returns {{ seconds: number, behindMs: number | null, shares: Record<PlayoutState, number> | null, jumps: number, jumpsPerMinute: number | null }} */
  summary() {
    const ms = this.ms;
    const round = (/** @type {number} */ x, /** @type {number} */ d) => Math.round(x * 10 ** d) / 10 ** d;
    return {
      seconds: round(ms / 1000, 1),
      behindMs: ms > 0 ? round(this.behindMsSum / ms, 0) : null,
      shares: ms > 0 ? /** @type {Record<PlayoutState, number>} */ (Object.fromEntries(Object.entries(this.stateMs).map(([k, v]) => [k, round(v / ms, 3)]))) : null,
      jumps: this.jumps,
      jumpsPerMinute: ms > 0 ? round(this.jumps / (ms / 60_000), 2) : null,
    };
  }
}
