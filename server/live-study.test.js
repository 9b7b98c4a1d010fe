import { test } from 'node:test';
import assert from 'node:assert/strict';

import { CarClient } from '../core/client.js';
import { FREEZE_MS } from '../core/metrics.js';
import { RtHistogram, Reporter, randomSessionId, reportProblem } from '../core/report.js';
import { createLiveStudy, isEmptyDelta, memberKey } from './live-study.js';

/** @typedef {import('../core/report.js').ClientReport} ClientReport */
/** @typedef {import('./live-study.js').StudyRecord} StudyRecord */

const CHROME_ANDROID = 'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.6367.82 Mobile Safari/537.36';
const SAFARI_IOS = 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1';

/**
 * A valid report (checked with reportProblem).
 * @param {Partial<ClientReport> & { session: string, rts?: number[] }} over
 * @returns {ClientReport}
 */
function report({ rts = [], ...over }) {
  const h = new RtHistogram();
  for (const v of rts) h.add(v);
  /** @type {ClientReport} */
  const r = {
    v: 1, seq: 1, final: false, kind: 'app', uptimeMs: 5000, group: 'g', name: 'm', clientId: 1,
    transport: 'relay', cycleMs: 167, cycleMode: 'pipelined', rt: h.toJSON(), rtLastMs: rts.length ? rts[rts.length - 1] : null,
    rtWarmupN: 0, updates: { sent: 0, completed: 0, ackTimeouts: 0, skippedCycles: 0, lateAcks: 0 },
    sentTo: {}, acksFrom: {}, recv: {}, ages: {}, channel: null, setup: null,
    connection: { reconnects: 0, outageMs: 0 }, tracking: null, effectiveType: null,
    ...over,
  };
  assert.equal(reportProblem(r), null);
  return r;
}

/**
 * A receiver's stream record.
 * @param {number} received @param {{ n: number, spanMs: number, frozenMs?: number }} [fresh]
 */
function stream(received, fresh) {
  return {
    received, duplicates: 0, reorders: 0, jitterMs: 1, acksSent: received,
    ...(fresh ? { fresh: { n: fresh.n, spanMs: fresh.spanMs, frozenMs: fresh.frozenMs ?? 0, maxGapMs: 200, gaps: { 167: Math.max(1, fresh.n) } } } : {}),
  };
}

/** A study on a clock the test moves. */
function clocked(options = {}) {
  const clock = { t: 1_700_000_000_000 };
  const study = createLiveStudy({ now: () => clock.t, ...options });
  /** @param {ClientReport} r @param {string} [ua] @returns {boolean} */
  const ingest = (r, ua = CHROME_ANDROID) => study.ingest({ at: clock.t, node: 'node-a', ua, r });
  return { clock, study, ingest };
}

const A = 'a'.repeat(32);
const B = 'b'.repeat(32);
const C = 'c'.repeat(32);

test('loss into a member: what its senders sent it against what it received', () => {
  const { clock, study, ingest } = clocked();
  const alice = { session: A, clientId: 1, name: 'alice', sentTo: { 2: 100 }, recv: { 2: stream(50) } };
  const bob = { session: B, clientId: 2, name: 'bob', sentTo: { 1: 50 }, recv: { 1: stream(90) } };
  ingest(report(alice));
  ingest(report(bob));
  const unjudged = study.snapshot().groups[0].members;
  assert.deepEqual(unjudged.map((m) => m.lossPct), [null, null], 'no sender count a second older than the receiver\'s yet');
  // the same counts a second later: judged against what each sender had said by then
  clock.t += 1000;
  ingest(report({ ...alice, seq: 2 }));
  ingest(report({ ...bob, seq: 2 }));
  const [g] = study.snapshot().groups;
  const byName = Object.fromEntries(g.members.map((m) => [m.name, m]));
  assert.equal(byName.bob.lossPct, 10, '90 of 100 from alice');
  assert.equal(byName.alice.lossPct, 0, 'all 50 from bob');
});

