// The edit workload of `carlab sim` and `carlab bench --edits-per-minute N`
// (Node clients and the bench's pages alike): every client edits
// its group's shared scene N times a minute on average (exponential gaps, so
// members' edits fall at random against each other), as a person would:
// adds an object of the palette while the scene is nearly empty, otherwise
// mostly moves and turns one object picked at random from what the group
// holds (so members edit the same objects and different ones), and
// sometimes removes one.
import { CAR_ID } from '../../core/scene.js';
import { SCENE_KINDS } from '../../core/protocol.js';

/** Seconds before the window's end the clients stop editing, so that the end-of-run check sees a settled scene. */
export const SCENE_SETTLE_S = 3;

/** Objects (besides the car) a group keeps about: below it an edit adds one. */
export const WORKLOAD_OBJECTS = 6;
/** Share of edits that remove an object once the group holds WORKLOAD_OBJECTS. */
export const REMOVE_SHARE = 0.1;
/** How often the workload looks whose edit is due (ms). */
const TICK_MS = 20;

/** @typedef {{ scene: import('../../core/scene.js').SharedScene, addObject: Function, moveSceneObject: Function, removeObject: Function, connected: boolean }} Editor */

/**
 * One edit by a client, chosen as described above.
 * @param {Editor} c
 * @param {() => number} random
 */
export function editOnce(c, random) {
  const objects = c.scene.objects();
  const others = objects.filter((r) => r.id !== CAR_ID);
  /** @type {import('../../core/protocol.js').Pose} */
  const pose = [random() * 0.8 - 0.4, 0, random() * 0.8 - 0.4, 0, Math.sin(random() * Math.PI), 0, 1];
  const norm = Math.hypot(pose[4], 1);
  pose[4] /= norm;
  pose[6] /= norm;
  if (others.length < WORKLOAD_OBJECTS) return c.addObject(SCENE_KINDS[1 + Math.floor(random() * (SCENE_KINDS.length - 1))], pose);
  if (random() < REMOVE_SHARE) return c.removeObject(others[Math.floor(random() * others.length)].id);
  return c.moveSceneObject(objects[Math.floor(random() * objects.length)].id, pose);
}

/**
 * Starts every client's edits; each waits an exponential gap of mean 60 / editsPerMinute s.
 * @param {Editor[]} clients
 * @param {number} editsPerMinute
 * @param {() => number} [random]
 * @param {() => number} [clock] ms, monotonic (tests give their own)
 * @returns {{ stop: () => void, edits: () => number }}
 */
export function startEditing(clients, editsPerMinute, random = Math.random, clock = () => performance.now()) {
  const meanMs = 60_000 / editsPerMinute;
  const gap = () => -Math.log(1 - random()) * meanMs;
  const start = clock();
  const due = clients.map(() => start + gap());
  let edits = 0;
  const timer = setInterval(() => {
    const now = clock();
    clients.forEach((c, k) => {
      if (due[k] > now) return;
      due[k] = now + gap();
      if (!c.connected) return; // away: a person cannot edit a scene it cannot see either
      editOnce(c, random);
      edits++;
    });
  }, TICK_MS);
  return { stop: () => clearInterval(timer), edits: () => edits };
}
