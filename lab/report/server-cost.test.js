// What a delivered update cost the server: the split adds up to the headline figure, frames are
// per delivered update, and the table puts the relay beside its floor of the same shape.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { serverCostOf } from './aggregate.js';
import { costRow, floorRunOf, renderServerCostTable } from './server-cost.js';
import { addedFieldProblems } from './schema.js';

test('serverCostOf: user and system add up to the µs per update, frames per delivered update', () => {
  const c = serverCostOf({ updatesForwarded: 1000, framesIn: 250, framesOut: 400 }, 12, { userUs: 3000, systemUs: 1000 });
  assert.deepEqual(c, { usPerUpdate: 12, userUsPerUpdate: 9, systemUsPerUpdate: 3, framesInPerUpdate: 0.25, framesOutPerUpdate: 0.4 });
  assert.equal(serverCostOf({ updatesForwarded: 0 }, null, null), null, 'nothing delivered: no cost');
  assert.equal(serverCostOf(null, null, null), null);
  const unsplit = serverCostOf({ updatesForwarded: 10, framesIn: 5 }, 2, null);
  assert.deepEqual([unsplit?.userUsPerUpdate, unsplit?.systemUsPerUpdate, unsplit?.framesOutPerUpdate], [null, null, null]);
});

/** @param {string} transport @param {number} us @param {number} [clients] */
const run = (transport, us, clients = 2000) => /** @type {any} */ ({
  transport, clients, group: 5, cycleMs: 167, cycleMode: 'pipelined',
  serverCost: { usPerUpdate: us, userUsPerUpdate: us * 0.75, systemUsPerUpdate: us * 0.25, framesInPerUpdate: 0.3, framesOutPerUpdate: 0.25 },
});

test('the table: the relay over its floor at the same shape, none where the floor was not measured', () => {
  const runs = [run('relay', 9), run('ws-floor-batched', 6), run('relay', 5, 1000), run('relay-faithful', 20), run('ws-floor', 10)];
  assert.equal(floorRunOf(runs[0], runs), runs[1]);
  assert.equal(floorRunOf(runs[2], runs), null, 'no floor at 1000 clients');
  assert.equal(costRow(runs[0], runs).at(-1), '1.50x');
  assert.equal(costRow(runs[2], runs).at(-1), '–');
  assert.equal(costRow(runs[3], runs).at(-1), '2.00x', 'relay-faithful beside ws-floor');
  const md = renderServerCostTable(runs);
  assert.match(md, /## Server cost per delivered update/);
  assert.match(md, /\| relay +\| pipelined \| – +\| +2000 \| +5 \| +9\.00 \| +6\.75 \| +2\.25 \|/);
  assert.equal(renderServerCostTable([{ ...run('relay', 1), serverCost: null }]), '');
});

test('the schema checks serverCost when present', () => {
  const base = /** @type {any} */ ({ transport: 'relay', clients: 2, group: 2, cycleMs: 167, rt: { mean: 1, dev: 0, p50: 1, p95: 1, p99: 1, max: 1, n: 1 }, rts: null, cpu: { server: 1, clients: 1 }, lossPct: 0 });
  const bad = addedFieldProblems({ ...base, serverCost: { usPerUpdate: 'x' } });
  assert.ok(bad.some((/** @type {string} */ p) => /serverCost\.usPerUpdate/.test(p)), bad.join('; '));
  assert.ok(!addedFieldProblems({ ...base, serverCost: run('relay', 3).serverCost }).some((/** @type {string} */ p) => /serverCost/.test(p)));
});