test('loss: received is clamped to expected, and null when nothing was expected', () => {
  const { clock, study, ingest } = clocked();
  ingest(report({ session: A, clientId: 1, sentTo: { 2: 10 } }));
  clock.t += 1000;
  ingest(report({ session: B, clientId: 2, recv: { 1: stream(25) } }));
  const rows = study.snapshot().groups[0].members;
  assert.equal(rows.find((m) => m.clientId === 2)?.lossPct, 0);
  assert.equal(rows.find((m) => m.clientId === 1)?.lossPct, null);
});

/**
 * A sender's loss record (core/cycle.js lossRecord): seqs 1..n sent to `to`, counted up to `cutoff`.
 * @param {number} n @param {number} cutoff @param {string} [to]
 */
const sentUpTo = (n, cutoff, to = '2') => ({ sentTo: { [to]: n }, sentSeqs: { [to]: n ? [1, n] : [] }, cutoffSeq: cutoff, horizonMs: 1000, ackedBy: {}, ackedAllSeqs: [] });

/** A receiver's stream that got the seqs of `ranges` (flat). @param {number[]} ranges */
function gotSeqs(ranges) {
  let n = 0;
  for (let i = 0; i < ranges.length; i += 2) n += ranges[i + 1] - ranges[i] + 1;
  return { ...stream(n), seqs: ranges, superseded: [] };
}

test("loss: a receiver's report is counted against its sender's report of a second before, not a later one", () => {
  const { clock, study, ingest } = clocked();
  ingest(report({ session: A, clientId: 1, seq: 1, ...sentUpTo(10, 5) }));
  clock.t += 2500;
  ingest(report({ session: B, clientId: 2, recv: { 1: gotSeqs([1, 15]) } }));
  clock.t += 2500;
  // alice's newer cutoff (24) is past what bob had when he reported: counted against it, 9 would look lost
  ingest(report({ session: A, clientId: 1, seq: 2, ...sentUpTo(30, 24) }));
  assert.equal(study.snapshot().groups[0].members.find((m) => m.clientId === 2)?.lossPct, 0);
});

test('loss: updates past the cutoff are not loss; a sender not heard a second before the receiver is not judged yet', () => {
  const { clock, study, ingest } = clocked();
  ingest(report({ session: B, clientId: 2, recv: { 1: gotSeqs([1, 12]) } }));
  clock.t += 1000;
  // alice's first report comes after bob's: what she had sent at bob's report is unknown
  ingest(report({ session: A, clientId: 1, seq: 1, ...sentUpTo(20, 18) }));
  const bobRow = () => study.snapshot().groups[0].members.find((m) => m.clientId === 2);
  assert.equal(bobRow()?.lossPct, null);
  clock.t += 1000;
  // bob's next report, a second after alice's: judged against her cutoff
  ingest(report({ session: B, clientId: 2, seq: 2, recv: { 1: gotSeqs([1, 18]) } }));
  assert.equal(bobRow()?.lossPct, 0, '18 expected (20 sent, 2 past the cutoff), 18 received');
  ingest(report({ session: B, clientId: 2, seq: 3, recv: { 1: gotSeqs([1, 16, 18, 20]) } }));
  assert.equal(bobRow()?.lossPct, 5.56, 'seq 17 of the 18 counted is missing; 19 and 20 count nowhere yet');
});

test('loss: a receiver silent for a while is compared with what its senders had sent by then', () => {
  const { clock, study, ingest } = clocked();
  ingest(report({ session: A, clientId: 1, seq: 1, sentTo: { 2: 30 } }));
  clock.t += 1000;
  ingest(report({ session: B, clientId: 2, recv: { 1: stream(30) } }));
  for (let seq = 2; seq <= 4; seq++) {
    clock.t += 5000;
    ingest(report({ session: A, clientId: 1, seq, sentTo: { 2: 30 * seq } }));
  }
  const bob = study.snapshot().groups[0].members.find((m) => m.clientId === 2);
  assert.equal(bob?.lossPct, 0);
  assert.equal(bob?.stale, false, '15 s is not yet silent');
});

