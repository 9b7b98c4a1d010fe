// One bench over two `carlab agent` processes on loopback, through a real
// nats-server: a relay and a p2p point of 4 peers (groups of 2, each group
// across both agents), every peer accounted for in one results.json with a
// fleet block; a wrong token opens nothing; a busy agent is not used; an
// agent that never answers fails the point with its name in bounded time; an
// agent killed mid-point leaves its peers as lost peers, the point finishes.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { JSONCodec, connect } from 'nats';

import { startNatsServer } from '../server/nats-process.js';
import { run } from './commands/bench.js';
import { AGENT_SILENCE_MS, DISCOVER_SUBJECT, agentSubject } from './fleet.js';
import { resultsSchemaProblems } from './schema.js';
import { ensureLabPages } from './pages/build.js';

const CARLAB = fileURLToPath(new URL('../scripts/carlab.js', import.meta.url));
const TOKEN = 'fleet-test-token';
const jc = JSONCodec();

/** @type {Awaited<ReturnType<typeof startNatsServer>> | null} */
let nats = null;

/**
 * A `carlab agent` process, its output kept.
 * @typedef {{ name: string, child: import('node:child_process').ChildProcess, log: () => string }} AgentProcess
 */

/** @type {Map<string, AgentProcess>} */
const agents = new Map();

