// `carlab sim --relays N`: the study against relay processes joined by a real
// nats-server, groups spanning them, one relay killed mid-run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { run } from '../commands/sim.js';
import { mergeRelayMetrics } from './cluster.js';
import { resultsSchemaProblems } from '../report/schema.js';
import { NODE_TIMEOUT_MS } from '../../relay/cluster.js';

const sink = () => {
  /** @type {string[]} */
  const chunks = [];
  const stream = new Writable({ write(c, _e, cb) { chunks.push(String(c)); cb(); } });
  return { stream, text: () => chunks.join('') };
};

/** @param {string[]} args */
async function sim(args) {
  const out = await mkdtemp(path.join(tmpdir(), 'carlab-cluster-'));
  const stdout = sink();
  const stderr = sink();
  try {
    const code = await run([...args, '--no-progress', '--out', out], { stdout: stdout.stream, stderr: /** @type {NodeJS.WriteStream} */ (/** @type {unknown} */ (stderr.stream)) });
    assert.equal(code, 0, stderr.text());
    return { results: JSON.parse(await readFile(path.join(out, 'results.json'), 'utf8')), tables: stdout.text() };
  } finally {
    await rm(out, { recursive: true, force: true });
  }
}

test('merged metrics: counters and CPU add up, RTS weighted by count, closes by code summed', () => {
  const m = mergeRelayMetrics([
    { updatesIn: 10, updatesForwarded: 40, cpuPctMean: 20, rts: { mean: 2, max: 5, n: 10 }, closedByCode: { 4005: 1 }, cluster: { nodes: 2, updatesPublished: 10 } },
    { updatesIn: 30, updatesForwarded: 80, cpuPctMean: 30, rts: { mean: 4, max: 9, n: 30 }, closedByCode: { 4005: 2, 1001: 1 }, cluster: { nodes: 2, updatesPublished: 5 } },
  ]);
  assert.equal(m.updatesIn, 40);
  assert.equal(m.updatesForwarded, 120);
  assert.equal(m.cpuPctMean, 50, 'the relays\' cores together');
  assert.deepEqual(m.rts, { mean: 3.5, max: 9, n: 40 });
  assert.deepEqual(m.closedByCode, { 4005: 3, 1001: 1 });
  assert.equal(m.cluster.crossNodeUpdates, 15);
});

test('sim --relays 3: groups span the relays, nothing lost on the reliable relay; a killed relay\'s clients fail over', { timeout: 120_000 }, async () => {
  const { results, tables } = await sim(['--transport', 'relay', '--relays', '3', '--clients', '60', '--group', '5',
    '--duration', '6', '--warmup', '1', '--kill-relay-at', '2', '--placement', 'spread,group']);
  assert.deepEqual(resultsSchemaProblems(results), []);
  const [spread, grouped] = results.runs;
  for (const r of results.runs) {
    assert.equal(r.cluster.nodes, 3);
    assert.match(r.cluster.natsVersion, /^\d+\.\d+\.\d+$/);
    assert.equal(r.dups + r.reorders, 0, 'no duplicate or reorder across nodes, even through the kill');
    assert.ok(r.failover, 'the kill is reported');
    assert.ok(r.failover.clientsMoved > 0, 'clients of the killed relay moved');
    assert.equal(r.failover.stillDown, 0, 'every one of them is back');
    // how fast is the gate `failover` (lab/gates/gates.js)
    assert.ok(r.failover.reconnectMs.max !== null, 'the reconnects were measured');
  }
  assert.ok(spread.cluster.crossNodeUpdates > 0, 'spread: updates cross relays');
  // A killed relay's groups all move to the same next relay and stay whole; only in the moment of
  // the move do the dead node's members still count as elsewhere (how short a moment: the gate `failover`).
  assert.ok(grouped.cluster.crossNodePct < 50, `group placement: each group on one relay (${grouped.cluster.crossNodePct} % crossed)`);
  assert.ok(spread.cluster.crossNodePct > 90, `spread: every group spans the relays (${spread.cluster.crossNodePct} % crossed)`);
  assert.match(tables, /relay · group 5/);
});

