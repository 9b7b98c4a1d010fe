import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LiveLoss } from './live-loss.js';
import { ReceiveStream } from './metrics.js';

/** Delivers seqs of one sender the way the client core does: arrive, then applied if newest. */
function deliver(/** @type {LiveLoss} */ loss, /** @type {Map<number, ReceiveStream>} */ streams, /** @type {number} */ sender, /** @type {number[]} */ seqs) {
  let stream = streams.get(sender);
  if (!stream) { stream = new ReceiveStream(); streams.set(sender, stream); }
  for (const seq of seqs) if (stream.arrive(seq, seq * 167, seq * 167 + 5)) loss.applied(sender, seq, stream);
}

const member = () => true;

test('null before any update; 0 % when nothing is missing, whatever seq the sender started at', () => {
  const loss = new LiveLoss();
  const streams = new Map();
  assert.equal(loss.lossPct(streams, member), null);
  deliver(loss, streams, 7, [40, 41, 42, 43]);
  assert.equal(loss.lossPct(streams, member), 0);
});

test('gaps count as loss; a late (reordered) update fills its gap; duplicates do not count twice', () => {
  const loss = new LiveLoss();
  const streams = new Map();
  deliver(loss, streams, 1, [1, 2, 4, 5]); // 3 missing of 5
  assert.equal(loss.lossPct(streams, member), 20);
  deliver(loss, streams, 1, [3, 3, 5]); // 3 arrives late, then duplicates
  assert.equal(loss.lossPct(streams, member), 0);
});

test('a rejoin re-bases: what a sender sent while we were apart is not loss; earlier spans still count', () => {
  const loss = new LiveLoss();
  const streams = new Map();
  deliver(loss, streams, 1, [1, 2, 3, 5]); // 1 lost of 5
  loss.rejoined(streams);
  deliver(loss, streams, 1, [20, 21, 22, 23, 24]); // seqs 6..19 went to nobody
  assert.equal(loss.lossPct(streams, member), 10); // 1 of 10
});

test('only present members count; a member that left takes its span with it', () => {
  const loss = new LiveLoss();
  const streams = new Map();
  deliver(loss, streams, 1, [1, 2, 3, 4]);
  deliver(loss, streams, 2, [1, 3]); // 1 lost of 3
  assert.equal(loss.lossPct(streams, (id) => id !== 2), 0);
  assert.equal(loss.lossPct(streams, member), (100 * 1) / 7);
  loss.left(2);
  assert.equal(loss.lossPct(streams, member), 0);
});
