// When relay-udp offers its channel again, alone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ChannelRetryPolicy } from './retry.js';

test('failed setups back off exponentially up to the cap, with 50..100 % jitter', () => {
  const top = new ChannelRetryPolicy({ baseMs: 100, maxMs: 1000, random: () => 1 });
  assert.deepEqual([1, 2, 3, 4, 5, 6].map(() => top.nextDelay(false)), [100, 200, 400, 800, 1000, 1000]);
  const bottom = new ChannelRetryPolicy({ baseMs: 100, maxMs: 1000, random: () => 0 });
  assert.deepEqual([bottom.nextDelay(false), bottom.nextDelay(false)], [50, 100]);
});

test('a channel that worked is offered again after the base delay; opening resets the backoff', () => {
  const p = new ChannelRetryPolicy({ baseMs: 100, maxMs: 1000, random: () => 1 });
  p.nextDelay(false);
  p.nextDelay(false);
  assert.equal(p.nextDelay(true), 100);
  assert.equal(p.nextDelay(false), 800, 'the count goes on');
  p.opened();
  assert.equal(p.nextDelay(false), 100);
});
