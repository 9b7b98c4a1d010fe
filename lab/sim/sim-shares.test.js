import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generatorShares } from './generators.js';
import { simCommand } from '../commands/sim.js';

test('generator shares cover the population once, in contiguous ranges', () => {
  assert.deepEqual(generatorShares(1000), [{ from: 0, to: 500 }, { from: 500, to: 1000 }]);
  assert.deepEqual(generatorShares(301), [{ from: 0, to: 301 }]);
  assert.deepEqual(generatorShares(7, 3), [{ from: 0, to: 3 }, { from: 3, to: 6 }, { from: 6, to: 7 }]);
  assert.deepEqual(generatorShares(2, 5), [{ from: 0, to: 1 }, { from: 1, to: 2 }]);
  // --net puts one generator's share on each client link
  assert.deepEqual(simCommand.netLinks?.({ transport: 'relay', clients: 7, group: 5, cycleMs: 167, cycleMode: 'pipelined', relays: 0, placement: 'spread' }, { workers: 3 }), [3, 3, 1]);
});
