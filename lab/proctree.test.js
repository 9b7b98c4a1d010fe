import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { processTree } from './proctree.js';

test('processTree: a process and everything under it, from /proc', { skip: process.platform !== 'linux' && 'reads /proc' }, async () => {
  const child = spawn(process.execPath, ['-e', 'require("node:child_process").spawn(process.execPath, ["-e", "setTimeout(() => {}, 5000)"], { stdio: "inherit" }); setTimeout(() => {}, 5000)'], { stdio: 'ignore' });
  try {
    const pid = /** @type {number} */ (child.pid);
    let found = processTree([pid]);
    for (let i = 0; i < 50 && found.length < 2; i++) {
      await new Promise((r) => setTimeout(r, 50));
      found = processTree([pid]);
    }
    assert.equal(found[0], pid);
    assert.equal(found.length, 2, 'the child and its child');
    assert.ok(!found.includes(process.pid), 'not the parent');
  } finally {
    for (const p of processTree([/** @type {number} */ (child.pid)]).reverse()) try { process.kill(p); } catch { /* gone */ }
  }
});
