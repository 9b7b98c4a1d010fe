import test from 'node:test';
import assert from 'node:assert/strict';
import { createFuzzTally, fuzzProblems, recordCase } from './fuzz.js';
import { expectRelay, generateCase, makeWorld } from './fuzz-cases.js';
import { CloseCode, HelloFlag, MsgType, encode } from '../../core/protocol.js';

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

test('every relay case kind is drawn, and each one the oracle can judge', () => {
  const w = makeWorld(3);
  const names = new Set();
  for (let i = 0; i < 3000; i++) {
    const c = generateCase(w, i);
    if (c.target !== 'relay') continue;
    names.add(c.name);
    const { codes } = expectRelay(c.frames, w);
    assert.ok(codes.length > 0, c.name);
  }
  for (const name of ['random-bytes', 'truncated', 'oversized', 'text-frame', 'flood', 'tolerated', 'mutated', 'udp-signal', 'wrong-token', 'nested-batch']) {
    assert.ok(names.has(name), `${name} drawn`);
  }
});

test('relay oracle: relay-udp offers past the tenth are rate-limited, a refused offer is a possibility', () => {
  const w = makeWorld(1);
  const hello = { bytes: encode({ type: MsgType.HELLO, flags: HelloFlag.UDP | HelloFlag.BATCHED, clientId: 5, group: 'g', name: 'n', token: '' }) };
  const offer = (/** @type {number} */ attempt) => ({ bytes: encode({ type: MsgType.SIGNAL, from: 5, to: 0, payload: JSON.stringify({ type: 'offer', attempt, sdp: 'v=0' }) }) });
  assert.deepEqual(expectRelay([hello, offer(1)], w), { codes: [CloseCode.BAD_VERSION, CloseCode.PROTOCOL_VIOLATION].sort(), probe: true });
  const eleven = Array.from({ length: 11 }, (_, i) => offer(i + 1));
  assert.ok(expectRelay([hello, ...eleven], w).codes.includes(CloseCode.RATE_LIMITED));
  // an UPDATE on a relay-udp connection's WebSocket is a violation
  const update = { bytes: encode({ type: MsgType.UPDATE, sender: 5, seq: 1, sendTime: 0, pose: [0, 0, 0, 0, 0, 0, 1], object: null }) };
  assert.deepEqual(expectRelay([hello, update], w), { codes: [CloseCode.PROTOCOL_VIOLATION], probe: false });
});
