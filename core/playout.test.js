import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DrawnErrorMeter, DrawnErrorTally } from './drawn-error.js';
import { PATH_KINDS, scriptedPose } from './path.js';
import { DEFAULT_PLAYOUT, MAX_EXTRAPOLATED_SPEED, Playout, PLAYOUT_DEFAULTS, PLAYOUT_MODES, PlayoutWatch, StreamPlayout, extrapolate, hermiteAt, parsePlayoutModes } from './playout.js';
import { distance } from './pose-math.js';
import { makeRng } from '../lab/shared/rng.js';

/** @typedef {import('./protocol.js').Pose} Pose */

const CYCLE_MS = 167;
/** The sender's clock starts 5 s before the receiver's: only the lag minimum maps them. */
const SENDER_CLOCK_AHEAD_MS = 5000;

/** A position-only pose. @param {number} x @returns {Pose} */
const at = (x) => [x, 0, 0, 0, 0, 0, 1];

/**
 * One sender walking scripted path `index` for `seconds`, its updates lost with `loss` and delayed 20..20+jitter ms
 * (a share `stalls` of them 0.3..1.2 s more), drawn at `fps` by every mode from the same arrivals. Returns each
 * mode's drawn-error tally.
 * @param {{ loss?: number, jitterMs?: number, seconds?: number, seed?: number, index?: number, fps?: number, stalls?: number }} o
 */
function walk({ loss = 0, jitterMs = 10, seconds = 20, seed = 1, index = 0, fps = 60, stalls = 0 }) {
  const rand = makeRng(seed).next;
  /** @type {{ arrival: number, seq: number, sendTime: number, pose: Pose }[]} */
  const arrivals = [];
  for (let seq = 0, t = 0; t < seconds * 1000; seq++, t += CYCLE_MS) {
    const delay = 20 + rand() * jitterMs + (rand() < stalls ? 300 + 900 * rand() : 0);
    if (rand() >= loss) arrivals.push({ arrival: t + delay, seq, sendTime: t + SENDER_CLOCK_AHEAD_MS, pose: scriptedPose(index, t) });
  }
  arrivals.sort((a, b) => a.arrival - b.arrival);
  return Object.fromEntries(PLAYOUT_MODES.map((mode) => {
    const stream = new StreamPlayout(mode);
    const tally = new DrawnErrorTally();
    const meter = new DrawnErrorMeter(tally);
    let next = 0;
    for (let now = 0; now < seconds * 1000; now += 1000 / fps) {
      while (next < arrivals.length && arrivals[next].arrival <= now) {
        const a = arrivals[next++];
        stream.push(a.seq, a.sendTime, a.arrival, a.pose);
      }
      const drawn = stream.poseAt(now);
      if (drawn && now > 2000) meter.frame(now, drawn.pose, scriptedPose(index, now), drawn.state);
    }
    return [mode, tally];
  }));
}

test('interpolate draws between buffered poses a cycle and its jitter behind', () => {
  const p = new StreamPlayout('interpolate');
  for (let seq = 0; seq < 40; seq++) p.push(seq, 1000 + seq * 100, seq * 100 + 10, at(seq));
  assert.ok(Math.abs(p.baseLagMs - (10 - 1000)) < 1e-9, 'the lag minimum maps the clocks');
  assert.ok(Math.abs(p.cycleMs - 100) < 1, `cycle ${p.cycleMs}`);
  const drawn = /** @type {NonNullable<ReturnType<StreamPlayout["poseAt"]>>} */ (p.poseAt(3910));
  assert.equal(drawn.state, 'interpolating');
  // 3910 on the receiver is 4900 on the sender; drawn 100 ms (one cycle, no jitter) behind: x = 38
  assert.ok(Math.abs(drawn.pose[0] - 38) < 0.05, `x ${drawn.pose[0]}`);
  assert.ok(Math.abs(p.behindMs() - 100) < 1);
  // 1 s on, no update: the newest pose (sent at 4900) is 1000 ms old, drawn held at its limit 150 ms past it
  assert.ok(Math.abs(p.behindMs(3910 + 1000) - (1000 - 150)) < 1, `behind ${p.behindMs(4910)}`);
});

