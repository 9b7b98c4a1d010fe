import { test } from 'node:test';
import assert from 'node:assert/strict';

import { createLiveScene } from './live-scene.js';

/**
 * A report's scene part from marks [at, id, version, writer, hash, local] (server clock).
 * @param {number} t0 @param {number} from @param {number[][]} marks @param {{ total?: number, objects?: number, inStep?: boolean }} [o]
 * @returns {import('../core/scene-report.js').SceneReport}
 */
function part(t0, from, marks, o = {}) {
  return {
    t0, clockErrorMs: 3, objects: o.objects ?? 1, digest: 1, inStep: o.inStep ?? true, from,
    total: o.total ?? from + marks.length, log: marks.flatMap(([at, ...rest]) => [at - t0, ...rest]),
  };
}

test('a group measured up to its horizon: convergence per edit, disagreement, edits still on their way', () => {
  const live = createLiveScene({ remeasureMs: 0 });
  // A (writer 1) edits object 5 at 1000 and at 1900; B holds the first at 1100 and reports at 2000, before the second reached it
  live.add('g', 'a', part(0, 0, [[1000, 5, 1, 1, 11, 1], [1900, 5, 2, 1, 12, 1]]), 2050, false);
  live.add('g', 'b', part(500, 0, [[1100, 5, 1, 1, 11, 0]], { inStep: false }), 2000, false);
  const v = /** @type {import('./live-scene.js').SceneView} */ (live.view('g'));
  assert.deepEqual([v.members, v.inStep, v.edits, v.pending, v.convergenceMs.n, v.convergenceMs.p50], [2, 1, 2, 1, 1, 100]);
  // member-time: A 2000 ms, B 1500 ms; lacking: B 100 ms of the first, B 100 ms of the second (from 1900 to the horizon)
  assert.ok(Math.abs(/** @type {number} */ (v.disagreementPct) - (100 * 200) / 3500) < 1e-9);
  // B's next report: it held the second at 2080
  live.add('g', 'b', part(500, 1, [[2080, 5, 2, 1, 12, 0]]), 2500, false);
  assert.equal(live.view('g')?.pending, 1, 'A has not reported past 2050: the horizon stays');
  live.add('g', 'a', part(0, 2, []), 2600, false);
  const w = /** @type {import('./live-scene.js').SceneView} */ (live.view('g'));
  assert.deepEqual([w.edits, w.pending, w.convergenceMs.n, w.convergenceMs.max], [2, 0, 2, 180]);
  assert.equal(live.view('nobody'), null);
});

test('a chunk sent twice counts once; a missing one leaves its member out; members that left are not waited on', () => {
  const live = createLiveScene({ remeasureMs: 0 });
  const first = part(0, 0, [[100, 5, 1, 1, 11, 1], [200, 6, 1, 1, 21, 1]]);
  live.add('g', 'a', first, 1000, false);
  live.add('g', 'a', first, 1500, false);
  live.add('g', 'b', part(0, 0, [[150, 5, 1, 1, 11, 0], [260, 6, 1, 1, 21, 0]]), 1000, false);
  live.add('g', 'c', part(0, 2, [[300, 6, 1, 1, 21, 0]]), 1000, false); // its chunk 0..1 never came
  let v = /** @type {import('./live-scene.js').SceneView} */ (live.view('g'));
  assert.deepEqual([v.edits, v.pending, v.membersIncomplete, v.convergenceMs.max], [2, 0, 1, 60]);
  live.add('g', 'b', part(0, 2, [], { total: 2 }), 1600, true); // b leaves
  live.add('g', 'a', part(0, 2, [[1550, 7, 1, 1, 31, 1]]), 2000, false);
  v = /** @type {import('./live-scene.js').SceneView} */ (live.view('g'));
  assert.deepEqual([v.members, v.edits, v.pending], [1, 3, 0], 'the edit after b left is nobody else\'s to hold');
  live.forget('g', 'a');
  assert.equal(live.view('g'), null, 'only members that left, or incomplete ones');
});

test('memory is bounded: marks older than the window, or over the cap, are dropped, and the window starts after them', () => {
  const live = createLiveScene({ windowMs: 10_000, marksPerMember: 3, remeasureMs: 0 });
  const marks = Array.from({ length: 6 }, (_, i) => [1000 + 100 * i, 5, i + 1, 1, 100 + i, 1]);
  live.add('g', 'a', part(0, 0, marks), 2000, false);
  live.add('g', 'b', part(0, 0, marks.map(([at, ...rest]) => [at + 20, ...rest.slice(0, 4), 0])), 2000, false);
  const v = /** @type {import('./live-scene.js').SceneView} */ (live.view('g'));
  // a keeps its newest three (from 1300), b its (from 1320): the window starts where both are whole
  assert.deepEqual([v.edits, v.convergenceMs.n, v.convergenceMs.max], [2, 2, 20], 'the edits both members\' kept marks cover');
  live.add('g', 'a', part(0, 6, [[30_000, 5, 7, 1, 200, 1]]), 30_100, false);
  live.add('g', 'b', part(0, 6, [[30_050, 5, 7, 1, 200, 0]]), 30_100, false);
  const w = /** @type {import('./live-scene.js').SceneView} */ (live.view('g'));
  assert.deepEqual([w.edits, w.convergenceMs.max], [1, 50], 'the window holds only the newest');
});

test('a group is measured again at most every remeasureMs, and only after a member reported', () => {
  let t = 0;
  const live = createLiveScene({ now: () => t, remeasureMs: 2000 });
  live.add('g', 'a', part(0, 0, [[100, 5, 1, 1, 11, 1]]), 1000, false);
  live.add('g', 'b', part(0, 0, [[150, 5, 1, 1, 11, 0]]), 1000, false);
  const first = live.view('g');
  assert.equal(first?.edits, 1);
  live.add('g', 'a', part(0, 1, [[1200, 6, 1, 1, 21, 1]]), 1500, false);
  live.add('g', 'b', part(0, 1, [[1250, 6, 1, 1, 21, 0]]), 1500, false);
  t = 1999;
  assert.equal(live.view('g'), first, 'within remeasureMs: the last view');
  t = 2000;
  assert.equal(live.view('g')?.edits, 2);
  t = 9000;
  const again = live.view('g');
  assert.equal(live.view('g'), again, 'nothing new: not measured again');
});
