#!/usr/bin/env node
// `npm test`: the type check, the unit tests and the browser tests. First the
// web build with the type check and the two light unit files that measure
// timing beside it; then, each with nothing else on the machine, the tests that
// hold timing to account: the real-time and WebKit browser tests (AR tracking,
// 250 ms delivery), the unit files with wall-clock bounds, and the heavy unit
// files (fleets, sims, clusters); last, side by side, the other unit files and
// the other browser tests, as many at once as the cores that were free when the
// run began allow (scripts/test-machine.js). Every
// process a step starts carries the step's owner (scripts/owned.js): what
// outlives its step is ended and fails the run, and the run ends with a look
// for anything it left behind.
import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

import { OWNER_VAR, describeOwned, endOwned, ownedBy } from './owned.js';
import { ensureSystemDeps } from './system-deps.js';
import { browserVersions, busyCores, cpuJiffies, freeCores } from './test-machine.js';
import { GUARD_ARGS, listTestFiles, testConcurrency, testRuns } from './test-unit.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** Playwright's runner with the project's configuration, as every browser stage starts it. */
export const PLAYWRIGHT = Object.freeze(['node_modules/@playwright/test/cli.js', 'test', '-c', 'e2e/playwright.config.js']);

/**
 * The Playwright projects that run with nothing beside them: WebKitGTK under Xvfb (beside other
 * work, Chromium->WebKit p95 once reached 1439 ms against a bound of 1000 ms), one test at a time
 * in the real-time stage (one Playwright run and one web server for both, not two).
 */
export const SOLO_PROJECTS = Object.freeze(['webkit']);
/**
 * The real-time projects (e2e/playwright.config.js), one test at a time with nothing beside them:
 * beside the idle-class lane of unit files that an earlier plan put there, the AR relay test's
 * one-way p95 reached 279-424 ms against 250 (fresh machine, chromium 156.0.8078.108); alone, 5-7 ms.
 */
export const REALTIME_PROJECTS = Object.freeze(['chromium-realtime', 'firefox-realtime']);
/** The Playwright projects that run beside the unit tests. */
export const SHARED_PROJECTS = Object.freeze(['firefox', 'chromium-long', 'chromium']);

/**
 * @typedef {object} Step
 * @property {string} name prefixes the step's output lines
 * @property {string[]} argv run with this Node (argv[0] is a script)
 */

/**
 * @typedef {object} TestPlan
 * @property {Step[][]} stages one after another; a stage's steps side by side, nothing else beside them
 * @property {number} concurrency heavy unit files at once (the light ones beside the browser tests: one fewer)
 * @property {number} workers browser test files at once in the shared stage
 */

/**
 * How many browser test files run at once beside the unit files: the free cores, at least 2 and at
 * most 3. Two workers with nothing else kept 1.83 of 2 cores busy (their browsers wait on
 * networks, ICE and timers as much as they compute); one, beside a busy loop, would leave the
 * machine half idle and double the stage. CARLAB_E2E_WORKERS overrides it.
 * @param {NodeJS.ProcessEnv} env
 * @param {number} free
 */
export function e2eWorkers(env, free) {
  const given = Number(env.CARLAB_E2E_WORKERS);
  return Number.isInteger(given) && given >= 1 ? given : Math.min(3, Math.max(2, free));
}

/**
 * The stages of `npm test`.
 * @param {{ files: string[], free: number, env?: NodeJS.ProcessEnv }} o free: cores not busy when the run began
 * @returns {TestPlan}
 */
