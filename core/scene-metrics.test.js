import { test } from 'node:test';
import assert from 'node:assert/strict';

import { checkSceneAtEnd, measureSceneGroup, summarizeScene } from './scene-metrics.js';

/** @typedef {import('./protocol.js').SceneRecord} SceneRecord */

/** @param {number} id @param {number} version @param {number} writer @param {number} [x] @returns {SceneRecord} */
const rec = (id, version, writer, x = version) => ({ id, version, writer, kind: 1, removed: false, pose: [x, 0, 0, 0, 0, 0, 1] });
/** @param {number} at @param {SceneRecord} record @param {boolean} [local] */
const entry = (at, record, local = false) => ({ at, local, record });

test('convergence time: until the last member present held the edit or a newer one', () => {
  const e1 = rec(7, 1, 1);
  const e2 = rec(7, 2, 2);
  const members = [
    { from: 0, to: 1000, log: [entry(100, e1, true), entry(300, e2)] },
    { from: 0, to: 1000, log: [entry(130, e1), entry(250, e2, true)] },
    // missed e1, got e2 (which wins over it) at 400
    { from: 0, to: 1000, log: [entry(400, e2)] },
  ];
  const m = measureSceneGroup(members);
  assert.equal(m.edits, 2);
  assert.equal(m.converged, 2);
  assert.deepEqual(m.convergenceMs, [300, 150], 'e1 at 100, last held (via e2) at 400; e2 at 250, last at 400');
  // disagreement: member 0 lacked e2 250..300 (50), member 1 lacked e1 100..130 (30),
  // member 2 lacked e1 from 100 and e2 from 250, both until 400 (300)
  assert.equal(m.disagreeMs, 50 + 30 + 300);
  assert.equal(m.memberMs, 3000);
});

test('an edit a member that stayed never got is unconverged, and it disagrees to the end', () => {
  const members = [
    { from: 0, to: 1000, log: [entry(100, rec(3, 1, 1), true)] },
    { from: 0, to: 1000, log: [] },
    { from: 0, to: 200, log: [] }, // left before getting it: not waited for
  ];
  const m = measureSceneGroup(members);
  assert.equal(m.unconverged, 1);
  assert.equal(m.disagreeMs, 900 + 100);
  assert.deepEqual(checkSceneAtEnd(members), { members: 2, agreeing: 1 });
});

test('a late joiner: its sync time, and its disagreement from its join only', () => {
  const a = rec(5, 1, 1);
  const b = rec(6, 1, 1);
  const members = [
    { from: 0, to: 2000, log: [entry(100, a, true), entry(200, b, true)] },
    { from: 1000, to: 2000, log: [entry(1300, b), entry(1450, a)] },
  ];
  const m = measureSceneGroup(members);
  assert.deepEqual(m.joinSyncMs, [450]);
  assert.deepEqual(m.convergenceMs, [0, 0], 'the joiner was not there for the edits');
  assert.equal(m.disagreeMs, 450);
  assert.deepEqual(checkSceneAtEnd(members), { members: 2, agreeing: 2 });
  const s = summarizeScene([members]);
  assert.equal(s.disagreementPct, (100 * 450) / 3000);
  assert.deepEqual(s.atEnd, { groups: 1, members: 2, agreeing: 2, disagreeing: 0 });
});

test('a tie on version goes the same way for the measure as for the members (writer id)', () => {
  const low = rec(9, 1, 1, 0.5);
  const high = rec(9, 1, 2, 0.25);
  const members = [
    { from: 0, to: 1000, log: [entry(100, low, true), entry(140, high)] },
    { from: 0, to: 1000, log: [entry(110, high, true)] },
  ];
  const m = measureSceneGroup(members);
  assert.equal(m.converged, 2);
  assert.deepEqual(m.convergenceMs, [10, 30], 'low is satisfied by high at once on member 1; high reached member 0 at 140');
  assert.deepEqual(checkSceneAtEnd(members), { members: 2, agreeing: 2 });
});

test('members that stopped one after another all stayed when they say so (pages of a bench stop in turn)', () => {
  const e = rec(4, 1, 1);
  const members = [
    { from: 0, to: 1000, stayed: true, log: [entry(100, e, true)] },
    { from: 0, to: 990, stayed: true, log: [entry(150, e)] },
    { from: 0, to: 500, stayed: false, log: [] },
  ];
  assert.deepEqual(checkSceneAtEnd(members), { members: 2, agreeing: 2 });
  assert.equal(measureSceneGroup(members).converged, 1);
});

test('an edit that died with its member (it left before anyone who stayed held it) counts nowhere, and says so', () => {
  const mine = rec(5, 3, 1);
  const lost = rec(5, 3, 9); // wins over mine (writer 9), but never left member 9
  const members = [
    { from: 0, to: 1000, log: [entry(100, mine, true)] },
    { from: 0, to: 1000, log: [entry(120, mine)] },
    { from: 0, to: 300, stayed: false, log: [entry(110, lost, true)] },
  ];
  const m = measureSceneGroup(members);
  assert.equal(m.edits, 1);
  assert.equal(m.lostWithMember, 1);
  assert.equal(m.unconverged, 0);
  assert.equal(m.disagreeMs, 20 + 10, 'member 1 lacked the one edit that counts for 20 ms, member 2 (until its own, newer one) for 10');
  assert.deepEqual(checkSceneAtEnd(members), { members: 2, agreeing: 2 });
  // had one member that stayed got it, it would count: both must hold it then
  members[1].log.push(entry(130, lost));
  assert.equal(measureSceneGroup(members).lostWithMember, 0);
  assert.deepEqual(checkSceneAtEnd(members), { members: 2, agreeing: 1 });
});