test('ingest keeps the newest report of a session and ignores older or repeated seqs', () => {
  const { study, ingest } = clocked();
  assert.equal(ingest(report({ session: A, seq: 3, name: 'third' })), true);
  assert.equal(ingest(report({ session: A, seq: 2, name: 'second' })), false);
  assert.equal(ingest(report({ session: A, seq: 3, name: 'third again' })), false);
  assert.equal(ingest(report({ session: A, seq: 4, name: 'fourth' })), true);
  const s = study.snapshot();
  assert.equal(s.sessions, 1);
  assert.deepEqual(s.groups[0].members.map((m) => m.name), ['fourth']);
  // a malformed report is refused when the caller asks for the check (the intake checks before it ingests)
  assert.equal(study.ingest({ at: 0, node: 'n', ua: '', r: /** @type {any} */ ({ v: 1, session: C }) }, { check: true }), false);
  assert.equal(study.ingest({ at: 0, node: 'n', ua: '', r: /** @type {any} */ ({ v: 1 }) }), false, 'one without a session never');
});

test('the member key is short, stable and not the session id', () => {
  const { study, ingest } = clocked();
  ingest(report({ session: A }));
  const text = JSON.stringify(study.snapshot());
  assert.ok(!text.includes(A), 'the session id is a secret: never in the snapshot');
  const [m] = study.snapshot().groups[0].members;
  assert.equal(m.key, memberKey(A));
  assert.match(m.key, /^[0-9a-f]{12}$/);
  assert.ok(!A.includes(m.key));
  assert.ok(!JSON.stringify(study.delta()).includes(A));
});

test('a member is stale when a neighbour froze or when it went silent', () => {
  const { clock, study, ingest } = clocked({ staleAfterMs: 15_000 });
  ingest(report({ session: A, clientId: 1, ages: { 2: FREEZE_MS + 1, 3: 200, 4: null } }));
  ingest(report({ session: B, clientId: 2, ages: { 1: 150 } }));
  let rows = study.snapshot().groups[0].members;
  assert.deepEqual(rows.map((m) => [m.clientId, m.stale, m.staleFrom]), [[1, true, [2]], [2, false, []]]);
  study.delta();
  clock.t += 10_000;
  ingest(report({ session: A, clientId: 1, seq: 2, ages: { 2: 100 } }));
  clock.t += 6_000; // bob: 16 s without a report
  const d = study.delta();
  assert.deepEqual(d.groups[0].members.map((m) => [m.clientId, m.stale]), [[1, false], [2, true]]);
  rows = study.snapshot().groups[0].members;
  assert.equal(rows[1].lastReportAgoMs, 16_000);
  // going silent is a change the next delta carries even without a report
  clock.t += 10_000;
  const silent = study.delta();
  assert.deepEqual(silent.groups[0].members.map((m) => [m.clientId, m.stale]), [[1, true], [2, true]]);
});

test('holderOf: the live session holding a client id; none once it left or went silent', () => {
  const { clock, study, ingest } = clocked({ staleAfterMs: 15_000 });
  ingest(report({ session: A, clientId: 7, group: 'g1' }));
  assert.equal(study.holderOf('g1', 7), A);
  assert.equal(study.holderOf('g2', 7), undefined);
  assert.equal(study.holderOf('g1', 8), undefined);
  clock.t += 15_001;
  assert.equal(study.holderOf('g1', 7), undefined, 'silent too long');
  ingest(report({ session: A, clientId: 7, group: 'g1', seq: 2 }));
  assert.equal(study.holderOf('g1', 7), A);
  ingest(report({ session: A, clientId: 7, group: 'g1', seq: 3, final: true }));
  assert.equal(study.holderOf('g1', 7), undefined, 'left');
  ingest(report({ session: B, clientId: 7, group: 'g1' }));
  assert.equal(study.holderOf('g1', 7), B, 'the id is free for the next session');
  ingest(report({ session: B, clientId: 9, group: 'g1', seq: 2 }));
  assert.equal(study.holderOf('g1', 7), undefined, 'a session that got a new id no longer holds the old one');
  assert.equal(study.holderOf('g1', 9), B);
});

