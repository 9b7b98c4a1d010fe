#!/usr/bin/env node
// `npm run test:unit`: every *.test.js under the source folders with Node's
// test runner, most files side by side (--test-concurrency), then those that
// hold wall-clock bounds and those that measure timing, each group with
// nothing else beside it (TIMED_FILES and QUIET_FILES say why).
// `npm test` (scripts/test.js) runs the same groups in its own stages.
// Exit code: the first failing run's.
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The folders that hold unit tests (tests mirror the code beside them). */
export const TEST_DIRS = ['core', 'web/src', 'relay', 'signaling', 'server', 'lab', 'scripts'];

/**
 * Files that hold timing to account, run beside each other and, in `npm test`,
 * beside the web build and the type check, nothing else: the soak keeps RT
 * within a cycle (167 ms) over 15 s (beside the fuzz run on 2 cores its last
 * window's RT went from 0.8 to 106 ms; beside the build and the type check of a
 * fresh clone, 1.8-3.2 ms in 3 runs); fairness counts every member's updates in
 * every second (beside the other unit files one second once carried 1 update
 * of a stream; beside the build and the type check it passed 6 runs of 6).
 * Both are light (4.6 and 3.0 s of CPU in about 20 s).
 */
export const QUIET_FILES = Object.freeze([
  'lab/sim/soak.test.js',
  'relay/fairness.test.js',
]);

/**
 * Files whose bounds are wall-clock promises, run beside each other with
 * nothing else: the fuzz run's well-behaved members must never wait 1 s for an
 * update (1008 ms once beside 2 browser workers and 2 unit files on 2 cores);
 * HAProxy's failover brings clients back within 2 s at p99 (3.2 s there); a
 * restarted relay's 12 clients must all be back within the 8.5 s left of their
 * run, less the restart; a slow consumer's group keeps RT p95 under 250 ms and
 * only the update in flight per sender waits for it (an RT of 900 ms or more:
 * beside the other unit files and browser tests on a fresh machine, 6 did,
 * delayed by the load, not by the slow member). The namespace tests that put this machine on a bridge
 * run side by side: each has its own /16 (10.202, 10.203, 10.204).
 */
export const TIMED_FILES = Object.freeze([
  'lab/commands/fuzz.test.js',
  'lab/target/haproxy.test.js',
  'lab/sim/restart.test.js',
  'relay/slow.test.js',
]);

/**
 * The heaviest of the other files: browser fleets over agents, `carlab sim`
 * and `bench` runs, relay clusters, network namespaces, studies on a cluster
 * (beside the other browser tests, `carlab start --cluster 2 --record` once did
 * not answer /healthz within 30 s). Together they take about 290 s of CPU
 * (175 s on 2 cores, 3 at a time, with nothing beside them). Beside the other
 * browser tests (two workers) and the light files, three of them once ran past
 * the 180 s file timeout with the load average at 28; two at a time in one lane
 * with the light files beside the browser tests and a busy loop, `carlab sim`
 * on relay-faithful lost 1.0 % (a starved consumer's queued poses replaced by
 * newer ones, as relay/slow.test.js requires). `npm test` runs them in a stage
 * of their own.
 */
export const LONG_FILES = Object.freeze([
  'lab/fleet/fleet-agents.test.js',
  'lab/fleet/fleet-interrupt.test.js',
  'lab/fleet/fleet-machines.test.js',
  'lab/commands/sim.test.js',
  'lab/target/cluster.test.js',
  'server/cluster.test.js',
  'lab/commands/sim-baselines-reports.test.js',
  'lab/net/net.test.js',
  'lab/sim/churn.test.js',
  'lab/target/cluster-machines.test.js',
  'lab/target/start-cluster.test.js',
  'lab/bench/bench-url.test.js',
  'lab/report/study.test.js',
]);

/** The test guard every test process loads (scripts/test-guard.js): nothing a test starts outlives it. */
export const GUARD_ARGS = Object.freeze(['--import', fileURLToPath(new URL('./test-guard.js', import.meta.url))]);

