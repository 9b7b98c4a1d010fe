import { test } from 'node:test';
import assert from 'node:assert/strict';
import { benchLayout } from './bench.js';

test('pages fill in order without --net', () => {
  const l = benchLayout({ clients: 25, peersPerPage: 10, pagesPerBrowser: 50, interleave: false });
  assert.equal(l.pageCount, 3);
  assert.equal(l.browserCount, 1);
  assert.deepEqual(l.pages.map((p) => [p.offset, p.stride, p.peers]), [[0, 1, 10], [10, 1, 10], [20, 1, 5]]);
  assert.deepEqual(l.peersPerBrowser, [25]);
});

test('under --net pages interleave, so the 5 members of a group sit on 5 links', () => {
  const l = benchLayout({ clients: 50, peersPerPage: 10, pagesPerBrowser: 1, interleave: true });
  assert.equal(l.browserCount, 5);
  assert.deepEqual(l.peersPerBrowser, [10, 10, 10, 10, 10]);
  const pageOf = new Map();
  l.pages.forEach((p, i) => { for (let k = 0; k < p.peers; k++) pageOf.set(p.offset + k * p.stride, i); });
  assert.equal(pageOf.size, 50);
  for (let g = 0; g < 10; g++) {
    const pages = new Set([0, 1, 2, 3, 4].map((m) => pageOf.get(g * 5 + m)));
    assert.equal(pages.size, 5, `group ${g}`);
  }
  assert.deepEqual(benchLayout({ clients: 7, peersPerPage: 3, pagesPerBrowser: 1, interleave: true }).pages.map((p) => p.peers), [3, 2, 2]);
});
