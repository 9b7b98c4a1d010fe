// The fuzz scenario lanes' plans and verdicts, without a server (the lanes
// themselves run in lab/commands/fuzz.test.js).
import test from 'node:test';
import assert from 'node:assert/strict';
import { CloseCode, MsgType, decode } from '../../core/protocol.js';
import { MAX_MESSAGE_BYTES } from '../../web/src/transport/relay-udp.js';
import { STARVED_GAP_MS, fairnessFigures, judgeFairFlood, judgeSlowHeaders, judgeTakeover, longestGap, scenarioPlan, updateFrames } from './fuzz-scenarios.js';
import { casesSelected, scenarioSelected } from './fuzz.js';

const LIMITS = { updatesPerSecond: 60, updateBurst: 600, headersTimeoutMs: 10_000, checkIntervalMs: 1_000 };

test('scenarioPlan: seeded, 75 % of the UPDATE limit, bursts over the bucket, slow sockets bounded by the headers timeout', () => {
  assert.deepEqual(scenarioPlan(7, LIMITS), scenarioPlan(7, LIMITS));
  assert.notDeepEqual(scenarioPlan(7, LIMITS).takeover, scenarioPlan(8, LIMITS).takeover);
  const p = scenarioPlan(7, LIMITS, { floodSeconds: 3 });
  assert.equal(p.flood.rate, 45);
  assert.equal(p.flood.seconds, 3);
  assert.ok(p.flood.burst > 600 && p.flood.burst <= 650, 'just over the bucket');
  assert.ok(p.floodUdp.burst >= 750, 'well over: some datagrams may be lost');
  assert.ok(p.slow.sockets.length >= 3 && p.slow.sockets.length <= 6);
  assert.equal(p.slow.boundMs, 12_500);
  assert.match(p.takeover.id, /^[a-z0-9]+(-[a-z0-9]+)*$/, 'a PeerJS id the guard takes');
  assert.notEqual(p.takeover.token, p.takeover.otherToken);
});

test('longestGap counts the gaps into and out of the window; none at all is the whole window', () => {
  assert.equal(longestGap([], 0, 1000), 1000);
  assert.equal(longestGap([100, 300, 900], 0, 1000), 600);
  assert.equal(longestGap([-50, 100, 200], 0, 1000), 800);
  assert.equal(longestGap([100, 2000], 0, 1000), 900, 'arrivals after the window are not in it');
});

test('updateFrames: n UPDATEs with consecutive seqs, at most perFrame per frame; a relay-udp frame fits one packet', () => {
  const frames = updateFrames(5, 10, 45, 20);
  assert.equal(frames.length, 3);
  const seqs = frames.flatMap((f) => {
    const m = decode(f);
    if (m instanceof Error) throw m;
    return m.type === MsgType.BATCH ? m.messages.map((x) => /** @type {any} */ (x).seq) : [/** @type {any} */ (m).seq];
  });
  assert.deepEqual(seqs, Array.from({ length: 45 }, (_, i) => 10 + i));
  assert.ok(updateFrames(5, 1e6, 22, 22)[0].length <= MAX_MESSAGE_BYTES);
});

/** @returns {import('./fuzz-scenarios.js').FloodFacts} */
const healthyFlood = (udp = false) => ({
  udp, updatesPerSecond: 60,
  good: [1, 2, 3].map((id) => ({ id, closed: null, gapMs: { 8: 180 }, fromFloods: 100 })),
  floods: [
    { id: 4, role: 'steady', sent: 360, closed: null },
    { id: 5, role: 'burster', sent: 960, closed: udp ? null : { code: CloseCode.RATE_LIMITED, reason: 'over 60 UPDATEs/s' } },
  ],
  udpDropped: udp ? 300 : 0,
  clientStallMs: 0,
});

test('judgeFairFlood: none for a fair run; an innocent closed or starved, the steady flooder closed, the burster not closed (relay) or closed (relay-udp) each say so', () => {
  assert.deepEqual(judgeFairFlood(healthyFlood()), []);
  assert.deepEqual(judgeFairFlood(healthyFlood(true)), []);
  const broken = healthyFlood();
  broken.good[0].closed = { code: CloseCode.RATE_LIMITED, reason: 'over 2000 messages/s' };
  broken.good[1].gapMs = { 8: 5001 };
  broken.floods[0].closed = { code: CloseCode.RATE_LIMITED, reason: 'x' };
  broken.floods[1].closed = null;
  assert.deepEqual(judgeFairFlood(broken), [
    'well-behaved member 1 was closed: 4005 "over 2000 messages/s"',
    'well-behaved member 2 got nothing from 8 for 5001 ms (starved: over 5000 ms)',
    'the flooder at 75 % of its limit (4) was closed: 4005 "x"',
    'the flooder over its limit (5) ended open, not 4005 "over 60 UPDATEs/s"',
  ]);
  const udp = healthyFlood(true);
  udp.floods[1].closed = { code: CloseCode.RATE_LIMITED, reason: 'over 60 UPDATEs/s' };
  udp.udpDropped = 0;
  assert.equal(judgeFairFlood(udp).length, 2);
  // a gap is judged by one fixed bound, whatever the members' own process did meanwhile
  const stalled = healthyFlood();
  stalled.clientStallMs = 900;
  stalled.good[0].gapMs = { 8: STARVED_GAP_MS };
  assert.deepEqual(judgeFairFlood(stalled), []);
});

