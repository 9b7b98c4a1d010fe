// The recovery probe: moments told late are read back from its history.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RecoveryProbe } from './recovery.js';

test('a moment told late: the first seqs sent at or after it, and what arrived from then on', () => {
  const p = new RecoveryProbe();
  for (let seq = 1; seq <= 10; seq++) p.sent(seq, seq * 100); // seq n at n x 100 ms
  p.arrived(7, 40, 450);
  p.arrived(7, 41, 650);
  p.mark(0, 'began', 300); // told at 1000, it happened at 300
  p.mark(0, 'back', 600);
  p.arrived(7, 42, 1100);
  p.arrived(9, 5, 1200);
  p.memberLeft(9);
  const r = p.toJSON();
  assert.deepEqual(r.beganSeq, { 0: 3 });
  assert.deepEqual(r.backSeq, { 0: 6 });
  assert.deepEqual(r.arrivals[0], { 7: [[41, 50], [42, 500]], 9: [[5, 600]] });
  assert.deepEqual(r.left, [[9, 0]]);
});

test('a moment after the last send waits for the next one', () => {
  const p = new RecoveryProbe();
  p.sent(1, 100);
  p.mark(3, 'back', 500);
  assert.equal(p.toJSON().backSeq[3], null);
  p.sent(2, 400); // before the moment: not it
  p.sent(3, 700);
  assert.equal(p.toJSON().backSeq[3], 3);
});

test('a member seen leaving before any event is marked -1', () => {
  const p = new RecoveryProbe();
  p.memberLeft(4);
  assert.deepEqual(p.toJSON().left, [[4, -1]]);
});
