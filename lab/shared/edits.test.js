import { test } from 'node:test';
import assert from 'node:assert/strict';

import { SharedScene } from '../../core/scene.js';
import { REMOVE_SHARE, WORKLOAD_OBJECTS, editOnce, startEditing } from './edits.js';

/** A member as the workload sees it, over a real scene. @param {number} id */
function member(id) {
  const scene = new SharedScene();
  return {
    scene,
    connected: true,
    addObject: (/** @type {string} */ kind, /** @type {any} */ pose) => scene.add(kind, pose, id),
    moveSceneObject: (/** @type {number} */ o, /** @type {any} */ pose) => scene.move(o, pose, id),
    removeObject: (/** @type {number} */ o) => scene.remove(o, id),
  };
}

test('the workload adds up to WORKLOAD_OBJECTS, then mostly moves objects the group holds, and sometimes removes one', () => {
  const m = member(1);
  let seed = 1;
  const random = () => { seed = (seed * 16807) % 2147483647; return seed / 2147483647; };
  for (let i = 0; i < WORKLOAD_OBJECTS; i++) assert.equal(editOnce(m, random).version, 1, 'an add');
  let moves = 0;
  let removes = 0;
  for (let i = 0; i < 400; i++) {
    const r = editOnce(m, random);
    if (r.removed) removes++;
    else if (r.version > 1) moves++;
  }
  assert.ok(moves > removes && removes > 0, `${moves} moves, ${removes} removes`);
  assert.ok(Math.abs(removes / 400 - REMOVE_SHARE) < 0.06, `about ${REMOVE_SHARE * 100} % removes`);
  for (const o of m.scene.objects()) assert.ok(Math.abs(Math.hypot(o.pose[3], o.pose[4], o.pose[5], o.pose[6]) - 1) < 1e-6, 'orientations are unit quaternions');
});

test('startEditing: about N a minute per client, none while a client is away, none after stop', (t) => {
  // the test's own clock and timers: a loaded machine delays real ticks, and the count must not depend on it
  t.mock.timers.enable({ apis: ['setInterval', 'Date'] });
  let seed = 7;
  const random = () => { seed = (seed * 16807) % 2147483647; return seed / 2147483647; };
  const members = [member(1), member(2)];
  members[1].connected = false;
  const editing = startEditing(members, 600, random, Date.now); // one per 100 ms on average
  for (let ms = 0; ms < 10_000; ms += 20) t.mock.timers.tick(20);
  editing.stop();
  const made = editing.edits();
  assert.ok(made >= 80 && made <= 120, `${made} edits in 10 s at a mean gap of 100 ms`);
  assert.equal(members[1].scene.held.size, 1, 'the away member edited nothing (it holds only the car)');
  t.mock.timers.tick(1000);
  assert.equal(editing.edits(), made, 'nothing after stop');
});