test('members that left stay visible, marked, for a while and then drop off', () => {
  const { clock, study, ingest } = clocked({ keepLeftMs: 60_000 });
  ingest(report({ session: A, clientId: 1 }));
  ingest(report({ session: B, clientId: 2 }));
  study.delta();
  ingest(report({ session: A, clientId: 1, seq: 2, final: true }));
  let d = study.delta();
  assert.deepEqual(d.groups[0].members.map((m) => [m.clientId, m.left, m.stale]), [[1, true, false], [2, false, false]]);
  clock.t += 60_001;
  d = study.delta();
  assert.deepEqual(d.removed, [{ key: memberKey(A), group: 'g' }]);
  assert.deepEqual(study.snapshot().groups[0].members.map((m) => m.clientId), [2]);
  assert.equal(study.snapshot().sessions, 2, 'still held (its seq keeps older reports out)');
  assert.equal(ingest(report({ session: A, clientId: 1, seq: 2 })), false);
});

test('memory is bounded: when full the session gone longest is forgotten, a final one first', () => {
  const { clock, study, ingest } = clocked({ maxSessions: 3 });
  const ids = Array.from({ length: 3 }, () => randomSessionId());
  ids.forEach((session, i) => { clock.t += 10; ingest(report({ session, clientId: i + 1 })); });
  ingest(report({ session: ids[1], clientId: 2, seq: 2, final: true }));
  study.delta();
  ingest(report({ session: A, clientId: 4 }));
  let s = study.snapshot();
  assert.equal(s.sessions, 3);
  assert.deepEqual(s.groups[0].members.map((m) => m.clientId), [1, 3, 4], 'the one that left went first');
  assert.deepEqual(study.delta().removed, [{ key: memberKey(ids[1]), group: 'g' }]);
  ingest(report({ session: B, clientId: 5 }));
  s = study.snapshot();
  assert.deepEqual(s.groups[0].members.map((m) => m.clientId), [3, 4, 5], 'then the one not heard of for longest');
  for (let i = 0; i < 50; i++) ingest(report({ session: randomSessionId(), clientId: 10 + i, group: `g${i % 7}` }));
  assert.equal(study.snapshot().sessions, 3);
  assert.equal(study.snapshot().members, 3);
});