/**
 * The most a relay stalled past the node timeout may cost, in % of a run's sends: the other relay
 * drops its members and tells its clients, and what they send to them until MEMBER_LEFT reaches
 * them is lost. Allowed for one second: the running relay's streams into the stalled one (spread
 * placement, groups of 5 split 2+3: 6 a group) against all streams (each of 40 clients to 4), over
 * the measured window: 5 % for 6 s. Measured: 0-0.05 % alone, 1.4 % in CI beside the browser tests;
 * a stalled relay that dropped its peer for its own stall (before relay/cluster-nodes.js counted
 * silence in running time only) lost 16-21 %.
 * @param {{ durationS: number }} r a run of 40 clients in groups of 5 on 2 relays
 */
const lossPctAfterAStall = (r) => (100 * (40 / 5) * 6 * 1) / (40 * 4 * r.durationS);

test('sim --relays 2 without a kill: the reliable relay across processes loses nothing', { timeout: 120_000 }, async () => {
  const { results } = await sim(['--transport', 'relay,relay-faithful', '--relays', '2', '--clients', '40', '--group', '5', '--duration', '3', '--warmup', '1']);
  for (const r of results.runs) {
    // what a failure needs to be read (CI once: relay-faithful 16.3 % lost beside the browser tests)
    const seen = `${r.transport}: the servers' longest loop stall ${r.serverLoopStallMs} ms, ${r.updates?.ackTimeouts} ACK timeouts, `
      + `cluster ${JSON.stringify(r.cluster)}, ${r.durationS} s measured`;
    // A relay the machine starved past the node timeout is dropped by the other, as the pause
    // below does on purpose: then the pause's bound holds, not zero.
    if (r.serverLoopStallMs >= NODE_TIMEOUT_MS) assert.ok(r.lossPct < lossPctAfterAStall(r) && r.cluster.reannounced >= 1, seen);
    else assert.equal(r.lossPct, 0, seen);
    assert.equal(r.dups + r.reorders, 0, r.transport);
    assert.ok(r.cluster.crossNodeUpdates > 0, r.transport);
    assert.equal(r.failover, undefined);
  }
});

test('sim --relays 2 --pause-relay: a relay stopped past the node timeout drops no peer for it, announces itself again and loses (nearly) nothing', { timeout: 120_000 }, async () => {
  const { results } = await sim(['--transport', 'relay-faithful', '--relays', '2', '--clients', '40', '--group', '5', '--duration', '6', '--warmup', '1',
    '--pause-relay', '1:4.5']);
  assert.deepEqual(resultsSchemaProblems(results), []);
  const [r] = results.runs;
  const seen = `loss ${r.lossPct} %, longest loop stall ${r.serverLoopStallMs} ms, cluster ${JSON.stringify(r.cluster)}`;
  assert.deepEqual({ atS: r.cluster.pause.atS >= 1, forS: r.cluster.pause.forS, stopped: r.cluster.pause.stoppedS >= 4.5 }, { atS: true, forS: 4.5, stopped: true });
  assert.ok(r.serverLoopStallMs >= 4000, `the paused relay's stall is measured: ${seen}`);
  // The paused relay (the first) drops nobody for its own stall. The running one drops it after 3.5 s of
  // silence, counted in its own running time: on a loaded machine its late ticks may leave it short.
  assert.equal(r.cluster.nodesLostByRelay[0], 0, `the paused relay dropped nobody for its own stall: ${seen}`);
  assert.ok(r.cluster.nodesLostByRelay[1] <= 1, seen);
  assert.equal(r.cluster.reannounced, 1, `the paused relay announced its members again: ${seen}`);
  assert.equal(r.cluster.unknownSender, 0, `no update came from a member the other relay did not know: ${seen}`);
  assert.ok(r.lossPct < lossPctAfterAStall(r), `${seen}; at most ${lossPctAfterAStall(r)} %`);
  assert.equal(r.dups + r.reorders, 0);
});
