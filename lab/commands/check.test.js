import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { failIfOf, gateCommand, gateRows, run } from './check.js';
import { GATES, drawnHolds } from '../gates/gates.js';
import { DEFAULT_PLAYOUT } from '../../core/playout.js';

const sink = () => {
  let text = '';
  return { stream: new Writable({ write(c, _e, cb) { text += String(c); cb(); } }), text: () => text };
};

/** @type {import('../gates/gates.js').Gate} */
const gate = {
  name: 'g', what: 'a gate', command: 'sim', args: [],
  holds: [{ figure: 'rt.p95', op: '<', bound: 250, measured: '' }, { figure: 'tracking.fps', op: '>=', bound: 3, measured: '' }],
};

test('a gate\'s --fail-if is each bound\'s breaking side', () => {
  assert.equal(failIfOf(gate), 'rt.p95>=250,tracking.fps<3');
});

test('a gate fails when a figure is past its bound or missing, and holds only when every figure is within', () => {
  assert.deepEqual(gateRows(gate, { rt: { p95: 40 }, tracking: { fps: 9.81 } }).map((r) => [r.measured, r.ok]), [['40', true], ['9.81', true]]);
  assert.deepEqual(gateRows(gate, { rt: { p95: 250 }, tracking: { fps: 9 } }).map((r) => r.ok), [false, true], 'at the bound is past it');
  assert.deepEqual(gateRows(gate, { rt: { p95: 40 } }).map((r) => [r.measured, r.ok]), [['40', true], ['missing', false]]);
  assert.deepEqual(gateRows(gate, null).map((r) => r.ok), [false, false], 'a run that wrote no record');
});

test('every gate is a sim, bench, fuzz or churn run with fixed bounds and what they read', () => {
  assert.ok(GATES.length >= 4);
  for (const g of GATES) {
    assert.match(g.command, /^(sim|bench|fuzz|churn)$/);
    assert.ok(!['--out', '--fail-if', '--json'].some((f) => g.args.includes(f)), `${g.name}: check adds --out, --json and --fail-if`);
    for (const h of g.holds) {
      assert.equal(typeof h.bound, 'number');
      assert.match(h.measured, /alone .+, beside a busy core .+/, `${g.name} ${h.figure}: what it read, stated`);
    }
  }
  assert.equal(new Set(GATES.map((g) => g.name)).size, GATES.length);
});

test('carlab check: --list names the gates; an unknown gate or flag is a usage error with the help', async () => {
  const out = sink();
  assert.equal(await run(['--list'], { stdout: out.stream, stderr: sink().stream }), 0);
  for (const g of GATES) assert.match(out.text(), new RegExp(`^${g.name}: `, 'm'));
  const err = sink();
  assert.equal(await run(['--only', 'nope'], { stdout: sink().stream, stderr: err.stream }), 2);
  assert.match(err.text(), /no gate named nope[\s\S]*Usage: carlab check/);
  assert.equal(await run(['--bogus'], { stdout: sink().stream, stderr: sink().stream }), 2);
});

test('a sim or bench gate writes a results folder with --fail-if; a fuzz gate one JSON report', () => {
  const sim = gateCommand(gate, '/tmp/g');
  assert.deepEqual(sim.argv.slice(1), ['sim', '--no-progress', '--out', '/tmp/g', '--fail-if', 'rt.p95>=250,tracking.fps<3']);
  assert.equal(sim.file, '/tmp/g/results.json');
  const fuzz = gateCommand({ ...gate, command: 'fuzz', args: ['--only', 'fair-flood'] }, '/tmp/g');
  assert.deepEqual(fuzz.argv.slice(1), ['fuzz', '--only', 'fair-flood', '--json', '/tmp/g/fuzz.json']);
  assert.equal(fuzz.file, '/tmp/g/fuzz.json');
});

test('the drawn-error gate holds the default playout and fails the newest pose alone (jumps) and ease (p50)', () => {
  // bench --ar-pair on p2p with 5 % loss, beside a busy core (59a909c, 2-core AMD EPYC): each mode's figures
  const measured = {
    predict: { positionCm: { p50: 2.6, p95: 8.8 }, jumpsPerMinute: 0, frames: 940 },
    ease: { positionCm: { p50: 5.3, p95: 9.4 }, jumpsPerMinute: 0, frames: 940 },
    newest: { positionCm: { p50: 3.4, p95: 8.7 }, jumpsPerMinute: 126.68, frames: 940 },
  };
  const run = { arDrawn: { modes: measured } };
  const failing = (/** @type {string} */ mode) => gateRows({ ...gate, holds: drawnHolds(mode, { p50: '', p95: '', jumps: '', frames: '' }) }, run)
    .filter((r) => !r.ok).map((r) => r.figure.split('.').slice(3).join('.'));
  assert.deepEqual(failing('predict'), []);
  assert.deepEqual(failing('ease'), ['positionCm.p50']);
  assert.deepEqual(failing('newest'), ['jumpsPerMinute']);
  const drawnGate = /** @type {import('../gates/gates.js').Gate} */ (GATES.find((g) => g.name === 'drawn-p2p'));
  assert.deepEqual(drawnGate.holds.map((h) => h.figure.split('.')[2]), [DEFAULT_PLAYOUT, DEFAULT_PLAYOUT, DEFAULT_PLAYOUT, DEFAULT_PLAYOUT]);
  assert.deepEqual(gateRows(drawnGate, { arDrawn: { modes: {} } }).map((r) => r.ok), [false, false, false, false], 'no figures: failed');
});
