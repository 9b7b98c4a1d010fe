// `carlab sim` end to end, the runs beside the main one: the baselines in the
// same run as ours, and every client's reports (--reports).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { run } from './sim.js';
import { BASELINES } from '../sim/sim.js';
import { resultsSchemaProblems } from '../report/schema.js';
import { REPORT_LIMITS } from '../../core/defaults.js';

const sink = () => {
  /** @type {string[]} */
  const chunks = [];
  const stream = new Writable({ write(c, _e, cb) { chunks.push(String(c)); cb(); } });
  return { stream, text: () => chunks.join('') };
};

test('sim: the baselines run the same protocol in the same run', { timeout: 120_000 }, async () => {
  const stdout = sink();
  const stderr = sink();
  const out = await mkdtemp(path.join(tmpdir(), 'carlab-sim-'));
  try {
    const code = await run(['--transport', BASELINES.join(','), '--clients', '20', '--group', '5',
      '--duration', '2', '--warmup', '1', '--no-progress', '--out', out], { stdout: stdout.stream, stderr: /** @type {any} */ (stderr.stream) });
    assert.equal(code, 0, stderr.text());
    const results = JSON.parse(await readFile(path.join(out, 'results.json'), 'utf8'));
    for (const r of results.runs) {
      assert.equal(r.connected, 20, r.transport);
      assert.ok(r.rt.n > 0, `${r.transport}: RT recorded`);
      assert.equal(r.lossPct, 0, `${r.transport}: over TCP nothing is lost`);
      assert.equal(r.rts, null, `${r.transport}: a baseline measures no RTS`);
      assert.ok(r.serverCpuUsPerUpdate > 0, `${r.transport}: CPU per update`);
    }
  } finally {
    await rm(out, { recursive: true, force: true });
  }
});

test('sim --reports 1: every client reports every second and once when leaving; the server accepts them all', { timeout: 120_000 }, async () => {
  const out = await mkdtemp(path.join(tmpdir(), 'carlab-sim-'));
  try {
    const stdout = sink();
    const stderr = sink();
    const clients = 10;
    // relay runs its clients in a worker thread, relay-udp in a child process: both report
    const code = await run(['--transport', 'relay,relay-udp', '--clients', String(clients), '--group', '5', '--reports', '1',
      '--duration', '4', '--warmup', '1', '--no-progress', '--out', out], { stdout: stdout.stream, stderr: /** @type {any} */ (stderr.stream) });
    assert.equal(code, 0, stderr.text());
    const results = JSON.parse(await readFile(path.join(out, 'results.json'), 'utf8'));
    assert.deepEqual(resultsSchemaProblems(results), []);
    assert.equal(results.runs.length, 2);
    for (const r of results.runs) {
      assert.equal(r.connected, clients, r.transport);
      assert.equal(r.reportsIntervalS, 1, r.transport);
      // 5 s of cycles: each client's first report within 1.1 s, then one every 1.1 s (1 s + the slack), then its last one
      assert.ok(r.reports.sent >= 4 * clients, `${r.transport}: ${r.reports.sent} reports sent by ${clients} clients`);
      assert.equal(r.reports.failed, r.reports.failedBy.too_frequent ?? 0, `${r.transport}: not accepted: ${JSON.stringify(r.reports)}`);
      // Over the relay a report is not answered, so the client paces by its clock alone (1.1 s).
      // The server's bucket (burst 2, one per 1 s) refuses one only when it read three within
      // 1 s, i.e. the first had waited over 1.2 s for the server's loop: allowed only when the
      // server measured such a stall (a starved CI process), never on a loop that kept up.
      assert.equal(typeof r.serverLoopStallMs, 'number', `${r.transport}: the server's loop stall measured`);
      if (r.reports.failed > 0) {
        assert.ok(r.serverLoopStallMs >= REPORT_LIMITS.minIntervalMs,
          `${r.transport}: ${r.reports.failed} refused as too frequent with the server's loop held up at most ${r.serverLoopStallMs} ms`);
      }
      assert.ok(r.rt.n > 0, `${r.transport}: the updates went on`);
    }
    assert.match(await readFile(path.join(out, 'results.csv'), 'utf8'), /reportsIntervalS/);
  } finally {
    await rm(out, { recursive: true, force: true });
  }
});
