// The fleet's pure parts: the split of a point's peers over agents by
// capacity with every working group interleaved, each agent's pages, the
// shared token's check, the start skew on one clock, the merge of every
// agent's peers into one run (lost agents' peers as lost peers, not loss),
// and the bench's fleet flags.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  PREPARE_STALL_MS, agentNameProblem, agentPageLayout, capacityCounts, fleetBlock, interleaveAssign, mergeFleetRun, splitPeers, startSkews,
  tokenMatches,
} from './fleet.js';
import { fleetEnv } from './fleet-bench.js';
import { benchCommand } from '../commands/bench.js';
import { parseLabFlags } from '../shared/flags.js';
import { runSchemaProblems } from '../report/schema.js';
import { renderTables } from '../report/output.js';

test('peers per agent follow capacity (largest remainder) and add up', () => {
  assert.deepEqual(capacityCounts(4, [2, 2]), [2, 2]);
  assert.deepEqual(capacityCounts(5, [2, 2]), [3, 2]);
  assert.deepEqual(capacityCounts(100, [8, 2]), [80, 20]);
  assert.deepEqual(capacityCounts(10, [1, 1, 1]), [4, 3, 3]);
  assert.deepEqual(capacityCounts(7, [4, 2, 1]), [4, 2, 1]);
  assert.deepEqual(capacityCounts(1, [1, 1, 1]), [1, 0, 0]);
  for (const [n, caps] of /** @type {[number, number[]][]} */ ([[13, [3, 5, 2]], [1000, [1, 2, 3, 4]], [0, [1, 2]]])) {
    assert.equal(capacityCounts(n, caps).reduce((a, b) => a + b, 0), n);
  }
  assert.throws(() => capacityCounts(3, []), /no agents/);
});

test('every peer goes to exactly one agent, interleaved: each working group spans the agents', () => {
  assert.deepEqual(interleaveAssign([2, 2]), [0, 1, 0, 1]);
  assert.deepEqual(interleaveAssign([3, 2]), [0, 1, 0, 1, 0]);
  assert.deepEqual(interleaveAssign([2, 0, 2]), [0, 2, 0, 2]);
  for (const [clients, group, caps] of /** @type {[number, number, number[]][]} */ ([
    [4, 2, [2, 2]], [100, 10, [2, 2]], [100, 10, [1, 1, 1]], [37, 5, [2, 2, 2, 2]], [100, 10, [8, 2]], [50, 5, [3, 1]],
  ])) {
    const shares = splitPeers(clients, caps.map((capacity) => ({ capacity })));
    const all = shares.flat().sort((a, b) => a - b);
    assert.deepEqual(all, Array.from({ length: clients }, (_, i) => i), 'every peer once');
    assert.deepEqual(shares.map((s) => s.length), capacityCounts(clients, caps), 'counts by capacity');
    for (const s of shares) assert.deepEqual(s, [...s].sort((a, b) => a - b));
    const agentOf = new Map(shares.flatMap((s, a) => s.map((i) => [i, a])));
    for (let g = 0; g * group < clients; g++) {
      const members = Array.from({ length: Math.min(group, clients - g * group) }, (_, k) => g * group + k);
      const spanned = new Set(members.map((i) => agentOf.get(i))).size;
      if (caps.every((c) => c === caps[0])) {
        assert.equal(spanned, Math.min(members.length, caps.length), `group ${g} over ${caps.length} equal agents`);
      } else if (members.length > 1) {
        assert.ok(spanned >= 2, `group ${g} crosses machines (${caps})`);
      }
    }
  }
});

test('an agent lays its peers out in pages and browser processes as a local bench does', () => {
  const layout = agentPageLayout([0, 2, 4, 6, 8], { peersPerPage: 2, pagesPerBrowser: 2 });
  assert.equal(layout.pageCount, 3);
  assert.equal(layout.browserCount, 2);
  assert.deepEqual(layout.pages.map((p) => p.indices), [[0, 2], [4, 6], [8]]);
  assert.deepEqual(layout.pages.map((p) => p.peers), [2, 2, 1]);
  assert.equal(agentPageLayout([1, 3], { peersPerPage: 1, pagesPerBrowser: 50, kinds: 2 }).browserCount, 2);
  assert.equal(agentPageLayout([], { peersPerPage: 1, pagesPerBrowser: 50 }).pageCount, 0);
});

