// Scripted pose paths for load tests: each simulated phone walks around the
// marker at its own radius and phase, looking at the centre, the way people
// do: a steady circle, a circle with stops, back and forth along an arc, or
// a square with sharp corners (PATH_KINDS, chosen by the phone's index), so
// that playout is judged on stops, turns and reversals as well as on a circle.
// Time is the epoch clock in ms (`epochNow()`), which every process on a
// machine shares: the drawn error compares a receiver's drawing with the
// sender's true pose at the same instant (docs/architecture.md, Drawn error).

/** @typedef {'circle' | 'stop-and-go' | 'reverse' | 'turns'} PathKind */

/** @type {readonly PathKind[]} */
export const PATH_KINDS = Object.freeze(['circle', 'stop-and-go', 'reverse', 'turns']);

/** One turn around the marker every 20 s on the circle. */
const TURN_MS = 20_000;
/** stop-and-go: walks 3 s, stands 2 s. */
const WALK_MS = 3000;
const STAND_MS = 2000;
/** reverse: 4 s one way along the arc, 4 s back. */
const LEG_MS = 4000;

/** Epoch time in ms with sub-millisecond resolution: the same instant in every process of a machine. */
export const epochNow = () => performance.timeOrigin + performance.now();

/** @param {number} index */
export const pathKind = (index) => PATH_KINDS[index % PATH_KINDS.length];

/** The circle's time with stops: the walk pauses for STAND_MS after every WALK_MS. @param {number} t */
function stopAndGoTime(t) {
  const period = WALK_MS + STAND_MS;
  return Math.floor(t / period) * WALK_MS + Math.min(t % period, WALK_MS);
}

/** The circle's time going back and forth: a triangle wave. @param {number} t */
function reverseTime(t) {
  const m = t % (2 * LEG_MS);
  return m < LEG_MS ? m : 2 * LEG_MS - m;
}

/**
 * A point on the square inscribed in the circle of `radius`, at the circle's speed.
 * @param {number} radius @param {number} phase radians @param {number} t ms @returns {[number, number]} x, z
 */
function squarePoint(radius, phase, t) {
  const side = radius * Math.SQRT2;
  const perimeter = 4 * side;
  const travelled = (((t / TURN_MS) * 2 * Math.PI * radius) + (phase / (2 * Math.PI)) * perimeter) % perimeter;
  const edge = Math.floor(travelled / side);
  const along = travelled - edge * side - side / 2;
  const h = side / 2;
  /** @type {[number, number][]} */
  const corners = [[h, along], [-along, h], [-h, -along], [along, -h]];
  return corners[edge];
}

/**
 * Pose of simulated peer `index` at epoch time `tMs`: 0.3 m above the marker, at a radius of
 * 0.5..1 m, on the path its index picks, with the camera yawed towards the marker.
 * @param {number} index
 * @param {number} tMs epoch ms (epochNow())
 * @returns {import('./protocol.js').Pose}
 */
export function scriptedPose(index, tMs) {
  const radius = 0.5 + ((index * 0.137) % 0.5);
  const phase = index * 2.399;
  const kind = pathKind(index);
  let x;
  let z;
  if (kind === 'turns') {
    [x, z] = squarePoint(radius, phase, tMs);
  } else {
    const t = kind === 'stop-and-go' ? stopAndGoTime(tMs) : kind === 'reverse' ? reverseTime(tMs) : tMs;
    const angle = phase + (t / TURN_MS) * 2 * Math.PI;
    x = radius * Math.cos(angle);
    z = radius * Math.sin(angle);
  }
  // yaw so the camera faces the centre: rotation about +y by (-angle - pi/2)
  const yaw = -Math.atan2(z, x) - Math.PI / 2;
  return [x, 0.3, z, 0, Math.sin(yaw / 2), 0, Math.cos(yaw / 2)];
}