export function testPlan({ files, free, env = process.env }) {
  const concurrency = testConcurrency(env, free);
  const workers = e2eWorkers(env, free);
  // Beside the browser tests the light files need no more than one at a time per free core: they
  // finished in 232 of the stage's 396 s three at a time, and fewer load the browsers less. The
  // heavy files keep a stage of their own (LONG_FILES says why).
  const { heavy, light, timed, quiet } = testRuns(files, concurrency, Math.max(1, concurrency - 1));
  const projects = (/** @type {readonly string[]} */ names) => names.flatMap((n) => ['--project', n]);
  const unit = (/** @type {string} */ name, /** @type {import('./test-unit.js').UnitRun | null} */ run) => (run ? [{ name, argv: run.args }] : []);
  // --no-deps: each stage runs only its own projects; the ones they depend on ran in a stage before.
  const stages = [
    // One build before anything serves it (a build empties the folder another process serves);
    // the type check needs none and takes the core the build leaves idle, and the quiet files
    // (a relay each, nothing served, 0.5 cores) held their bounds beside both (QUIET_FILES).
    [{ name: 'build', argv: ['scripts/build-web.js'] }, { name: 'typecheck', argv: ['node_modules/typescript/bin/tsc', '--noEmit', '-p', 'tsconfig.json'] },
      ...unit('unit quiet', quiet)],
    // --workers 1: without the dependencies between them, Playwright would run the projects side by
    // side; --no-deps: a failure in one does not skip the others.
    [{ name: 'e2e real-time', argv: [...PLAYWRIGHT, ...projects([...SOLO_PROJECTS, ...REALTIME_PROJECTS]), '--no-deps', '--workers', '1'] }],
    unit('unit timed', timed),
    unit('unit heavy', heavy),
    [...unit('unit', light), { name: 'e2e', argv: [...PLAYWRIGHT, ...projects(SHARED_PROJECTS), '--no-deps', '--workers', String(workers)] }],
  ].filter((stage) => stage.length > 0);
  return { stages, concurrency, workers };
}

/**
 * @typedef {{ name: string, seconds: number, code: number }} StepResult
 */

/** This run's owner (scripts/owned.js): every process a step starts carries it, or a path under it. */
const RUN_OWNER = process.env[OWNER_VAR] ? `${process.env[OWNER_VAR]}/${process.pid}` : `carlab-test-${process.pid}`;
/** Steps still running, by process group (each step leads one). @type {Set<number>} */
const runningSteps = new Set();

/**
 * The owner of one step's processes.
 * @param {Step} step
 */
export function stepOwner(step) {
  return `${RUN_OWNER}/${step.name.replace(/[^a-z0-9-]+/gi, '-')}`;
}

/**
 * Runs one step, each output line prefixed with its name. The step leads a
 * process group of its own, and every process it starts carries its owner:
 * what is still running when the step has exited is ended and fails it.
 * @param {Step} step
 * @returns {Promise<StepResult>}
 */
function runStep(step) {
  const started = performance.now();
  const owner = stepOwner(step);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...GUARD_ARGS, ...step.argv], {
      cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], detached: true, env: { ...process.env, [OWNER_VAR]: owner },
    });
    if (child.pid !== undefined) runningSteps.add(child.pid);
    for (const [from, to] of /** @type {const} */ ([[child.stdout, process.stdout], [child.stderr, process.stderr]])) {
      createInterface({ input: from }).on('line', (line) => to.write(`[${step.name}] ${line}\n`));
    }
    child.on('exit', (code, signal) => {
      if (child.pid !== undefined) runningSteps.delete(child.pid);
      const leftovers = endOwned(owner);
      if (leftovers.length > 0) {
        process.stdout.write(`[${step.name}] ${leftovers.length} process(es) outlived the step; ended them:\n${describeOwned(leftovers)}\n`);
      }
      const seconds = (performance.now() - started) / 1000;
      const exitCode = code ?? (signal ? 1 : 0);
      const result = { name: step.name, seconds, code: exitCode !== 0 ? exitCode : Number(leftovers.length > 0) };
      process.stdout.write(`# ${step.name}: ${result.code === 0 ? 'passed' : `FAILED (exit ${result.code})`} after ${seconds.toFixed(0)} s\n`);
      resolve(result);
    });
  });
}

/**
 * Ends every running step's process group and whatever this run still owns:
 * the runner's exit (a signal, a crash, the end) leaves nothing behind.
 */
export function endRun() {
  for (const pgid of runningSteps) {
    try { process.kill(-pgid, 'SIGTERM'); } catch { /* gone */ }
  }
  return endOwned(RUN_OWNER, { graceMs: 1000 });
}

/**
 * Runs a plan's stages one after another, a stage's steps side by side.
 * @param {TestPlan} plan
 * @returns {Promise<StepResult[]>}
 */
