// A study recorded by real `carlab start` processes (docs/study.md): a server
// killed with SIGKILL mid-study and restarted on the same --record DIR loses
// nothing it had answered more than a flush ago, and `carlab report` reads
// both segments; with --cluster 2 the reports of one group's members reach
// both nodes and end up in one study and on one dashboard.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';

import { CarClient } from '../../core/client.js';
import { Reporter } from '../../core/report.js';
import { freePort } from '../../server/nats-process.js';
import { createLabTransport } from '../sim/transports.js';
import { readRecording } from './recording.js';
import { recordingToResults } from './recording-results.js';
import { run as runReport } from '../commands/report.js';
import { waitFor } from '../shared/loop-stall.js';

const BIN = fileURLToPath(new URL('../../scripts/carlab.js', import.meta.url));
const TOKEN = 'study-test-token-0123456789';
/** A little over the intake's 1 s minimum: timers drift. */
const INTERVAL_MS = 1100;

/** @param {number} ms */
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polled every 50 ms (some look through HTTP). @param {() => boolean | Promise<boolean>} cond @param {number} [ms] */
const until = (cond, ms = 20_000) => waitFor(cond, ms, '', 50);

/** @param {string[]} args */
function carlab(args) {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d) => { output += d; });
  child.stderr.on('data', (d) => { output += d; });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));
  return { child, exited, output: () => output };
}

/**
 * POSTs a report on a connection of its own (a kept-alive one would stick to one cluster worker).
 * @param {string} base @param {object} report
 * @returns {Promise<number>} the status, 0 when nobody answered
 */
function postReport(base, report) {
  return new Promise((resolve) => {
    const body = JSON.stringify(report);
    const req = http.request(new URL('/reports', base), {
      method: 'POST', agent: false, headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), 'User-Agent': 'node' },
    }, (res) => { res.resume(); res.on('end', () => resolve(res.statusCode ?? 0)); });
    req.on('error', () => resolve(0));
    req.setTimeout(3000, () => req.destroy());
    req.end(body);
  });
}

/**
 * A Node member of `group` on the relay with a Reporter whose answers are kept.
 * @param {string} base @param {string} group @param {string} name
 */
function member(base, group, name) {
  /** @type {{ seq: number, status: number, at: number }[]} */
  const answers = [];
  const client = new CarClient({
    transport: createLabTransport('relay', { baseUrl: base, config: { iceServers: [], relayPath: '/relay', peerjs: { path: '/peerjs', key: 'peerjs' } }, WebSocket }),
    group, name, cycleMs: 167, cycleMode: 'pipelined', pose: () => [0, 0, 0, 0, 0, 0, 1],
  });
  const reporter = new Reporter({
    client, kind: 'sim', intervalMs: INTERVAL_MS,
    send: async (r) => { const status = await postReport(base, r); answers.push({ seq: r.seq, status, at: Date.now() }); },
  });
  return { client, reporter, answers };
}

/**
 * The members stop, send their final reports (answered), then the server stops (SIGTERM: the recording is flushed).
 * @param {ReturnType<typeof member>[]} members @param {ReturnType<typeof carlab>} server
 */
async function leaveAndStop(members, server) {
  for (const m of members) m.client.stop();
  // the last ACKs land before the final reports are made (they hold every RT the clients measured)
  await until(() => members.every((m) => m.client.cycle.inFlight() === 0), 10_000);
  for (const m of members) m.reporter.finish();
  await until(() => members.every((m) => m.answers.some((a) => a.seq === m.reporter.seq)), 10_000);
  server.child.kill('SIGTERM');
  await server.exited;
  for (const m of members) m.client.close();
}

/** @param {string} dir */
function tempCleanup(dir) {
  return () => rmSync(dir, { recursive: true, force: true });
}

test('a study survives SIGKILL of its server: a restart on the same DIR adds to it, carlab report reads both', { timeout: 90_000 }, async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'carlab-study-'));
  t.after(tempCleanup(dir));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const args = ['start', '--http', '--host', '127.0.0.1', '--port', String(port), '--no-build', '--no-qr', '--no-scene-store', '--record', dir, '--log-level', 'warn'];
  const up = async () => { try { return (await fetch(`${base}/healthz`)).ok; } catch { return false; } };
  let server = carlab(args);
  t.after(() => { server.child.kill('SIGKILL'); });
  await until(up);

  const members = ['a', 'b', 'c'].map((name) => member(base, 'kill-g', name));
  for (const m of members) await m.client.connect();
  for (const m of members) { m.client.start(0); m.reporter.start(); }
  await until(() => members.every((m) => m.answers.filter((a) => a.status === 204).length >= 2), 15_000);

  server.child.kill('SIGKILL');
  await server.exited;
  /** Every report answered 204 before the kill must be on disk: the server writes a report before it answers. */
  const mustHave = members.flatMap((m) => m.answers.filter((a) => a.status === 204).map((a) => `${m.reporter.session}/${a.seq}`));
  assert.ok(mustHave.length >= 3);

  server = carlab(args);
  await until(up);
  await until(() => members.every((m) => m.client.connected), 20_000);
  const afterRestart = Date.now();
  await until(() => members.every((m) => m.answers.some((a) => a.status === 204 && a.at > afterRestart)), 15_000);
  await leaveAndStop(members, server);

  const recording = await readRecording(dir);
  assert.equal(recording.segments.length, 2, 'one segment per start');
  const recorded = new Set();
  for (const segment of recording.segments) {
    for (const line of readFileSync(path.join(dir, segment.file), 'utf8').split('\n')) {
      try { const l = JSON.parse(line); if (l.t === 'report') recorded.add(`${l.r.session}/${l.r.seq}`); } catch { /* torn */ }
    }
  }
  for (const key of mustHave) assert.ok(recorded.has(key), `report ${key}, answered before the kill, was recorded`);
  assert.equal(recording.sessions.length, 3);

  const out = path.join(dir, 'out');
  const code = await runReport([dir, '--out', out, '--no-html'], { stdout: devNull(), stderr: devNull() });
  assert.equal(code, 0);
  const results = JSON.parse(readFileSync(path.join(out, 'results.json'), 'utf8'));
  const whole = results.runs.find((/** @type {any} */ r) => r.groupName === 'kill-g' && r.browser === 'all');
  assert.ok(whole, 'a run for the group');
  assert.equal(whole.rt.n, members.reduce((s, m) => s + m.client.rt.length, 0), 'every RT measured, before and after the kill, is in the study');
});

