// The recovery section: its rows from a run record, tables.md and the chart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { recoveryChart, recoveryRows, renderRecoveryTable } from './recovery-table.js';

const run = /** @type {any} */ ({
  transport: 'relay', clients: 100, group: 5, net: { profile: 'none' },
  netEvents: { links: [0], movingPerGroup: 1, movingClients: 20, events: [
    { index: 0, kind: 'outage', text: 'at 10s outage 3s', atMs: 10000, forMs: 3000, beganMs: 10004, backMs: 13010 },
    { index: 1, kind: 'handover', text: 'at 25s handover', atMs: 25000, forMs: 0, beganMs: null, backMs: null },
  ] },
  recovery: {
    moving: 20,
    events: [
      { index: 0, kind: 'outage', text: 'at 10s outage 3s', happened: true, members: 20, recovered: 19, recoveryMs: { p50: 180, p99: 900, max: 900, n: 19 },
        outMs: { max: 850 }, inMs: { max: 900 }, fellOut: 1, lostDuring: { expected: 100, lost: 3, lossPct: 3 } },
      { index: 1, kind: 'handover', text: 'at 25s handover', happened: false },
    ],
    lossDuring: { expected: 100, lost: 3, lossPct: 3 }, lossOutside: { expected: 1000, lost: 0, lossPct: 0 },
  },
});

test('one row per event; one that did not happen says so', () => {
  const [a, b] = recoveryRows(run);
  assert.deepEqual(a, ['relay', 'none', '100', '5', 'at 10s outage 3s', '10.0', '13.0', '20', '19', '180', '900', '900', '850', '900', '1', '3.00', '0.00', '–']);
  assert.equal(b[8], 'did not happen');
  assert.match(renderRecoveryTable([run]), /^## Recovery from network events\n/);
  assert.equal(renderRecoveryTable([{ ...run, recovery: undefined }]), '');
});

test('the chart puts each event\'s recovery at the second its network was back, with the events as spans', () => {
  const chart = recoveryChart([run], new Map([['relay', '#2563eb']]));
  const sets = /** @type {any[]} */ (chart?.config.data.datasets);
  assert.deepEqual(sets.map((d) => d.label), ['relay · 100 clients · max', 'relay · 100 clients · p50', 'at 10s outage 3s']);
  assert.deepEqual(sets[0].data, [{ x: 13.01, y: 900 }]);
  assert.deepEqual(sets[2].data, [{ x: 10, y: 0 }, { x: 13.01, y: 0 }]);
});