test('the token: only the shared one matches, whatever its length; an empty shared token matches nothing', () => {
  assert.equal(tokenMatches('s3cret-token', 's3cret-token'), true);
  assert.equal(tokenMatches('s3cret-tokeN', 's3cret-token'), false);
  assert.equal(tokenMatches('s3cret', 's3cret-token'), false);
  assert.equal(tokenMatches('s3cret-token-and-more', 's3cret-token'), false);
  assert.equal(tokenMatches(undefined, 's3cret-token'), false);
  assert.equal(tokenMatches(42, 's3cret-token'), false);
  assert.equal(tokenMatches('', ''), false);
  assert.equal(tokenMatches('x', ''), false);
});

test('agent names are one NATS subject token', () => {
  assert.equal(agentNameProblem('lab-pc_2'), null);
  for (const bad of ['', 'a.b', 'a*', 'a>', 'a b', 'x'.repeat(65)]) assert.match(String(agentNameProblem(bad)), /is not 1..64 letters/);
});

test('start skew on the bench\'s clock alone: send time, reply time and the agent\'s own duration', () => {
  // agent A: 10 ms there and back, took 4 ms; agent B: sent 1 ms later, 30 ms round trip, took 10 ms
  const [a, b] = startSkews([{ sentAt: 100, repliedAt: 114, tookMs: 4 }, { sentAt: 101, repliedAt: 131, tookMs: 10 }]);
  // A started at 100 + 5 + 4 = 109; B at 101 + 10 + 10 = 121
  assert.deepEqual(a, { startSkewMs: 0, oneWayMs: 5 });
  assert.deepEqual(b, { startSkewMs: 12, oneWayMs: 10 });
  assert.deepEqual(startSkews([{ sentAt: 0, repliedAt: 2, tookMs: 5 }]), [{ startSkewMs: 0, oneWayMs: 0 }]);
});

/**
 * A peer's stats as CarClient.stats() gives them, enough for aggregateRun.
 * @param {number} id @param {string} group @param {number[]} neighbours @param {{ sent?: number, got?: number }} [o]
 */
function peer(id, group, neighbours, { sent = 10, got = 10 } = {}) {
  const fresh = { streamMs: 1000, fresh: 6, gaps: [], frozenMs: 0 };
  return {
    id, group, browser: 'chromium', rt: [2, 3], rtWarmup: [], updatesSent: sent, completed: sent, ackTimeouts: 0, skippedCycles: 0, lateAcks: 0,
    sentTo: Object.fromEntries(neighbours.map((n) => [String(n), sent])),
    acksFrom: Object.fromEntries(neighbours.map((n) => [String(n), sent])),
    recv: Object.fromEntries(neighbours.map((n) => [String(n), { received: got, duplicates: 0, reorders: 0, jitterMs: 1, acksSent: got, fresh }])),
  };
}

/** @param {any[]} clients @param {Partial<import('./fleet.js').AgentResult>} [o] @returns {import('./fleet.js').AgentResult} */
const result = (clients, o = {}) => ({
  clients, cpuPct: 20, rssMaxBytes: 300 * 2 ** 20, agentCpuPct: 1.5, browserVersions: { chromium: '1.2.3.4' }, browserCapabilities: {},
  pageErrors: [], reports: null, pages: 1, browserProcesses: 1, browsers: ['chromium'], windowMs: 3000, setupMs: 800, ...o,
});

const POINT = /** @type {import('../shared/flags.js').SweepPoint} */ ({ transport: 'relay', clients: 4, group: 2, cycleMs: 167, cycleMode: 'pipelined', relays: 0, placement: 'spread' });

