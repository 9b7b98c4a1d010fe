// The Node clients' network-change signal: `online` when an address appears.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createNetWatch } from './net-watch.js';
import { movingShares } from './net-events.js';

test('online is announced when an address appears, not when one goes', () => {
  let now = new Set(['10.201.1.1']);
  const watch = createNetWatch({ read: () => now, intervalMs: 60_000 });
  let online = 0;
  const f = () => { online++; };
  watch.addEventListener('online', f);
  now = new Set();
  watch.look();
  assert.equal(online, 0, 'the address went: nothing to rejoin on yet');
  now = new Set(['10.201.101.1']);
  watch.look();
  assert.equal(online, 1, 'a new network');
  watch.look();
  assert.equal(online, 1);
  watch.removeEventListener('online', f);
});

test('the moving members of each group go on link 0, the rest on link 1', () => {
  assert.deepEqual(movingShares(12, 5, 1), [{ indices: [0, 5, 10] }, { indices: [1, 2, 3, 4, 6, 7, 8, 9, 11] }]);
  assert.deepEqual(movingShares(6, 3, 2)[0].indices, [0, 1, 3, 4]);
});