test('a reordered update refines the curve ahead and never moves the drawing back in sender time', () => {
  const p = new StreamPlayout('interpolate');
  for (const seq of [0, 1, 2, 4, 5]) p.push(seq, seq * 100, seq * 100 + 10, at(seq));
  const before = /** @type {any} */ (p.poseAt(420)).pose[0];
  p.push(3, 300, 430, at(3)); // late: sent before seq 4
  assert.equal(p.counts.reordered, 1);
  assert.deepEqual(p.samples.map((s) => s.seq), [0, 1, 2, 3, 4, 5], 'kept in send order');
  let last = before;
  for (let now = 430; now < 700; now += 16) {
    const x = /** @type {any} */ (p.poseAt(now)).pose[0];
    assert.ok(x >= last - 1e-9, `drawn x went back from ${last} to ${x} at ${now}`);
    last = x;
  }
});

test('a duplicated update is ignored', () => {
  const p = new StreamPlayout('predict');
  p.push(0, 0, 10, at(0));
  p.push(1, 100, 110, at(1));
  p.push(1, 100, 130, at(9));
  assert.equal(p.counts.duplicates, 1);
  assert.deepEqual(p.samples.map((s) => s.pose[0]), [0, 1]);
});

test('a gap of several cycles: predict extrapolates at most 1.5 cycles, then holds; the next update is blended in', () => {
  const p = new StreamPlayout('predict');
  // 0.1 m/s, an update every 100 ms
  for (let seq = 0; seq < 5; seq++) p.push(seq, seq * 100, seq * 100, at(seq / 100));
  const ahead = /** @type {any} */ (p.poseAt(500));
  assert.equal(ahead.state, 'extrapolating');
  assert.ok(Math.abs(ahead.pose[0] - 0.05) < 1e-9, 'continues the motion');
  const held = /** @type {any} */ (p.poseAt(900));
  assert.equal(held.state, 'holding');
  assert.ok(Math.abs(held.pose[0] - 0.055) < 1e-9, 'held at the limit, 150 ms past the newest pose');
  assert.equal(/** @type {any} */ (p.poseAt(1000)).pose[0], held.pose[0], 'still');
  p.push(10, 1000, 1000, at(0.1)); // four updates lost
  const first = /** @type {any} */ (p.poseAt(1016)).pose[0];
  assert.ok(first - held.pose[0] < 0.01, `the drawing moves on from where it was (${held.pose[0]} -> ${first}), no snap`);
  const settled = /** @type {any} */ (p.poseAt(1200)).pose[0];
  assert.ok(Math.abs(settled - 0.115) < 1e-9, `caught up after the blend, drawn to the limit past the newest: ${settled}`);
});

test('a large correction is walked at no more than maxCorrectionSpeed, then gone', () => {
  const p = new StreamPlayout('predict');
  for (let seq = 0; seq < 5; seq++) p.push(seq, seq * 100, seq * 100, at(seq / 100));
  let last = /** @type {any} */ (p.poseAt(900)).pose[0]; // held at 0.055
  // two late updates: the sender had gone 50 cm away and stood there
  p.push(6, 600, 900, at(0.5));
  p.push(7, 601, 900, at(0.5));
  const steps = Array.from({ length: 120 }, (_, i) => {
    const x = /** @type {any} */ (p.poseAt(900 + (i + 1) * 1000 / 60)).pose[0];
    const step = x - last;
    last = x;
    return step;
  });
  assert.ok(Math.max(...steps) * 60 <= PLAYOUT_DEFAULTS.maxCorrectionSpeed + 1e-6, `${(Math.max(...steps) * 60).toFixed(2)} m/s`);
  assert.ok(Math.abs(last - 0.5) < 1e-9, `0.445 m at 0.5 m/s: there after 0.9 s (${last})`);
});

