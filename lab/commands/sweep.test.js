import { test } from 'node:test';
import assert from 'node:assert/strict';
import { brokenConditions, pointLabel } from './sweep.js';
import { parseFailIf } from '../shared/flags.js';

test('pointLabel names the network profile first when the point has one', () => {
  /** @type {Pick<import('../shared/flags.js').SweepPoint, 'cycleMode' | 'relays' | 'placement'>} */
  const one = { cycleMode: 'pipelined', relays: 0, placement: 'spread' };
  assert.equal(pointLabel({ transport: 'relay', clients: 100, group: 5, cycleMs: 167, ...one }), 'relay · 100 clients · group 5 · 167 ms');
  assert.equal(pointLabel({ transport: 'p2p', clients: 10, group: 10, cycleMs: 698, net: '3g', ...one }), '3g · p2p · 10 clients · group 10 · 698 ms');
  assert.equal(pointLabel({ transport: 'relay', clients: 300, group: 5, cycleMs: 167, ...one, relays: 3 }), 'relay · 3 relays (spread) · 300 clients · group 5 · 167 ms');
});

test('brokenConditions lists every --fail-if condition a run broke, by transport/clients/group', () => {
  const failIf = parseFailIf('rt.mean>250,lossPct>2');
  const runs = [
    { transport: 'relay', clients: 100, group: 5, rt: { mean: 300 }, lossPct: 0 },
    { transport: 'p2p', clients: 10, group: 10, rt: { mean: 20 }, lossPct: 0 },
  ];
  assert.deepEqual(brokenConditions(runs, failIf), ['relay/100/5: rt.mean>250 (rt.mean = 300)']);
  assert.deepEqual(brokenConditions([runs[1]], failIf), []);
});

