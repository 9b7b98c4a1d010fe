import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { costTable, costTsv, parseProfileArgs } from './test-profile.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

test('costTable: heaviest first, what did not pass marked, totals under it', () => {
  const table = costTable([
    { name: 'light.test.js', cpuS: 0.4, wallS: 0.5, status: 'passed' },
    { name: 'heavy.test.js', cpuS: 30.25, wallS: 41, status: 'passed' },
    { name: 'broken.test.js', cpuS: 2, wallS: 3, status: 'exit 1' },
  ]);
  const lines = table.split('\n');
  assert.equal(lines[0], ' CPU-s  wall-s  test');
  assert.match(lines[1], /^ +30\.3 +41\.0 {2}heavy\.test\.js$/);
  assert.match(lines[2], /^ +2\.0 +3\.0 {2}\[exit 1\] broken\.test\.js$/);
  assert.match(lines[3], /light\.test\.js$/);
  assert.match(lines[4], /^ +32\.6 +44\.5 {2}total of 3$/);
  assert.equal(costTsv([{ name: 'a', cpuS: 1, wallS: 2, status: 'passed' }]), 'cpu_s\twall_s\tstatus\tname\n1.00\t2.00\tpassed\ta\n');
});

test('parseProfileArgs: both kinds by default, unit only with --files, clear errors', () => {
  assert.deepEqual(parseProfileArgs([]), { unit: true, e2e: true, files: null, out: 'test-results' });
  assert.deepEqual(parseProfileArgs(['--files', 'a.test.js,b.test.js']), { unit: true, e2e: false, files: ['a.test.js', 'b.test.js'], out: 'test-results' });
  assert.deepEqual(parseProfileArgs(['--e2e', '--out', 'x']), { unit: false, e2e: true, files: null, out: 'x' });
  assert.equal(parseProfileArgs(['--out']), '--out needs a value');
  assert.equal(parseProfileArgs(['--fast']), 'unknown argument "--fast"');
});

test('a profile of two unit files: each run alone, charged, in the table and the TSV', { timeout: 60_000 }, () => {
  const out = mkdtempSync(path.join(tmpdir(), 'carlab-profile-'));
  try {
    const files = ['core/cycle.test.js', 'web/src/ui/hud.test.js'];
    const r = spawnSync(process.execPath, ['scripts/test-profile.js', '--files', files.join(','), '--out', out], { cwd: ROOT, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /total of 2/);
    for (const f of files) assert.match(r.stdout, new RegExp(`\\d\\.\\d +\\d+\\.\\d  ${f.replace(/[./]/g, '\\$&')}`));
    const tsv = readFileSync(path.join(out, 'test-profile.tsv'), 'utf8').trim().split('\n');
    assert.equal(tsv.length, 3);
    for (const line of tsv.slice(1)) {
      const [cpu, wall, status] = line.split('\t');
      assert.ok(Number(cpu) >= 0 && Number(wall) > 0, line);
      assert.equal(status, 'passed');
    }
    const bad = spawnSync(process.execPath, ['scripts/test-profile.js', '--fast'], { cwd: ROOT, encoding: 'utf8' });
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /unknown argument "--fast"[\s\S]*usage: node scripts\/test-profile\.js/);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

test('the Playwright reporter writes one line per test: its name, the machine CPU it ran beside, wall time, status', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'carlab-profile-'));
  const file = path.join(dir, 'lines.ndjson');
  const before = process.env.CARLAB_TEST_PROFILE_LINES;
  process.env.CARLAB_TEST_PROFILE_LINES = file;
  try {
    const { default: Reporter } = await import('./test-profile-reporter.js');
    const reporter = new Reporter();
    const testCase = /** @type {any} */ ({ id: 't1', title: 'does a thing', location: { file: '/x/e2e/a.spec.js', line: 7 }, parent: { project: () => ({ name: 'chromium' }) } });
    reporter.onTestBegin(testCase);
    const end = Date.now() + 50;
    while (Date.now() < end) { /* some CPU to charge */ }
    reporter.onTestEnd(testCase, /** @type {any} */ ({ status: 'passed' }));
    const [line, ...rest] = readFileSync(file, 'utf8').trim().split('\n');
    assert.deepEqual(rest, []);
    const cost = JSON.parse(line);
    assert.equal(cost.name, '[chromium] a.spec.js:7 does a thing');
    assert.equal(cost.status, 'passed');
    assert.ok(cost.wallS >= 0.04 && cost.cpuS > 0, line);
  } finally {
    if (before === undefined) delete process.env.CARLAB_TEST_PROFILE_LINES;
    else process.env.CARLAB_TEST_PROFILE_LINES = before;
    rmSync(dir, { recursive: true, force: true });
  }
});
