// CPU and memory of a process tree (a browser and its renderers), sampled
// from /proc. Linux only, which is where the lab runs.

import { readFileSync, readdirSync } from 'node:fs';
import os from 'node:os';

const CLOCK_TICKS = 100; // USER_HZ on Linux
const PAGE_SIZE = 4096;

/**
 * Whether a process exists (EPERM: it does, under another user).
 * @param {number} pid
 */
export function isAlive(pid) {
  try { process.kill(pid, 0); return true; } catch (err) { return /** @type {NodeJS.ErrnoException} */ (err).code === 'EPERM'; }
}

/**
 * When a process started (clock ticks since boot, /proc/PID/stat field 22), or null when it is
 * gone or a zombie. A pid alone does not name a process for long: once it ends, the kernel hands
 * the number to the next process or thread (pid_max is 32768 here, and browsers start threads by
 * the hundred), and a signal sent to a remembered pid then ends a stranger. The pair of pid and
 * start time does (see sameProcess).
 * @param {number} pid
 * @returns {number | null}
 */
export function processStart(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[0] === 'Z' || fields[0] === 'X' ? null : Number(fields[19]);
  } catch {
    return null; // gone
  }
}

/**
 * @typedef {object} ProcessRef one process, as it was when it was seen
 * @property {number} pid
 * @property {number | null} start its processStart then (null: it was already gone)
 */

/**
 * A reference to the process `pid` is now.
 * @param {number} pid
 * @returns {ProcessRef}
 */
export function processRef(pid) {
  return { pid, start: processStart(pid) };
}

/**
 * Whether the process a reference was taken of still runs: same pid, same start time.
 * @param {ProcessRef} ref
 */
export function sameProcess(ref) {
  return ref.start !== null && processStart(ref.pid) === ref.start;
}

/**
 * State (R, S, Z for a zombie, ...), parent pid, CPU ticks (utime + stime)
 * and RSS bytes of one process.
 * @param {number} pid
 * @returns {{ state: string, ppid: number, ticks: number, rssBytes: number } | null}
 */
export function readProc(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // comm may contain spaces and parentheses: split after the last ')'
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return {
      state: fields[0],
      ppid: Number(fields[1]),
      ticks: Number(fields[11]) + Number(fields[12]),
      rssBytes: Number(fields[21]) * PAGE_SIZE,
    };
  } catch {
    return null; // gone
  }
}

/**
 * Pids of `root` and all its descendants.
 * @param {number[]} roots
 */
export function processTree(roots) {
  /** @type {Map<number, number[]>} */
  const children = new Map();
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    const p = readProc(pid);
    if (!p) continue;
    if (!children.has(p.ppid)) children.set(p.ppid, []);
    /** @type {number[]} */ (children.get(p.ppid)).push(pid);
  }
  const out = [];
  const stack = [...roots];
  while (stack.length) {
    const pid = /** @type {number} */ (stack.pop());
    out.push(pid);
    stack.push(...(children.get(pid) ?? []));
  }
  return out;
}

/**
 * Samples a process tree's CPU % (100 = one core) and RSS every `intervalMs`.
 * @param {() => number[]} roots root pids (re-read each time: browsers come and go)
 * @param {number} [intervalMs]
 */
export function sampleProcessTree(roots, intervalMs = 500) {
  /** @type {Map<number, number>} */
  let lastTicks = new Map();
  let lastAt = performance.now();
  /** @type {number[]} */
  const cpu = [];
  /** @type {number[]} */
  const rss = [];
  const sample = () => {
    const now = performance.now();
    const ticks = new Map();
    let delta = 0;
    let mem = 0;
    for (const pid of processTree(roots())) {
      const p = readProc(pid);
      if (!p) continue;
      ticks.set(pid, p.ticks);
      mem += p.rssBytes;
      const before = lastTicks.get(pid);
      if (before !== undefined) delta += p.ticks - before;
    }
    if (lastTicks.size) {
      cpu.push(((delta / CLOCK_TICKS) * 1000 / (now - lastAt)) * 100);
      rss.push(mem);
    }
    lastTicks = ticks;
    lastAt = now;
  };
  sample();
  const timer = setInterval(sample, intervalMs);
  return {
    /** Stops sampling; returns mean CPU % and max RSS over the samples. */
    stop() {
      clearInterval(timer);
      sample();
      const mean = cpu.length ? cpu.reduce((a, b) => a + b, 0) / cpu.length : null;
      return { cpuPct: mean, rssMaxBytes: rss.length ? Math.max(...rss) : null, samples: cpu.length, cores: os.cpus().length };
    },
  };
}
