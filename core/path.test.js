import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PATH_KINDS, epochNow, pathKind, scriptedPose } from './path.js';
import { distance } from './pose-math.js';

const T0 = 1_764_633_600_000; // an epoch instant: the paths run on the shared epoch clock

/** Positions of path `index` every `stepMs` for `ms`. @param {number} index @param {number} ms @param {number} stepMs */
const track = (index, ms, stepMs = 10) => Array.from({ length: Math.floor(ms / stepMs) }, (_, i) => scriptedPose(index, T0 + i * stepMs));

test('every path is continuous, walks at most about 0.35 m/s and keeps the camera\'s axis on the marker', () => {
  for (const index of PATH_KINDS.keys()) {
    const poses = track(index, 20_000);
    for (let i = 1; i < poses.length; i++) assert.ok(distance(poses[i], poses[i - 1]) < 0.0035, `${pathKind(index)} at ${i}`);
    for (const p of poses) {
      const yaw = 2 * Math.atan2(p[4], p[6]);
      const axis = [-Math.sin(yaw), -Math.cos(yaw)]; // the camera's z axis, turned about +y
      const toCentre = [-p[0], -p[2]].map((v) => v / Math.hypot(p[0], p[2]));
      assert.ok(Math.abs(axis[0] * toCentre[0] + axis[1] * toCentre[1]) > 0.999, `${pathKind(index)} keeps the marker on its axis`);
    }
  }
});

test('the paths stop, reverse and turn sharply, as people do', () => {
  assert.deepEqual([0, 1, 2, 3].map(pathKind), ['circle', 'stop-and-go', 'reverse', 'turns']);
  const speeds = (/** @type {number} */ index) => track(index, 10_000, 100).slice(1).map((p, i, a) => distance(p, i === 0 ? scriptedPose(index, T0) : a[i - 1]));
  assert.ok(speeds(0).every((d) => d > 0.01), 'the circle never stops');
  assert.ok(speeds(1).filter((d) => d === 0).length >= 30, 'stop-and-go stands 2 s in every 5');
  const reverse = track(2, 8000, 1000).map((p) => Math.atan2(p[2], p[0]));
  const turning = reverse.slice(1).map((a, i) => Math.sign(Math.sin(a - reverse[i])));
  assert.ok(turning.includes(1) && turning.includes(-1), 'reverse goes both ways');
  const square = track(3, 20_000, 50);
  const headings = square.slice(1).map((p, i) => Math.atan2(p[2] - square[i][2], p[0] - square[i][0]));
  const sharp = headings.slice(1).filter((h, i) => Math.abs(Math.sin(h - headings[i])) > 0.5).length;
  assert.ok(sharp >= 3, `turns has corners (${sharp})`);
});

test('epochNow is the epoch clock', () => {
  assert.ok(Math.abs(epochNow() - Date.now()) < 50);
});
