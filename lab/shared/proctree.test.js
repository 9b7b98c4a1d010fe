import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { processRef, processStart, processTree, sameProcess } from './proctree.js';
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

test('a process reference: the same pid with another start time is another process; an ended one is gone', { skip: process.platform !== 'linux' && 'reads /proc' }, async () => {
  const me = processRef(process.pid);
  assert.equal(typeof me.start, 'number');
  assert.equal(sameProcess(me), true);
  // what a pid the kernel handed on looks like: the number matches, the start time does not
  assert.equal(sameProcess({ pid: process.pid, start: /** @type {number} */ (me.start) + 1 }), false);
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)'], { stdio: 'ignore' });
  const pid = /** @type {number} */ (child.pid);
  await until(() => processStart(pid) !== null, 5000);
  const ref = processRef(pid);
  assert.equal(sameProcess(ref), true);
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
  assert.equal(sameProcess(ref), false);
  assert.equal(processStart(pid), null);
  assert.equal(sameProcess({ pid, start: null }), false, 'a process gone when it was seen is never the same one');
});
