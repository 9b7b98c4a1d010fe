import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_PAGES_PER_BROWSER, benchLayout, defaultPeersPerPage } from './bench.js';
import { layoutProblem, peersPerPageOf } from '../commands/bench.js';

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

test('the default peers per page spreads the population over about 5 pages per core', () => {
  const relay = (/** @type {number} */ clients, cores = 2) => defaultPeersPerPage({ clients, group: 5, transport: 'relay' }, cores);
  // the first try: 300 peers on 2 cores in the layout that measured the relay (docs/results.md)
  assert.equal(relay(300), 30);
  const l = benchLayout({ clients: 300, peersPerPage: relay(300), pagesPerBrowser: DEFAULT_PAGES_PER_BROWSER, interleave: false });
  assert.deepEqual([l.pageCount, l.browserCount], [10, 2]);
  assert.equal(relay(10), 1, 'a small point keeps a page per peer');
  assert.equal(relay(1), 1);
  assert.equal(relay(301), 31);
  assert.equal(relay(300, 8), 8, 'more cores, more pages');
  assert.equal(relay(5000), 50, 'never fuller than the fullest page measured');
  // a p2p peer holds group - 1 connections and a page holds at most 500
  assert.equal(defaultPeersPerPage({ clients: 1000, group: 25, transport: 'p2p' }, 2), 20);
  assert.equal(defaultPeersPerPage({ clients: 1000, group: 10, transport: 'p2p-reliable' }, 2), 50);
  assert.equal(defaultPeersPerPage({ clients: 1000, group: 25, transport: 'relay-udp' }, 2), 50, 'relay-udp: one channel per peer');
});

test('the layout flags: explicit flags win; --net and --agents keep one peer per page', () => {
  const parse = (/** @type {Record<string, string>} */ values, extra = {}) => {
    const o = /** @type {any} */ ({ values: { ...values }, nets: null, ...extra });
    return { problem: layoutProblem(o), o };
  };
  const byDefault = parse({}).o;
  assert.equal(byDefault.peersPerPage, null);
  assert.equal(byDefault.pagesPerBrowser, DEFAULT_PAGES_PER_BROWSER);
  assert.equal(peersPerPageOf(/** @type {any} */ ({ clients: 300, group: 5, transport: 'relay' }), byDefault), defaultPeersPerPage({ clients: 300, group: 5, transport: 'relay' }));
  const explicit = parse({ 'peers-per-page': '10' }).o;
  assert.deepEqual([explicit.peersPerPage, explicit.pagesPerBrowser], [10, 50], 'as before the default layout');
  assert.equal(peersPerPageOf(/** @type {any} */ ({ clients: 300, group: 5, transport: 'relay' }), explicit), 10);
  assert.deepEqual([parse({ 'pages-per-browser': '3' }).o.peersPerPage, parse({ 'pages-per-browser': '3' }).o.pagesPerBrowser], [null, 3]);
  // --net: each browser process is one shaped link, one peer on it
  const net = parse({}, { nets: ['lossy-2'] }).o;
  assert.deepEqual([net.peersPerPage, net.pagesPerBrowser], [1, 1]);
  const agents = parse({ agents: '2' }).o;
  assert.deepEqual([agents.peersPerPage, agents.pagesPerBrowser], [1, 50]);
  assert.match(String(parse({ 'peers-per-page': '0' }).problem), /--peers-per-page: "0" is not an integer 1..500/);
});
