// Scripted pose paths for load tests: each simulated phone walks a circle
// around the marker at its own radius and phase, looking at the centre.

/**
 * Pose of simulated peer `index` at time `tMs`: position on a circle of
 * radius 0.5..1 m, 0.3 m above the marker, turning once every 20 s, with
 * the camera yawed towards the marker.
 * @param {number} index
 * @param {number} tMs
 * @returns {import('./protocol.js').Pose}
 */
export function scriptedPose(index, tMs) {
  const radius = 0.5 + ((index * 0.137) % 0.5);
  const angle = (index * 2.399) + (tMs / 20000) * 2 * Math.PI;
  const x = radius * Math.cos(angle);
  const z = radius * Math.sin(angle);
  // yaw so the camera faces the centre: rotation about +y by (-angle - pi/2)
  const yaw = -angle - Math.PI / 2;
  return [x, 0.3, z, 0, Math.sin(yaw / 2), 0, Math.cos(yaw / 2)];
}
