// The fuzz run's tally and verdict (fuzz.js), without a server.
import test from 'node:test';
import assert from 'node:assert/strict';
import { createFuzzTally, fuzzProblems, recordCase } from './fuzz.js';

test('recordCase counts units, outcomes and names, and keeps the first 25 failures in full', () => {
  const tally = createFuzzTally();
  recordCase(tally, 0, { target: 'relay', name: 'truncated' }, { ok: true, units: 2, outcome: '4002', expected: '4002' });
  for (let i = 1; i <= 30; i++) {
    recordCase(tally, i, { target: 'http', name: 'traversal' }, { ok: false, units: 1, outcome: '500', expected: '404', detail: 'x' });
  }
  assert.equal(tally.units, 32);
  assert.deepEqual(tally.unitsByTarget, { relay: 2, peer: 0, raw: 0, http: 30 });
  assert.deepEqual(tally.outcomes.relay, { 4002: 1 });
  assert.deepEqual(tally.outcomes.http, { 500: 30 });
  assert.deepEqual(tally.cases, { truncated: 1, traversal: 30 });
  assert.equal(tally.done, 31);
  assert.equal(tally.failureCount, 30);
  assert.equal(tally.failures.length, 25);
  assert.deepEqual(tally.failures[0], { index: 1, target: 'http', name: 'traversal', expected: '404', got: '500', detail: 'x' });
});

/** A run in which every promise held. */
const healthy = () => ({
  exit: null, faults: [], failureCount: 0, rss: { start: 100, max: 150 }, maxRssGrowthBytes: 96 * 1024 * 1024,
  streams: { lost: 0, duplicates: 0, reorders: 0, expected: 10 }, stats: [{ updatesSent: 5 }],
  goodClosed: [], sentinel: { open: true, sent: 4, received: 4, outOfOrder: 0 },
  after: { relay: { clients: 0, groups: 0, pending: 0 } },
});

test('fuzzProblems: none for a healthy run, one line per broken promise otherwise', () => {
  assert.deepEqual(fuzzProblems(healthy()), []);
  const broken = fuzzProblems({
    ...healthy(),
    faults: [{ kind: 'unhandledRejection', message: 'boom\nstack' }],
    failureCount: 2,
    rss: { start: 0, max: 200 * 1024 * 1024 },
    streams: { lost: 1, duplicates: 0, reorders: 0, expected: 10 },
    goodClosed: ['101: 4003'],
    sentinel: { open: false, sent: 4, received: 3, outOfOrder: 0 },
    after: { relay: { clients: 1, groups: 0, pending: 0 } },
  });
  assert.deepEqual(broken, [
    'the server reported 1 fault(s): unhandledRejection: boom',
    '2 case(s) did not end as documented',
    'server RSS grew by 200.0 MiB (bound 96 MiB)',
    "good clients' streams: 1 lost, 0 duplicated, 0 reordered",
    'good clients were closed: 101: 4003',
    'PeerJS sentinels: open false, 3/4 offers, 0 out of order',
    'the relay kept state after everyone left: {"clients":1,"groups":0,"pending":0}',
  ]);
  // a crashed server says so, and its relay state is not checked
  assert.deepEqual(fuzzProblems({ ...healthy(), exit: { code: 1, signal: null }, after: {} }), ['the server died during the run ({"code":1,"signal":null})']);
  assert.deepEqual(fuzzProblems({ ...healthy(), stats: [{ updatesSent: 0 }] }), ['a good client sent nothing']);
});