export async function runPlan(plan) {
  /** @type {StepResult[]} */
  const done = [];
  for (const stage of plan.stages) {
    process.stdout.write(`# stage: ${stage.map((s) => s.name).join(' + ')}\n`);
    const cpuBefore = cpuJiffies();
    const startedAt = performance.now();
    done.push(...await Promise.all(stage.map((s) => runStep(s))));
    const cpuAfter = cpuJiffies();
    const seconds = (performance.now() - startedAt) / 1000;
    const busy = ((cpuAfter.busy - cpuBefore.busy) / (cpuAfter.total - cpuBefore.total || 1)) * availableParallelism();
    // what the stage asked of the machine: CPU time (all processes, the suite's and any other) over its wall time
    process.stdout.write(`# stage done: ${stage.map((s) => s.name).join(' + ')} in ${seconds.toFixed(0)} s, ${(busy * seconds).toFixed(0)} s of CPU (${busy.toFixed(2)} cores busy on average)\n`);
  }
  return done;
}

const HELP = `usage: npm test  (node scripts/test.js)

First checks the system programs the tests need (scripts/system-deps.js): as
root it installs the missing ones with apt-get, otherwise it stops and names
the command that does. Then runs the web build with the type check and the soak and fairness unit files
beside it; then, each stage with nothing else beside it, the real-time and
WebKit browser tests (one at a time), the unit files with wall-clock bounds
and the heavy unit files; last, side by side, the other unit files and the
other browser tests.
How many of those run at once follows the machine: the cores less those
already busy when the run begins (the least of four 0.5 s samples). Every step runs even when
one before failed; each output line starts with its step's name, and the last
line gives each step's time. Whatever a step started that outlives it is
ended, named and fails the run; so does anything the run left behind at its
end. Ctrl-C ends every step and everything they started.

environment:
  CARLAB_TEST_CONCURRENCY  heavy unit test files at once (default: free cores + 1, at least 2); the light
                           ones beside the browser tests run one fewer at once
  CARLAB_E2E_WORKERS       browser test files at once in the last stage (default: free cores, 2 to 3)
`;

/**
 * Ends the run on Ctrl-C or SIGTERM: every step and everything this run started.
 * @param {NodeJS.Signals} signal
 */
function onSignal(signal) {
  const left = endRun();
  process.stdout.write(`\n# npm test: ${signal}; ended every step${left.length ? ` and ${left.length} process(es) they started` : ''}\n`);
  process.exit(signal === 'SIGINT' ? 130 : 143);
}

/**
 * The run's last look: anything it started that is still running (none, when every step ended
 * its own) is named, ended and fails the run.
 */
function checkLeftovers() {
  const left = endRun();
  if (left.length === 0) {
    process.stdout.write('# npm test: no process outlived the run\n');
    return true;
  }
  process.stdout.write(`# npm test: ${left.length} process(es) outlived the run; ended them:\n${describeOwned(left)}\n`);
  return false;
}

async function main() {
  const args = process.argv.slice(2);
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(HELP);
    return;
  }
  if (args.length > 0) {
    process.stderr.write(`scripts/test.js: unknown argument ${JSON.stringify(args[0])}\n\n${HELP}`);
    process.exitCode = 2;
    return;
  }
  // the system programs first: installed when this is root, else the command that installs them
  const deps = ensureSystemDeps();
  if (deps !== 0) {
    process.exitCode = deps;
    return;
  }
  for (const signal of /** @type {const} */ (['SIGINT', 'SIGTERM', 'SIGHUP'])) process.once(signal, () => onSignal(signal));
  const started = performance.now();
  const cores = availableParallelism();
  const busy = await busyCores();
  const plan = testPlan({ files: listTestFiles(), free: freeCores(cores, busy) });
  const versions = Object.entries(browserVersions()).map(([k, v]) => `${k} ${v}`).join(', ');
  process.stdout.write(`# npm test: node ${process.versions.node}; ${versions}\n`);
  process.stdout.write(`# npm test: ${cores} cores, ${busy.toFixed(1)} busy before the run (least of four 0.5 s samples): ${plan.concurrency} heavy unit files at once, then ${Math.max(1, plan.concurrency - 1)} light ones beside ${plan.workers} browser test files\n`);
  const done = await runPlan(plan);
  const clean = checkLeftovers();
  const failed = done.filter((d) => d.code !== 0);
  process.stdout.write(`\n# npm test: ${done.map((d) => `${d.name} ${d.seconds.toFixed(0)} s`).join(', ')}; `
    + `${((performance.now() - started) / 1000).toFixed(0)} s in all, ${failed.length === 0 && clean ? 'all passed' : `FAILED: ${[...failed.map((d) => d.name), ...(clean ? [] : ['leftovers'])].join(', ')}`}\n`);
  process.exitCode = failed.length === 0 && clean ? 0 : 1;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