test('a clock step (the sender\'s clock set back 60 s) starts a new timeline without a jump', () => {
  const p = new StreamPlayout('interpolate');
  for (let seq = 0; seq < 10; seq++) p.push(seq, 100_000 + seq * 100, seq * 100, at(seq * 0.01));
  const before = /** @type {any} */ (p.poseAt(1000)).pose;
  for (let seq = 10; seq < 20; seq++) p.push(seq, 40_000 + seq * 100, seq * 100, at(seq * 0.01));
  assert.equal(p.counts.clockSteps, 1);
  const after = /** @type {any} */ (p.poseAt(1016)).pose;
  assert.ok(distance(before, after) < 0.01, 'the drawing continues from where it was');
  const later = /** @type {any} */ (p.poseAt(1950)); // 41 850 on the sender's new clock, 100 ms behind
  assert.equal(later.state, 'interpolating', 'and plays the new timeline');
  assert.ok(Math.abs(later.pose[0] - 0.185) < 0.002, `x ${later.pose[0]}`);
});

test('a member who stops sending is held still in every mode', () => {
  for (const mode of PLAYOUT_MODES) {
    const p = new StreamPlayout(mode);
    for (let seq = 0; seq < 5; seq++) p.push(seq, seq * 100, seq * 100 + 5, at(seq));
    for (let now = 400; now < 2000; now += 16) p.poseAt(now);
    const a = /** @type {any} */ (p.poseAt(3000));
    const b = /** @type {any} */ (p.poseAt(9000));
    assert.deepEqual(a.pose, b.pose, mode);
    assert.ok(mode === 'ease' || a.state === 'holding', `${mode}: ${a.state}`);
  }
});

test('with 10 % loss the default (predict) draws within half of ease\'s p95 error over the scripted paths, with no more jumps', () => {
  assert.equal(DEFAULT_PLAYOUT, 'predict');
  const walks = [...PATH_KINDS.keys()].map((index) => walk({ loss: 0.1, seed: 7, index, seconds: 30 }));
  const pooled = (/** @type {string} */ mode) => DrawnErrorTally.merged(walks.map((w) => w[mode].toJSON())).summary();
  const p95 = (/** @type {string} */ mode) => /** @type {number} */ (pooled(mode).positionCm.p95);
  assert.ok(p95('predict') <= p95('ease') / 2, `predict p95 ${p95('predict')} cm vs ease ${p95('ease')} cm`);
  assert.ok(pooled('predict').jumps <= pooled('ease').jumps, `jumps ${pooled('predict').jumps} vs ${pooled('ease').jumps}`);
  // the newest pose alone snaps at every update that moved (the baseline the others smooth)
  assert.ok(/** @type {number} */ (pooled('newest').jumpsPerMinute) > 60, `newest: ${pooled('newest').jumpsPerMinute} jumps/min`);
  walks.forEach((w, index) => {
    const path = PATH_KINDS[index];
    const pathP95 = (/** @type {string} */ mode) => /** @type {number} */ (w[mode].summary().positionCm.p95);
    assert.ok(pathP95('predict') < pathP95('ease'), `${path}: predict p95 ${pathP95('predict')} cm vs ease ${pathP95('ease')} cm`);
    assert.ok(pathP95('interpolate') < pathP95('ease'), `${path}: interpolate p95 ${pathP95('interpolate')} cm vs ease ${pathP95('ease')} cm`);
    const shares = w.predict.summary().shares;
    assert.ok(shares.holding !== null && shares.holding > 0, `${path}: the lost updates show as time held`);
  });
});

test('updates held up for a second now and then (a TCP retransmission), drawn at 30 fps: predict walks its corrections, no jumps', () => {
  for (const index of PATH_KINDS.keys()) {
    const w = walk({ loss: 0.1, seed: 7, index, seconds: 30, fps: 30, stalls: 0.05 });
    assert.equal(w.predict.jumps, 0, `${PATH_KINDS[index]}: ${w.predict.jumps} jumps`);
  }
});

