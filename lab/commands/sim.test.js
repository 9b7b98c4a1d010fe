// `carlab sim` end to end with edits, and its usage errors. Every transport in
// groups of 5 and 25: sim-transports.test.js; the baselines and --reports:
// sim-baselines-reports.test.js (apart, so that no file nears the runner's 300 s
// on a starved machine).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { run } from './sim.js';

const sink = () => {
  /** @type {string[]} */
  const chunks = [];
  const stream = new Writable({ write(c, _e, cb) { chunks.push(String(c)); cb(); } });
  return { stream, text: () => chunks.join('') };
};

test('sim --edits-per-minute: every member holds its group\'s scene at the end, convergence and disagreement recorded', { timeout: 120_000 }, async () => {
  const out = await mkdtemp(path.join(tmpdir(), 'carlab-sim-'));
  try {
    const stderr = sink();
    const code = await run(['--transport', 'relay,relay-udp', '--clients', '10', '--group', '5', '--edits-per-minute', '120',
      '--duration', '5', '--warmup', '0', '--no-progress', '--out', out], { stdout: sink().stream, stderr: /** @type {any} */ (stderr.stream) });
    assert.equal(code, 0, stderr.text());
    const results = JSON.parse(await readFile(path.join(out, 'results.json'), 'utf8'));
    for (const r of results.runs) {
      const s = r.scene;
      assert.ok(s.edits > 0, `${r.transport}: edits made`);
      assert.equal(s.converged + s.unconverged, s.edits, r.transport);
      assert.equal(s.unconverged, 0, `${r.transport}: every edit reached every member`);
      assert.deepEqual(s.atEnd, { groups: 2, members: 10, agreeing: 10, disagreeing: 0 }, r.transport);
      assert.ok(s.convergenceMs.n === s.converged && s.convergenceMs.p50 >= 0, r.transport);
      assert.ok(s.disagreementPct >= 0 && s.disagreementPct < 100, r.transport);
    }
  } finally {
    await rm(out, { recursive: true, force: true });
  }
});

test('sim --edits-per-minute: bad values and what does not go with it are usage errors', async () => {
  for (const [args, message] of /** @type {const} */ ([
    [['--edits-per-minute', 'lots'], /--edits-per-minute: "lots" is not a number 0\.\.360/],
    [['--edits-per-minute', '30', '--duration', '3'], /--edits-per-minute needs --duration over 4 s/],
    [['--edits-per-minute', '30', '--transport', 'socketio'], /the baselines \(.*\) carry no shared scene/],
  ])) {
    const stderr = sink();
    const code = await run([...args], { stdout: sink().stream, stderr: /** @type {any} */ (stderr.stream) });
    assert.equal(code, 2, args.join(' '));
    assert.match(stderr.text(), message);
  }
});

test('sim: a bad --reports value is a usage error', async () => {
  const stderr = sink();
  const code = await run(['--reports', '0.5'], { stdout: sink().stream, stderr: /** @type {any} */ (stderr.stream) });
  assert.equal(code, 2);
  assert.match(stderr.text(), /carlab sim: --reports: 0\.5 s is not 0\/off or an interval of 1\.\.3600 s/);
});

test('sim: a bad flag prints what was wrong and the help, exit 2', async () => {
  const stderr = sink();
  const code = await run(['--clients', 'many'], { stdout: sink().stream, stderr: /** @type {any} */ (stderr.stream) });
  assert.equal(code, 2);
  assert.match(stderr.text(), /carlab sim: --clients: "many" is not a positive number/);
  assert.match(stderr.text(), /Usage: carlab sim/);
});

test('sim --start-cluster: clear usage errors for what does not go with it', async () => {
  /** @param {string[]} argv */
  const usage = async (argv) => {
    const stderr = sink();
    const code = await run(argv, { stdout: sink().stream, stderr: /** @type {any} */ (stderr.stream) });
    assert.equal(code, 2, argv.join(' '));
    return stderr.text();
  };
  assert.match(await usage(['--start-cluster', '1,2', '--relays', '2']), /carlab sim: --start-cluster and --relays are two ways to run the server under test: give one/);
  assert.match(await usage(['--start-cluster', '0']), /--start-cluster: 0 is not a process count/);
  assert.match(await usage(['--start-cluster', '2', '--restart-at', '1']), /--restart-at .* does not go with --start-cluster/);
  assert.match(await usage(['--start-cluster', '2', '--transport', 'ws-floor']), /--start-cluster: `carlab start` does not serve the lab's baselines \(ws-floor\)/);
  assert.match(await usage(['--start-cluster', '2', '--live-heap']), /--live-heap measures the one relay process/);
  assert.match(await usage(['--relays', '2', '--live-heap']), /--live-heap measures the one relay process/);
});

test('sim --placement haproxy: HAProxy in front of 2 to 6 relays, nothing else', async () => {
  /** @param {string[]} argv */
  const usage = async (argv) => {
    const stderr = sink();
    const code = await run(argv, { stdout: sink().stream, stderr: /** @type {any} */ (stderr.stream) });
    assert.equal(code, 2, argv.join(' '));
    return stderr.text();
  };
  for (const relays of ['0', '1', '7', '2,1']) {
    assert.match(await usage(['--placement', 'haproxy', '--relays', relays]), /--placement haproxy puts HAProxy in front of --relays 2\.\.6/, relays);
  }
  assert.match(await usage(['--placement', 'nearest', '--relays', '2']), /--placement/);
});
