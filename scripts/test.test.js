import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import config from '../e2e/playwright.config.js';
import { REALTIME_PROJECTS, SHARED_PROJECTS, SOLO_PROJECTS, e2eWorkers, testPlan } from './test.js';
import { LONG_FILES, QUIET_FILES, TIMED_FILES, listTestFiles } from './test-unit.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

test('npm test: build and type check with the quiet files, then each timing stage alone, then the unit and browser tests side by side; every unit file once', () => {
  const files = listTestFiles();
  const plan = testPlan({ files, free: 2, env: {} });
  assert.deepEqual(plan.stages.map((stage) => stage.map((s) => s.name)),
    [['build', 'typecheck', 'unit quiet'], ['e2e real-time'], ['unit timed'], ['unit heavy'], ['unit', 'e2e']]);
  const [first, realtime, timed, heavy, last] = plan.stages;
  const quiet = first[2];
  assert.deepEqual(realtime[0].argv.slice(-9), ['--project', 'webkit', '--project', 'chromium-realtime', '--project', 'firefox-realtime', '--no-deps', '--workers', '1'],
    'WebKit and the real-time tests one at a time, in one Playwright run');
  assert.deepEqual(quiet.argv.filter((a) => a.endsWith('.test.js')), [...QUIET_FILES].sort());
  assert.deepEqual(timed[0].argv.filter((a) => a.endsWith('.test.js')), [...TIMED_FILES].sort());
  for (const step of [realtime[0], last[1]]) assert.ok(step.argv.includes('--no-deps'), 'a stage runs its own projects only');
  const unitFiles = plan.stages.flat().filter((s) => s.name.startsWith('unit')).flatMap((s) => s.argv.filter((a) => a.endsWith('.test.js')));
  assert.deepEqual([...unitFiles].sort(), files, 'each unit file exactly once');
  assert.deepEqual(heavy[0].argv.filter((a) => a.endsWith('.test.js')), [...LONG_FILES], 'the heavy files in a stage of their own');
  const small = testPlan({ files: ['core/a.test.js'], free: 2, env: {} });
  assert.deepEqual(small.stages.map((stage) => stage.map((s) => s.name)), [['build', 'typecheck'], ['e2e real-time'], ['unit', 'e2e']], 'no empty step or stage');
});

test('how much runs at once in the last stage follows the free cores, unless the environment says', () => {
  const at = (/** @type {number} */ free, /** @type {NodeJS.ProcessEnv} */ env = {}) => {
    const plan = testPlan({ files: ['core/a.test.js'], free, env });
    const last = /** @type {import('./test.js').Step[]} */ (plan.stages.at(-1));
    return [plan.concurrency, plan.workers, last[0].argv.find((a) => a.startsWith('--test-concurrency=')), last[1].argv.at(-1)];
  };
  assert.deepEqual(at(2), [3, 2, '--test-concurrency=2', '2'], 'two free cores: 3 heavy files, then 2 light ones beside 2 browser workers');
  assert.deepEqual(at(1), [2, 2, '--test-concurrency=1', '2'], 'one core busy before the run: fewer unit files, browser workers at least 2');
  assert.deepEqual(at(8), [9, 3, '--test-concurrency=8', '3'], 'browser workers at most 3');
  assert.deepEqual(at(2, { CARLAB_TEST_CONCURRENCY: '1', CARLAB_E2E_WORKERS: '1' }), [1, 1, '--test-concurrency=1', '1']);
  assert.equal(e2eWorkers({ CARLAB_E2E_WORKERS: 'x' }, 2), 2, 'a bad value is ignored');
});

test('the stages name every Playwright project once, and the real-time tests only in the real-time stage', () => {
  const names = (config.projects ?? []).map((p) => p.name);
  assert.deepEqual([...SOLO_PROJECTS, ...REALTIME_PROJECTS, ...SHARED_PROJECTS].sort(), [...names].sort());
  for (const p of config.projects ?? []) {
    const realtime = REALTIME_PROJECTS.includes(/** @type {string} */ (p.name));
    if (SOLO_PROJECTS.includes(/** @type {string} */ (p.name))) continue; // WebKit's spec runs whole, in the real-time stage
    if (realtime) assert.ok(p.grep instanceof RegExp && p.grep.test('x @realtime @firefox'), `${p.name} takes @realtime tests`);
    else assert.ok(p.grepInvert instanceof RegExp && p.grepInvert.test('x @realtime'), `${p.name} leaves @realtime tests out`);
  }
});

test('scripts/test.js: --help prints the stages; an unknown argument is refused with the help', () => {
  const help = execFileSync(process.execPath, ['scripts/test.js', '--help'], { cwd: ROOT, encoding: 'utf8' });
  assert.match(help, /usage: npm test/);
  assert.match(help, /CARLAB_TEST_CONCURRENCY/);
  assert.throws(() => execFileSync(process.execPath, ['scripts/test.js', '--fast'], { cwd: ROOT, encoding: 'utf8', stdio: 'pipe' }),
    (/** @type {any} */ err) => err.status === 2 && /unknown argument "--fast"/.test(err.stderr) && /usage: npm test/.test(err.stderr));
});
