import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { processTree } from './proctree.js';
import { until } from './loop-stall.js';

test('processTree: a process and everything under it, from /proc', { skip: process.platform !== 'linux' && 'reads /proc' }, async () => {
  // Both live for a minute (ended below): started in the idle class on a busy machine, the grandchild
  // can take seconds to appear, and a 2.5 s wait with 5 s lives was a bound on nothing this tests.
  const child = spawn(process.execPath, ['-e', 'require("node:child_process").spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"], { stdio: "inherit" }); setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
  try {
    const pid = /** @type {number} */ (child.pid);
    await until(() => processTree([pid]).length >= 2, 15_000);
    const found = processTree([pid]);
    assert.equal(found[0], pid);
    assert.equal(found.length, 2, 'the child and its child');
    assert.ok(!found.includes(process.pid), 'not the parent');
  } finally {
    for (const p of processTree([/** @type {number} */ (child.pid)]).reverse()) try { process.kill(p); } catch { /* gone */ }
  }
});
