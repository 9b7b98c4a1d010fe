import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import config from '../e2e/playwright.config.js';
import { REALTIME_PROJECTS, SHARED_PROJECTS, SOLO_PROJECTS, testPlan } from './test.js';
import { LIVENESS_FILES, LOADING_FILES, QUIET_FILES, TIMED_FILES, listTestFiles } from './test-unit.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

test('npm test: the build, then the front lane\'s stages beside the back lane; every unit file once', () => {
  const files = listTestFiles();
  const plan = testPlan({ files, concurrency: 3 });
  assert.deepEqual(plan.setup.map((s) => s.name), ['build']);
  assert.deepEqual(plan.front.map((stage) => stage.map((s) => s.name)), [['e2e real-time'], ['unit quiet'], ['unit timed'], ['e2e']]);
  assert.deepEqual(plan.after.map((stage) => stage.map((s) => s.name)), [['e2e webkit']], 'WebKit last, with nothing beside it');
  assert.deepEqual(plan.after[0][0].argv.slice(-3), ['--project', 'webkit', '--no-deps']);
  assert.deepEqual(plan.backFromStart.map((s) => s.name), ['typecheck'], 'the type check needs no build: beside it');
  assert.deepEqual(plan.back.map((s) => s.name), ['unit']);
  assert.deepEqual(plan.backLate.map((s) => s.name), ['unit liveness']);
  assert.deepEqual(plan.backLate[0].argv.filter((a) => a.endsWith('.test.js')), [...LIVENESS_FILES].sort());
  assert.deepEqual(plan.backAfterRealtime.map((s) => s.name), ['unit loading']);
  assert.deepEqual(plan.backAfterRealtime[0].argv.filter((a) => a.endsWith('.test.js')), [...LOADING_FILES], 'no loopback flood nor browser beside the real-time tests');
  assert.equal(plan.backEqualFrom, 3, 'the back lane at normal priority beside the other browser tests only');
  const unitFiles = [...plan.front.flat(), ...plan.back, ...plan.backAfterRealtime, ...plan.backLate].filter((s) => s.name.startsWith('unit')).flatMap((s) => s.argv.filter((a) => a.endsWith('.test.js')));
  assert.deepEqual([...unitFiles].sort(), files, 'each unit file exactly once');
  const quiet = /** @type {import('./test.js').Step} */ (plan.front[1][0]);
  assert.deepEqual(quiet.argv.filter((a) => a.endsWith('.test.js')), [...QUIET_FILES].sort());
  const timed = /** @type {import('./test.js').Step} */ (plan.front[2][0]);
  assert.deepEqual(timed.argv.filter((a) => a.endsWith('.test.js')), [...TIMED_FILES].sort());
  for (const stage of [0, 3]) assert.ok(plan.front[stage][0].argv.includes('--no-deps'), 'a stage runs its own projects only');
  assert.deepEqual(plan.front[0][0].argv.slice(-2), ['--workers', '1'], 'the real-time tests one at a time');
  const small = testPlan({ files: ['core/a.test.js'], concurrency: 2 });
  assert.deepEqual(small.front.map((stage) => stage.map((s) => s.name)), [['e2e real-time'], ['e2e']], 'no empty stage');
  assert.equal(small.backEqualFrom, 1);
});

test('the stages name every Playwright project once, and the real-time tests only in the real-time stage', () => {
  const names = (config.projects ?? []).map((p) => p.name);
  assert.deepEqual([...SOLO_PROJECTS, ...REALTIME_PROJECTS, ...SHARED_PROJECTS].sort(), [...names].sort());
  for (const p of config.projects ?? []) {
    const realtime = REALTIME_PROJECTS.includes(/** @type {string} */ (p.name));
    if (SOLO_PROJECTS.includes(/** @type {string} */ (p.name))) continue; // WebKit's spec runs whole in a stage of its own
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
