import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { until } from '../lab/shared/loop-stall.js';
import { OWNER_VAR, describeOwned, endOwned, isUnder, ownedBy } from './owned.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const linuxOnly = { skip: process.platform !== 'linux' && 'reads /proc' };

test('isUnder: an owner and the paths below it, not a sibling that shares its start', () => {
  assert.ok(isUnder('run/a', 'run/a'));
  assert.ok(isUnder('run/a/12/34', 'run/a'));
  assert.ok(!isUnder('run/ab', 'run/a'));
  assert.ok(!isUnder('run', 'run/a'));
});

test('ownedBy finds a detached process by its owner; endOwned ends it and returns it', linuxOnly, async () => {
  const owner = `owned-test-${process.pid}-${Date.now()}`;
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], {
    detached: true, stdio: 'ignore', env: { ...process.env, [OWNER_VAR]: `${owner}/inner` },
  });
  const pid = /** @type {number} */ (child.pid);
  try {
    assert.deepEqual(ownedBy(owner).map((p) => p.pid), [pid]);
    assert.deepEqual(ownedBy(`${owner}/other`), []);
    const ended = endOwned(owner, { graceMs: 100 });
    assert.deepEqual(ended.map((p) => p.pid), [pid]);
    assert.match(describeOwned(ended), new RegExp(`pid ${pid}: .*setTimeout`));
    await new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve(null) : child.once('exit', resolve)));
    assert.deepEqual(ownedBy(owner), []);
  } finally {
    try { process.kill(pid, 'SIGKILL'); } catch { /* ended */ }
  }
});

/**
 * Pids whose command line holds `token`.
 * @param {string} token
 */
function withToken(token) {
  return readdirSync('/proc').filter((n) => /^\d+$/.test(n)).map(Number).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(token) && !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z');
    } catch { return false; }
  });
}

/**
 * Runs the hanging fixture under the guard and returns its exit code and output.
 * @param {string} token @param {string[]} runnerArgs @param {Record<string, string>} env
 */
async function runHangFixture(token, runnerArgs, env) {
  // NODE_TEST_CONTEXT would make the inner runner report to this one instead of running
  const { NODE_TEST_CONTEXT: _outer, ...own } = process.env;
  const child = spawn(process.execPath, ['--import', path.join(HERE, 'guard.js'), '--test', '--test-force-exit', ...runnerArgs,
    path.join(HERE, 'fixtures/hang.fixture.js')], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...own, ...env, HANG_FIXTURE_TOKEN: token } });
  let output = '';
  child.stdout.on('data', (d) => { output += d; });
  child.stderr.on('data', (d) => { output += d; });
  const code = await new Promise((resolve) => child.once('exit', resolve));
  return { code, output };
}

// The two ways a hanging test ends: its own timeout (then the file exits, forced), and the runner's
// timeout for the whole file (SIGTERM). The file timeout, 8 s, is three times the fixture's start
// (two Node processes: 2.7 s under a load average of 22 on 2 cores); a start slower still would
// end the file before its processes exist, which this test passes too: it cannot fail for load.
for (const [how, runnerArgs, env] of /** @type {const} */ ([
  ['its own timeout', ['--test-timeout=120000'], { HANG_TEST_TIMEOUT_MS: '1000' }],
  ['the runner\'s file timeout', ['--test-timeout=8000'], {}],
])) {
  test(`a test that hangs with processes running, ended by ${how}: the file fails, names them, and leaves nothing`, linuxOnly, async () => {
    const token = `hang-${process.pid}-${randomUUID()}`;
    try {
      const { code, output } = await runHangFixture(token, [...runnerArgs], env);
      assert.notEqual(code, 0, output);
      // The runner does not wait for a file it ended: the file's guard may still be ending its processes.
      await until(() => withToken(token).length === 0, 15_000, 50);
      assert.deepEqual(withToken(token), [], `nothing left running\n${output}`);
      if (how === 'its own timeout') {
        // the runner prints what the file wrote to stderr (a SIGTERMed file's is dropped)
        assert.match(output, /left 2 process\(es\) running; ended them/, output);
        assert.equal(output.match(new RegExp(`pid \\d+: .*${token}`, 'g'))?.length, 2, output);
      }
    } finally {
      for (const pid of withToken(token)) try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
    }
  });
}
