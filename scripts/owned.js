// Which processes a test run started, found by an environment variable every
// process inherits, so that nothing a test starts can outlive it.
//
// A process group is not enough: Playwright, the lab and the servers start
// browsers, agents and nats-servers in groups of their own (detached), and a
// process whose parent died is re-parented to init, so neither the group nor
// the parent chain finds it. The environment survives both: every process a
// test starts inherits CARLABTEST_OWNER (the lab passes its environment on;
// `carlab start` only drops CARLAB_* variables, which this name is not). The
// owner is a path, `run/step/pid/pid`, one segment per guarded process
// (scripts/guard.js), so an owner's processes are those whose value is
// the owner itself or starts with it and a slash. Linux only: /proc.

import { readFileSync, readdirSync } from 'node:fs';

import { readProc } from '../lab/shared/proctree.js';

/** The environment variable that names a process's owner. */
export const OWNER_VAR = 'CARLABTEST_OWNER';

/**
 * @typedef {object} OwnedProcess
 * @property {number} pid
 * @property {string} owner the owner path in its environment
 * @property {string} args its command line (spaces between arguments)
 */

/**
 * Whether a process in this state (/proc/PID/stat) is dead already, waiting
 * for its parent to reap it: nothing to end, nothing it runs.
 * @param {string} state
 */
function isDead(state) {
  return state === 'Z' || state === 'X';
}

/**
 * The owner a process's environment names, or null (none, gone, not readable).
 * @param {number} pid
 */
function ownerInEnviron(pid) {
  try {
    const key = `${OWNER_VAR}=`;
    const entry = readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').find((e) => e.startsWith(key));
    return entry ? entry.slice(key.length) : null;
  } catch {
    return null;
  }
}

/**
 * A process's command line, arguments joined by spaces ('' when gone).
 * @param {number} pid
 */
function readArgs(pid) {
  try { return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' '); } catch { return ''; }
}

/**
 * Whether `owner` is `prefix` or lies under it.
 * @param {string} owner @param {string} prefix
 */
export function isUnder(owner, prefix) {
  return owner === prefix || owner.startsWith(`${prefix}/`);
}

/**
 * Every live process with an owner: its own, or that of its nearest ancestor
 * that has one. Chromium's renderers and zygotes write their titles over their
 * environment, so /proc shows them none; their parent chain leads to the
 * browser, which has one.
 * @returns {Map<number, OwnedProcess & { ppid: number, ticks: number }>}
 */
export function ownedProcesses() {
  /** @type {Map<number, { ppid: number, ticks: number, own: string | null }>} */
  const all = new Map();
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    const p = readProc(pid);
    if (p && !isDead(p.state)) all.set(pid, { ppid: p.ppid, ticks: p.ticks, own: ownerInEnviron(pid) });
  }
  /** @param {number} pid @param {number} depth @returns {string | null} */
  const ownerOf = (pid, depth = 0) => {
    const p = all.get(pid);
    if (!p || depth > 64) return null;
    return p.own ?? (p.ppid > 1 ? ownerOf(p.ppid, depth + 1) : null);
  };
  /** @type {Map<number, OwnedProcess & { ppid: number, ticks: number }>} */
  const out = new Map();
  for (const [pid, p] of all) {
    const owner = ownerOf(pid);
    if (owner) out.set(pid, { pid, owner, args: readArgs(pid), ppid: p.ppid, ticks: p.ticks });
  }
  return out;
}

/**
 * The live processes owned by `prefix` (or by an owner under it), this
 * process and those in `except` left out.
 * @param {string} prefix
 * @param {Iterable<number>} [except]
 * @returns {OwnedProcess[]}
 */
export function ownedBy(prefix, except = []) {
  const skip = new Set([process.pid, ...except]);
  return [...ownedProcesses().values()]
    .filter((p) => !skip.has(p.pid) && isUnder(p.owner, prefix))
    .map(({ pid, owner, args }) => ({ pid, owner, args }))
    .sort((a, b) => a.pid - b.pid);
}

/**
 * Blocks this thread for `ms` (for exit handlers, which cannot wait on timers).
 * @param {number} ms
 */
export function sleepSync(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * @param {number} pid @param {NodeJS.Signals} signal
 */
function signal(pid, signal) {
  try { process.kill(pid, signal); } catch { /* gone already */ }
}

/**
 * Ends what `prefix` still owns, synchronously (it runs in exit handlers):
 * waits up to `graceMs` for processes that are already on their way out
 * (a teardown that signalled without waiting), then SIGTERM, and SIGKILL
 * what is left `termMs` later. Returns what was still running after the
 * grace: the leftovers, which the caller reports.
 * @param {string} prefix
 * @param {{ graceMs?: number, termMs?: number, except?: Iterable<number> }} [o]
 * @returns {OwnedProcess[]}
 */
export function endOwned(prefix, o = {}) {
  const { graceMs = 2000, termMs = 2000, except = [] } = o;
  const pending = (/** @type {number} */ waitMs) => {
    const until = Date.now() + waitMs;
    let left = ownedBy(prefix, except);
    while (left.length > 0 && Date.now() < until) {
      sleepSync(50);
      left = ownedBy(prefix, except);
    }
    return left;
  };
  const leftovers = pending(graceMs);
  if (leftovers.length === 0) return [];
  for (const p of leftovers) signal(p.pid, 'SIGTERM');
  for (const p of pending(termMs)) signal(p.pid, 'SIGKILL');
  return leftovers;
}

/**
 * One line per leftover process, for a failure message.
 * @param {OwnedProcess[]} procs
 */
export function describeOwned(procs) {
  return procs.map((p) => `  pid ${p.pid}: ${p.args.length > 160 ? `${p.args.slice(0, 157)}...` : p.args}`).join('\n');
}
