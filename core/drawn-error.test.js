import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DrawnErrorMeter, JUMP_EXCESS_CM, JUMP_FRAME_MS, jumpThresholdCm } from './drawn-error.js';

/** @typedef {import('./protocol.js').Pose} Pose */
/** @param {number} x @param {number} [yawDeg] @returns {Pose} */
const pose = (x, yawDeg = 0) => [x, 0, 0, 0, Math.sin((yawDeg * Math.PI) / 360), 0, Math.cos((yawDeg * Math.PI) / 360)];

test('the drawn error: distance in cm and angle in degrees from the truth at the same instant', () => {
  const m = new DrawnErrorMeter();
  m.frame(0, pose(0.1, 10), pose(0, 0), 'interpolating');
  m.frame(1000, pose(0.03, 0), pose(0, 0), 'holding');
  const s = m.summary();
  assert.equal(s.frames, 2);
  assert.ok(Math.abs(/** @type {number} */ (s.positionCm.max) - 10) < 1e-9);
  assert.ok(Math.abs(/** @type {number} */ (s.positionCm.p50) - 3) < 1e-9);
  assert.ok(Math.abs(/** @type {number} */ (s.angleDeg.max) - 10) < 1e-9);
  assert.deepEqual(s.shares, { interpolating: 0, extrapolating: 0, holding: 1, easing: 0 }, 'time counts for the state it ends in');
});

test('a jump is a render step that moves the drawing more than the truth moved, by the threshold', () => {
  const m = new DrawnErrorMeter();
  // 60 fps; the truth walks 1 cm per frame; the drawing holds, then snaps 5 cm, then follows.
  const truth = [0, 1, 2, 3, 4, 5, 6].map((cm) => pose(cm / 100));
  const drawn = [0, 0, 0, 0, 0, 5, 6].map((cm) => pose(cm / 100));
  truth.forEach((t, i) => m.frame(i * JUMP_FRAME_MS, drawn[i], t, 'extrapolating'));
  const s = m.summary();
  assert.equal(s.jumps, 1, `one step beyond ${JUMP_EXCESS_CM} cm`);
  assert.ok(Math.abs(/** @type {number} */ (s.jumpCm.max) - 4) < 1e-9, 'sized by the excess: 5 cm drawn, 1 cm true');
  assert.ok(Math.abs(/** @type {number} */ (s.jumpsPerMinute) - 600) < 1e-6, 'one jump in 0.1 s');
});

test('a long frame (a stalled renderer) takes a proportionally larger excess to be a jump', () => {
  assert.equal(jumpThresholdCm(JUMP_FRAME_MS / 2), JUMP_EXCESS_CM, 'never under the threshold');
  assert.ok(Math.abs(jumpThresholdCm(100) - 12) < 1e-9, '100 ms: 1.2 m/s x 0.1 s');
  const m = new DrawnErrorMeter();
  m.frame(0, pose(0), pose(0), 'extrapolating');
  m.frame(100, pose(0.1), pose(0.03), 'extrapolating'); // 7 cm more than the truth, in 100 ms
  m.frame(100 + JUMP_FRAME_MS, pose(0.15), pose(0.0305), 'extrapolating'); // then 4.95 cm more in one frame
  assert.equal(m.summary().jumps, 1);
});

test('an empty meter reports nothing measured', () => {
  const s = new DrawnErrorMeter().summary();
  assert.equal(s.frames, 0);
  assert.equal(s.jumpsPerMinute, null);
  assert.equal(s.positionCm.p95, null);
});