test('snapshot: device, paths, RT, freshness and tracking of a member', () => {
  const { study, ingest } = clocked();
  ingest(report({
    session: A, clientId: 1, name: '<img src=x onerror=alert(1)>', transport: 'p2p', rts: [10, 20, 30, 40],
    channel: { ordered: false, maxRetransmits: 0, links: [{ id: 2, name: 'b', path: 'direct', sinceMs: 10 }, { id: 3, name: 'c', path: 'turn', sinceMs: 5 }] },
    recv: { 2: stream(60, { n: 60, spanMs: 10_000, frozenMs: 1000 }), 3: stream(60, { n: 60, spanMs: 10_000 }) },
    tracking: { frames: 300, visibleFrames: 150, processMsSum: 2400, spanMs: 10_000 },
    effectiveType: '4g',
    playout: {
      mode: 'predict',
      streams: {
        2: { seconds: 30, behindMs: 10, shares: { interpolating: 0, extrapolating: 0.9, holding: 0.1, easing: 0 }, jumps: 1, jumpsPerMinute: 2 },
        3: { seconds: 10, behindMs: 50, shares: { interpolating: 0, extrapolating: 0.5, holding: 0.5, easing: 0 }, jumps: 1, jumpsPerMinute: 6 },
      },
    },
  }), SAFARI_IOS);
  const [m] = study.snapshot().groups[0].members;
  assert.equal(m.name, '<img src=x onerror=alert(1)>');
  assert.deepEqual(m.device, { browser: 'Safari', browserVersion: '17.4', os: 'iOS', device: 'mobile', family: 'Safari iOS' });
  assert.deepEqual(m.paths, [{ id: 2, path: 'direct' }, { id: 3, path: 'turn' }]);
  assert.equal(m.rt.last, 40);
  assert.equal(m.rt.mean, 25);
  assert.equal(m.rt.p95, 40);
  assert.deepEqual(m.freshness, { updatesPerStreamPerS: 6, frozenPct: 5 });
  assert.deepEqual(m.tracking, { fps: 30, msPerFrame: 8, visiblePct: 50 });
  // weighted by each stream's time drawn: (30 x 10 + 10 x 50) / 40 ms; 2 jumps in 40 s
  assert.deepEqual(m.drawn, { mode: 'predict', behindMs: 20, holdingPct: 20, jumpsPerMinute: 3 });
  assert.equal(m.effectiveType, '4g');
  assert.equal(m.node, 'node-a');
  assert.equal(m.left, false);
});

test('series: RT mean and freshness per bucket, of the group and of each member, from the deltas between reports', () => {
  const { clock, study, ingest } = clocked({ bucketMs: 5000 });
  clock.t = 1_700_000_000_000; // a bucket start
  ingest(report({ session: A, clientId: 1, seq: 1, rts: [10, 10], recv: { 2: stream(30, { n: 30, spanMs: 5000 }) } }));
  ingest(report({ session: B, clientId: 2, seq: 1, rts: [40] }));
  clock.t += 5000;
  ingest(report({ session: A, clientId: 1, seq: 2, rts: [10, 10, 20, 20], recv: { 2: stream(40, { n: 40, spanMs: 10_000, frozenMs: 2000 }) } }));
  // first seen mid-way (seq 5): its history is not counted in this bucket
  ingest(report({ session: C, clientId: 3, seq: 5, rts: [500, 500, 500] }));
  const { series } = study.snapshot().groups[0];
  const a = memberKey(A);
  const b = memberKey(B);
  assert.deepEqual(series, [
    {
      t: 1_700_000_000_000, rtMean: 20, updatesPerStreamPerS: 6, frozenPct: 0,
      members: [{ key: a, rtMean: 10, updatesPerStreamPerS: 6, frozenPct: 0 }, { key: b, rtMean: 40, updatesPerStreamPerS: null, frozenPct: null }],
    },
    {
      t: 1_700_000_005_000, rtMean: 20, updatesPerStreamPerS: 2, frozenPct: 40,
      members: [{ key: a, rtMean: 20, updatesPerStreamPerS: 2, frozenPct: 40 }],
    },
  ], 'the group and each member that reported in the bucket');
  const d = study.delta();
  assert.equal(d.groups[0].series.length, 2, 'a group new to the feed comes with its whole series');
  clock.t += 5000;
  ingest(report({ session: B, clientId: 2, seq: 2, rts: [40, 60] }));
  assert.deepEqual(study.delta().groups[0].series, [{
    t: 1_700_000_010_000, rtMean: 60, updatesPerStreamPerS: null, frozenPct: null, members: [{ key: b, rtMean: 60, updatesPerStreamPerS: null, frozenPct: null }],
  }]);
});

