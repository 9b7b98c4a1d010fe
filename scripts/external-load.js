// How much of the machine something outside this test run used over a window:
// the CPU of every process, less that of the processes the run owns
// (scripts/owned.js). A real-time test states its bound for a machine the run
// has to itself; what another job takes from it is measured here and named
// beside the bound, never guessed.
import { readdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';

import { readProc } from '../lab/proctree.js';
import { OWNER_VAR, isUnder, readOwned } from './owned.js';
import { cpuJiffies } from './test-machine.js';

/**
 * @typedef {object} LoadSnapshot
 * @property {{ busy: number, total: number }} cpu all cores' jiffies (/proc/stat)
 * @property {Map<number, { owner: string, ticks: number }>} procs every owned process's CPU ticks
 */

/**
 * The machine's CPU counters and those of every process that has an owner:
 * its own, or that of its nearest ancestor that has one. Chromium's renderers
 * and zygotes write their titles over their environment, so /proc shows them
 * no owner; their parent chain leads to the browser, which has one.
 * @returns {LoadSnapshot}
 */
export function loadSnapshot() {
  /** @type {Map<number, { ppid: number, ticks: number, owner: string | null }>} */
  const all = new Map();
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    const p = readProc(pid);
    if (p) all.set(pid, { ppid: p.ppid, ticks: p.ticks, owner: readOwned(pid)?.owner ?? null });
  }
  /** @param {number} pid @param {number} depth @returns {string | null} */
  const ownerOf = (pid, depth = 0) => {
    const p = all.get(pid);
    if (!p || depth > 64) return null;
    if (p.owner === null && p.ppid > 1) p.owner = ownerOf(p.ppid, depth + 1);
    return p.owner;
  };
  /** @type {LoadSnapshot['procs']} */
  const procs = new Map();
  for (const [pid, p] of all) {
    const owner = ownerOf(pid);
    if (owner) procs.set(pid, { owner, ticks: p.ticks });
  }
  return { cpu: cpuJiffies(), procs };
}

/**
 * The cores (1 = one core) that processes outside `run` kept busy on average between two snapshots
 * (a few hundredths below zero when nothing else ran: the counters are read a moment apart).
 * @param {LoadSnapshot} a @param {LoadSnapshot} b @param {string} run
 */
export function externalCores(a, b, run) {
  const total = b.cpu.total - a.cpu.total;
  if (total <= 0) return 0;
  let owned = 0;
  for (const [pid, p] of b.procs) {
    if (isUnder(p.owner, run)) owned += p.ticks - (a.procs.get(pid)?.ticks ?? 0);
  }
  // /proc/stat counts jiffies of all cores together; a process's ticks are in the same unit
  return ((b.cpu.busy - a.cpu.busy - owned) / total) * availableParallelism();
}

/**
 * The run this process belongs to: the first segment of its owner, or null
 * outside `npm test` (then nothing is known of what is the run's own).
 * @param {NodeJS.ProcessEnv} [env]
 */
export function runOwner(env = process.env) {
  return env[OWNER_VAR]?.split('/')[0] || null;
}

/**
 * Starts measuring; `stop()` returns the cores that processes outside the run
 * kept busy on average since the start: 0 outside `npm test`.
 * @param {string | null} [run]
 */
export function startExternalLoadMeter(run = runOwner()) {
  const before = run ? loadSnapshot() : null;
  return {
    stop() {
      return run && before ? Math.max(0, externalCores(before, loadSnapshot(), run)) : 0;
    },
  };
}

/**
 * A real-time bound on a machine shared with `externalCores` of outside work:
 * the same CPU-bound work gets cores / (cores - external) times as long, at
 * most twice (beyond that the machine is not one a real-time test can judge).
 * @param {number} boundMs the bound on a machine the run has to itself
 * @param {number} externalCores
 * @param {number} [cores]
 */
export function sharedMachineBound(boundMs, externalCores, cores = availableParallelism()) {
  const free = Math.max(cores / 2, cores - externalCores);
  return boundMs * (cores / free);
}
