import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { after, describe, test } from 'node:test';

import { dispatch } from '../../scripts/carlab.js';
import { Reporter } from '../../core/report.js';
import { CarClient } from '../../core/client.js';
import { openRecorder } from '../../server/recorder.js';
import { renderTables } from '../report/output.js';
import { renderCsv } from '../report/csv.js';
import { resultsSchemaProblems } from '../report/schema.js';
import { combineResults, reportHelp, run } from './report.js';

const BIN = fileURLToPath(new URL('../../scripts/carlab.js', import.meta.url));
const base = mkdtempSync(path.join(tmpdir(), 'carlab-report-'));
after(() => rmSync(base, { recursive: true, force: true }));

const RESULTS = {
  env: { node: 'v20.20.2', cpus: 2, flags: { clients: [50, 100] } },
  runs: [
    {
      transport: 'relay',
      clients: 100,
      group: 25,
      cycleMs: 167,
      sim: true,
      rt: { mean: 80.4, dev: 30.2, p50: 75, p95: 140, p99: 180, max: 230, n: 5000 },
      rts: { mean: 2.5, max: 30 },
      cpu: { server: 33.3, clients: 70 },
      lossPct: 0,
      ackLossPct: 0,
      dups: 0,
      reorders: 0,
      jitterMs: 2,
      setupMs: null,
      channel: null,
    },
    {
      transport: 'relay',
      clients: 50,
      group: 25,
      cycleMs: 167,
      sim: true,
      rt: { mean: 40, dev: 12, p50: 38, p95: 60, p99: 70, max: 90, n: 2500 },
      rts: { mean: 1.5, max: 12 },
      cpu: { server: 15, clients: 40 },
      lossPct: 0,
      ackLossPct: 0,
      dups: 0,
      reorders: 0,
      jitterMs: 1.1,
      setupMs: null,
      channel: null,
    },
  ],
};

/** A writable that keeps what it was given. */
function capture() {
  let text = '';
  const stream = new Writable({
    write(chunk, _encoding, callback) {
      text += chunk;
      callback();
    },
  });
  return { stream, text: () => text };
}

/** Run `carlab report` in-process with captured output. @param {string[]} argv */
async function report(argv) {
  const stdout = capture();
  const stderr = capture();
  const code = await run(argv, { stdout: stdout.stream, stderr: stderr.stream, env: {} });
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

/** A results directory holding `content` as results.json. @param {string} name */
function resultsDir(name, content = `${JSON.stringify(RESULTS, null, 2)}\n`) {
  const dir = path.join(base, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'results.json'), content);
  return dir;
}