/** @param {() => boolean} cond @param {number} timeoutMs @param {string} what */
async function until(cond, timeoutMs, what) {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** @param {string} name @returns {Promise<AgentProcess>} */
async function startAgentProcess(name) {
  const child = spawn(process.execPath, [CARLAB, 'agent', '--nats', /** @type {any} */ (nats).url, '--name', name], {
    env: { ...process.env, CARLAB_TOKEN: TOKEN }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d) => { out += d; });
  child.stderr?.on('data', (d) => { out += d; });
  const a = { name, child, log: () => out };
  agents.set(name, a);
  await until(() => out.includes(`carlab agent ${name}: on `) || child.exitCode !== null, 30_000, `agent ${name}`);
  assert.equal(child.exitCode, null, out);
  return a;
}

/** @param {AgentProcess} a */
async function stopAgent(a) {
  if (a.child.exitCode !== null || a.child.signalCode !== null) return;
  a.child.kill('SIGTERM');
  await new Promise((r) => a.child.once('exit', r));
}

before(async () => {
  await ensureLabPages({ log: () => {} });
  nats = await startNatsServer();
  await startAgentProcess('a1');
  await startAgentProcess('a2');
});

after(async () => {
  for (const a of agents.values()) await stopAgent(a);
  await nats?.stop();
});

const sink = () => {
  /** @type {string[]} */
  const chunks = [];
  return { stream: new Writable({ write(c, _e, cb) { chunks.push(String(c)); cb(); } }), text: () => chunks.join('') };
};

/**
 * `carlab bench` over the agents; resolves with its exit code, stderr and results.
 * @param {string[]} argv
 */
async function bench(argv) {
  const out = await mkdtemp(path.join(tmpdir(), 'carlab-fleet-'));
  try {
    const stderr = sink();
    const code = await run(['--nats', /** @type {any} */ (nats).url, '--clients', '4', '--group', '2', '--warmup', '1',
      '--peers-per-page', '2', '--no-progress', '--out', out, ...argv], { stdout: sink().stream, stderr: /** @type {any} */ (stderr.stream) });
    const results = JSON.parse(await readFile(path.join(out, 'results.json'), 'utf8'));
    return { code, stderr: stderr.text(), results };
  } finally {
    await rm(out, { recursive: true, force: true });
  }
}

test('a bench without the shared token opens nothing on any agent', { timeout: 60_000 }, async () => {
  const before1 = agents.get('a1')?.log().length ?? 0;
  const { code, results } = await bench(['--agents', '2', '--token', 'not-the-token', '--duration', '2']);
  assert.equal(code, 1);
  assert.match(results.runs[0].error, /agent a[12] refused prepare: wrong token/);
  for (const name of ['a1', 'a2']) {
    const log = /** @type {AgentProcess} */ (agents.get(name)).log();
    assert.match(log, /refused "prepare" from a controller without the shared token/);
    assert.doesNotMatch(log.slice(name === 'a1' ? before1 : 0), /peers of relay/, `${name} opened no page`);
  }
});

test('an agent that never answers fails the point with its name within a bounded time', { timeout: 60_000 }, async () => {
  // a "ghost" answers discovery (so it is chosen) and then nothing, not even heartbeats
  const nc = await connect({ servers: /** @type {any} */ (nats).url });
  const ghost = { name: 'ghost', host: 'nowhere', pid: 1, cores: 2, memoryMb: 1, freeMemoryMb: 1, browsers: ['chromium'], capacity: 2, busy: null, pagesOrigin: 'http://127.0.0.1:1', version: '0' };
  nc.subscribe(DISCOVER_SUBJECT, { callback: (_e, m) => m.respond(jc.encode(ghost)) });
  nc.subscribe(agentSubject('ghost'), { callback: () => {} });
  try {
    const t0 = Date.now();
    const { code, results } = await bench(['--agents', 'a1,ghost', '--token', TOKEN, '--duration', '2']);
    assert.equal(code, 1);
    assert.match(results.runs[0].error, new RegExp(`agent ghost went silent \\(no heartbeat for ${AGENT_SILENCE_MS / 1000} s\\) during prepare`));
    assert.ok(Date.now() - t0 < 30_000, `failed after ${Date.now() - t0} ms`);
    // a1 was told to stop: it is free for the next point
    await until(() => /run fleet\w+: aborted by the controller/.test(/** @type {AgentProcess} */ (agents.get('a1')).log()), 15_000, 'a1 to close its browsers');
  } finally {
    await nc.close();
  }
  const missing = await bench(['--agents', 'a1,nobody', '--token', TOKEN, '--duration', '2']);
  assert.match(missing.results.runs[0].error, /agent nobody did not answer within 5 s/);
});

test('relay and p2p over two agents: 4 peers in groups of 2 across them, every peer in one run with the fleet block', { timeout: 180_000 }, async () => {
  const { code, stderr, results } = await bench(['--agents', '2', '--token', TOKEN, '--transport', 'relay,p2p', '--duration', '3']);
  assert.equal(code, 0, stderr);
  assert.deepEqual(resultsSchemaProblems(results), []);
  assert.deepEqual(results.env.fleet, { agents: 2, nats: `${/** @type {any} */ (nats).url}` });
  for (const r of results.runs) {
    assert.equal(r.error, undefined, r.error);
    assert.equal(r.connected, 4, `${r.transport}: every peer connected`);
    assert.ok(r.rt.n > 0);
    assert.equal(r.lossPct, 0);
    assert.equal(r.dups + r.reorders, 0);
    assert.deepEqual(r.pageErrors, []);
    assert.equal(r.lostPeers, 0);
    assert.deepEqual(r.fleet.agents.map((/** @type {any} */ a) => [a.name, a.peers]), [['a1', 2], ['a2', 2]]);
    for (const a of r.fleet.agents) {
      assert.deepEqual(a.browsers, ['chromium']);
      assert.ok(a.cpuPct > 0, `${a.name}: browser CPU measured`);
      assert.ok(a.rssMaxMb > 0);
      assert.equal(typeof a.startSkewMs, 'number');
    }
    assert.ok(r.fleet.startSkewMs >= 0 && r.fleet.startSkewMs < 2000, `start skew ${r.fleet.startSkewMs} ms`);
    assert.ok(r.cpu.clients > 0);
  }
  const p2p = results.runs.find((/** @type {any} */ r) => r.transport === 'p2p');
  // each group of 2 has a peer on each agent: every p2p link crossed agents, timed on both ends
  assert.equal(p2p.setupMs.peer.n, 4);
  assert.deepEqual(p2p.channel, { ordered: false, maxRetransmits: 0, maxPacketLifeTime: p2p.channel.maxPacketLifeTime, uniform: true, clients: 4 });
});

test('a busy agent is not used: a named one fails the point, --agents N finds too few', { timeout: 90_000 }, async () => {
  // keep a2 busy with a run of another controller (one peer, right token)
  const nc = await connect({ servers: /** @type {any} */ (nats).url });
  const other = 'otherrun1';
  try {
    const cfgServer = await startPlainServer();
    const answer = /** @type {any} */ (jc.decode((await nc.request(agentSubject('a2'), jc.encode({
      op: 'prepare', token: TOKEN, runId: other,
      job: { point: { transport: 'relay', clients: 1, group: 1, cycleMs: 167, cycleMode: 'pipelined', relays: 0, placement: 'spread' }, indices: [0],
        servers: [cfgServer.url], browsers: ['chromium'], peersPerPage: 1, pagesPerBrowser: 50, warmupS: 0, updates: 0, ackTimeoutMs: 20000 },
    }), { timeout: 60_000 })).data));
    try {
      assert.equal(answer.ok, true, answer.error);
      // a second run is refused by the agent itself
      const second = /** @type {any} */ (jc.decode((await nc.request(agentSubject('a2'), jc.encode({ op: 'prepare', token: TOKEN, runId: 'x', job: {} }), { timeout: 5000 })).data));
      assert.deepEqual([second.ok, second.busy], [false, true]);
      const named = await bench(['--agents', 'a1,a2', '--token', TOKEN, '--duration', '2']);
      assert.match(named.results.runs[0].error, /agent a2 is busy with another run \(otherrun1\)/);
      const counted = await bench(['--agents', '2', '--token', TOKEN, '--duration', '2']);
      assert.match(counted.results.runs[0].error, /--agents 2: 1 free agent\(s\) with chromium answered within 5 s .*: a1; not used: a2 \(busy\)/);
    } finally {
      await nc.request(agentSubject('a2'), jc.encode({ op: 'abort', token: TOKEN, runId: other }), { timeout: 5000 });
      await cfgServer.close();
    }
  } finally {
    await nc.close();
  }
  await until(() => /run otherrun1: aborted by the controller/.test(/** @type {AgentProcess} */ (agents.get('a2')).log()), 15_000, 'a2 free again');
});

test('an agent killed mid-point: its peers are lost peers with its name and time, the point finishes with the other', { timeout: 120_000 }, async () => {
  const a2 = /** @type {AgentProcess} */ (agents.get('a2'));
  const mark = a2.log().length;
  // kill a2 once its peers run and the measured window is 2 s old (a fixed wait from the pages' start
  // missed the window on a loaded machine)
  const killer = (async () => {
    await until(() => /peers of relay[^]*: measuring/.test(a2.log().slice(mark)), 90_000, 'a2 to measure');
    await new Promise((r) => setTimeout(r, 2000));
    a2.child.kill('SIGKILL');
  })();
  const { code, stderr, results } = await bench(['--agents', '2', '--token', TOKEN, '--transport', 'relay', '--duration', '8']);
  await killer;
  assert.equal(code, 0, stderr);
  assert.deepEqual(resultsSchemaProblems(results), []);
  const [r] = results.runs;
  assert.equal(r.error, undefined);
  assert.equal(r.lostPeers, 2);
  assert.equal(r.fleet.lost.length, 1);
  assert.equal(r.fleet.lost[0].agent, 'a2');
  assert.equal(r.fleet.lost[0].peers, 2);
  assert.ok(r.fleet.lost[0].atS > 0, 'when, in seconds since the start');
  assert.match(r.fleet.lost[0].reason, /agent a2/);
  assert.equal(r.connected, 2, 'a1\'s peers are there');
  assert.ok(r.rt.n > 0);
  assert.equal(r.lossPct, 0, 'the streams into a2\'s peers are not network loss');
  assert.deepEqual(r.fleet.agents.map((/** @type {any} */ a) => [a.name, a.lost]), [['a1', false], ['a2', true]]);
});

test('Ctrl-C on the bench stops every agent\'s browsers: once, the point ends early and is written; a bench gone for good, the lease', { timeout: 150_000 }, async () => {
  if (!agents.get('a2') || agents.get('a2')?.child.exitCode !== null || agents.get('a2')?.child.signalCode) await startAgentProcess('a2');
  const out = await mkdtemp(path.join(tmpdir(), 'carlab-fleet-int-'));
  try {
    for (const [signal, expected] of /** @type {const} */ ([['SIGINT', /: finished; closing 1 browser/], ['SIGKILL', /no word from the controller for 10 s/]])) {
      const marks = new Map([...agents.values()].map((a) => [a.name, a.log().length]));
      const child = spawn(process.execPath, [CARLAB, 'bench', '--agents', '2', '--nats', /** @type {any} */ (nats).url, '--clients', '4', '--group', '2',
        '--warmup', '1', '--duration', '60', '--no-progress', '--out', out], { env: { ...process.env, CARLAB_TOKEN: TOKEN }, stdio: ['ignore', 'ignore', 'pipe'] });
      let err = '';
      child.stderr?.on('data', (d) => { err += d; });
      const fresh = (/** @type {string} */ name) => /** @type {AgentProcess} */ (agents.get(name)).log().slice(marks.get(name));
      // Once both measure: a signal while the pages open is another case ("interrupted while opening pages").
      await until(() => ['a1', 'a2'].every((n) => /peers of relay[^]*: measuring/.test(fresh(n))), 90_000, 'both agents to measure');
      await new Promise((r) => setTimeout(r, 1000));
      const t0 = Date.now();
      child.kill(signal);
      const code = await new Promise((r) => child.once('exit', (c) => r(c)));
      for (const name of ['a1', 'a2']) await until(() => expected.test(fresh(name)), 20_000, `${name} to close its browsers after ${signal}:\n${fresh(name)}`);
      if (signal === 'SIGINT') {
        assert.equal(code, 130, err);
        const results = JSON.parse(await readFile(path.join(out, 'results.json'), 'utf8'));
        assert.equal(results.runs[0].stoppedEarly, true);
        assert.equal(results.runs[0].connected, 4);
        assert.ok(Date.now() - t0 < 20_000);
      }
    }
  } finally {
    await rm(out, { recursive: true, force: true });
  }
});

/**
 * A carlab server that allows any origin, for the busy agent's run.
 * @returns {Promise<{ url: string, close: () => Promise<void> }>}
 */
async function startPlainServer() {
  const { startServerChild } = await import('./sim.js');
  const s = await startServerChild({ allowedOrigins: ['*'] });
  return { url: s.url.replace(/\/$/, ''), close: () => s.close() };
}
