import { test } from 'node:test';
import assert from 'node:assert/strict';

import { CarClient } from './client.js';
import { summarize } from './metrics.js';
import { REPORT_LIMITS, Reporter, RtHistogram, buildReport, overSession, randomSessionId, reportProblem, rtBucket, tallyReports } from './report.js';
import { CloseCode } from './protocol.js';

/** @typedef {import('./protocol.js').Pose} Pose */
const pose = () => /** @type {Pose} */ ([0, 0, 0, 0, 0, 0, 1]);

/**
 * Two clients joined through an in-memory hub: updates and ACKs go straight
 * across, so the counts a report carries are real.
 */
function pairedClients() {
  /** @type {Map<number, import('./client.js').TransportHandlers>} */
  const handlers = new Map();
  let clock = 0;
  /** @param {number} id @returns {import('./client.js').Transport} */
  const transport = (id) => ({
    name: 'relay',
    connect(_join, h) {
      handlers.set(id, h);
      return Promise.resolve({ type: 2, clientId: id, serverTime: 0, members: [{ id: 1, name: 'a' }, { id: 2, name: 'b' }] });
    },
    sendUpdate: (u) => { for (const [other, h] of handlers) if (other !== id) h.onUpdate(u, clock + 5); },
    sendAck: (sender, seq, acker) => handlers.get(sender)?.onAck({ type: 6, sender, seq, acker }),
    channelInfo: () => ({ ordered: true, maxRetransmits: null }),
    close() {},
  });
  const now = () => clock;
  const a = new CarClient({ transport: transport(1), group: 'g', name: 'a', pose, now, cycleMode: 'pipelined' });
  const b = new CarClient({ transport: transport(2), group: 'g', name: 'b', pose, now, cycleMode: 'pipelined' });
  return { a, b, tick: (/** @type {number} */ ms) => { clock += ms; } };
}

test('rtBucket: two significant digits, so a bucket is within 5 % of its values', () => {
  assert.equal(rtBucket(1.234), 1.2);
  assert.equal(rtBucket(12.34), 12);
  assert.equal(rtBucket(123.4), 120);
  assert.equal(rtBucket(1234), 1200);
  assert.equal(rtBucket(12345), 12000);
  for (let v = 1; v < 20000; v *= 1.07) assert.ok(Math.abs(rtBucket(v) - v) <= 0.05 * v, `${v}`);
});

test('an RtHistogram merged from parts has the exact count, mean, Dev and max of all values', () => {
  const values = Array.from({ length: 500 }, (_, i) => 3 + ((i * 37) % 290) / 1.7);
  const parts = [new RtHistogram(), new RtHistogram(), new RtHistogram()];
  values.forEach((v, i) => parts[i % 3].add(v));
  const merged = RtHistogram.merged(parts.map((p) => p.toJSON())).summary();
  const exact = summarize(values);
  assert.equal(merged.n, exact.n);
  assert.ok(Math.abs(/** @type {number} */ (merged.mean) - /** @type {number} */ (exact.mean)) < 1e-9);
  assert.ok(Math.abs(/** @type {number} */ (merged.dev) - /** @type {number} */ (exact.dev)) < 1e-6);
  assert.equal(merged.max, exact.max);
  for (const k of /** @type {const} */ (['p50', 'p95', 'p99'])) {
    assert.equal(merged[k], rtBucket(/** @type {number} */ (exact[k])), `${k}: the bucket of the exact one`);
  }
  assert.deepEqual(new RtHistogram().summary(), summarize([]));
});

test('a report carries what the client core measured, and passes its own check', async () => {
  const { a, b, tick } = pairedClients();
  await a.connect();
  await b.connect();
  for (let i = 1; i <= 5; i++) {
    a.sendUpdate(i, 0);
    tick(10);
  }
  const rt = new RtHistogram();
  for (const v of [4, 5, 6]) rt.add(v);
  const report = buildReport(b, { session: randomSessionId(), seq: 1, final: false, kind: 'app', uptimeMs: 1000, rt });
  assert.equal(reportProblem(report), null);
  assert.equal(report.recv['1'].received, 5);
  assert.equal(report.recv['1'].acksSent, 5);
  assert.equal(report.clientId, 2);
  assert.equal(report.rt.n, 3);
  assert.deepEqual(report.channel, { ordered: true, maxRetransmits: null });
  assert.ok(JSON.stringify(report).length < REPORT_LIMITS.maxBytes);
});

test('the Reporter adds only new RTs, numbers its reports and sends the final one once', async () => {
  const { a } = pairedClients();
  await a.connect();
  /** @type {import('./report.js').ClientReport[]} */
  const sent = [];
  /** @type {import('./report.js').ClientReport[]} */
  const finals = [];
  const reporter = new Reporter({ client: a, intervalMs: 0, send: (r) => { sent.push(r); }, sendFinal: (r) => { finals.push(r); } });
  a.rt.push(10, 20);
  reporter.send(false);
  a.rt.push(30);
  reporter.send(false);
  reporter.finish();
  reporter.finish();
  assert.deepEqual(sent.map((r) => [r.seq, r.rt.n, r.final]), [[1, 2, false], [2, 3, false]]);
  assert.equal(finals.length, 1);
  assert.deepEqual([finals[0].seq, finals[0].rt.n, finals[0].final, finals[0].rtLastMs], [3, 3, true, 30]);
  assert.equal(reporter.session, sent[0].session);
  assert.equal(reporter.sent, 3, 'two periodic and the final one');
});

