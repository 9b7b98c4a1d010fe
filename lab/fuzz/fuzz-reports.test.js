// The report lanes' plans, bodies and verdicts, without a carlab server (the
// lanes themselves run in lab/commands/fuzz.test.js): fuzz-reports.js and the
// fuzz-report-*.js modules (plan, garbage, flood-claim, books).
import test from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CarClient } from '../../core/client.js';
import { REPORT_LIMITS, RtHistogram, buildReport, reportProblem } from '../../core/report.js';
import { openRecorder } from '../../server/recorder.js';
import { REPORT_SCENARIO_NAMES, createReportLedger, judgeGoodReporters, rawExchange } from './fuzz-reports.js';
import { GARBAGE_KINDS, reportPlan } from './fuzz-report-plan.js';
import { completeReport, garbageBody, garbageRequest, judgeReportGarbage } from './fuzz-report-garbage.js';
import { judgeReportClaim, judgeReportFlood } from './fuzz-report-flood-claim.js';
import { booksFacts, judgeReportBooks, readRecordedReports, reportCountsIn } from './fuzz-report-books.js';
import { casesSelected, scenarioSelected } from './fuzz.js';

/** @typedef {import('../../core/report.js').ClientReport} ClientReport */

/** A real report of a client that joined group g as 7 (nothing measured yet: completeReport fills the rest). */
async function realReport() {
  /** @type {import('../../core/client.js').Transport} */
  const transport = {
    name: 'relay',
    connect: () => Promise.resolve({ type: 2, clientId: 7, serverTime: 0, members: [{ id: 7, name: 'a' }, { id: 8, name: 'b' }] }),
    sendUpdate() {}, sendAck() {}, channelInfo: () => null, close() {},
  };
  const client = new CarClient({ transport, group: 'fuzz-report-garbage-1', name: 'a', pose: () => [0, 0, 0, 0, 0, 0, 1] });
  await client.connect();
  const rt = new RtHistogram();
  for (const v of [12.3, 15, 250, 1200]) rt.add(v);
  return buildReport(client, { session: 'f'.repeat(32), seq: 3, final: false, kind: 'sim', uptimeMs: 4000, rt });
}

/**
 * What the intake (server/report-intake.js, in its order) answers a garbage
 * case, for a fresh session: the model the plan's expectations are checked
 * against.
 * @param {import('./fuzz-report-plan.js').GarbageCase} c @param {Buffer} body
 */
function intakeModel(c, body) {
  const type = String(c.type ?? '').split(';')[0].trim().toLowerCase();
  if (type !== 'application/json' && type !== 'text/plain') return 415;
  if (c.framing === 'declared-only') return c.declared > REPORT_LIMITS.maxBytes ? 413 : 400;
  if (body.length > REPORT_LIMITS.maxBytes) return 413;
  let r;
  try { r = JSON.parse(body.toString('utf8')); } catch { return 400; }
  return reportProblem(r) ? 422 : 204;
}

test('reportPlan: seeded; one case of every kind plus extras; each session its own', () => {
  assert.deepEqual(reportPlan(7), reportPlan(7));
  assert.notDeepEqual(reportPlan(7).garbage.cases, reportPlan(8).garbage.cases);
  const p = reportPlan(7, REPORT_LIMITS, { extraGarbage: 5, floodSeconds: 1.5 });
  assert.equal(p.garbage.cases.length, GARBAGE_KINDS.length + 5);
  assert.deepEqual([...new Set(p.garbage.cases.map((c) => c.name))].sort(), [...GARBAGE_KINDS].sort());
  assert.equal(p.flood.seconds, 1.5);
  assert.ok(p.reportMs > REPORT_LIMITS.minIntervalMs, 'well-behaved members report less often than the limit');
  const sessions = [...p.garbage.cases.map((c) => c.session), p.claim.claimer];
  assert.equal(new Set(sessions).size, sessions.length);
  for (const s of sessions) assert.match(s, /^[0-9a-f]{32}$/);
  assert.notEqual(p.claim.group, p.claim.otherGroup);
  const status = Object.fromEntries(p.garbage.cases.map((c) => [c.name, c.expect.join('|')]));
  assert.equal(status['not-json'], '400');
  assert.equal(status['too-large-chunked'], '413');
  assert.equal(status['wrong-type'], '415');
  assert.equal(status['bad-seq'], '422');
  assert.equal(status['at-limit'], '204');
  assert.equal(status['deep-free-form'], '204|422', 'no document names a status: any answer, but an answer');
});

