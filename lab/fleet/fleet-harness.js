// The fleet tests' rig: a real nats-server, `carlab agent` processes on
// loopback with their output kept, and `carlab bench` over them in-process.
// Two test files share it (lab/fleet/fleet-agents.test.js, lab/fleet/fleet-interrupt.test.js),
// and the checks of a fleet run with fleet-machines.test.js, which runs the same points across
// network namespaces where the machine allows (those two then skip theirs):
// one file held every fleet case and took 137–159 s beside the other tests,
// too close to the runner's 180 s per file (a CI run went past it).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';

import { startNatsServer } from '../../server/nats-process.js';
import { run } from '../commands/bench.js';
import { ensureLabPages } from '../pages/build.js';
import { resultsSchemaProblems } from '../report/schema.js';
import { waitFor } from '../shared/loop-stall.js';

/** The path of the `carlab` command, to start agents and benches as a user would. */
export const CARLAB = fileURLToPath(new URL('../../scripts/carlab.js', import.meta.url));

/** The token the rig's agents share. */
export const FLEET_TOKEN = 'fleet-test-token';

/**
 * A `carlab agent` process, its output kept.
 * @typedef {{ name: string, child: import('node:child_process').ChildProcess, log: () => string }} AgentProcess
 */

/**
 * Polls `cond` every 100 ms until it holds; throws naming `what` after `timeoutMs` (lab/shared/loop-stall.js waitFor).
 * @param {() => boolean} cond
 * @param {number} timeoutMs
 * @param {string | (() => string)} what a function is read at the timeout (logs as they are then)
 */
export const until = (cond, timeoutMs, what) => waitFor(cond, timeoutMs, what, 100);

/**
 * SIGKILLs an agent 2 s into its measured window of relay peers (a fixed wait from the pages' start
 * missed the window on a loaded machine), unless the bench ends first: then it failed, and its error
 * is the one to read. Resolves with whether it killed.
 * @param {{ name: string, child: import('node:child_process').ChildProcess, log: () => string }} victim
 * @param {Promise<unknown>} benchDone
 */
export async function killOnceMeasuring(victim, benchDone) {
  const mark = victim.log().length;
  let benchEnded = false;
  benchDone.finally(() => { benchEnded = true; }).catch(() => {});
  await until(() => benchEnded || /peers of relay[^]*: measuring/.test(victim.log().slice(mark)), 90_000,
    () => `${victim.name} to measure:\n${victim.log().slice(mark)}`);
  if (benchEnded) return false;
  await new Promise((r) => setTimeout(r, 2000));
  return victim.child.kill('SIGKILL');
}

/**
 * The checks of a relay,p2p bench over two agents, 4 peers in groups of 2 (each group across
 * both): every peer in one run per transport with the fleet block and each agent's figures, no
 * loss, and every p2p link crossing agents. Run on loopback (fleet-agents.test.js) or across
 * network namespaces (fleet-machines.test.js), whichever the machine allows.
 * @param {any} results the bench's results.json
 * @param {{ agents: string[], natsUrl: string }} o
 */
export function assertFleetRuns(results, o) {
  assert.deepEqual(resultsSchemaProblems(results), []);
  assert.deepEqual(results.env.fleet, { agents: o.agents.length, nats: o.natsUrl });
  assert.deepEqual(results.runs.map((/** @type {any} */ r) => r.transport), ['relay', 'p2p']);
  for (const r of results.runs) {
    assert.equal(r.error, undefined, r.error);
    assert.equal(r.connected, 4, `${r.transport}: every peer connected`);
    assert.ok(r.rt.n > 0);
    assert.equal(r.lossPct, 0, `${r.transport}: ${JSON.stringify(r.updates)}`);
    assert.equal(r.dups + r.reorders, 0);
    assert.deepEqual(r.pageErrors, []);
    assert.equal(r.lostPeers, 0);
    assert.deepEqual(r.fleet.agents.map((/** @type {any} */ a) => [a.name, a.peers]), o.agents.map((name) => [name, 2]));
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
}

/**
 * The checks of a relay bench over two agents whose second (`victim`) was killed while it
 * measured: its 2 peers are lost peers with its name and time, not network loss, and the point
 * finishes with the other's.
 * @param {any} results
 * @param {{ agents: string[], victim: string }} o
 */
export function assertAgentLost(results, o) {
  assert.deepEqual(resultsSchemaProblems(results), []);
  const [r] = results.runs;
  assert.equal(r.error, undefined);
  assert.equal(r.lostPeers, 2);
  assert.deepEqual(r.fleet.lost.map((/** @type {any} */ l) => [l.agent, l.peers]), [[o.victim, 2]]);
  assert.ok(r.fleet.lost[0].atS > 0, 'when, in seconds since the start');
  assert.match(r.fleet.lost[0].reason, new RegExp(`agent ${o.victim}`));
  assert.equal(r.connected, 2, 'the other agent\'s peers are there');
  assert.ok(r.rt.n > 0);
  assert.equal(r.lossPct, 0, 'the streams into the lost agent\'s peers are not network loss');
  assert.deepEqual(r.fleet.agents.map((/** @type {any} */ a) => [a.name, a.lost]), o.agents.map((name) => [name, name === o.victim]));
}

/** @returns {{ stream: Writable, text: () => string }} a stream that keeps what is written */
function sink() {
  /** @type {string[]} */
  const chunks = [];
  return { stream: new Writable({ write(c, _e, cb) { chunks.push(String(c)); cb(); } }), text: () => chunks.join('') };
}

/**
 * Starts the rig: the lab pages built, a nats-server, and one agent per name.
 * @param {string[]} names
 */
export async function startFleetRig(names) {
  await ensureLabPages({ log: () => {} });
  const nats = await startNatsServer();
  /** @type {Map<string, AgentProcess>} */
  const agents = new Map();

  /** @param {string} name @returns {Promise<AgentProcess>} */
  async function startAgent(name) {
    const child = spawn(process.execPath, [CARLAB, 'agent', '--nats', nats.url, '--name', name], {
      env: { ...process.env, CARLAB_TOKEN: FLEET_TOKEN }, stdio: ['ignore', 'pipe', 'pipe'],
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

  /** @param {string} name @returns {AgentProcess} */
  function agent(name) {
    const a = agents.get(name);
    if (!a) throw new Error(`no agent ${name}`);
    return a;
  }

  /** Ends every agent (SIGTERM, waiting for each) and the nats-server. */
  async function stop() {
    for (const a of agents.values()) {
      if (a.child.exitCode !== null || a.child.signalCode !== null) continue;
      a.child.kill('SIGTERM');
      await new Promise((r) => a.child.once('exit', r));
    }
    await nats.stop();
  }

  /**
   * `carlab bench` over the agents (4 clients in groups of 2, 2 peers a page); resolves with its exit
   * code, stderr and results.
   * @param {string[]} argv
   */
  async function bench(argv) {
    const out = await mkdtemp(path.join(tmpdir(), 'carlab-fleet-'));
    try {
      const stderr = sink();
      const code = await run(['--nats', nats.url, '--clients', '4', '--group', '2', '--warmup', '1',
        '--peers-per-page', '2', '--no-progress', '--out', out, ...argv], { stdout: sink().stream, stderr: /** @type {any} */ (stderr.stream) });
      const results = JSON.parse(await readFile(path.join(out, 'results.json'), 'utf8'));
      return { code, stderr: stderr.text(), results };
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  }

  for (const name of names) await startAgent(name);
  return { nats, agents, agent, startAgent, stop, bench };
}