test('delta: only the groups that got a report, and nothing when nothing changed', () => {
  const { study, ingest } = clocked();
  ingest(report({ session: A, clientId: 1, group: 'g1' }));
  ingest(report({ session: B, clientId: 1, group: 'g2' }));
  const first = study.delta();
  assert.deepEqual(first.groups.map((g) => g.group).sort(), ['g1', 'g2']);
  assert.equal(first.groupCount, 2);
  assert.equal(first.members, 2);
  assert.ok(isEmptyDelta(study.delta()));
  ingest(report({ session: B, clientId: 1, group: 'g2', seq: 2, name: 'renamed' }));
  const d = study.delta();
  assert.deepEqual(d.groups.map((g) => [g.group, g.members.map((m) => m.name)]), [['g2', ['renamed']]]);
  assert.deepEqual(d.groups[0].series, []);
  // a session moving to another group: gone from the old one (whose card goes), shown in the new
  ingest(report({ session: A, clientId: 1, group: 'g3', seq: 2 }));
  const moved = study.delta();
  assert.deepEqual(moved.removedGroups, ['g1']);
  assert.deepEqual(moved.groups.map((g) => g.group), ['g3']);
});

test('delta: when more went away than it can list, the next delta is the whole state', () => {
  const { study, ingest } = clocked({ maxSessions: 2 });
  study.delta();
  for (let i = 0; i < 6; i++) ingest(report({ session: randomSessionId(), clientId: i + 1, group: `g${i}` }));
  const d = study.delta();
  assert.equal(d.resync, true);
  assert.deepEqual(d.groups.map((g) => g.group), ['g4', 'g5']);
  assert.ok(!isEmptyDelta(d));
  assert.ok(isEmptyDelta(study.delta()));
});

test('a report built by the client core is taken as is', async () => {
  /** @type {import('../core/client.js').Transport} */
  const transport = {
    name: 'fake',
    connect: () => Promise.resolve({ type: 2, clientId: 4, serverTime: 0, members: [{ id: 4, name: 'me' }] }),
    sendUpdate() {},
    sendAck() {},
    channelInfo: () => null,
    close() {},
  };
  const client = new CarClient({ transport, group: 'lab', name: 'me', pose: () => [0, 0, 0, 0, 0, 0, 1] });
  await client.connect();
  /** @type {ClientReport[]} */
  const sent = [];
  const reporter = new Reporter({ client, send: (r) => { sent.push(r); }, intervalMs: 0, kind: 'sim' });
  reporter.send(false);
  client.close();
  const { study, ingest } = clocked();
  assert.equal(reportProblem(sent[0]), null);
  assert.equal(ingest(sent[0], 'node'), true);
  const [m] = study.snapshot().groups[0].members;
  assert.deepEqual([m.clientId, m.name, m.kind, m.device.family], [4, 'me', 'sim', 'Node.js']);
  assert.equal(study.holderOf('lab', 4), reporter.session);
});

