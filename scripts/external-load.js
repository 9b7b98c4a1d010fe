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
 * CPU ticks of every live process this run owns, by pid.
 * @param {string} run the run's owner (the first segment of an owner path)
 */
function ownedTicks(run) {
  /** @type {Map<number, number>} */
  const ticks = new Map();
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    const owned = readOwned(pid);
    if (!owned || !isUnder(owned.owner, run)) continue;
    const p = readProc(pid);
    if (p) ticks.set(pid, p.ticks);
  }
  return ticks;
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
 * Starts measuring; `stop()` returns the cores (1 = one core) that processes
 * outside the run kept busy on average since the start: 0 outside `npm test`.
 * @param {string | null} [run]
 */
export function startExternalLoadMeter(run = runOwner()) {
  const before = cpuJiffies();
  const ownedBefore = run ? ownedTicks(run) : new Map();
  return {
    stop() {
      if (!run) return 0;
      const after = cpuJiffies();
      const total = after.total - before.total;
      if (total <= 0) return 0;
      let owned = 0;
      for (const [pid, ticks] of ownedTicks(run)) owned += ticks - (ownedBefore.get(pid) ?? 0);
      const cores = availableParallelism();
      // /proc/stat counts jiffies of all cores together; a process's ticks are in the same unit
      return Math.max(0, ((after.busy - before.busy - owned) / total) * cores);
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