test('every garbage body gets, from the intake\'s own checks, exactly the status the plan expects; over 100 seeds', async () => {
  const real = await realReport();
  assert.equal(reportProblem(completeReport(real)), null, 'the completed real report is a report');
  const seen = new Set();
  for (let seed = 1; seed <= 100; seed++) {
    for (const c of reportPlan(seed).garbage.cases) {
      const body = garbageBody(c, real);
      const got = intakeModel(c, body);
      assert.ok(c.expect.includes(got), `seed ${seed} ${c.name} (${c.variant}): the intake would answer ${got}, not ${c.expect}`);
      if (!c.borderline) assert.equal(c.expect.length, 1);
      seen.add(`${c.name}:${got}`);
      if (c.body.kind === 'deep' || c.name === 'too-large-sent' || c.name === 'too-large-chunked' || c.name === 'at-limit') {
        assert.ok(c.name.startsWith('too-large') ? body.length > REPORT_LIMITS.maxBytes : body.length <= REPORT_LIMITS.maxBytes, `${c.name}: ${body.length} bytes`);
      }
    }
  }
  for (const k of ['not-json:400', 'bad-utf8:400', 'truncated-json:400', 'too-large-sent:413', 'at-limit:204', 'wrong-type:415', 'proto-keys:422', 'deep-nesting:422']) {
    assert.ok(seen.has(k), k);
  }
});

test('garbage bodies: __proto__ stays an own key, deep nesting is deep, 1e999 is in the text', async () => {
  const real = await realReport();
  const base = reportPlan(1).garbage.cases[0];
  /** @param {import('./fuzz-report-plan.js').GarbageBody} body */
  const text = (body) => garbageBody({ ...base, body }, real).toString('utf8');
  const whole = JSON.parse(text({ kind: 'proto', where: '' }));
  assert.deepEqual(Object.keys(whole), ['__proto__']);
  assert.equal(whole.v, undefined, 'nothing inherited from it');
  assert.ok(Object.keys(JSON.parse(text({ kind: 'proto', where: 'sentTo' })).sentTo).includes('__proto__'));
  const moved = JSON.parse(text({ kind: 'proto-field', field: 'kind' }));
  assert.equal(Object.hasOwn(moved, 'kind'), false);
  assert.match(reportProblem(moved) ?? '', /kind/);
  const deep = text({ kind: 'deep', where: 'updates.sent', depth: 20000, open: '[' });
  assert.ok(deep.includes('"sent":[[[[') && deep.length <= REPORT_LIMITS.maxBytes);
  assert.match(text({ kind: 'set', path: 'seq', value: { raw: '1e999' } }), /"seq":1e999/);
  assert.equal(JSON.parse(text({ kind: 'set', path: 'seq', value: { raw: '1e999' } })).seq, Infinity);
  const cut = text({ kind: 'cut', frac: 0.999 });
  assert.throws(() => JSON.parse(cut));
});

test('garbageRequest: keep-alive; a Content-Length, chunks that add up to the body, or a declared length and no body', () => {
  const c = reportPlan(1).garbage.cases[0];
  const body = Buffer.from('x'.repeat(2500));
  const [head, sent] = garbageRequest({ ...c, type: 'text/plain', framing: 'length' }, body, 'h:1');
  assert.match(head.toString(), /^POST \/reports HTTP\/1\.1\r\nHost: h:1\r\n.*Connection: keep-alive\r\nContent-Type: text\/plain\r\nContent-Length: 2500\r\n\r\n$/s);
  assert.equal(sent, body);
  const chunked = garbageRequest({ ...c, type: null, framing: 'chunked', chunkBytes: 1000 }, body, 'h:1');
  assert.doesNotMatch(chunked[0].toString(), /Content-Type|Content-Length/);
  assert.match(chunked[0].toString(), /Transfer-Encoding: chunked/);
  assert.deepEqual(chunked.slice(1).map((p) => p.toString().split('\r\n')[0]), ['3e8', '3e8', '1f4', '0']);
  const declared = garbageRequest({ ...c, framing: 'declared-only', declared: 99999 }, Buffer.alloc(0), 'h:1');
  assert.equal(declared.length, 1);
  assert.match(declared[0].toString(), /Content-Length: 99999\r\n\r\n$/);
});