test('cost: 1000 members (ingest, snapshot, delta)', (t) => {
  const { clock, study } = clocked();
  const groupSize = 5;
  const n = 1000;
  const sessions = Array.from({ length: n }, () => randomSessionId());
  const uas = [CHROME_ANDROID, SAFARI_IOS];
  /** @param {number} i @param {number} seq */
  const make = (i, seq) => {
    const group = `group-${Math.floor(i / groupSize)}`;
    const id = (i % groupSize) + 1;
    /** @type {Record<string, number>} */
    const sentTo = {};
    /** @type {ClientReport['recv']} */
    const recv = {};
    /** @type {Record<string, number>} */
    const ages = {};
    for (let j = 1; j <= groupSize; j++) {
      if (j === id) continue;
      sentTo[j] = seq * 30;
      recv[j] = stream(seq * 30 - 1, { n: seq * 30, spanMs: seq * 5000 });
      ages[j] = 120;
    }
    const rts = Array.from({ length: 30 }, (_, k) => 20 + ((k * 7 + i) % 40));
    return report({ session: sessions[i], seq, group, clientId: id, name: `p${i}`, sentTo, recv, ages, rts, transport: 'p2p' });
  };
  const round1 = sessions.map((_, i) => make(i, 1));
  const round2 = sessions.map((_, i) => make(i, 2));
  let t0 = performance.now();
  for (let i = 0; i < n; i++) study.ingest({ at: clock.t, node: 'node-a', ua: uas[i % 2], r: round1[i] });
  const ingestMs = performance.now() - t0;
  t0 = performance.now();
  const snap = study.snapshot();
  const snapshotMs = performance.now() - t0;
  const snapshotBytes = JSON.stringify(snap).length;
  study.delta();
  clock.t += 5000;
  for (let i = 0; i < n; i++) study.ingest({ at: clock.t, node: 'node-a', ua: uas[i % 2], r: round2[i] });
  t0 = performance.now();
  const all = study.delta();
  const deltaAllMs = performance.now() - t0;
  // one second's worth at a 5 s report interval: a fifth of the members report
  clock.t += 1000;
  const round3 = sessions.map((_, i) => make(i, 3));
  for (let i = 0; i < n / 5; i++) study.ingest({ at: clock.t, node: 'node-a', ua: uas[i % 2], r: round3[i] });
  t0 = performance.now();
  const part = study.delta();
  const deltaPartMs = performance.now() - t0;
  clock.t += 1000;
  t0 = performance.now();
  const none = study.delta();
  const deltaNoneMs = performance.now() - t0;
  assert.equal(snap.members, n);
  assert.equal(all.groups.length, n / groupSize);
  assert.equal(part.groups.length, n / groupSize / 5);
  assert.ok(isEmptyDelta(none));
  t.diagnostic(`1000 members in ${n / groupSize} groups: ingest ${ingestMs.toFixed(1)} ms (${((1000 * ingestMs) / n).toFixed(1)} µs/report), `
    + `snapshot ${snapshotMs.toFixed(1)} ms (${(snapshotBytes / 1024).toFixed(0)} KB), delta after all reported ${deltaAllMs.toFixed(1)} ms `
    + `(${(JSON.stringify(all).length / 1024).toFixed(0)} KB), delta after 200 reported ${deltaPartMs.toFixed(1)} ms `
    + `(${(JSON.stringify(part).length / 1024).toFixed(0)} KB), delta with nothing new ${deltaNoneMs.toFixed(2)} ms`);
});

test('the shared scene: each member\'s row says what it holds, its group\'s view measures convergence (server/live-scene.js)', () => {
  const { clock, study, ingest } = clocked();
  const t0 = clock.t - 3000;
  /** @param {number[][]} marks [ms since t0, id, version, writer, hash, local] @param {boolean} inStep */
  const scene = (marks, inStep) => ({ t0, clockErrorMs: 4, objects: 2, digest: 9, inStep, from: 0, total: marks.length, log: marks.flat() });
  ingest(report({ session: A, clientId: 1, scene: scene([[100, 5, 1, 1, 7, 1], [400, 6, 1, 1, 8, 1]], true) }));
  ingest(report({ session: B, clientId: 2, name: 'b', scene: scene([[180, 5, 1, 1, 7, 0], [430, 6, 1, 1, 8, 0]], false) }));
  const g = study.snapshot().groups[0];
  assert.deepEqual(g.members.map((m) => m.scene), [{ objects: 2, inStep: true }, { objects: 2, inStep: false }]);
  assert.deepEqual(g.scene && [g.scene.members, g.scene.inStep, g.scene.edits, g.scene.pending, g.scene.convergenceMs.max], [2, 1, 2, 0, 80]);
  const d = study.delta();
  assert.equal(d.groups[0].scene?.edits, 2, 'deltas carry it too');
  ingest(report({ session: C, group: 'old', clientId: 3 }));
  assert.equal(study.snapshot().groups.find((x) => x.group === 'old')?.scene, null, 'pages from before the shared scene: none');
});