test('the merge: one run over every agent\'s peers, the fleet block with each agent\'s figures', () => {
  // groups g-0 (ids 1, 2) and g-1 (ids 3, 4), each crossing the two agents
  const a = [peer(1, 'g-0', [2]), peer(3, 'g-1', [4])];
  const b = [peer(2, 'g-0', [1]), peer(4, 'g-1', [3])];
  const run = /** @type {any} */ (mergeFleetRun({
    point: POINT, serverMetrics: null, windowMs: 3000, browsers: ['chromium'], peersPerPage: 2, stoppedEarly: false,
    parts: [
      { name: 'a1', host: 'h1', peers: 2, result: result(a), startSkewMs: 0, lost: null },
      { name: 'a2', host: 'h2', peers: 2, result: result(b, { cpuPct: 30 }), startSkewMs: 7.5, lost: null },
    ],
  }));
  assert.deepEqual(runSchemaProblems(run), []);
  assert.equal(run.connected, 4);
  assert.equal(run.lossPct, 0);
  assert.equal(run.rt.n, 8);
  assert.equal(run.cpu.clients, 50);
  assert.equal(run.pages, 2);
  assert.equal(run.lostPeers, 0);
  assert.deepEqual(run.fleet.agents.map((/** @type {any} */ x) => [x.name, x.host, x.peers, x.cpuPct, x.rssMaxMb, x.startSkewMs]),
    [['a1', 'h1', 2, 20, 300, 0], ['a2', 'h2', 2, 30, 300, 7.5]]);
  assert.equal(run.fleet.startSkewMs, 7.5);
  assert.deepEqual(run.fleet.lost, []);
});

