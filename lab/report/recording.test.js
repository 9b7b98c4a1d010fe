// lab/report/recording.js and recording-results.js end to end: real CarClients
// wired through an in-memory hub (loss, reordering and ACK loss on one group), their real reports
// (core/report.js Reporter) recorded by server/recorder.js into two segments,
// a torn last line, an invalid report and a stale duplicate; then the results
// are checked against what the lab computes from the same clients' stats().
import assert from 'node:assert/strict';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';

import { CarClient } from '../../core/client.js';
import { aggregateFreshness, aggregateStreams, summarize } from '../../core/metrics.js';
import { Reporter, randomSessionId, rtBucket } from '../../core/report.js';
import { openRecorder } from '../../server/recorder.js';
import { describeUserAgent } from '../../server/user-agent.js';
import { aggregateRun } from './aggregate.js';
import { run as report } from '../commands/report.js';
import { renderTables } from './output.js';
import { isRecordingDir, readRecording } from './recording.js';
import { groupInstances, recordingToResults } from './recording-results.js';
import { renderReportHtml } from './report-html.js';
import { resultsSchemaProblems } from './schema.js';

/** @typedef {import('../../core/client.js').TransportHandlers} TransportHandlers */
/** @typedef {import('../../core/report.js').ClientReport} ClientReport */

const UA = {
  chromeAndroid: 'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36',
  safariIos: 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1',
  firefoxDesktop: 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0',
  firefoxAndroid: 'Mozilla/5.0 (Android 14; Mobile; rv:128.0) Gecko/128.0 Firefox/128.0',
  node: 'node',
};
const HOSTILE = '<img src=x onerror=alert(1)>';
/** Server clock (epoch ms) at the simulation's time 0. */
const BASE = Date.UTC(2026, 10, 25, 15, 0, 0);
const CYCLE_MS = 50;
const END_MS = 3000;

/** The simulation's clock (ms), shared by every client. */
let now = 0;
/** @type {{ at: number, deliver: () => void }[]} */
let queue = [];

/**
 * One working group on an in-memory relay: assigns ids, tells members of
 * each other, fans updates out and routes ACKs back, each after `latency`
 * ms unless `drop` says the message is lost.
 * @param {{ latency: (from: number, to: number, seq: number) => number, drop?: (from: number, to: number, seq: number, ack: boolean) => boolean }} net
 */
function hub(net) {
  /** @type {Map<number, { name: string, h: TransportHandlers }>} */
  const members = new Map();
  let nextId = 1;
  const send = (/** @type {number} */ from, /** @type {number} */ to, /** @type {number} */ seq, /** @type {boolean} */ ack, /** @type {(h: TransportHandlers) => void} */ fn) => {
    if (net.drop?.(from, to, seq, ack)) return;
    queue.push({ at: now + net.latency(from, to, seq), deliver: () => { const m = members.get(to); if (m) fn(m.h); } });
  };
  /** @param {string} transportName @returns {import('../../core/client.js').Transport} */
  const transport = (transportName) => {
    let me = 0;
    return {
      name: transportName,
      connect(join, h) {
        me = nextId++;
        for (const m of members.values()) m.h.onMemberJoined({ id: me, name: join.name });
        const welcome = /** @type {import('../../core/protocol.js').WelcomeMsg} */ ({
          type: 2, clientId: me, serverTime: 0, members: [...[...members].map(([id, m]) => ({ id, name: m.name })), { id: me, name: join.name }],
        });
        members.set(me, { name: join.name, h });
        return Promise.resolve(welcome);
      },
      sendUpdate(u) {
        for (const id of members.keys()) if (id !== me) send(me, id, u.seq, false, (h) => h.onUpdate(u, now));
      },
      sendAck(sender, seq, acker) {
        send(acker, sender, seq, true, (h) => h.onAck({ type: 6, sender, seq, acker }));
      },
      channelInfo: () => (transportName === 'relay-udp' ? { kind: 'rtcdatachannel', ordered: false, maxRetransmits: 0, maxPacketLifeTime: null, channels: 1, uniform: true } : null),
      close() { members.delete(me); },
    };
  };
  return { transport };
}

/**
 * @typedef {object} Sim
 * @property {CarClient} client
 * @property {Reporter} reporter
 * @property {string} ua
 * @property {string} group
 * @property {string} transport
 * @property {ClientReport[]} sent every report it sent
 * @property {number} phase
 */

