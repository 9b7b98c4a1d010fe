// The fleet tests' rig: a real nats-server, `carlab agent` processes on
// loopback with their output kept, and `carlab bench` over them in-process.
// Two test files share it (lab/fleet/fleet-agents.test.js, lab/fleet/fleet-interrupt.test.js):
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