test('the merge: a lost agent\'s peers are lost peers with its name and time, not network loss', () => {
  // a2 died: its peers (2, 4) left no record; a1's peers sent to them until then
  const a = [peer(1, 'g-0', [2]), peer(3, 'g-1', [4])];
  const parts = [
    { name: 'a1', host: 'h1', peers: 2, result: result(a), startSkewMs: 0, lost: null },
    { name: 'a2', host: 'h2', peers: 2, result: null, startSkewMs: 3, lost: { atS: 4.2, phase: 'live', reason: 'agent a2 went silent' } },
  ];
  const run = /** @type {any} */ (mergeFleetRun({ point: POINT, parts, serverMetrics: null, windowMs: 3000, browsers: ['chromium'], peersPerPage: 2, stoppedEarly: false }));
  assert.deepEqual(runSchemaProblems(run), []);
  assert.equal(run.connected, 2);
  assert.equal(run.lossPct, 0, 'the streams into the lost peers are not loss');
  assert.equal(run.lostPeers, 2);
  assert.deepEqual(run.fleet.lost, [{ agent: 'a2', host: 'h2', peers: 2, atS: 4.2, phase: 'live', reason: 'agent a2 went silent' }]);
  assert.equal(run.fleet.agents[1].lost, true);
  assert.equal(run.fleet.agents[1].cpuPct, null);
  // real loss between surviving peers still counts
  const lossy = [peer(1, 'g-0', [3], { got: 5 }), peer(3, 'g-0', [1])];
  const r2 = /** @type {any} */ (mergeFleetRun({ point: POINT, parts: [{ ...parts[0], result: result(lossy) }, parts[1]], serverMetrics: null, windowMs: 3000, browsers: ['chromium'], peersPerPage: 2, stoppedEarly: false }));
  assert.equal(r2.lossPct, 25);
  assert.equal(fleetBlock(parts).lostPeers, 2);
  // the tables say which agent's peers were lost and when, and show every agent
  const tables = renderTables({ env: {}, runs: [run] });
  assert.match(tables, /- 4 clients: 2 peers lost with agent a2 \(h2\) at 4\.2 s \(live\): agent a2 went silent; they are left out of loss/);
  assert.match(tables, /## Fleet/);
  assert.match(tables, /\| relay +\| +4 \| +2 \| a2 +\| h2 +\| +2 \| +– \|/);
  assert.deepEqual(runSchemaProblems({ ...run, fleet: { agents: [{ name: 'a' }] } }).slice(0, 2), ['fleet.agents[0].host is not a string', 'fleet.agents[0].peers is not a number']);
});

/** @param {string[]} argv @param {NodeJS.ProcessEnv} [env] */
function benchOptions(argv, env = {}) {
  const parsed = /** @type {any} */ (parseLabFlags(argv, { transports: benchCommand.transports, defaults: benchCommand.defaults, extra: benchCommand.extraFlags }));
  if (parsed.kind !== 'options') return { problem: parsed.error?.message ?? parsed.kind, o: null };
  const o = parsed.options;
  // validate reads CARLAB_NATS and CARLAB_TOKEN from the environment: give it only `env`'s
  const saved = { CARLAB_NATS: process.env.CARLAB_NATS, CARLAB_TOKEN: process.env.CARLAB_TOKEN };
  for (const k of /** @type {const} */ (['CARLAB_NATS', 'CARLAB_TOKEN'])) { if (env[k] === undefined) delete process.env[k]; else process.env[k] = env[k]; }
  try {
    return { problem: benchCommand.validate?.(o) ?? null, o };
  } finally {
    for (const [k, v] of Object.entries(saved)) { if (v === undefined) delete process.env[k]; else process.env[k] = v; }
  }
}

test('bench fleet flags: --agents needs --nats and --token (or their variables); named agents; not with --net or --relays', () => {
  const ok = benchOptions(['--agents', '2', '--nats', 'nats://127.0.0.1:4222', '--token', 'abcdefgh']);
  assert.equal(ok.problem, null);
  assert.deepEqual(ok.o.fleet, { agents: 2, natsUrl: 'nats://127.0.0.1:4222', token: 'abcdefgh', serverHost: '127.0.0.1', prepareStallMs: PREPARE_STALL_MS });
  const named = benchOptions(['--agents', 'lab1,lab2', '--server-host', '10.0.0.5'], { CARLAB_NATS: 'nats://u:p@nats.lab:4222', CARLAB_TOKEN: 'tok-tok-tok' });
  assert.equal(named.problem, null);
  assert.deepEqual(named.o.fleet.agents, ['lab1', 'lab2']);
  assert.equal(named.o.fleet.serverHost, '10.0.0.5');
  // the results name the agents and the NATS, never the token or NATS credentials
  assert.deepEqual(fleetEnv(named.o.fleet), { fleet: { agents: ['lab1', 'lab2'], nats: 'nats://nats.lab:4222' } });
  assert.match(String(benchOptions(['--agents', '2', '--token', 'abcdefgh']).problem), /--agents needs --nats/);
  assert.match(String(benchOptions(['--agents', '2', '--nats', 'nats://127.0.0.1:4222']).problem), /--agents needs --token/);
  assert.match(String(benchOptions(['--agents', 'a.b', '--nats', 'nats://x:1', '--token', 'abcdefgh']).problem), /--agents: agent name "a.b"/);
  assert.match(String(benchOptions(['--agents', '0', '--nats', 'nats://x:1', '--token', 'abcdefgh']).problem), /not a number of agents/);
  assert.match(String(benchOptions(['--agents', '2', '--relays', '2', '--nats', 'nats://x:1', '--token', 'abcdefgh']).problem), /--relays is not supported/);
  assert.match(String(benchOptions(['--token', 'abcdefgh']).problem), /--token goes with --agents/);
  assert.match(String(benchOptions(['--prepare-stall', '10']).problem), /--prepare-stall goes with --agents/);
  const stall = benchOptions(['--agents', '2', '--nats', 'nats://x:1', '--token', 'abcdefgh', '--prepare-stall', '90']);
  assert.equal(stall.o.fleet.prepareStallMs, 90_000);
  assert.match(String(benchOptions(['--agents', '2', '--nats', 'nats://x:1', '--token', 'abcdefgh', '--prepare-stall', 'soon']).problem), /--prepare-stall: soon is not a number of seconds/);
  // --nats alone still belongs to --relays
  assert.match(String(benchOptions(['--nats', 'nats://x:1']).problem), /--nats needs --relays/);
});