test('rawExchange reads an early answer to a body still being sent, a 204, and says when nothing came', async () => {
  const server = http.createServer((req, res) => {
    if (req.headers['transfer-encoding']) {
      res.writeHead(413, { 'Content-Length': 2, Connection: 'close' });
      res.end('no');
      return;
    }
    req.resume();
    req.on('end', () => { res.writeHead(204); res.end(); });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', () => r(null)));
  const port = /** @type {import('node:net').AddressInfo} */ (server.address()).port;
  try {
    const c = reportPlan(1).garbage.cases[0];
    const big = garbageRequest({ ...c, framing: 'chunked', chunkBytes: 4096 }, Buffer.alloc(200_000, 32), `127.0.0.1:${port}`);
    const early = await rawExchange(port, big, 3000);
    assert.equal(early.status, 413);
    assert.equal(early.headers.connection, 'close');
    assert.equal(early.body, 'no');
    const ok = await rawExchange(port, garbageRequest({ ...c, framing: 'length' }, Buffer.from('{}'), `127.0.0.1:${port}`), 3000);
    assert.deepEqual([ok.outcome, ok.status], ['answered', 204]);
    const none = await rawExchange(port, [Buffer.from('POST /reports HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n')], 300);
    assert.deepEqual([none.outcome, none.status], ['timeout', null]);
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(() => r(null)));
  }
});

/** @returns {import('./fuzz-reports.js').GoodReporterFacts[]} */
const goodReporters = () => [7, 8].map((id) => ({ id, closed: null, gapMs: { [15 - id]: 200 }, reports: { sent: 3, accepted: 3, refused: [] } }));

test('judgeGoodReporters: closed, starved, refused or never accepted each say so', () => {
  assert.deepEqual(judgeGoodReporters(goodReporters()), []);
  const g = goodReporters();
  g[0].closed = { code: 4005, reason: 'x' };
  g[0].gapMs = { 8: 5400 };
  g[1].reports = { sent: 2, accepted: 0, refused: ['seq 2: 429 too_frequent', 'seq 3 (final): dropped'] };
  assert.deepEqual(judgeGoodReporters(g), [
    'well-behaved member 7 was closed: 4005 "x"',
    'well-behaved member 7 got nothing from 8 for 5400 ms (starved: over 5000 ms)',
    "well-behaved member 8's reports were not accepted: seq 2: 429 too_frequent; seq 3 (final): dropped",
    'well-behaved member 8 had no report accepted',
  ]);
});

test('judgeReportGarbage: exactly the status due, 413 closes, the reason matches the status; no answer or a 2xx/5xx is a problem', () => {
  /** @param {Partial<import('./fuzz-report-garbage.js').GarbageFacts['cases'][number]>} o */
  const kase = (o) => ({ what: 'x', expect: [422], borderline: false, outcome: 'answered', status: 422, code: 'bad_shape', connection: 'keep-alive', ...o });
  const healthy = {
    cases: [kase({}), kase({ what: 'big', expect: [413], status: 413, code: 'too_large', connection: 'close' }), kase({ what: 'edge', expect: [204], status: 204, code: 'accepted' }),
      kase({ what: 'deep', expect: [204, 422], borderline: true, status: 204, code: 'accepted' })],
    good: goodReporters(),
  };
  assert.deepEqual(judgeReportGarbage(healthy), []);
  assert.deepEqual(judgeReportGarbage({
    ...healthy,
    cases: [
      kase({ what: 'seq 0', status: 204, code: 'accepted' }),
      kase({ what: 'nan', status: 500, code: null }),
      kase({ what: 'cut', expect: [400], status: null, outcome: 'dropped', code: null }),
      kase({ what: 'deep', expect: [204, 422], borderline: true, status: null, outcome: 'timeout', code: null }),
      kase({ what: 'big', expect: [413], status: 413, code: 'too_large', connection: 'keep-alive' }),
      kase({ what: 'type', expect: [415], status: 415, code: 'bad_json' }),
    ],
  }), [
    'seq 0: answered 204 (accepted), not 422',
    'nan: answered 500, not 422',
    'cut: the connection was dropped where 400 was due',
    'deep: no answer within the time where 204 or 422 was due',
    'big: 413 without Connection: close',
    'type: answered 415 naming the reason bad_json',
  ]);
});

/** @returns {import('./fuzz-report-flood-claim.js').ReportFloodFacts} */
const healthyFlood = () => ({
  minIntervalMs: 1000, burst: 2, durationMs: 2010, posts: 900, byStatus: { 204: 4, 429: 896 },
  accepted: [{ sentAt: 0, doneAt: 2 }, { sentAt: 3, doneAt: 5 }, { sentAt: 1001, doneAt: 1003 }, { sentAt: 2004, doneAt: 2006 }],
  wrongRefusals: [], wrongRefusalCount: 0, final: { status: 204, code: 'accepted' }, secondFinal: { status: 429, code: 'too_frequent', retryAfter: '1' },
  good: goodReporters(),
});

test('judgeReportFlood: a burst of two, then at most one a second and not none, the rest 429 with Retry-After, the final once', () => {
  assert.deepEqual(judgeReportFlood(healthyFlood()), []);
  const f = healthyFlood();
  f.accepted = [{ sentAt: 0, doneAt: 2 }, { sentAt: 300, doneAt: 302 }, { sentAt: 900, doneAt: 902 }, { sentAt: 1500, doneAt: 1502 }, { sentAt: 1600, doneAt: 1602 }];
  f.wrongRefusals = ['seq 9: 409 stale'];
  f.wrongRefusalCount = 1;
  f.final = { status: 429, code: 'too_frequent' };
  f.secondFinal = { status: 204, code: 'accepted', retryAfter: null };
  assert.deepEqual(judgeReportFlood(f), [
    'the flooding session had 5 reports accepted in 2010 ms: more than one per 1 s after a burst of 2 (at most 4)',
    "the flooding session's report 3 was accepted 902 ms after its first: before 1000 ms",
    "the flooding session's report 4 was accepted 1502 ms after its first: before 2000 ms",
    "the flooding session's report 5 was accepted 1602 ms after its first: before 3000 ms",
    "1 of the flood's refusals were not 429 too_frequent with Retry-After 1: seq 9: 409 stale",
    "the flooding session's final report got 429 too_frequent, not 204 (a final report is let in once)",
    'a second final report at once got 204 accepted, not 429 with Retry-After (the final one is let in once)',
  ]);
  assert.deepEqual(judgeReportFlood({ ...healthyFlood(), secondFinal: { status: 204, code: 'accepted', retryAfter: null, spanMs: 1400 } }), [],
    'a machine that stalled past an interval between the two finals may let the second in');
  assert.equal(judgeReportFlood({ ...healthyFlood(), secondFinal: { status: 204, code: 'accepted', retryAfter: null, spanMs: 40 } }).length, 1);
  assert.deepEqual(judgeReportFlood({ ...healthyFlood(), accepted: [{ sentAt: 0, doneAt: 2 }], byStatus: { 204: 1, 429: 899 } }),
    ['the flooding session had 1 reports accepted in 2010 ms: fewer than one per 1 s (at least 2)']);
});

test('judgeReportClaim: each step its status and reason', () => {
  const steps = [
    { what: 'claim', expect: 409, expectCode: 'claimed', status: 409, code: 'claimed' },
    { what: 'replay', expect: 409, expectCode: 'stale', status: 409, code: 'stale' },
    { what: 'own', expect: 204, expectCode: 'accepted', status: 204, code: 'accepted' },
  ];
  assert.deepEqual(judgeReportClaim({ steps, good: goodReporters() }), []);
  assert.deepEqual(judgeReportClaim({
    steps: [{ ...steps[0], status: 204, code: 'accepted' }, { ...steps[1], code: 'claimed' }, { ...steps[2], status: null, code: null }], good: goodReporters(),
  }), ['claim: got 204 accepted, not 409 claimed', 'replay: got 409 claimed, not 409 stale', 'own: got no answer, not 204 accepted']);
});

test('reportCountsIn reads carlab_reports_total from the text exposition', () => {
  const text = '# HELP carlab_reports_total x\n# TYPE carlab_reports_total counter\ncarlab_reports_total{result="accepted"} 12\n'
    + 'carlab_reports_total{result="bad_shape"} 3\ncarlab_other{result="accepted"} 9\n';
  assert.deepEqual(reportCountsIn(text), { accepted: 12, bad_shape: 3 });
  assert.deepEqual(reportCountsIn('# TYPE carlab_reports_total counter\n'), {});
  assert.equal(reportCountsIn('# TYPE something_else counter\n'), null);
});

/**
 * A ledger: two good reports of session a (one replayed and refused), one garbage of session g.
 * @returns {import('./fuzz-reports.js').ReportLedger}
 */
function ledgerOf() {
  const ledger = createReportLedger();
  const post = (/** @type {Partial<import('./fuzz-reports.js').ReportPost>} */ o) => ledger.add({
    lane: 'l', what: 'good', session: 'a'.repeat(32), seq: 1, group: 'g', clientId: 7, final: false, expect: [204], mayAccept: true,
    outcome: 'answered', status: 204, code: 'accepted', retryAfter: null, connection: null, sentAt: 0, doneAt: 1, ...o,
  });
  post({});
  post({ seq: 2, final: true });
  post({ what: 'replay', expect: [409], mayAccept: false, status: 409, code: 'stale' });
  post({ what: 'garbage', session: 'b'.repeat(32), expect: [422], mayAccept: false, status: 422, code: 'bad_shape' });
  return ledger;
}

test('judgeReportBooks: the counts match the answers; every accepted report recorded once, nothing else', () => {
  const a = 'a'.repeat(32);
  const rec = (/** @type {any} */ o = {}) => ({ session: a, seq: 1, group: 'g', clientId: 7, final: false, problem: null, ...o });
  const recorded = { segments: 1, unreadable: 0, reports: [rec(), rec({ seq: 2, final: true })] };
  const metrics = { accepted: 2, stale: 1, bad_shape: 1 };
  assert.deepEqual(judgeReportBooks(booksFacts(ledgerOf(), metrics, recorded)), []);
  assert.deepEqual(judgeReportBooks(booksFacts(ledgerOf(), { accepted: 3, stale: 1 }, {
    segments: 1, unreadable: 1,
    reports: [rec(), rec(), rec({ seq: 5 }), rec({ session: 'b'.repeat(32), problem: 'seq must be a positive integer' }), rec({ seq: 2, group: 'h', final: true })],
  })), [
    'carlab_reports_total does not match the answers: accepted counted 3, answered 2; bad_shape counted 0, answered 1',
    '1 unreadable line(s) in the recording after a clean stop',
    `report ${a}#1 is recorded twice`,
    `report ${a}#5 is recorded but was not answered 204`,
    `a recorded report is not one (seq must be a positive integer): ${'b'.repeat(32)}#1`,
    `a report of a session that only sent refusable reports is recorded: ${'b'.repeat(32)}#1 (l garbage)`,
    `report ${a}#2 is recorded as group "h", client 7, final true; it was accepted as "g", 7, true`,
  ]);
  const missing = judgeReportBooks(booksFacts(ledgerOf(), metrics, { segments: 1, unreadable: 0, reports: [rec()] }));
  assert.deepEqual(missing, [`1 accepted report(s) are not in the recording: ${a}#2 (l good)`]);
  // a post without an answer may or may not have been counted
  const ledger = ledgerOf();
  ledger.add({ ...ledger.posts[3], session: 'c'.repeat(32), outcome: 'timeout', status: null, code: null });
  assert.deepEqual(judgeReportBooks(booksFacts(ledger, { ...metrics, bad_shape: 2 }, recorded)), []);
  assert.deepEqual(judgeReportBooks(booksFacts(ledger, metrics, recorded)), []);
  assert.deepEqual(judgeReportBooks(booksFacts(ledgerOf(), null, null)), ['/metrics has no carlab_reports_total', 'the recording could not be read']);
});

test('readRecordedReports reads what a recorder wrote', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'carlab-fuzz-reports-'));
  try {
    const real = await realReport();
    const recorder = openRecorder({ dir, node: 'n1', version: 'test' });
    recorder.append({ at: 1, node: 'n1', ua: 'x', r: real });
    recorder.append({ at: 2, node: 'n1', ua: 'x', r: { ...real, seq: 0 } });
    recorder.close();
    const got = await readRecordedReports(dir);
    assert.equal(got.segments, 1);
    assert.equal(got.unreadable, 0);
    assert.deepEqual(got.reports.map((r) => [r.session, r.seq, r.group, r.clientId, r.final, r.problem]), [
      [real.session, 3, real.group, 7, false, null],
      [real.session, 0, real.group, 7, false, 'seq must be a positive integer'],
    ]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('--only: the report lanes by name, all three as "reports", every scenario as "scenario"; none of them is a fuzz case', () => {
  for (const name of REPORT_SCENARIO_NAMES) {
    assert.equal(scenarioSelected([name], name), true);
    assert.equal(scenarioSelected(['reports'], name), true);
    assert.equal(scenarioSelected(['scenario'], name), true);
    assert.equal(scenarioSelected(['fair-flood'], name), false);
  }
  assert.equal(scenarioSelected(['reports'], 'fair-flood'), false);
  assert.equal(casesSelected(['report-garbage', 'reports', 'report-claim']), false);
  assert.equal(casesSelected(['report-flood', 'http']), true);
});
