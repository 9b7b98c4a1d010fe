// How much of the machine something outside this test run used over a window:
// the CPU of every process, less that of the processes the run owns
// (scripts/owned.js). A real-time test states its bound for a machine the run
// has to itself; what another job takes from it is measured here and named
// beside the bound, never guessed.
import { availableParallelism } from 'node:os';

import { OWNER_VAR, isUnder, ownedProcesses } from './owned.js';
import { cpuJiffies } from './test-machine.js';

/**
 * @typedef {object} LoadSnapshot
 * @property {{ busy: number, total: number }} cpu all cores' jiffies (/proc/stat)
 * @property {Map<number, { owner: string, ticks: number }>} procs every owned process's CPU ticks
 */

/**
 * The machine's CPU counters and those of every process that has an owner
 * (its own or its nearest ancestor's: scripts/owned.js ownedProcesses).
 * @returns {LoadSnapshot}
 */
export function loadSnapshot() {
  /** @type {LoadSnapshot['procs']} */
  const procs = new Map();
  for (const [pid, p] of ownedProcesses()) procs.set(pid, { owner: p.owner, ticks: p.ticks });
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