test('overSession sends on the client\'s relay session when one is open, else posts; tallyReports adds refusals that came back', async () => {
  const { a } = pairedClients();
  await a.connect();
  /** @type {string[]} */
  const via = [];
  let open = true;
  a.transport.sendStats = (stats) => { if (open) via.push(`stats ${/** @type {any} */ (stats).seq}`); return open; };
  const send = overSession(a, (r) => { via.push(`post ${r.seq}`); return Promise.resolve(); });
  let clock = 0;
  const reporter = new Reporter({ client: a, intervalMs: 0, now: () => clock, send });
  reporter.send(false);
  open = false;
  clock += 2000;
  reporter.send(false);
  await reporter.idle();
  assert.deepEqual(via, ['stats 1', 'post 2']);
  a.serverError({ type: 9, code: CloseCode.REPORT_REFUSED, reason: 'too_frequent: at most one report per 1000 ms' });
  a.serverError({ type: 9, code: 4999, reason: 'something else' });
  assert.deepEqual(a.reportsRefused, { too_frequent: 1 });
  assert.deepEqual(tallyReports([reporter], { failed: 1, failedBy: { 429: 1 } }),
    { sent: 2, failed: 2, skipped: 0, failedBy: { 429: 1, too_frequent: 1 } });
});

test('a failing delivery is counted, never thrown into the cycle', async () => {
  const { a } = pairedClients();
  await a.connect();
  const reporter = new Reporter({ client: a, intervalMs: 0, send: () => Promise.reject(new Error('offline')) });
  reporter.send(false);
  const throwing = new Reporter({ client: a, intervalMs: 0, send: () => { throw new Error('no network'); } });
  throwing.send(false);
  await new Promise((r) => setImmediate(r));
  assert.equal(reporter.failures, 1);
  assert.equal(throwing.failures, 1);
});

test('reportProblem names what is wrong with a bad report', async () => {
  const { a } = pairedClients();
  await a.connect();
  const good = buildReport(a, { session: randomSessionId(), seq: 1, final: false, kind: 'sim', uptimeMs: 0, rt: new RtHistogram() });
  /** @type {[string, (r: any) => void, RegExp][]} */
  const cases = [
    ['not an object', (r) => { r.v = 2; }, /v must be 1/],
    ['session', (r) => { r.session = 'x'; }, /session/],
    ['seq', (r) => { r.seq = 0; }, /seq/],
    ['kind', (r) => { r.kind = 'phone'; }, /kind/],
    ['group', (r) => { r.group = 'g'.repeat(65); }, /group/],
    ['clientId', (r) => { r.clientId = -1; }, /clientId/],
    ['rt sum', (r) => { r.rt.buckets = { 5: 2 }; }, /add up/],
    ['negative count', (r) => { r.updates.sent = -1; }, /updates.sent/],
    ['too many streams', (r) => { r.sentTo = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [String(i), 1])); }, /at most 128 entries/],
    ['stream id', (r) => { r.recv = { abc: {} }; }, /recv/],
    ['tracking', (r) => { r.tracking = { frames: 1, visibleFrames: 2, processMsSum: 0, spanMs: 0 }; }, /visibleFrames/],
    ['ages', (r) => { r.ages = { 1: 'x' }; }, /ages/],
    ['deep setup', (r) => { r.setup = JSON.parse(`{"x":${'['.repeat(20000)}${']'.repeat(20000)}}`); }, /setup nests deeper than 8/],
    ['playout', (r) => { r.playout = { mode: 'predict' }; }, /playout must be \{ mode, streams \}/],
    ['playout stream', (r) => { r.playout = { mode: 'predict', streams: { 5: { seconds: 1, jumps: 0, behindMs: 3, jumpsPerMinute: 0, shares: { holding: 2 } } } }; }, /playout.streams/],
  ];
  for (const [label, spoil, expected] of cases) {
    const r = JSON.parse(JSON.stringify(good));
    spoil(r);
    assert.match(String(reportProblem(r)), expected, label);
  }
  const drawn = { seconds: 12.5, behindMs: 14, shares: { interpolating: 0, extrapolating: 0.96, holding: 0.04, easing: 0 }, jumps: 1, jumpsPerMinute: 4.8 };
  assert.equal(reportProblem({ ...good, playout: { mode: 'predict', streams: { 7: drawn } } }), null, 'a page\'s playout figures');
  assert.equal(reportProblem({ ...good, playout: null }), null, 'none (a Node client)');
  const { playout: _absent, ...older } = good;
  assert.equal(reportProblem(older), null, 'absent (an older page)');
  assert.equal(reportProblem(null), 'a report is a JSON object');
  assert.equal(reportProblem([]), 'a report is a JSON object');
});
