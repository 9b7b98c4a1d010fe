// Small pose arithmetic on the wire's pose layout [x, y, z, qx, qy, qz, qw]
// (metres, unit quaternion), shared by the playout and the drawn-error meter
// so that neither needs three.js (both run in Node too).

/** @typedef {import('./protocol.js').Pose} Pose */
/** @typedef {[number, number, number, number]} Quat [x, y, z, w] */

/** @param {Pose} pose @returns {Quat} */
export const quatOf = (pose) => [pose[3], pose[4], pose[5], pose[6]];

/** @param {Quat} q @returns {Quat} */
export const conjugate = (q) => [-q[0], -q[1], -q[2], q[3]];

/** Hamilton product a * b. @param {Quat} a @param {Quat} b @returns {Quat} */
export function multiply(a, b) {
  const [ax, ay, az, aw] = a;
  const [bx, by, bz, bw] = b;
  return [
    aw * bx + ax * bw + ay * bz - az * by,
    aw * by - ax * bz + ay * bw + az * bx,
    aw * bz + ax * by - ay * bx + az * bw,
    aw * bw - ax * bx - ay * by - az * bz,
  ];
}

/** @param {Quat} q @returns {Quat} */
export function normalize(q) {
  const n = Math.hypot(q[0], q[1], q[2], q[3]) || 1;
  return [q[0] / n, q[1] / n, q[2] / n, q[3] / n];
}

/**
 * q raised to the power t (t may exceed 1: extrapolation), along the short way.
 * @param {Quat} q unit quaternion @param {number} t @returns {Quat}
 */
export function power(q, t) {
  const s = q[3] < 0 ? -1 : 1; // the short way round
  const w = Math.min(1, s * q[3]);
  const half = Math.acos(w);
  const sinHalf = Math.sin(half);
  if (sinHalf < 1e-9) return [0, 0, 0, 1];
  const k = Math.sin(half * t) / sinHalf;
  return [s * q[0] * k, s * q[1] * k, s * q[2] * k, Math.cos(half * t)];
}

/** Spherical interpolation from a to b by t (0..1, or beyond to extrapolate). @param {Quat} a @param {Quat} b @param {number} t */
export const slerp = (a, b, t) => normalize(multiply(power(multiply(b, conjugate(a)), t), a));

/** Angle between two orientations, degrees (0..180). @param {Quat} a @param {Quat} b */
export function angleDeg(a, b) {
  const dot = Math.abs(a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3]);
  return (2 * Math.acos(Math.min(1, dot)) * 180) / Math.PI;
}

/** Distance between two poses' positions, metres. @param {Pose} a @param {Pose} b */
export const distance = (a, b) => Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);

/** @param {number[]} p @param {Quat} q @returns {Pose} */
export const poseOf = (p, q) => [p[0], p[1], p[2], q[0], q[1], q[2], q[3]];
