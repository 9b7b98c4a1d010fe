// What `npm test` reads off the machine before it plans: how many cores are
// free (the cores, less what is already running), and which browsers it is
// about to test, so that the output names the versions a failure was seen on.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/**
 * Busy and total jiffies of all cores together, from /proc/stat's first line.
 * @param {string} [stat] the file's text (read from /proc when omitted)
 * @returns {{ busy: number, total: number }}
 */
export function cpuJiffies(stat = readFileSync('/proc/stat', 'utf8')) {
  const fields = stat.split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is already in user)
  const total = fields.slice(0, 8).reduce((a, b) => a + b, 0);
  const idle = fields[3] + (fields[4] ?? 0);
  return { busy: total - idle, total };
}

/**
 * How many cores something else keeps busy: the least of `samples` samples of
 * `ms` each. A load that stays (a busy loop, another job) shows in every
 * sample; a passing one (npm starting this very run, a command finishing) in
 * one or two, and must not halve the run's parallelism.
 * @param {number} [samples]
 * @param {number} [ms]
 * @returns {Promise<number>}
 */
export async function busyCores(samples = 4, ms = 500) {
  let least = Infinity;
  let a = cpuJiffies();
  for (let i = 0; i < samples; i++) {
    await new Promise((r) => setTimeout(r, ms));
    const b = cpuJiffies();
    const total = b.total - a.total;
    least = Math.min(least, total > 0 ? ((b.busy - a.busy) / total) * availableParallelism() : 0);
    a = b;
  }
  return Number.isFinite(least) ? least : 0;
}

/**
 * The cores the tests may plan on: all of them less those already busy
 * (rounded to the nearest), never fewer than one. Planning on half of a busy
 * core instead (the kernel shares it) gained nothing beside a busy loop on one
 * of 2 cores: npm test took 1047 s against 1033 s, the stages CPU-bound either way.
 * @param {number} cores
 * @param {number} busy
 */
export function freeCores(cores, busy) {
  return Math.max(1, Math.round(cores - busy));
}

/**
 * The first line a command prints for `--version`, or null.
 * @param {string} command @param {string[]} [args]
 */
function firstLine(command, args = ['--version']) {
  const r = spawnSync(command, args, { encoding: 'utf8', timeout: 15_000, stdio: ['ignore', 'pipe', 'ignore'] });
  return r.status === 0 ? (r.stdout.trim().split('\n')[0] ?? null) : null;
}

/**
 * The versions of what the browser tests run: Debian's packages where dpkg
 * knows them (the version a machine installed), else the program's own
 * `--version`, else "not installed".
 * @returns {Record<string, string>}
 */
export function browserVersions() {
  /** @type {Record<string, [string, string]>} package -> [program, how to ask it] */
  const programs = { chromium: ['chromium', '--version'], 'firefox-esr': ['firefox-esr', '--version'], 'webkit2gtk-driver': ['WebKitWebDriver', '--version'] };
  /** @type {Record<string, string>} */
  const out = {};
  for (const [pkg, [program, flag]] of Object.entries(programs)) {
    const fromDpkg = firstLine('dpkg-query', ['-W', '-f=${Version}', pkg]);
    out[pkg] = fromDpkg || firstLine(program, [flag]) || 'not installed';
  }
  return out;
}
