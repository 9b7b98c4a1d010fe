// Which processes a test run started, found by an environment variable every
// process inherits, so that nothing a test starts can outlive it. A process
// group is not enough: browsers, agents and nats-servers run detached, and an
// orphan is re-parented to init. The environment survives both (`carlab start`
// drops only CARLAB_* variables, which this is not). The owner is a path,
// `run/step/pid/pid`, one segment per guarded process (guard.js). Linux: /proc.
import { readFileSync, readdirSync } from 'node:fs';

import { readProc } from '../lab/shared/proctree.js';

/** The environment variable that names a process's owner. */
export const OWNER_VAR = 'CARLABTEST_OWNER';

/** @typedef {{ pid: number, owner: string, args: string }} OwnedProcess */

/** @param {number} pid @param {string} file @param {BufferEncoding} enc */
const readOr = (pid, file, enc) => { try { return readFileSync(`/proc/${pid}/${file}`, enc); } catch { return ''; } };

/** The owner in a process's environment, or null. @param {number} pid */
function ownerInEnviron(pid) {
  const entry = readOr(pid, 'environ', 'latin1').split('\0').find((e) => e.startsWith(`${OWNER_VAR}=`));
  return entry ? entry.slice(OWNER_VAR.length + 1) : null;
}

/** Whether `owner` is `prefix` or lies under it. @param {string} owner @param {string} prefix */
export function isUnder(owner, prefix) {
  return owner === prefix || owner.startsWith(`${prefix}/`);
}

/**
 * The live processes owned by `prefix` or an owner under it, this process and
 * `except` left out. A process without an owner of its own takes its nearest
 * ancestor's: Chromium's renderers write their titles over their environment.
 * @param {string} prefix @param {Iterable<number>} [except]
 * @returns {OwnedProcess[]}
 */
export function ownedBy(prefix, except = []) {
  /** @type {Map<number, { ppid: number, own: string | null }>} */
  const all = new Map();
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    const p = Number.isInteger(pid) ? readProc(pid) : null;
    if (p && p.state !== 'Z' && p.state !== 'X') all.set(pid, { ppid: p.ppid, own: ownerInEnviron(pid) });
  }
  /** @param {number} pid @param {number} depth @returns {string | null} */
  const ownerOf = (pid, depth) => {
    const p = all.get(pid);
    if (!p || depth > 64) return null;
    return p.own ?? (p.ppid > 1 ? ownerOf(p.ppid, depth + 1) : null);
  };
  const skip = new Set([process.pid, ...except]);
  /** @type {OwnedProcess[]} */
  const out = [];
  for (const pid of all.keys()) {
    const owner = ownerOf(pid, 0);
    if (owner && !skip.has(pid) && isUnder(owner, prefix)) out.push({ pid, owner, args: readOr(pid, 'cmdline', 'utf8').split('\0').filter(Boolean).join(' ') });
  }
  return out.sort((a, b) => a.pid - b.pid);
}

/** Blocks this thread for `ms` (exit handlers cannot wait on timers). @param {number} ms */
export function sleepSync(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Ends what `prefix` still owns, synchronously (it runs in exit handlers):
 * waits `graceMs` for processes already on their way out, then SIGTERM, and
 * SIGKILL what is left `termMs` later. Returns what was running after the
 * grace: the leftovers, which the caller reports.
 * @param {string} prefix
 * @param {{ graceMs?: number, termMs?: number, except?: Iterable<number> }} [o]
 * @returns {OwnedProcess[]}
 */
export function endOwned(prefix, { graceMs = 2000, termMs = 2000, except = [] } = {}) {
  const pending = (/** @type {number} */ waitMs) => {
    const until = Date.now() + waitMs;
    let left = ownedBy(prefix, except);
    while (left.length > 0 && Date.now() < until) { sleepSync(50); left = ownedBy(prefix, except); }
    return left;
  };
  const kill = (/** @type {OwnedProcess[]} */ ps, /** @type {NodeJS.Signals} */ sig) => {
    for (const p of ps) try { process.kill(p.pid, sig); } catch { /* gone already */ }
  };
  const leftovers = pending(graceMs);
  if (leftovers.length === 0) return [];
  kill(leftovers, 'SIGTERM');
  kill(pending(termMs), 'SIGKILL');
  return leftovers;
}

/** One line per leftover process, for a failure message. @param {OwnedProcess[]} procs */
export function describeOwned(procs) {
  return procs.map((p) => `  pid ${p.pid}: ${p.args.length > 160 ? `${p.args.slice(0, 157)}...` : p.args}`).join('\n');
}
