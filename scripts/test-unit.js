#!/usr/bin/env node
// `npm run test:unit`: every *.test.js under the source folders with Node's
// test runner, most files side by side (--test-concurrency), then the two that
// measure timing with nothing else beside them (QUIET_FILES says why).
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
 * Files that hold timing to account and need the machine nearly to themselves:
 * the soak keeps RT steady over 15 s (beside the fuzz run on 2 cores its last
 * window's RT went from 0.8 to 106 ms; beside the type check, 46 ms); fairness
 * counts every member's updates in every second (beside the others one second
 * once carried 1 update of a stream). Both are light (4.6 and 3.0 s of CPU in
 * about 20 s), so they run beside each other.
 */
export const QUIET_FILES = Object.freeze([
  'lab/soak.test.js',
  'relay/fairness.test.js',
]);

/**
 * Files whose bounds are wall-clock promises that hold on a machine shared
 * with a few other tests but not on a saturated one: `npm test` runs them at
 * normal priority, beside nothing but the idle-class lane. The fuzz run's
 * well-behaved members must never wait 1 s for an update (1008 ms once beside
 * 2 browser workers and 2 unit files on 2 cores); HAProxy's failover brings
 * clients back within 2 s at p99 (3.2 s there); a restarted relay's 12 clients
 * must all be back within the 8.5 s left of their run, less the restart (11
 * were, beside the shared browser phase, with the product's 10 s backoff
 * ceiling; the test now caps it at 1 s, lab/restart.test.js says why). The namespace tests that put
 * this machine on a bridge run side by side: each has its own /16 (10.202,
 * 10.203, 10.204).
 */
export const TIMED_FILES = Object.freeze([
  'lab/commands/fuzz.test.js',
  'lab/haproxy.test.js',
  'lab/restart.test.js',
]);

/**
 * Files whose processes take one another for dead when starved: relays in a
 * cluster drop a node that misses its 1 s heartbeats for 3.5 s (in the idle
 * class beside the real-time browser tests, healing a cut to NATS did not
 * rejoin within 30 s). They share a busy machine
 * fine (they passed beside 3 browser workers and 3 unit files on 2 cores), so
 * `npm test` runs them at normal priority beside the other browser tests.
 * The churn joins them for the same reason: no stable member's sends may stall
 * past its 2 s ACK timeout + 500 ms, and starved in the idle-class lane they
 * did (2898 ms); among the files with wall-clock bounds it took the fuzz run's
 * CPU (its report flood fell short).
 * So do the files whose process, starved for a second or more, fires its
 * deadlines before it reads the replies already there (Node runs expired
 * timers first): the signaling cluster's heartbeats (3.5 s), the relay's ACK
 * sweeps (200 ms, 3 s), and the servers' close, drain and header deadlines
 * (bounds of 2-3.5 s). relay/slow.test.js is not one of them: its group's RT
 * p95 under 250 ms (plus two of its process's stalls) held in the pool, and
 * here, beside the shared browser phase, it read 616 ms.
 */
export const LIVENESS_FILES = Object.freeze([
  'lab/churn.test.js',
  'lab/cluster-machines.test.js',
  'lab/cluster.test.js',
  'lab/start-cluster.test.js',
  'relay/cluster.test.js',
  'server/cluster.test.js',
  'signaling/cluster.test.js',
  'relay/udp.test.js',
  'relay/protocol-doc.test.js',
  'server/ops.test.js',
  'server/server.test.js',
  'server/server-parts.test.js',
]);

/**
 * Files that flood loopback or launch browsers. Their kernel work (loopback
 * packets are handled in softirq, whatever the sender's scheduling class) and
 * their browsers take CPU from the real-time browser tests even from the idle
 * class: beside lab/commands/sim.test.js the AR relay test's one-way mean went
 * from 5-7 ms to 12-44 ms, and in three CI runs whose pool ran them then its
 * p95 reached 270-326 ms against 250. The light files fill the real-time
 * stage's idle CPU; these start once the real-time stage is over, in this
 * order: the fleets and single browsers (little traffic) beside the quiet and
 * timed files, the floods after.
 */
