// Recovery figures from members' probe records: the definitions of
// docs/architecture.md "Recovery" on hand-made records.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { firstFreshArrival, lossAround, memberRecovery, p2pLinksBack, recoveryRecord } from './recovery.js';

/**
 * A client of group g: sent seqs 1..20 to each neighbour, cutoff 20, got what `recv` says.
 * @param {number} id @param {number[]} neighbours @param {any} recovery @param {Record<string, number[]>} recv
 */
function client(id, neighbours, recovery, recv) {
  return {
    id, name: `sim${id}`, group: 'g', cutoffSeq: 20,
    sentSeqs: Object.fromEntries(neighbours.map((n) => [String(n), [1, 20]])),
    recv: Object.fromEntries(Object.entries(recv).map(([s, seqs]) => [s, { seqs, superseded: [] }])),
    recovery,
  };
}

// Event 0 began when each had sent seq 10 and was back at seq 13: m (1) moves, n (2) and o (3) stay.
const m = client(1, [2, 3], { beganSeq: { 0: 10 }, backSeq: { 0: 13 }, arrivals: { 0: { 2: [[11, 5], [13, 120]], 3: [[13, 90]] } }, left: [] }, { 2: [1, 9, 11, 20], 3: [1, 9, 13, 20] });
const n = client(2, [1, 3], { beganSeq: { 0: 10 }, backSeq: { 0: 13 }, arrivals: { 0: { 1: [[12, 30], [13, 200]], 3: [[13, 40]] } }, left: [] }, { 1: [1, 9, 12, 20], 3: [1, 20] });
const o = client(3, [1, 2], { beganSeq: { 0: 10 }, backSeq: { 0: 13 }, arrivals: { 0: { 1: [[13, 180]], 2: [[13, 60]] } }, left: [[1, -1]] }, { 1: [1, 9, 13, 20], 2: [1, 20] });

test('the first fresh arrival is the first at or above the sender\'s first seq after back', () => {
  assert.equal(firstFreshArrival(m, n, 0), 200, 'n got 12 first (sent during the event), then 13');
  assert.equal(firstFreshArrival(n, m, 0), 120);
  assert.equal(firstFreshArrival(m, n, 1), null, 'no such event');
});

test('a member\'s recovery is the later of its updates reaching every neighbour and theirs reaching it', () => {
  assert.deepEqual(memberRecovery(m, [n, o], 0), { outMs: 200, inMs: 120, ms: 200 });
  const stuck = { ...o, recovery: { ...o.recovery, arrivals: { 0: {} } } };
  assert.deepEqual(memberRecovery(m, [n, stuck], 0), { outMs: null, inMs: 120, ms: null });
});

test('loss during the events is counted apart from loss outside, on streams of the moving members only', () => {
  const { during, outside } = lossAround([m, n, o], new Set(['sim1']), [0]);
  // of the 3 seqs per stream sent during the event: m->n lost 10, 11; m->o 10..12; n->m 10; o->m 10..12 (9 of 12); n<->o is not counted
  assert.deepEqual(during, { expected: 12, lost: 9, lossPct: 75 });
  assert.deepEqual(outside, { expected: 108, lost: 0, lossPct: 0 });
});

test('the run record: per event, members, recovered, p50/p99/max, who fell out, loss during', () => {
  const played = [{ index: 0, kind: /** @type {const} */ ('outage'), text: 'at 5s outage 3s', atMs: 5000, forMs: 3000, beganMs: 5001, backMs: 8002, beganEpochMs: 1, backEpochMs: 2, error: null, description: 'at 5 s: outage for 3 s' },
    { index: 1, kind: /** @type {const} */ ('handover'), text: 'at 20s handover', atMs: 20000, forMs: 0, beganMs: null, backMs: null, beganEpochMs: null, backEpochMs: null, error: null, description: 'at 20 s: handover' }];
  const r = recoveryRecord({ events: played, clients: [m, n, o], moving: new Set(['sim1']) });
  assert.equal(r.moving, 1);
  assert.deepEqual(r.events[0], {
    index: 0, kind: 'outage', text: 'at 5s outage 3s', happened: true, members: 1, recovered: 1,
    recoveryMs: { p50: 200, p99: 200, max: 200, n: 1 }, outMs: { p50: 200, p99: 200, max: 200, n: 1 }, inMs: { p50: 120, p99: 120, max: 120, n: 1 },
    fellOut: 0, lostDuring: { expected: 12, lost: 9, lossPct: 75 },
  });
  assert.deepEqual(r.events[1], { index: 1, kind: 'handover', text: 'at 20s handover', happened: false });
  assert.equal(r.lossOutside.lost, 0);
});

test('p2p runs say how their links came back; other transports say nothing', () => {
  const withCounters = (/** @type {Record<string, number>} */ counters) => ({ ...m, setup: { counters: { connectAttempts: 1, ...counters } } });
  assert.deepEqual(p2pLinksBack([withCounters({ retries: 2, fallbacks: 1 }), withCounters({ retries: 1, recoveries: 1 })]),
    { linksBack: { redials: 3, fallbacks: 1, recoveries: 1, iceRestarts: 0, iceDisconnects: 0, iceFailures: 0, iceRestartsStarted: 0, networkMoves: 0, silentLinks: 0, restartsNewPair: 0, restartsSameChannel: 0 } });
  assert.deepEqual(p2pLinksBack([m, n]), {});
});