test('--cluster 2: a group\'s reports reach both nodes, one study holds them all, one dashboard shows them all', { timeout: 90_000 }, async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'carlab-study-'));
  t.after(tempCleanup(dir));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const server = carlab(['start', '--http', '--host', '127.0.0.1', '--port', String(port), '--no-build', '--no-qr', '--no-scene-store', '--cluster', '2',
    '--record', dir, '--dashboard-token', TOKEN, '--log-level', 'warn']);
  // SIGTERM: the primary stops its workers and its nats-server (a SIGKILL would orphan them)
  t.after(() => stopGently(server));
  await until(async () => { try { return (await fetch(`${base}/healthz`)).ok; } catch { return false; } }, 30_000)
    .catch((err) => { throw new Error(`${err.message}: carlab start --cluster 2 did not serve; its output:\n${server.output().slice(-4000)}`); });

  const members = ['p', 'q', 'r', 's'].map((name) => member(base, 'cluster-g', name));
  for (const m of members) await m.client.connect();
  // each adds an object to the shared scene (which holds the car already): its reports carry scene
  // marks across the nodes too
  for (const [i, m] of members.entries()) m.client.addObject('cube', [0.05 * i, 0, 0, 0, 0, 0, 1]);
  for (const m of members) m.client.start(0);
  await until(() => members.every((m) => m.client.scene.live === 5), 10_000).catch((err) => { throw new Error(`${err.message}: ${JSON.stringify(members.map((m) => [m.client.members.size, m.client.scene.live, m.client.cycle.updatesSent]))}`); });
  for (const m of members) m.reporter.send(false);
  await until(() => members.every((m) => m.answers.some((a) => a.status === 204)), 15_000)
    .catch((err) => { throw new Error(`${err.message}: ${JSON.stringify(members.map((m) => m.answers))}\n${server.output()}`); });

  // Every worker's dashboard shows every member: ask on fresh connections until four answers in a
  // row show all four (a report reaches the other node through NATS a moment after its 204: one
  // starved run read 3 of 4 at once).
  const seenNodes = new Set();
  /** @type {number[]} */
  const shown = [];
  let inARow = 0;
  await until(async () => {
    const snapshot = await dashboardSnapshot(base);
    const group = snapshot.groups.find((/** @type {any} */ g) => g.group === 'cluster-g');
    shown.push(group?.members.length ?? 0);
    // every member's row, and the group's scene (the car and four cubes) as the four reported it
    inARow = group?.members.length === 4 && group.scene?.members === 4 && group.scene.objects === 5 ? inARow + 1 : 0;
    for (const row of group?.members ?? []) seenNodes.add(row.node);
    return inARow >= 4;
  }, 15_000).catch((err) => { throw new Error(`${err.message}: the dashboard never showed all four and their scene 4 times in a row (${shown.join(', ')})`); });
  assert.equal(seenNodes.size, 2, 'the reports came in on both nodes');
  await leaveAndStop(members, server);

  const recording = await readRecording(dir);
  assert.equal(recording.segments.length, 2, 'one segment per node');
  assert.equal(recording.sessions.length, 4, 'one study holds every member');
  // the group's scene from the reports of both nodes: four members, their four edits, all held by all
  const scene = recordingToResults(recording).runs.find((r) => r.groupName === 'cluster-g' && r.browser === 'all')?.scene;
  assert.ok(scene, 'the group\'s run has its scene');
  assert.deepEqual([scene.members, scene.membersIncomplete, scene.edits, scene.unconverged], [4, 0, 4, 0]);
  assert.equal(scene.atEnd.disagreeing, 0, 'who was still in at the end held the group\'s scene');
});

/**
 * The dashboard's first SSE event (the snapshot) on a fresh connection.
 * @param {string} base
 */
function dashboardSnapshot(base) {
  return new Promise((resolve, reject) => {
    const req = http.get(new URL(`/dashboard/feed?token=${TOKEN}`, base), { agent: false }, (res) => {
      if (res.statusCode !== 200) { reject(new Error(`feed answered ${res.statusCode}`)); return; }
      let text = '';
      res.on('data', (d) => {
        text += d;
        const m = /event: snapshot\ndata: (.*)\n\n/.exec(text);
        if (m) { resolve(JSON.parse(m[1])); req.destroy(); }
      });
    });
    req.on('error', reject);
    req.setTimeout(5000, () => req.destroy(new Error('no snapshot within 5 s')));
  });
}

/**
 * SIGTERM, then SIGKILL after 10 s.
 * @param {ReturnType<typeof carlab>} proc
 */
async function stopGently(proc) {
  if (proc.child.exitCode !== null || proc.child.signalCode !== null) return;
  proc.child.kill('SIGTERM');
  const timer = setTimeout(() => proc.child.kill('SIGKILL'), 10_000);
  await proc.exited;
  clearTimeout(timer);
}

/** A sink for a command's output. */
function devNull() {
  return /** @type {NodeJS.WritableStream} */ (/** @type {unknown} */ ({ write: () => true }));
}
