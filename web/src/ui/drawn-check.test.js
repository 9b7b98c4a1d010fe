import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createDrawnCheck } from './drawn-check.js';
import { DEFAULT_VIDEO, syntheticTruthAt } from '../ar/synthetic.js';
import { DrawnErrorTally } from '../../../core/drawn-error.js';

test('the AR view\'s drawn check: a neighbour on the synthetic video, judged only while its marker is in view', () => {
  const members = new Map([[7, { name: 'ar1' }]]);
  const check = /** @type {NonNullable<ReturnType<typeof createDrawnCheck>>} */ (
    createDrawnCheck('newest,predict', () => /** @type {any} */ ({ members })));
  assert.equal(createDrawnCheck(null, () => null), null, 'off without ?drawn=');
  assert.throws(() => createDrawnCheck('fast', () => null), /--playout takes/);
  const t0 = performance.now();
  const videoStart = performance.timeOrigin + t0; // ar1's video started with this test
  check.truthOf('ar1', videoStart);
  check.start();
  const loopMs = (1000 * DEFAULT_VIDEO.frames) / DEFAULT_VIDEO.fps;
  let seq = 0;
  let judged = 0;
  for (let t = 0; t < 2 * loopMs; t += 1000 / 30) {
    // ar1 sends what its video shows every 167 ms (the untracked pose while the marker is away); it arrives 30 ms later
    if (Math.floor(t / 167) > seq - 1 && t >= 30) {
      const sentAt = seq * 167;
      const pose = syntheticTruthAt(sentAt) ?? [0, 0, 0, 0, 0, 0, 1];
      check.onClientEvent('update', { update: { sender: 7, seq: seq++, sendTime: sentAt, pose }, arrivalTime: t0 + sentAt + 30 });
    }
    check.frame(t0 + t);
    if (syntheticTruthAt(t)) judged++;
  }
  const lab = check.toJSON();
  const predict = lab.modes.predict;
  assert.ok(predict.positionCm.n > 0 && predict.positionCm.n <= judged, `${predict.positionCm.n} frames judged of ${judged} with the marker in view`);
  assert.equal(lab.modes.newest.positionCm.n, predict.positionCm.n, 'the same frames in every mode');
  const p95 = (/** @type {string} */ mode) => /** @type {number} */ (DrawnErrorTally.merged([lab.modes[mode]]).summary().positionCm.p95);
  assert.ok(p95('predict') < p95('newest'), `predict ${p95('predict')} cm, newest ${p95('newest')} cm`);
  check.stop();
  check.frame(t0 + 3 * loopMs);
  assert.equal(check.toJSON().modes.predict.positionCm.n, predict.positionCm.n, 'nothing judged after stop');
});