/** @type {Sim[]} */
const sims = [];
/** stats() of every joined client, taken when its final report was built. */
/** @type {Map<Sim, any>} */
const finalStats = new Map();
const base = mkdtempSync(path.join(tmpdir(), 'carlab-recording-'));
const REC = path.join(base, 'study');
after(() => rmSync(base, { recursive: true, force: true }));

/** @type {import('../../server/recorder.js').Recorder} */
let recorder;

/**
 * @param {{ group: string, transport: string, ua: string, name: string, net: ReturnType<typeof hub> | null, warmupMs?: number, tracking?: boolean }} spec
 */
function addClient({ group, transport, ua, name, net, warmupMs = 0, tracking = false }) {
  const t = net ? net.transport(transport) : /** @type {import('../../core/client.js').Transport} */ ({
    name: transport, connect: () => new Promise(() => {}), sendUpdate() {}, sendAck() {}, channelInfo: () => null, close() {},
  });
  const client = new CarClient({
    transport: t, group, name, cycleMs: CYCLE_MS, ackTimeoutMs: 400, warmupMs, cycleMode: 'pipelined', now: () => now, pose: () => [0, 0, 0, 0, 0, 0, 1],
  });
  /** @type {ClientReport[]} */
  const sent = [];
  const n = sims.length;
  const reporter = new Reporter({
    client,
    intervalMs: 0,
    kind: 'app',
    send: (r) => {
      sent.push(r);
      recorder.append({ at: BASE + now, node: 'n1', ua, r });
    },
    extras: () => ({
      tracking: tracking ? { frames: Math.round(now / 40), visibleFrames: Math.round(now / 100), processMsSum: now / 4, spanMs: now } : null,
      effectiveType: ua === 'node' ? null : '4g',
    }),
  });
  const sim = { client, reporter, ua, group, transport, sent, phase: (n * 7) % CYCLE_MS };
  sims.push(sim);
  return sim;
}

/** Runs the clients from `now` to `until`, tick by tick (unless `ticks` is false), delivering what is due each ms. */
function runUntil(/** @type {number} */ until, ticks = true) {
  for (; now <= until; now++) {
    if (ticks) for (const s of sims) if (s.client.id > 0 && now >= s.phase && (now - s.phase) % CYCLE_MS === 0) s.client.cycle.tick();
    const due = queue.filter((m) => m.at <= now).sort((a, b) => a.at - b.at);
    queue = queue.filter((m) => m.at > now);
    for (const m of due) m.deliver();
  }
  now = until;
}

/** A writable that keeps what it was given. */
function capture() {
  let text = '';
  const stream = new Writable({ write(chunk, _enc, cb) { text += chunk; cb(); } });
  return { stream, text: () => text };
}