test('extrapolate carries on no faster than MAX_EXTRAPOLATED_SPEED: a 5 m/s step is a tracking error, not a phone', () => {
  const prev = { seq: 0, sendTime: 0, pose: at(0) };
  const last = { seq: 1, sendTime: 100, pose: at(0.5) };
  assert.ok(Math.abs(extrapolate(prev, last, 100)[0] - (0.5 + MAX_EXTRAPOLATED_SPEED * 0.1)) < 1e-9);
  const walk = { seq: 1, sendTime: 100, pose: at(0.1) };
  assert.ok(Math.abs(extrapolate(prev, walk, 100)[0] - 0.2) < 1e-9, '1 m/s goes on as it was');
});

test('hermiteAt passes through its poses; extrapolate continues a turn', () => {
  const s = [0, 1, 2, 3].map((i) => ({ seq: i, sendTime: i * 100, pose: at(i * i) }));
  assert.ok(Math.abs(hermiteAt(s[0], s[1], s[2], s[3], 100)[0] - 1) < 1e-9);
  assert.ok(Math.abs(hermiteAt(s[0], s[1], s[2], s[3], 200)[0] - 4) < 1e-9);
  const q = (/** @type {number} */ deg) => /** @type {Pose} */ ([0, 0, 0, 0, Math.sin((deg * Math.PI) / 360), 0, Math.cos((deg * Math.PI) / 360)]);
  const turned = extrapolate({ seq: 0, sendTime: 0, pose: q(0) }, { seq: 1, sendTime: 100, pose: q(10) }, 50);
  assert.ok(Math.abs((2 * Math.atan2(turned[4], turned[6]) * 180) / Math.PI - 15) < 1e-6);
});

test('Playout keeps one stream per sender; --playout lists are checked', () => {
  const p = new Playout('ease');
  p.push(7, 0, 0, 10, at(1));
  assert.equal(p.poseAt(7, 10)?.pose[0], 1);
  assert.equal(p.poseAt(8, 10), null);
  p.forget(7);
  assert.equal(p.poseAt(7, 20), null);
  assert.throws(() => new Playout(/** @type {any} */ ('snap')), /unknown playout mode "snap"/);
  assert.deepEqual(parsePlayoutModes('ease, predict,ease'), ['ease', 'predict']);
  assert.throws(() => parsePlayoutModes('ease,fast'), /--playout takes a comma-separated list of newest, ease, interpolate, predict; got "ease,fast"/);
});

test('PlayoutWatch: without the truth, time by state, how far behind, and jumps against the sender\'s own motion', () => {
  /** @param {import('./playout.js').PlayoutMode} mode */
  const watched = (mode) => {
    const p = new StreamPlayout(mode);
    const w = new PlayoutWatch();
    for (let seq = 0, now = 0; now < 10_000; now += 1000 / 60) {
      // 0.3 m/s, an update every 167 ms, arriving 20 ms later
      while (seq * CYCLE_MS + 20 <= now) { p.push(seq, seq * CYCLE_MS, seq * CYCLE_MS + 20, at(0.3 * seq * CYCLE_MS / 1000)); seq++; }
      const d = p.poseAt(now);
      if (d) w.frame(now, d.pose, d.state, p.behindMs(now), p.speedMps());
    }
    return w.summary();
  };
  const newest = watched('newest');
  const predict = watched('predict');
  assert.ok(/** @type {number} */ (newest.jumpsPerMinute) > 300, `the newest pose snaps at every update: ${newest.jumpsPerMinute}/min`);
  assert.equal(predict.jumps, 0);
  assert.ok(Math.abs(predict.seconds - 10) < 0.1);
  assert.ok(/** @type {number} */ (predict.shares?.extrapolating) > 0.95);
  assert.ok(/** @type {number} */ (newest.behindMs) > 50 && /** @type {number} */ (predict.behindMs) < 5, `behind: newest ${newest.behindMs}, predict ${predict.behindMs} ms`);
  assert.deepEqual(new PlayoutWatch().summary(), { seconds: 0, behindMs: null, shares: null, jumps: 0, jumpsPerMinute: null });
});
