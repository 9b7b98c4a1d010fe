import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SEQSET_MAX_RANGES, SeqSet, compactRanges, intersect, isSeqRanges } from './seqset.js';

test('SeqSet: adds in any order merge into ranges; deletes split them; size is kept', () => {
  const s = new SeqSet();
  for (const q of [1, 2, 3, 7, 5, 6, 10]) assert.equal(s.add(q), true);
  assert.equal(s.add(6), false, 'a duplicate');
  assert.deepEqual(s.toJSON(), [1, 3, 5, 7, 10, 10]);
  s.add(4);
  assert.deepEqual(s.toJSON(), [1, 7, 10, 10], 'filling a gap joins its neighbours');
  assert.equal(s.delete(4), true);
  assert.equal(s.delete(4), false);
  s.delete(1); s.delete(10);
  assert.deepEqual(s.toJSON(), [2, 3, 5, 7]);
  assert.equal(s.size, 5);
  assert.deepEqual([s.has(2), s.has(4), s.has(7), s.has(8)], [true, false, true, false]);
  assert.equal(s.flat.at(-1), 7);
});

test('SeqSet: counts up to a cutoff, in common with another set, and except a third', () => {
  const a = new SeqSet([1, 10, 20, 30]);
  const b = new SeqSet([5, 25]);
  assert.equal(a.countUpTo(7), 7);
  assert.equal(a.countUpTo(25), 16);
  assert.equal(a.countCommon(b), 12, '5..10 and 20..25');
  assert.equal(a.countCommon(b, 22), 9);
  assert.deepEqual(intersect(a, b, 22).toJSON(), [5, 10, 20, 22]);
  assert.equal(a.countCommonExcept(b, new SeqSet([6, 8]), 22), 6);
});

test('SeqSet: past SEQSET_MAX_RANGES the oldest gaps close; reports compact the same way', () => {
  const s = new SeqSet();
  for (let i = 0; i <= SEQSET_MAX_RANGES; i++) s.add(2 * i);
  assert.equal(s.flat.length, 2 * SEQSET_MAX_RANGES);
  assert.deepEqual(s.flat.slice(0, 4), [0, 2, 4, 4], 'the first gap closed');
  assert.equal(s.size, SEQSET_MAX_RANGES + 2, 'the closed gap counts as held');
  assert.deepEqual(compactRanges([1, 1, 3, 3, 5, 5, 7, 7], 2), [1, 5, 7, 7]);
  assert.deepEqual(compactRanges([1, 1, 3, 3], 2), [1, 1, 3, 3]);
});

test('isSeqRanges: sorted, disjoint, non-adjacent whole numbers only', () => {
  assert.equal(isSeqRanges([1, 3, 5, 9]), true);
  assert.equal(isSeqRanges([]), true);
  for (const bad of [[1], [3, 1], [1, 3, 4, 5], [1, 3, 2, 5], [1.5, 2], [-1, 2], 'x', [1, 2, 4, 5, 7, 8]]) {
    assert.equal(isSeqRanges(bad, 2), false, JSON.stringify(bad));
  }
});
