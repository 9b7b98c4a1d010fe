import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DrawnErrorMeter, DrawnErrorTally } from './drawn-error.js';
import { DrawnErrorLab, DrawnTimeline, PlayoutProbe } from './playout-probe.js';

/** @typedef {import('./protocol.js').Pose} Pose */
/** @param {number} x @returns {Pose} */
const at = (x) => [x, 0, 0, 0, 0, 0, 1];

/** A sender moving 1 m/s along x, one update every 100 ms, sent at its position; `lost` seqs never arrive. */
function feed(/** @type {PlayoutProbe} */ probe, /** @type {number} */ sender, /** @type {Set<number>} */ lost = new Set()) {
  for (let seq = 1; seq <= 30; seq++) if (!lost.has(seq)) probe.arrive(sender, seq, seq * 100, seq * 100 + 20, at(seq / 10));
}

test('a probe draws every sender in every mode from the same arrivals, into one tally per mode', () => {
  const lab = new DrawnErrorLab(['ease', 'predict'], 0);
  const probe = new PlayoutProbe(lab);
  let now = 0;
  for (let seq = 1; seq <= 30; seq++) {
    for (const sender of [7, 8]) probe.arrive(sender, seq, seq * 100, seq * 100 + 20, at(seq / 10));
    for (; now < seq * 100 + 100; now += 20) probe.render(now, () => at(now / 1000));
  }
  for (const mode of ['ease', 'predict']) assert.equal(lab.tallies[mode].streams, 2, `${mode}: one stream per sender`);
  const ease = lab.tallies.ease.summary();
  const predict = lab.tallies.predict.summary();
  assert.equal(ease.frames, predict.frames, 'the same frames in both modes');
  assert.ok(/** @type {number} */ (predict.positionCm.p95) < /** @type {number} */ (ease.positionCm.p95),
    `predict ${predict.positionCm.p95} cm under ease ${ease.positionCm.p95} cm on a straight walk`);
});

test('updates missing on arrival are counted in the second they were found missing', () => {
  const lab = new DrawnErrorLab(['predict'], 1000);
  const probe = new PlayoutProbe(lab);
  feed(probe, 3, new Set([12, 13, 25]));
  const buckets = lab.timeline.toJSON();
  assert.deepEqual(buckets.map((b) => [b.s, b.missing]), [[0, 2], [1, 1]], 'seq 14 arrives at 1.42 s, seq 26 at 2.62 s');
});

test('a sender that leaves stops being drawn; what it drew stays counted', () => {
  const lab = new DrawnErrorLab(['interpolate'], 0);
  const probe = new PlayoutProbe(lab);
  feed(probe, 5);
  probe.render(3000, () => at(3));
  probe.render(3020, () => at(3.02));
  probe.forget(5);
  probe.render(3040, () => at(3.04));
  assert.equal(lab.tallies.interpolate.summary().frames, 2);
  probe.render(3060, () => null);
  assert.equal(lab.tallies.interpolate.summary().frames, 2, 'an unknown truth is not measured');
});

test('tallies and timelines merge: two generators read as one', () => {
  const one = new DrawnErrorTally();
  const a = new DrawnErrorTally();
  const b = new DrawnErrorTally();
  const both = [new DrawnErrorMeter(one), new DrawnErrorMeter(one)];
  const apart = [new DrawnErrorMeter(a), new DrawnErrorMeter(b)];
  for (let i = 0; i < 50; i++) {
    for (const [k, m] of [...both.entries(), ...apart.entries()]) m.frame(i * 16, at(i * 0.01 + (k ? 0.05 * (i % 7 === 0 ? 1 : 0) : 0.02)), at(i * 0.01), 'extrapolating');
  }
  const merged = DrawnErrorTally.merged([a.toJSON(), b.toJSON(), null]).summary();
  assert.deepEqual(merged, one.summary());
  assert.ok(merged.jumps > 0, 'the second stream jumps');

  const t1 = new DrawnTimeline(0);
  const t2 = new DrawnTimeline(0);
  t1.error(500, 'ease', 2); t2.error(700, 'ease', 4); t2.missing(1500, 3);
  assert.deepEqual(DrawnTimeline.merged([t1.toJSON(), t2.toJSON()]), [
    { s: 0, missing: 0, meanCm: { ease: 3 }, maxCm: { ease: 4 } },
    { s: 1, missing: 3, meanCm: {}, maxCm: {} },
  ]);
});