export const LOADING_FILES = Object.freeze([
  'lab/fleet-agents.test.js',
  'lab/fleet-interrupt.test.js',
  'lab/fleet-machines.test.js',
  'lab/bench-url.test.js',
  'lab/report-html.test.js',
  'lab/firefox-profile.test.js',
  'lab/commands/sim.test.js',
  'lab/commands/sim-baselines-reports.test.js',
  'lab/net/net.test.js',
]);

/**
 * How many files run at once: one more than the cores, since most files wait
 * on sockets, child processes and timers more than they compute (measured on 2
 * cores: 3 at once took the unit tests from 491 s to 169 s + the serial ones).
 * CARLAB_TEST_CONCURRENCY overrides it.
 * @param {NodeJS.ProcessEnv} env
 */
export function testConcurrency(env = process.env) {
  const given = Number(env.CARLAB_TEST_CONCURRENCY);
  return Number.isInteger(given) && given >= 1 ? given : availableParallelism() + 1;
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

/** @typedef {{ label: string, args: string[] }} UnitRun */

/**
 * The unit files in five groups, each one `node --test` (null: no file in it):
 * `quiet` (QUIET_FILES, beside each other), `timed` (TIMED_FILES), `liveness`
 * (LIVENESS_FILES), `loading` (LOADING_FILES) and `pool` (the rest),
 * `concurrency` at a time.
 * @param {string[]} files
 * @param {number} concurrency
 * @returns {{ pool: UnitRun | null, timed: UnitRun | null, liveness: UnitRun | null, loading: UnitRun | null, quiet: UnitRun | null }}
 */
export function testRuns(files, concurrency) {
  // A test without a timeout of its own fails after 3 min instead of holding the run (one waited
  // forever for a close that timing had made never come). Each file is a test of the runner too, so
  // a whole file gets 3 min: a heavy file is split well below it (the fleet file, 137-159 s beside
  // the others, once passed 180 s in CI).
  const base = ['--test', '--test-force-exit', '--test-timeout=180000', '--test-reporter=spec'];
  /** @param {string[]} list @param {number} atOnce @param {string} why @returns {UnitRun | null} */
  const run = (list, atOnce, why) => (list.length === 0 ? null
    : { label: `${list.length} files, ${atOnce} at a time${why}`, args: [...base, `--test-concurrency=${atOnce}`, ...list] });
  const of = (/** @type {readonly string[]} */ group) => files.filter((f) => group.includes(f));
  const quiet = of(QUIET_FILES);
  const grouped = [...QUIET_FILES, ...TIMED_FILES, ...LIVENESS_FILES, ...LOADING_FILES];
  return {
    pool: run(files.filter((f) => !grouped.includes(f)), concurrency, ''),
    timed: run(of(TIMED_FILES), concurrency, ' (wall-clock bounds)'),
    liveness: run(of(LIVENESS_FILES), concurrency, ' (heartbeats and reconnects)'),
    // in the order given: the fleets first, the loopback floods once the quiet files are done
    loading: run(LOADING_FILES.filter((f) => files.includes(f)), concurrency, ' (loopback floods and browsers)'),
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
  const { pool, timed, liveness, loading, quiet } = testRuns(listTestFiles(), testConcurrency());
  // Alone, the timed, liveness and loading files join the pool: its neighbours load the machine but never starve it.
  const extra = [timed, liveness, loading].flatMap((r) => (r ? r.args.filter((a) => a.endsWith('.test.js')) : []));
  const together = pool ? { label: `${pool.label} + ${extra.length} timed, liveness and loading files`, args: [...pool.args, ...extra] } : null;
  let failed = 0;
  for (const run of [together, quiet]) {
    if (!run) continue;
    const started = performance.now();
    process.stdout.write(`\n# unit tests: ${run.label}\n`);
    const code = await runNode(run.args);
    process.stdout.write(`# ${run.label}: exit ${code} after ${((performance.now() - started) / 1000).toFixed(0)} s\n`);
    if (code !== 0 && failed === 0) failed = code;
  }
  process.exitCode = failed;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
