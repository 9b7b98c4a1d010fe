// `carlab sim --start-cluster`: the product's own `carlab start` (plain and
// --cluster N) as the server under test, read from its log, /metrics and /proc.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { run } from '../commands/sim.js';
import { resultsSchemaProblems } from '../report/schema.js';
import { isAlive, startArgv } from './start-cluster.js';

const sink = () => {
  /** @type {string[]} */
  const chunks = [];
  const stream = new Writable({ write(c, _e, cb) { chunks.push(String(c)); cb(); } });
  return { stream, text: () => chunks.join('') };
};

test('the server under test is `carlab start --http` on loopback, plus --cluster N from 2 on', () => {
  assert.deepEqual(startArgv({ cluster: 1, port: 4000 }),
    ['start', '--http', '--host', '127.0.0.1', '--port', '4000', '--no-build', '--no-qr', '--log-level', 'info', '--no-scene-store']);
  assert.deepEqual(startArgv({ cluster: 3, port: 4000, ackTimeoutMs: 2000 }).slice(-4), ['--ack-timeout-ms', '2000', '--cluster', '3']);
});

/** A process's command line, '' when it is gone. @param {number} pid */
function commandLine(pid) {
  try { return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' '); } catch { return ''; }
}

test('sim --start-cluster 1,2: nothing lost, each group on one of 2 workers, CPU of every process per update, nothing left running', { timeout: 120_000 }, async () => {
  const out = await mkdtemp(path.join(tmpdir(), 'carlab-start-cluster-'));
  const stdout = sink();
  const stderr = sink();
  try {
    const code = await run(['--transport', 'relay', '--start-cluster', '1,2', '--clients', '20', '--group', '5', '--duration', '3', '--warmup', '1',
      '--no-progress', '--out', out], { stdout: stdout.stream, stderr: /** @type {NodeJS.WriteStream} */ (/** @type {unknown} */ (stderr.stream)) });
    assert.equal(code, 0, stderr.text());
    const results = JSON.parse(await readFile(path.join(out, 'results.json'), 'utf8'));
    assert.deepEqual(resultsSchemaProblems(results), []);
    assert.deepEqual(results.runs.map((/** @type {any} */ r) => r.startCluster), [1, 2]);
    for (const r of results.runs) {
      const what = `--start-cluster ${r.startCluster}`;
      assert.equal(r.error, undefined, what);
      assert.equal(r.connected, 20, what);
      assert.ok(r.updates.expected > 0, what);
      assert.equal(r.updates.lost, 0, `${what}: no update lost`);
      assert.equal(r.lossPct, 0, what);
      assert.equal(r.dups + r.reorders, 0, what);
      assert.ok(Number.isFinite(r.serverCpuUsPerUpdate) && r.serverCpuUsPerUpdate > 0, `${what}: CPU per update ${r.serverCpuUsPerUpdate}`);
      assert.equal(r.cpu.server, r.cluster.serverCpuPct, `${what}: the server's CPU is every process's`);
      assert.equal(r.serverFaults, 0, what);
      assert.deepEqual(r.cluster.stop.leftoverPids, [], `${what}: nothing left after carlab start exited`);
      assert.equal(r.cluster.stop.forced, false, `${what}: SIGTERM was enough`);
      assert.equal(r.cluster.stop.code, 0, what);
      const pids = [r.cluster.pids.primary, ...r.cluster.pids.workers, ...(r.cluster.pids.nats ? [r.cluster.pids.nats] : [])];
      // a pid may since name another process (the kernel hands numbers on): gone, or not ours
      for (const pid of pids) assert.ok(!isAlive(pid) || !/carlab\.js|nats-server/.test(commandLine(pid)), `${what}: process ${pid} is gone`);
    }
    const [plain, two] = results.runs;
    assert.equal(plain.cluster.nodes, 1);
    assert.equal(plain.cluster.natsVersion, null, 'plain: no NATS');
    assert.equal(plain.cluster.pids.nats, null);
    assert.deepEqual(plain.cluster.pids.workers, [plain.cluster.pids.primary], 'plain: one process');
    assert.equal(two.cluster.nodes, 2);
    assert.equal(two.cluster.crossNodeUpdates, 0, 'every group on one worker');
    assert.match(two.cluster.natsVersion, /^\d+\.\d+\.\d+$/);
    assert.equal(typeof two.cluster.pids.nats, 'number', 'its nats-server was seen (and is gone, above)');
    assert.equal(two.cluster.pids.workers.length, 2);
    assert.equal(two.cluster.relayCpuPct.length, 2);
    assert.equal(two.cluster.routed.byGroup, 20, 'every client\'s WebSocket routed by its group');
    assert.ok(two.cluster.primaryConnectCpuUs > 0 && two.cluster.primaryUsPerConnection > 0, `primary: ${two.cluster.primaryUsPerConnection} µs per connection`);
    assert.equal(typeof two.cluster.primaryCpuPct, 'number');
    assert.match(stdout.text(), /## Scale-out/);
  } finally {
    await rm(out, { recursive: true, force: true });
  }
});
