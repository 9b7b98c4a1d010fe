import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addLoads } from './memory.js';
import { cpuStepRecord } from './cpu.js';

test('addLoads counts opened and failed connections on the server peer they went to', () => {
  const peers = [{ id: 'a', load: 0 }, { id: 'b', load: 2 }].map((p) => ({ ...p, page: /** @type {import('playwright-core').Page} */ (/** @type {unknown} */ (null)) }));
  addLoads(peers, { opened: [{ to: 'a' }, { to: 'a' }, { to: 'b' }], failed: [{ to: 'b' }, { to: '' }] });
  assert.deepEqual(peers.map((p) => p.load), [2, 4]);
});

test('cpuStepRecord: CPU of both browsers and the throughput over the window', () => {
  const r = cpuStepRecord(5, { cpuPct: 40, rssMaxBytes: 1e8 }, { cpuPct: 60 }, { at: 1000, bytes: 0 }, { at: 3000, bytes: 4e6 }, 1e6);
  assert.deepEqual(r, {
    k: 5, cpu: { server: null, clients: 40 }, clientCpuPct: 40, serverCpuPct: 60, clientRssMaxBytes: 1e8,
    throughputMBps: r.throughputMBps, filesPerS: r.filesPerS, windowS: 2,
  });
  assert.ok(Math.abs(/** @type {number} */ (r.throughputMBps) - 2) < 1e-9);
  assert.ok(Math.abs(/** @type {number} */ (r.filesPerS) - 2) < 1e-9);
});