/** @param {string[]} argv */
async function carlabReport(argv) {
  const stdout = capture();
  const stderr = capture();
  const code = await report(argv, { stdout: stdout.stream, stderr: stderr.stream, env: {} });
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

/** @type {import('./recording.js').Recording} */
let recording;
/** @type {ReturnType<typeof recordingToResults>} */
let results;

before(async () => {
  recorder = openRecorder({ dir: REC, node: 'n1', version: '0.1.0', now: () => BASE });
  // lab1: a reliable relay, four phones of three families; its last member never got an id.
  const lab1 = hub({ latency: (from, to) => 8 + ((from * 5 + to * 3) % 9) });
  addClient({ group: 'lab1', transport: 'relay', ua: UA.chromeAndroid, name: HOSTILE, net: lab1, tracking: true, warmupMs: 200 });
  addClient({ group: 'lab1', transport: 'relay', ua: UA.chromeAndroid, name: 'pixel b', net: lab1, tracking: true });
  addClient({ group: 'lab1', transport: 'relay', ua: UA.safariIos, name: 'iphone', net: lab1, tracking: true });
  addClient({ group: 'lab1', transport: 'relay', ua: UA.firefoxDesktop, name: 'laptop | desk', net: lab1 });
  addClient({ group: 'lab1', transport: 'relay', ua: UA.firefoxAndroid, name: 'never joined', net: null });
  // lab2: unreliable, reordering, losing updates and ACKs.
  const lab2 = hub({
    latency: (from, to, seq) => 5 + ((seq * 37 + to * 7 + from) % 120),
    drop: (from, to, seq, ack) => (ack ? (seq + from) % 11 === 0 : (seq + to) % 7 === 0),
  });
  addClient({ group: 'lab2', transport: 'relay-udp', ua: UA.node, name: 'sim 1', net: lab2 });
  addClient({ group: 'lab2', transport: 'relay-udp', ua: UA.chromeAndroid, name: 'pixel c', net: lab2 });
  addClient({ group: 'lab2', transport: 'relay-udp', ua: UA.safariIos, name: 'iphone 2', net: lab2, warmupMs: 300 });
  for (const s of sims) if (s.reporter) void s.client.connect();
  await new Promise((resolve) => setImmediate(resolve));
  for (const s of sims) {
    if (s.client.id === 0) continue;
    s.client.start(0);
    s.client.cycle.stop(); // the test ticks the cycle itself, on its own clock
  }
  runUntil(1000);
  for (const s of sims) s.reporter.send(false);
  runUntil(1500);
  // The server restarts: a second segment, in the same folder.
  recorder.close();
  recorder = openRecorder({ dir: REC, node: 'n2', version: '0.1.0', now: () => BASE + 1500 });
  runUntil(2000);
  for (const s of sims) s.reporter.send(false);
  runUntil(END_MS);
  // The cycles stop; what is in flight still arrives before the clients leave.
  for (const s of sims) if (s.client.id > 0) s.client.stop();
  runUntil(END_MS + 200, false);
  for (const s of sims) {
    finalStats.set(s, s.client.stats());
    s.reporter.finish();
  }
  // A stale copy of an early report arrives last: the newest seq still wins.
  recorder.append({ at: BASE + END_MS + 205, node: 'n2', ua: sims[0].ua, r: sims[0].sent[0] });
  // A report the reader must refuse (wrong version), for a session of its own.
  recorder.append({ at: BASE + END_MS + 206, node: 'n2', ua: UA.safariIos, r: { ...sims[2].sent[2], session: randomSessionId(), v: /** @type {1} */ (/** @type {unknown} */ (2)) } });
  recorder.close();
  // The server is killed mid-write: a torn last line.
  appendFileSync(recorder.file, '{"t":"report","at":1764082800000,"node":"n2","ua":"node","r":{"v":1,"sess');
  recording = await readRecording(REC);
  results = recordingToResults(recording);
});

/** The simulated clients of a group that joined. @param {string} group */
const joined = (group) => sims.filter((s) => s.group === group && s.client.id > 0);
/** @param {Sim} s */
const familyOf = (s) => describeUserAgent(s.ua).family;

/**
 * RT from a histogram against RT from the values: count and max exact, mean
 * and Dev to rounding, percentiles the bucket of the exact one.
 * @param {any} got @param {import('../../core/metrics.js').Summary} want @param {string} what
 */
function assertRt(got, want, what) {
  assert.equal(got.n, want.n, `${what}: n`);
  assert.equal(got.max, want.max, `${what}: max`);
  assert.ok(Math.abs(got.mean - /** @type {number} */ (want.mean)) < 1e-9, `${what}: mean ${got.mean} vs ${want.mean}`);
  assert.ok(Math.abs(got.dev - /** @type {number} */ (want.dev)) < 1e-6, `${what}: dev ${got.dev} vs ${want.dev}`);
  // the bucket of the exact one, never past the exact max (RtHistogram.summary clamps)
  for (const k of /** @type {const} */ (['p50', 'p95', 'p99'])) assert.equal(got[k], Math.min(/** @type {number} */ (want.max), rtBucket(/** @type {number} */ (want[k]))), `${what}: ${k}`);
}

describe('a recording of real reports', () => {
  test('the reader keeps every session\'s newest report and counts what it skipped', () => {
    assert.equal(isRecordingDir(REC), true);
    assert.equal(isRecordingDir(base), false);
    assert.equal(recording.segments.length, 2, 'one segment per server start');
    assert.deepEqual(recording.segments.map((s) => s.node), ['n1', 'n2']);
    assert.equal(recording.study?.study, 'carlab');
    assert.equal(recording.sessions.length, sims.length, 'one per page session; the refused report adds none');
    // 3 reports per session, the stale copy; the invalid and the torn line are not reports.
    assert.equal(recording.counts.reports, 3 * sims.length + 1);
    assert.equal(recording.counts.tornLines, 1);
    assert.equal(recording.counts.invalid, 1);
    assert.equal(recording.counts.superseded, 3 * sims.length + 1 - sims.length);
    assert.equal(recording.counts.lines, 2 + 3 * sims.length + 3);
    assert.match(recording.problems.map((p) => p.problem).join('\n'), /invalid report: v must be 1\n.*torn/);
    const first = recording.sessions.find((s) => s.r.session === sims[0].reporter.session);
    assert.equal(first?.r.seq, 3, 'the stale seq-1 copy that came last does not replace seq 3');
    assert.equal(first?.r.final, true);
    assert.equal(first?.firstAt, BASE + 1000);
    assert.equal(first?.lastAt, BASE + END_MS + 205);
  });

  test('results pass the schema; runs per transport x group x family, then the group', () => {
    assert.deepEqual(resultsSchemaProblems(results), []);
    assert.deepEqual(results.runs.map((r) => `${r.transport} ${r.groupName} ${r.browser}`), [
      'relay lab1 Chrome Android', 'relay lab1 Firefox desktop', 'relay lab1 Safari iOS', 'relay lab1 all',
      'relay-udp lab2 Chrome Android', 'relay-udp lab2 Node.js', 'relay-udp lab2 Safari iOS', 'relay-udp lab2 all',
    ]);
    for (const run of results.runs) {
      assert.equal(run.source, 'recording');
      assert.equal(run.sourceName, 'study');
      assert.deepEqual(run.cpu, { server: null, clients: null });
      assert.equal(run.rts, null);
      assert.equal(run.cycleMs, CYCLE_MS);
      assert.equal(run.cycleMode, 'pipelined');
    }
    const all1 = /** @type {any} */ (results.runs[3]);
    assert.equal(all1.group, 4, 'the group\'s size: the client ids it had');
    assert.equal(all1.clients, 4, 'the session that never joined is no client');
    assert.equal(all1.sessions, 5);
    assert.deepEqual(all1.families, ['Chrome Android', 'Firefox desktop', 'Safari iOS'], 'a family that never joined gets no run');
    assert.equal(/** @type {any} */ (results.runs[0]).clients, 2);
    assert.equal(/** @type {any} */ (results.runs[0]).group, 4);
    assert.equal(all1.rtWarmup.n, finalStats.get(sims[0]).rtWarmup.length);
    assert.ok(all1.rtWarmup.n > 0);
    assert.equal(/** @type {any} */ (results.runs[7]).channel.maxRetransmits, 0);
  });

  test('RT, loss and freshness of a group equal what the lab computes from the clients\' stats()', () => {
    for (const [group, transport] of [['lab1', 'relay'], ['lab2', 'relay-udp']]) {
      const stats = joined(group).map((s) => finalStats.get(s));
      const lab = aggregateRun({ point: { transport, clients: stats.length, group: stats.length, cycleMs: CYCLE_MS }, clients: stats, relay: null, cpu: { server: null, clients: null } });
      const got = /** @type {any} */ (results.runs.find((r) => r.groupName === group && r.browser === 'all'));
      assertRt(got.rt, lab.rt, group);
      assert.deepEqual(got.updates, lab.updates, `${group}: updates, expected, received, lost`);
      for (const k of /** @type {const} */ (['lossPct', 'ackLossPct', 'dups', 'reorders', 'jitterMs'])) assert.equal(got[k], lab[k], `${group}: ${k}`);
      assert.deepEqual(got.freshness, lab.freshness, `${group}: freshness`);
      assert.deepEqual(got.channel, lab.channel);
    }
    const lossy = /** @type {any} */ (results.runs[7]);
    assert.ok(lossy.updates.lost > 0 && lossy.reorders > 0 && lossy.ackLossPct > 0, `lab2 really lost, reordered and lost ACKs: ${JSON.stringify([lossy.updates, lossy.reorders, lossy.ackLossPct, lossy.dups])}`);
    assert.ok(lossy.updates.ackTimeouts > 0);
    assert.equal(/** @type {any} */ (results.runs[3]).updates.lost, 0, 'lab1 is reliable');
  });

  test('per family: RT of its senders, loss, jitter and freshness of the streams into its receivers from any sender', () => {
    for (const group of ['lab1', 'lab2']) {
      const members = joined(group);
      const stats = members.map((s) => finalStats.get(s));
      const famById = new Map(members.map((s) => [s.client.id, familyOf(s)]));
      for (const family of new Set(members.map(familyOf))) {
        const got = /** @type {any} */ (results.runs.find((r) => r.groupName === group && r.browser === family));
        const own = stats.filter((c) => famById.get(c.id) === family);
        assertRt(got.rt, summarize(own.flatMap((c) => c.rt)), `${group} ${family}`);
        const streams = aggregateStreams(stats, (receiver) => famById.get(receiver.id) === family);
        assert.equal(got.updates.expected, streams.expected, `${group} ${family}: expected`);
        assert.equal(got.updates.received, streams.received, `${group} ${family}: received`);
        assert.equal(got.lossPct, streams.lossPct);
        assert.equal(got.jitterMs, streams.jitterMs);
        assert.equal(got.dups, streams.duplicates);
        assert.equal(got.reorders, streams.reorders);
        const fresh = aggregateFreshness(own);
        assert.equal(got.freshness.updatesPerStreamPerS, fresh.updatesPerStreamPerS);
        assert.deepEqual(got.freshness.freezeMs, fresh.freezeMs);
        assert.equal(got.freshness.frozenPct, fresh.frozenPct);
        assert.equal(got.updates.sent, own.reduce((s, c) => s + c.updatesSent, 0));
        assert.ok(streams.expected > 0);
      }
    }
    const tracked = /** @type {any} */ (results.runs[0]).tracking;
    assert.equal(tracked.clients, 2);
    assert.ok(Math.abs(tracked.fps - 25) < 0.1, `${tracked.fps} frames per s`);
    assert.ok(Math.abs(tracked.visiblePct - 40) < 0.1);
    assert.ok(Math.abs(tracked.msPerFrame - 10) < 0.1);
    assert.equal(/** @type {any} */ (results.runs[5]).tracking, null, 'Node clients track nothing');
  });

  test('the devices table: one row per session, the name as typed, no whole session id', () => {
    assert.equal(results.devices.length, sims.length);
    const row = results.devices.find((d) => d.name === HOSTILE);
    assert.ok(row);
    assert.equal(row.family, 'Chrome Android');
    assert.equal(row.browser, 'Chrome');
    assert.equal(row.browserVersion, '126.0.0.0');
    assert.equal(row.os, 'Android');
    assert.equal(row.osVersion, '14');
    assert.equal(row.device, 'mobile');
    assert.equal(row.effectiveType, '4g');
    assert.equal(row.transport, 'relay');
    assert.equal(row.group, 'lab1');
    assert.equal(row.reports, 4);
    assert.equal(row.firstSeen, new Date(BASE + 1000).toISOString());
    assert.equal(row.lastSeen, new Date(BASE + END_MS + 205).toISOString());
    assert.equal(row.session.length, 8);
    assert.ok(sims[0].reporter.session.startsWith(row.session));
    assert.doesNotMatch(JSON.stringify(results), new RegExp(sims[0].reporter.session), 'no whole session id in the results');
    const never = results.devices.find((d) => d.name === 'never joined');
    assert.equal(never?.clientId, 0);
    assert.equal(never?.family, 'Firefox Android');
    assert.deepEqual(results.recording.counts, { ...recording.counts, idCollisions: 0 });
    assert.equal(results.recording.sessions, sims.length);
    assert.equal(results.recording.firstAt, new Date(BASE + 1000).toISOString());
  });

  test('tables.md and report.html show the recording and escape the data', () => {
    const md = renderTables(results);
    assert.match(md, /## Recordings/);
    assert.match(md, /### relay · group "lab1"/);
    assert.match(md, /\| Chrome Android +\|/);
    assert.match(md, /### Devices/);
    assert.match(md, /\\<img src=x onerror=alert\(1\)\\>/, 'markdown: the name cannot become HTML');
    assert.match(md, /laptop \\\| desk/);
    const html = renderReportHtml(results);
    assert.doesNotMatch(html, /<img src=x/);
    assert.match(html, /&#60;img src=x onerror=alert\(1\)&#62;/);
    assert.match(html, /id="recordings"/);
    assert.match(html, /<a href="#recordings">Recordings<\/a>/);
    assert.match(html, /Firefox Android/, 'a session that never joined is still a device');
  });

  test('sessions that never overlapped are separate instances of a group: an id may come back', () => {
    const at = (/** @type {number} */ startAt, /** @type {number} */ lastAt, /** @type {number} */ clientId) => /** @type {any} */ ({ startAt, lastAt, r: { clientId } });
    const a = at(0, 100, 1); const b = at(50, 200, 2); const c = at(300, 400, 1); const d = at(0, 1000, 0);
    const inst = groupInstances([a, b, c, d]);
    assert.deepEqual([a, b, c, d].map((s) => inst.get(s)), ['0', '0', '1', '-']);
  });
});

describe('carlab report on a recording', () => {
  test('DIR --out OUT writes the four files; the recording is left alone', async () => {
    const out = path.join(base, 'out');
    const result = await carlabReport([REC, '--out', out]);
    assert.equal(result.code, 0, result.stderr);
    for (const file of ['results.json', 'results.csv', 'tables.md', 'report.html']) assert.ok(existsSync(path.join(out, file)), file);
    const written = JSON.parse(readFileSync(path.join(out, 'results.json'), 'utf8'));
    assert.deepEqual(resultsSchemaProblems(written), []);
    assert.equal(written.runs.length, results.runs.length);
    assert.equal(result.stdout, readFileSync(path.join(out, 'tables.md'), 'utf8'));
    assert.match(result.stderr, /recording .*study: 8 sessions, 25 reports in 2 segments; skipped 1 torn line, 1 invalid report/);
    assert.equal(existsSync(path.join(REC, 'results.json')), false);
  });

  test('DIR alone writes into the recording, and a later report reads the recording again', async () => {
    const copy = path.join(base, 'copy');
    mkdirSync(copy);
    for (const s of recording.segments) writeFileSync(path.join(copy, s.file), readFileSync(path.join(REC, s.file)));
    const first = await carlabReport([copy, '--no-html']);
    assert.equal(first.code, 0, first.stderr);
    assert.ok(existsSync(path.join(copy, 'results.json')));
    assert.equal(existsSync(path.join(copy, 'report.html')), false);
    const again = await carlabReport([copy, '--no-html']);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(JSON.parse(readFileSync(path.join(copy, 'results.json'), 'utf8')).runs.length, results.runs.length);
  });

  test('A B --out C: a recording and a bench side by side, each run tagged with its source', async () => {
    const bench = path.join(base, 'bench-1');
    mkdirSync(bench);
    const benchRun = {
      transport: 'relay', clients: 4, group: 4, cycleMs: CYCLE_MS, cycleMode: 'pipelined', browser: 'chromium',
      rt: { mean: 20, dev: 2, p50: 20, p95: 24, p99: 25, max: 26, n: 100 }, rts: { mean: 1, max: 3 }, cpu: { server: 5, clients: 40 },
      lossPct: 0, ackLossPct: 0, dups: 0, reorders: 0, jitterMs: 1, setupMs: null, channel: null,
      freshness: { updatesPerStreamPerS: 19.5, freezeMs: { p50: 50, p99: 60, max: 80 }, frozenPct: 0 },
    };
    writeFileSync(path.join(bench, 'results.json'), JSON.stringify({ env: { cpus: 8, node: 'v20' }, runs: [benchRun] }));
    const out = path.join(base, 'combined');
    const result = await carlabReport([REC, bench, '--out', out]);
    assert.equal(result.code, 0, result.stderr);
    const combined = JSON.parse(readFileSync(path.join(out, 'results.json'), 'utf8'));
    assert.deepEqual(resultsSchemaProblems(combined), []);
    assert.equal(combined.runs.length, results.runs.length + 1);
    assert.deepEqual([...new Set(combined.runs.map((/** @type {any} */ r) => r.source))], ['recording', 'bench-1']);
    assert.equal(combined.devices.length, sims.length);
    assert.equal(combined.recordings.length, 1);
    assert.equal(readFileSync(path.join(bench, 'results.json'), 'utf8').includes('"source"'), false, 'the inputs are left alone');
    const md = readFileSync(path.join(out, 'tables.md'), 'utf8');
    // The bench run and the recording's lab1 share a table: relay, group 4, 50 ms, pipelined.
    const table = md.split('\n### ').find((t) => t.startsWith('relay · group 4 · cycle 50 ms pipelined')) ?? '';
    assert.match(table, /\| Source/);
    assert.match(table, /bench-1/);
    assert.match(table, /recording study · lab1/);
    const html = readFileSync(path.join(out, 'report.html'), 'utf8');
    assert.match(html, /<th scope="col">Source<\/th>/);
    assert.doesNotMatch(html, /<img src=x/);
  });
});
