import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';

import { availableParallelism } from 'node:os';
import { OWNER_VAR } from './owned.js';
import { externalCores, loadSnapshot, runOwner, sharedMachineBound, startExternalLoadMeter } from './external-load.js';

test('sharedMachineBound: the bound as it is on a machine of its own, scaled by the share outside work left, at most doubled', () => {
  assert.equal(sharedMachineBound(250, 0, 2), 250);
  assert.equal(sharedMachineBound(250, 0.5, 2), 250 * (2 / 1.5));
  assert.equal(sharedMachineBound(250, 1, 2), 500);
  assert.equal(sharedMachineBound(250, 1.8, 2), 500, 'at most twice');
});

test('runOwner: the first segment of the owner; none outside npm test', () => {
  assert.equal(runOwner({ [OWNER_VAR]: 'carlab-test-12/e2e/34/56' }), 'carlab-test-12');
  assert.equal(runOwner({}), null);
});

test('the external load meter counts what the run does not own: a busy loop outside it, not one inside it', { skip: process.platform !== 'linux' && 'reads /proc', timeout: 30_000 }, async () => {
  // One pair of snapshots, read for a run that owns both loops and for one that owns only the
  // first: they differ by exactly the second loop's CPU, whatever else the machine does.
  const run = `external-load-test-${process.pid}`;
  const busy = (/** @type {string} */ owner) => spawn(process.execPath, ['-e', 'const end = Date.now() + 15000; while (Date.now() < end) {}'],
    { stdio: 'ignore', env: { ...process.env, [OWNER_VAR]: owner } });
  const ours = busy(`${run}/ours`);
  const theirs = busy(`${run}/theirs`);
  try {
    await new Promise((r) => setTimeout(r, 300));
    const a = loadSnapshot();
    await new Promise((r) => setTimeout(r, 1000));
    const b = loadSnapshot();
    const pid = /** @type {number} */ (theirs.pid);
    const theirTicks = /** @type {number} */ (b.procs.get(pid)?.ticks) - /** @type {number} */ (a.procs.get(pid)?.ticks);
    assert.ok(theirTicks > 0, 'the second loop ran (how much depends on what else runs)');
    const theirCores = (theirTicks / (b.cpu.total - a.cpu.total)) * availableParallelism();
    const difference = externalCores(a, b, `${run}/ours`) - externalCores(a, b, run);
    assert.ok(Math.abs(difference - theirCores) < 1e-9, `the difference is the second loop: ${difference} vs ${theirCores}`);
    assert.equal(startExternalLoadMeter(null).stop(), 0, 'outside npm test nothing is known');
  } finally {
    ours.kill('SIGKILL');
    theirs.kill('SIGKILL');
  }
});

test('a process with no owner of its own (a Chromium renderer writes its title over its environment) belongs to its parent\'s', { skip: process.platform !== 'linux' && 'reads /proc', timeout: 30_000 }, async () => {
  const run = `external-load-child-${process.pid}`;
  // the parent has the owner; its busy child is started with an empty environment
  const parent = spawn(process.execPath, ['-e', `require("node:child_process").spawn(process.execPath, ["-e", "const end = Date.now() + 15000; while (Date.now() < end) {}"], { env: {}, stdio: "inherit" }); setTimeout(() => {}, 15000)`],
    { stdio: 'ignore', env: { ...process.env, [OWNER_VAR]: `${run}/parent` } });
  /** @type {number | undefined} */
  let child;
  try {
    for (let i = 0; i < 100 && child === undefined; i++) {
      await new Promise((r) => setTimeout(r, 50));
      child = [...loadSnapshot().procs].find(([pid, p]) => p.owner === `${run}/parent` && pid !== parent.pid)?.[0];
    }
    assert.ok(child, 'the child is found under its parent\'s owner');
  } finally {
    // the child has no owner of its own to be found by once its parent is gone: ended by pid first
    if (child !== undefined) try { process.kill(child, 'SIGKILL'); } catch { /* gone */ }
    parent.kill('SIGKILL');
  }
});
