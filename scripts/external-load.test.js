import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';

import { readProc } from '../lab/proctree.js';
import { OWNER_VAR } from './owned.js';
import { runOwner, sharedMachineBound, startExternalLoadMeter } from './external-load.js';

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
  // Two meters over the same window: one for a run that owns both loops, one for a run that owns
  // only the first. What they differ by is the second loop's CPU, whatever else the machine does.
  const run = `external-load-test-${process.pid}`;
  const busy = (/** @type {string} */ owner) => spawn(process.execPath, ['-e', 'const end = Date.now() + 15000; while (Date.now() < end) {}'],
    { stdio: 'ignore', env: { ...process.env, [OWNER_VAR]: owner } });
  const ours = busy(`${run}/ours`);
  const theirs = busy(`${run}/theirs`);
  try {
    await new Promise((r) => setTimeout(r, 300));
    const ticksBefore = /** @type {number} */ (readProc(/** @type {number} */ (theirs.pid))?.ticks);
    const both = startExternalLoadMeter(run);
    const oursOnly = startExternalLoadMeter(`${run}/ours`);
    await new Promise((r) => setTimeout(r, 1500));
    const withoutTheirs = oursOnly.stop();
    const withTheirs = both.stop();
    const ticksAfter = /** @type {number} */ (readProc(/** @type {number} */ (theirs.pid))?.ticks);
    const theirsCores = ((ticksAfter - ticksBefore) / 100) / 1.5;
    // (how much CPU the loop gets depends on what else runs: 0.13 of a core beside a loaded suite)
    assert.ok(theirsCores > 0, `the loop ran: ${theirsCores}`);
    assert.ok(Math.abs((withoutTheirs - withTheirs) - theirsCores) < 0.15,
      `the difference is the second loop: ${withoutTheirs} - ${withTheirs} vs ${theirsCores}`);
    assert.equal(startExternalLoadMeter(null).stop(), 0, 'outside npm test nothing is known');
  } finally {
    ours.kill('SIGKILL');
    theirs.kill('SIGKILL');
  }
});
