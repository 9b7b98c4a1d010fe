import { test } from 'node:test';
import assert from 'node:assert/strict';

import { browserVersions, busyCores, cpuJiffies, freeCores } from './test-machine.js';

test('cpuJiffies: busy and total of all cores from /proc/stat\'s first line (idle and iowait are not busy)', () => {
  const stat = 'cpu  100 5 50 800 40 3 2 0 0 0\ncpu0 50 2 25 400 20 1 1 0 0 0\n';
  assert.deepEqual(cpuJiffies(stat), { busy: 160, total: 1000 });
});

test('freeCores: the cores less the busy ones, rounded, at least one', () => {
  assert.equal(freeCores(2, 0.2), 2);
  assert.equal(freeCores(2, 1.0), 1, 'a busy loop on one core');
  assert.equal(freeCores(2, 1.9), 1, 'never none');
  assert.equal(freeCores(8, 2.6), 5);
});

test('busyCores samples this machine: between none and all of them; a busy loop shows', { timeout: 30_000 }, async () => {
  const { spawn } = await import('node:child_process');
  const loop = spawn(process.execPath, ['-e', 'const end = Date.now() + 20000; while (Date.now() < end) {}'], { stdio: 'ignore' });
  try {
    // the loop keeps one core busy whatever else runs: at least about one core, in every sample
    await new Promise((r) => setTimeout(r, 300));
    assert.ok(await busyCores(3, 300) >= 0.8);
  } finally {
    loop.kill('SIGKILL');
  }
});

test('busyCores: a number between none and all of them', { skip: process.platform !== 'linux' && 'reads /proc/stat' }, async () => {
  const busy = await busyCores(2, 100);
  assert.ok(busy >= 0 && busy <= 64, String(busy));
});

test('browserVersions names each browser package, installed or not', () => {
  const versions = browserVersions();
  assert.deepEqual(Object.keys(versions), ['chromium', 'firefox-esr', 'webkit2gtk-driver']);
  for (const v of Object.values(versions)) assert.ok(v.length > 0);
});