describe('carlab report', () => {
  test('re-renders report.html, tables.md and results.csv and prints the tables', async () => {
    const dir = resultsDir('ok');
    const before = readFileSync(path.join(dir, 'results.json'), 'utf8');
    const result = await report([dir]);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, renderTables(RESULTS));
    assert.match(result.stdout, /### relay · group 25 · cycle 167 ms/);
    assert.ok(result.stdout.search(/^\| +50 \|/m) < result.stdout.search(/^\| +100 \|/m), 'sorted by size');
    assert.equal(readFileSync(path.join(dir, 'tables.md'), 'utf8'), result.stdout);
    assert.equal(readFileSync(path.join(dir, 'results.csv'), 'utf8'), renderCsv(RESULTS));
    assert.match(readFileSync(path.join(dir, 'report.html'), 'utf8'), /^<!doctype html>/);
    assert.equal(readFileSync(path.join(dir, 'results.json'), 'utf8'), before, 'results.json is left alone');
    assert.match(result.stderr, /wrote .*report\.html\nwrote .*tables\.md\nwrote .*results\.csv\n$/);
  });

  test('--no-html skips report.html; a results.json path works too', async () => {
    const dir = resultsDir('no-html');
    const result = await report([path.join(dir, 'results.json'), '--no-html']);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(existsSync(path.join(dir, 'report.html')), false);
    assert.equal(existsSync(path.join(dir, 'tables.md')), true);
    assert.doesNotMatch(result.stderr, /report\.html/);
  });

  test('--help prints the help', async () => {
    const result = await report(['--help']);
    assert.equal(result.code, 0);
    assert.equal(result.stdout, reportHelp());
    assert.match(result.stdout, /^Usage: carlab report DIR \[options\]/);
    assert.match(result.stdout, /carlab report DIR \[DIR \.\.\.\] --out OUT/);
    for (const word of ['--no-html', '--out OUT', 'a recording', 'carlab start --record', 'results folder', 'combined report', 'Source column', 'Exit status: 0 done, 1 writing failed, 2 bad usage']) {
      assert.ok(result.stdout.includes(word), word);
    }
  });

  test('bad usage exits 2 with the reason and the help', async () => {
    for (const [argv, reason] of /** @type {[string[], string][]} */ ([
      [[], 'missing DIR'],
      [['a', 'b'], '2 DIRs make one combined report: say where with --out OUT'],
      [['--bogus', 'x'], "Unknown option '--bogus'"],
      [['a', '--out'], "Option '--out <value>' argument missing"],
      [['a', '--out', ''], '--out needs a folder'],
    ])) {
      const result = await report(argv);
      assert.equal(result.code, 2, argv.join(' '));
      assert.ok(result.stderr.startsWith(`carlab report: ${reason}`), result.stderr);
      assert.match(result.stderr, /Usage: carlab report/);
      assert.equal(result.stdout, '');
    }
  });

  test('a missing dir, a missing file, invalid JSON or a non-results file exit 2', async () => {
    /** @type {[dir: string, message: RegExp][]} */
    const cases = [
      [path.join(base, 'nope'), /^carlab report: no such directory: .*nope\n$/],
      [(mkdirSync(path.join(base, 'empty')), path.join(base, 'empty')), /^carlab report: .*empty[\\/]results\.json not found/],
      [resultsDir('broken', '{"runs": ['), /^carlab report: .*broken[\\/]results\.json is not valid JSON: /],
      [resultsDir('wrong', '{"rows": []}'), /^carlab report: .*wrong[\\/]results\.json is not a carlab results file: results has no "runs" array\n$/],
    ];
    for (const [dir, message] of cases) {
      const result = await report([dir]);
      assert.equal(result.code, 2, dir);
      assert.match(result.stderr, message);
      assert.equal(result.stdout, '');
      assert.equal(existsSync(path.join(dir, 'tables.md')), false);
    }
  });

  test('--out writes a results folder\'s files elsewhere, results.json included, and leaves the folder alone', async () => {
    const dir = resultsDir('elsewhere');
    const out = path.join(base, 'elsewhere-out');
    const result = await report([dir, '--out', out]);
    assert.equal(result.code, 0, result.stderr);
    for (const file of ['results.json', 'results.csv', 'tables.md', 'report.html']) assert.ok(existsSync(path.join(out, file)), file);
    assert.deepEqual(JSON.parse(readFileSync(path.join(out, 'results.json'), 'utf8')), RESULTS);
    assert.equal(existsSync(path.join(dir, 'tables.md')), false, 'nothing written beside the input');
    assert.equal(result.stdout, renderTables(RESULTS));
    assert.match(result.stderr, /^wrote .*elsewhere-out[\\/]results\.json\n/);
  });

  test('several results folders: one combined report, runs tagged with their folder, a Source column', async () => {
    const a = resultsDir('bench-a');
    const b = resultsDir(path.join('other', 'bench-a'));
    const out = path.join(base, 'combined');
    const result = await report([a, b, '--out', out, '--no-html']);
    assert.equal(result.code, 0, result.stderr);
    const combined = JSON.parse(readFileSync(path.join(out, 'results.json'), 'utf8'));
    assert.deepEqual(resultsSchemaProblems(combined), []);
    assert.deepEqual(combined.runs.map((/** @type {any} */ r) => r.source), ['bench-a', 'bench-a', 'bench-a (2)', 'bench-a (2)'], 'same names made unique');
    assert.equal(combined.env.cpus, 2);
    assert.deepEqual(combined.env.sources.map((/** @type {any} */ s) => s.source), ['bench-a', 'bench-a (2)']);
    assert.match(result.stdout, /^\| Source +\| Size \|/m);
    assert.match(result.stdout, /^\| bench-a \(2\) +\| +50 \|/m);
    assert.match(result.stdout, /^\| bench-a +\| +50 \|/m);
    assert.equal(existsSync(path.join(out, 'report.html')), false);
    assert.equal(readFileSync(path.join(a, 'results.json'), 'utf8'), `${JSON.stringify(RESULTS, null, 2)}\n`, 'inputs untouched');
  });

  test('combineResults keeps a recording\'s source and the names of an earlier combination', () => {
    const recorded = { ...RESULTS.runs[0], source: 'recording', sourceName: 'x', groupName: 'g' };
    const combined = combineResults([
      { target: 'r', dir: '/tmp/study-1', kind: 'recording', results: { env: {}, runs: [recorded], devices: [/** @type {any} */ ({ name: 'n' })], recording: { name: 'study-1', sessions: 1 } } },
      { target: 'c', dir: '/tmp/old', kind: 'results', results: { env: { cpus: 4 }, runs: [{ ...RESULTS.runs[0], source: 'bench-9', sourceName: 'bench-9' }], recordings: [{ name: 'study-0' }] } },
    ]);
    assert.deepEqual(combined.runs.map((r) => [r.source, r.sourceName]), [['recording', 'study-1'], ['bench-9', 'bench-9']]);
    assert.deepEqual(combined.recordings?.map((r) => r.name), ['study-1', 'study-0']);
    assert.equal(combined.devices?.[0].sourceName, 'study-1');
    assert.equal(combined.env?.cpus, 4);
  });

  test('a recording with no report yet, or only never-joined sessions, still renders', async () => {
    const dir = path.join(base, 'fresh-study');
    const recorder = openRecorder({ dir, node: 'n1', version: '0.1.0' });
    recorder.close();
    const empty = await report([dir, '--no-html']);
    assert.equal(empty.code, 0, empty.stderr);
    assert.match(empty.stdout, /_No runs\._/);
    assert.match(empty.stderr, /recording .*fresh-study: 0 sessions, 0 reports in 1 segment\n/);
    assert.deepEqual(resultsSchemaProblems(JSON.parse(readFileSync(path.join(dir, 'results.json'), 'utf8'))), []);

    // A phone whose report came before it joined: a device, no run.
    const recorder2 = openRecorder({ dir, node: 'n2', version: '0.1.0', now: () => Date.now() + 1000 });
    const client = new CarClient({
      transport: { name: 'relay', connect: () => new Promise(() => {}), sendUpdate() {}, sendAck() {}, channelInfo: () => null, close() {} },
      group: 'g', name: 'early bird', pose: () => [0, 0, 0, 0, 0, 0, 1],
    });
    const reporter = new Reporter({ client, intervalMs: 0, send: (r) => recorder2.append({ at: Date.now(), node: 'n2', ua: 'node', r }) });
    reporter.finish();
    recorder2.close();
    const early = await report([dir, '--no-html']);
    assert.equal(early.code, 0, early.stderr);
    assert.match(early.stderr, /1 session, 1 report in 2 segments; 1 session never joined a group/);
    assert.match(early.stdout, /_No runs\._[\s\S]*## Recordings[\s\S]*\| early bird /);
  });

  test('is wired into the carlab dispatcher and the bin', async () => {
    const stdout = capture();
    const code = await dispatch(['report', '--help'], { stdout: stdout.stream, stderr: capture().stream, env: {} });
    assert.equal(code, 0);
    assert.equal(stdout.text(), reportHelp());

    const dir = resultsDir('bin');
    const child = spawn(process.execPath, [BIN, 'report', dir, '--no-html'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (chunk) => { out += chunk; });
    const [exit] = await new Promise((resolve) => child.once('exit', (...args) => resolve(args)));
    assert.equal(exit, 0);
    assert.equal(out, renderTables(RESULTS));
  });
});
