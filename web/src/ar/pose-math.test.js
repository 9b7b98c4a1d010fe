import assert from 'node:assert/strict';
import { test } from 'node:test';

import { axisAngle, cross, dot, lookAt, mat3FromQuat, mulMat, quatAngle, quatFromMat3, transpose } from './pose-math.js';

/** @typedef {import('./pose-math.js').Vec3} Vec3 */

const close = (/** @type {number} */ a, /** @type {number} */ b, eps = 1e-9) => assert.ok(Math.abs(a - b) < eps, `${a} != ${b}`);

test('quaternions round-trip through matrices, including near 180 degrees', () => {
  /** @type {[Vec3, number][]} */
  const cases = [[[0, 1, 0], 0.3], [[1, 0, 0], 3.1], [[0.6, 0, 0.8], -2.9], [[0, 0, 1], Math.PI]];
  for (const [axis, angle] of cases) {
    const m = axisAngle(axis, angle);
    const back = mat3FromQuat(quatFromMat3(m));
    for (let r = 0; r < 3; r++) for (let c = 0; c < 3; c++) close(back[r][c], m[r][c]);
    close(quatAngle(quatFromMat3(m), [0, 0, 0, 1]), Math.abs(angle));
  }
});

test('lookAt gives a right-handed orthonormal camera looking at the target', () => {
  const r = lookAt([0.2, 0.5, 0.4], [0, 0, 0], [0, 1, 0], 0.3);
  const id = mulMat(transpose(r), r);
  for (let i = 0; i < 3; i++) for (let j = 0; j < 3; j++) close(id[i][j], i === j ? 1 : 0);
  const col = (/** @type {number} */ j) => /** @type {[number, number, number]} */ ([r[0][j], r[1][j], r[2][j]]);
  const z = cross(col(0), col(1));
  close(dot(z, col(2)), 1);
  // -z points at the target
  /** @type {Vec3} */
  const toTarget = [-0.2, -0.5, -0.4];
  const n = Math.hypot(...toTarget);
  close(-dot(col(2), /** @type {Vec3} */ (toTarget.map((v) => v / n))), 1);
});