/** @returns {import('./fuzz-scenarios.js').TakeoverFacts} */
const healthyTakeover = () => ({
  olderFirst: 'OPEN', olderClosed: { code: CloseCode.ID_TAKEN, reason: 'id claimed again by a newer connection' },
  newerFirst: 'OPEN', newerOpen: true, offersToNewer: [1, 2], offersToOlder: 0,
  thiefFirst: 'ID-TAKEN', thiefClosed: { code: CloseCode.ID_TAKEN, reason: 'id is taken by another token' }, liveForId: [1, 1, 1],
});

test('judgeTakeover: none for a clean takeover; each broken promise one line, a missing OPEN for the newer socket too', () => {
  assert.deepEqual(judgeTakeover(healthyTakeover()), []);
  assert.deepEqual(judgeTakeover({ ...healthyTakeover(), newerFirst: null }), ['the same-token second claim got no message, not OPEN']);
  assert.deepEqual(judgeTakeover({
    ...healthyTakeover(), olderClosed: null, offersToNewer: [2], offersToOlder: 1, thiefFirst: 'OPEN', thiefClosed: null, liveForId: [1, 2, 1],
  }), [
    'the older socket ended still open, not 4007 "id claimed again by a newer connection"',
    'messages to the id reached the newer socket: [2] of [1,2]',
    '1 message(s) to the id reached the older socket after the takeover',
    "another token's claim got OPEN and ended open, not ID-TAKEN and 4007",
    'live sockets for the id (from peersConnected): 1, 2, 1, not 1 each time',
  ]);
});

test('judgeSlowHeaders: 408 or a close within the bound, others answered', () => {
  const ok = { boundMs: 12_500, sockets: [{ path: '/', dripMs: 0, outcome: '408', ms: 10_600 }, { path: '/relay', dripMs: 300, outcome: 'closed', ms: 11_000 }], others: { ok: 20, failed: [] } };
  assert.deepEqual(judgeSlowHeaders(ok), []);
  assert.deepEqual(judgeSlowHeaders({
    ...ok,
    sockets: [{ path: '/', dripMs: 0, outcome: 'still open', ms: 17_500 }, { path: '/x', dripMs: 0, outcome: '408', ms: 13_000 }],
    others: { ok: 3, failed: ['GET /healthz: timeout'] },
  }), [
    'a slow-headers socket on / ended still open, not 408 or closed',
    'a slow-headers socket on /x was cut off after 13000 ms (bound 12500 ms)',
    'other requests failed while slow sockets were open: GET /healthz: timeout',
  ]);
});

test('--only: scenario names select scenarios; a list of scenarios only runs no fuzz case', () => {
  assert.equal(scenarioSelected(undefined, 'slow-headers'), true);
  assert.equal(scenarioSelected(['relay'], 'slow-headers'), false);
  assert.equal(scenarioSelected(['scenario'], 'fair-flood'), true);
  assert.equal(scenarioSelected(['fair-flood'], 'fair-flood'), true);
  assert.equal(casesSelected(undefined), true);
  assert.equal(casesSelected(['fair-flood', 'scenario']), false);
  assert.equal(casesSelected(['fair-flood', 'relay']), true);
});

test('fairnessFigures: the longest gap per lane family, null where the lanes did not run or were skipped', () => {
  /** @param {string} name @param {number[]} gaps @param {string | null} [skipped] */
  const lane = (name, gaps, skipped = null) => ({ name, ok: true, skipped, problems: [], notes: [], summary: '',
    facts: { good: gaps.map((gap, id) => ({ id, gapMs: { 9: gap } })) } });
  assert.deepEqual(fairnessFigures([lane('fair-flood', [180, 420]), lane('fair-flood-udp', [900], 'no WebRTC'), lane('report-flood', [200]), lane('report-claim', [650])]),
    { floodGapMs: 420, floodUdpGapMs: null, reportLanesGapMs: 650 });
  assert.deepEqual(fairnessFigures([]), { floodGapMs: null, floodUdpGapMs: null, reportLanesGapMs: null });
});
