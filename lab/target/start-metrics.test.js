// The metrics windows and CPU of a started `carlab start` (start-metrics.js),
// from made-up snapshots.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpuPctBetween, relayWindow } from './start-metrics.js';

test('a worker\'s window: counters differenced, gauges as now, RTS mean over the window, closes by code', () => {
  const before = { clients: 10, updatesIn: 100, updatesForwarded: 400, rts: { mean: 2, max: 9, n: 100 }, closedByCode: { 1001: 1 },
    cluster: { nodes: 2, updatesPublished: 5, acksRouted: 1 } };
  const after = { clients: 12, updatesIn: 160, updatesForwarded: 640, rts: { mean: 3, max: 12, n: 200 }, closedByCode: { 1001: 1, 4005: 2 },
    cluster: { nodes: 2, updatesPublished: 5, acksRouted: 4 } };
  const w = relayWindow(before, after);
  assert.equal(w.clients, 12);
  assert.equal(w.updatesIn, 60);
  assert.equal(w.updatesForwarded, 240);
  assert.deepEqual(w.rts, { mean: 4, max: 12, n: 100 });
  assert.deepEqual(w.closedByCode, { 4005: 2 });
  assert.equal(w.cluster.crossNodeUpdates, 0);
  assert.equal(w.cluster.acksRouted, 3);
  assert.equal(relayWindow(null, after).updatesForwarded, 640, 'no start: everything so far');
});

test('CPU % per process between tick snapshots; a process born in the window counts all its ticks', () => {
  const cpu = cpuPctBetween(new Map([[1, 100], [2, 50]]), new Map([[1, 150], [3, 20]]), 1000);
  assert.deepEqual([...cpu], [[1, 50], [3, 20]]);
});
