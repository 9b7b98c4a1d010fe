import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { EXPERIMENT_NAMES, browsersHelp, parseBrowsersFlags, planOf, run } from './browsers.js';

/** @param {string[]} argv */
const options = (argv) => {
  const r = parseBrowsersFlags(argv);
  assert.equal(r.kind, 'options', JSON.stringify(r));
  if (r.kind !== 'options') throw new Error('unreachable: asserted above');
  return r.options;
};

test('defaults: the four pairs, every experiment, 100 repetitions, 30 transfers', () => {
  const o = options([]);
  assert.deepEqual(o.pairs.map((p) => p.label), ['C-C', 'F-F', 'C-F', 'F-C']);
  assert.deepEqual(o.pairs[2], { label: 'C-F', initiator: 'chromium', receiver: 'firefox' });
  assert.deepEqual(o.experiments, EXPERIMENT_NAMES);
  assert.deepEqual(EXPERIMENT_NAMES, ['setup', 'overhead', 'keepalive', 'memory', 'cpu', 'transfer', 'car']);
  assert.equal(o.repeat, 100);
  assert.equal(o.transferRepeat, 30);
  assert.equal(o.obfuscation, null);
  assert.deepEqual(o.ks, [1, 2, 5, 10, 20, 30, 40, 50]);
  assert.equal(o.keepaliveS, 60);
  assert.equal(o.fileSize / o.pieces, 100_000);
  assert.deepEqual(o.car.transports, ['relay', 'p2p']);
});

test('the issue\'s command line parses; experiments run in the study\'s order', () => {
  const o = options(['--pairs', 'c-c,FF,C-F', '--experiment', 'car,setup', '--repeat', '3', '--obfuscation', 'on,off', '--out', 'results/b']);
  assert.deepEqual(o.pairs.map((p) => p.label), ['C-C', 'F-F', 'C-F']);
  assert.deepEqual(o.experiments, ['setup', 'car']);
  assert.equal(o.transferRepeat, 3);
  assert.deepEqual(o.obfuscation, [true, false]);
  assert.equal(o.out, 'results/b');
});

test('bad flags are usage errors', () => {
  for (const argv of [['--pairs', 'C-X'], ['--experiment', 'speed'], ['--repeat', '0'], ['--obfuscation', 'maybe'],
    ['--file-size', '1000001'], ['--wire', 'yes'], ['--k', '0'], ['--car-transport', 'socketio'], ['--bogus']]) {
    assert.equal(parseBrowsersFlags(argv).kind, 'error', argv.join(' '));
  }
  assert.equal(parseBrowsersFlags(['-h']).kind, 'help');
  assert.match(browsersHelp(), /--experiment LIST/);
});

test('the plan: setup runs with and without obfuscation, overhead reuses it, estimates add up', () => {
  const plan = planOf(options(['--experiment', 'setup,overhead']));
  assert.deepEqual(plan.map((p) => p.experiment.name), ['setup', 'overhead']);
  const [setup, overhead] = plan;
  assert.equal(setup.cells.length, 8);
  assert.equal(setup.cells.filter((c) => /obfuscation on/.test(c.label)).length, 4);
  assert.equal(overhead.cells.length, 4);
  assert.ok(overhead.cells.every((c) => /setup repetitions/.test(c.label) && c.seconds < 1));
  // the target: the setup matrix at 100 repetitions per pair in under 10 minutes
  assert.ok(setup.seconds < 600, `${setup.seconds} s`);
  const alone = planOf(options(['--experiment', 'overhead']))[0];
  assert.ok(alone.cells.every((c) => c.seconds > 20));
  const car = planOf(options(['--experiment', 'car']))[0];
  assert.deepEqual(car.cells.map((c) => c.label.split(':')[0]), ['car C-C relay', 'car C-C p2p', 'car F-F relay', 'car F-F p2p', 'car C+F relay', 'car C+F p2p']);
});

test('a usage error exits 2 with the help on stderr', async () => {
  let err = '';
  const stderr = new Writable({ write(c, _e, cb) { err += c; cb(); } });
  assert.equal(await run(['--pairs', 'X-Y'], { stderr }), 2);
  assert.match(err, /^carlab browsers: --pairs: "X-Y"/);
  assert.match(err, /Usage: carlab browsers/);
});
