// Small rigid-motion helpers shared by the synthetic camera and the tests
// (three.js is only used where something is drawn). Matrices are 3x3,
// row-major arrays of rows; quaternions are [x, y, z, w].
// Runs in the browser and in Node.

/** @typedef {[number, number, number]} Vec3 */
/** @typedef {[number, number, number, number]} Quat */
/** @typedef {number[][]} Mat3 */

/** @param {Vec3} a @param {Vec3} b @returns {Vec3} */
export const sub = (a, b) => [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
/** @param {Vec3} a @param {Vec3} b @returns {Vec3} */
export const add = (a, b) => [a[0] + b[0], a[1] + b[1], a[2] + b[2]];
/** @param {Vec3} a @param {number} s @returns {Vec3} */
export const scale = (a, s) => [a[0] * s, a[1] * s, a[2] * s];
/** @param {Vec3} a @param {Vec3} b */
export const dot = (a, b) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
/** @param {Vec3} a @param {Vec3} b @returns {Vec3} */
export const cross = (a, b) => [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
/** @param {Vec3} a */
export const norm = (a) => Math.hypot(a[0], a[1], a[2]);
/** @param {Vec3} a @returns {Vec3} */
export const normalize = (a) => scale(a, 1 / norm(a));

/**
 * Matrix whose columns are the given vectors.
 * @param {Vec3} c0 @param {Vec3} c1 @param {Vec3} c2 @returns {Mat3}
 */
export function fromColumns(c0, c1, c2) {
  return [[c0[0], c1[0], c2[0]], [c0[1], c1[1], c2[1]], [c0[2], c1[2], c2[2]]];
}

/** @param {Mat3} m @returns {Mat3} */
export function transpose(m) {
  return [[m[0][0], m[1][0], m[2][0]], [m[0][1], m[1][1], m[2][1]], [m[0][2], m[1][2], m[2][2]]];
}

/** @param {Mat3} m @param {Vec3} v @returns {Vec3} */
export function mulVec(m, v) {
  return [dot(/** @type {Vec3} */ (m[0]), v), dot(/** @type {Vec3} */ (m[1]), v), dot(/** @type {Vec3} */ (m[2]), v)];
}

/** @param {Mat3} a @param {Mat3} b @returns {Mat3} */
export function mulMat(a, b) {
  return a.map((row) => [0, 1, 2].map((j) => row[0] * b[0][j] + row[1] * b[1][j] + row[2] * b[2][j]));
}

/**
 * Rotation by `angle` radians about a unit `axis`.
 * @param {Vec3} axis @param {number} angle @returns {Mat3}
 */
export function axisAngle([x, y, z], angle) {
  const c = Math.cos(angle);
  const s = Math.sin(angle);
  const t = 1 - c;
  return [
    [t * x * x + c, t * x * y - s * z, t * x * z + s * y],
    [t * x * y + s * z, t * y * y + c, t * y * z - s * x],
    [t * x * z - s * y, t * y * z + s * x, t * z * z + c],
  ];
}

/**
 * Unit quaternion of a rotation matrix (Shepperd's method), w >= 0.
 * @param {Mat3} m @returns {Quat}
 */
export function quatFromMat3(m) {
  const [[m00, m01, m02], [m10, m11, m12], [m20, m21, m22]] = m;
  const trace = m00 + m11 + m22;
  /** @type {Quat} */
  let q;
  if (trace > 0) {
    const s = 0.5 / Math.sqrt(trace + 1);
    q = [(m21 - m12) * s, (m02 - m20) * s, (m10 - m01) * s, 0.25 / s];
  } else if (m00 > m11 && m00 > m22) {
    const s = 2 * Math.sqrt(1 + m00 - m11 - m22);
    q = [0.25 * s, (m01 + m10) / s, (m02 + m20) / s, (m21 - m12) / s];
  } else if (m11 > m22) {
    const s = 2 * Math.sqrt(1 + m11 - m00 - m22);
    q = [(m01 + m10) / s, 0.25 * s, (m12 + m21) / s, (m02 - m20) / s];
  } else {
    const s = 2 * Math.sqrt(1 + m22 - m00 - m11);
    q = [(m02 + m20) / s, (m12 + m21) / s, 0.25 * s, (m10 - m01) / s];
  }
  const n = Math.hypot(...q) * (q[3] < 0 ? -1 : 1);
  return /** @type {Quat} */ (q.map((v) => v / n));
}

/** @param {Quat} q @returns {Mat3} */
export function mat3FromQuat([x, y, z, w]) {
  return [
    [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
    [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
    [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
  ];
}

/**
 * Angle in radians between two orientations.
 * @param {Quat} a @param {Quat} b
 */
export function quatAngle(a, b) {
  const d = Math.abs(a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3]);
  return 2 * Math.acos(Math.min(1, d));
}

/**
 * Orientation of a GL-convention camera (x right, y up, looking down -z)
 * at `eye` looking at `target`, with `up` as the up hint and `roll`
 * radians of turn about the viewing axis (positive turns the image
 * counter-clockwise). Columns are the camera axes in world coordinates.
 * @param {Vec3} eye @param {Vec3} target @param {Vec3} up @param {number} [roll]
 * @returns {Mat3}
 */
export function lookAt(eye, target, up, roll = 0) {
  const z = normalize(sub(eye, target));
  let x = normalize(cross(up, z));
  let y = cross(z, x);
  if (roll) {
    const c = Math.cos(roll);
    const s = Math.sin(roll);
    const xr = add(scale(x, c), scale(y, s));
    const yr = add(scale(y, c), scale(x, -s));
    x = xr;
    y = yr;
  }
  return fromColumns(x, y, z);
}