/**
 * How many unit files run at once beside the other browser tests: one more
 * than the cores that are free (most files wait on sockets, child processes
 * and timers more than they compute), never fewer than two.
 * CARLAB_TEST_CONCURRENCY overrides it.
 * @param {NodeJS.ProcessEnv} [env]
 * @param {number} [free] free cores (scripts/test-machine.js), default all of them
 */
export function testConcurrency(env = process.env, free = availableParallelism()) {
  const given = Number(env.CARLAB_TEST_CONCURRENCY);
  return Number.isInteger(given) && given >= 1 ? given : Math.max(2, free + 1);
}

/**
 * Every unit test file, relative to the repository, sorted.
 * @param {string} [root]
 * @returns {string[]}
 */
export function listTestFiles(root = ROOT) {
  /** @type {string[]} */
  const files = [];
  /** @param {string} dir */
  const walk = (dir) => {
    for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
      const rel = path.posix.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules' && entry.name !== 'dist' && !entry.name.startsWith('.')) walk(rel);
      } else if (entry.name.endsWith('.test.js')) {
        files.push(rel);
      }
    }
  };
  for (const dir of TEST_DIRS) walk(dir);
  return files.sort();
}

/**
 * How `node --test` runs a unit file here, reporter aside: a test without a timeout of its own
 * fails after 3 min instead of holding the run (one waited forever for a close that timing had
 * made never come). Each file is a test of the runner too, so a whole file gets 3 min: a heavy
 * file is split well below it.
 */
export const NODE_TEST_ARGS = Object.freeze(['--test', '--test-force-exit', '--test-timeout=180000']);

/** @typedef {{ label: string, args: string[] }} UnitRun */

/**
 * The unit files in four groups, each one `node --test` (null: no file in
 * it): `quiet` (QUIET_FILES, beside each other), `timed` (TIMED_FILES, beside
 * each other), `heavy` (LONG_FILES, `concurrency` at a time) and `light` (the
 * rest, `lightConcurrency` at a time).
 * @param {string[]} files
 * @param {number} concurrency
 * @param {number} [lightConcurrency]
 * @returns {{ heavy: UnitRun | null, light: UnitRun | null, timed: UnitRun | null, quiet: UnitRun | null }}
 */
export function testRuns(files, concurrency, lightConcurrency = concurrency) {
  const base = [...NODE_TEST_ARGS, '--test-reporter=spec'];
  /** @param {string[]} list @param {number} atOnce @param {string} why @returns {UnitRun | null} */
  const run = (list, atOnce, why) => (list.length === 0 ? null
    : { label: `${list.length} files, ${atOnce} at a time${why}`, args: [...base, `--test-concurrency=${atOnce}`, ...list] });
  const of = (/** @type {readonly string[]} */ group) => files.filter((f) => group.includes(f));
  const alone = [...QUIET_FILES, ...TIMED_FILES];
  const long = LONG_FILES.filter((f) => files.includes(f));
  const rest = files.filter((f) => !alone.includes(f) && !long.includes(f));
  const quiet = of(QUIET_FILES);
  const timed = of(TIMED_FILES);
  return {
    heavy: run(long, concurrency, ' (browser fleets, sims, clusters)'),
    light: run(rest, lightConcurrency, ''),
    timed: run(timed, timed.length, ' (wall-clock bounds: nothing else beside them)'),
    quiet: run(quiet, quiet.length, ' (they measure timing: nothing else beside them)'),
  };
}

/**
 * Runs one `node --test` and resolves with its exit code.
 * @param {string[]} args
 * @returns {Promise<number>}
 */
function runNode(args) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: 'inherit' });
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

async function main() {
  const { heavy, light, timed, quiet } = testRuns(listTestFiles(), testConcurrency());
  let failed = 0;
  for (const run of [heavy, light, timed, quiet]) {
    if (!run) continue;
    const started = performance.now();
    process.stdout.write(`\n# unit tests: ${run.label}\n`);
    const code = await runNode([...GUARD_ARGS, ...run.args]);
    process.stdout.write(`# ${run.label}: exit ${code} after ${((performance.now() - started) / 1000).toFixed(0)} s\n`);
    if (code !== 0 && failed === 0) failed = code;
  }
  process.exitCode = failed;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
