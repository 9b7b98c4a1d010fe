#!/usr/bin/env node
// `npm test`: the type check, the unit tests and the browser tests, packed
// onto the machine so that the tests that hold timing to account get the CPU
// they need and the rest use what is left. After the web build (the type
// check, which needs none, already beside it), two lanes:
//  - the front lane, at normal priority, one stage after another: the
//    real-time browser tests; the two unit files that measure timing; the unit
//    files with wall-clock bounds; the other browser tests;
//  - the back lane: the type check and the other unit files, side by side, in
//    Linux's idle scheduling class (SCHED_IDLE) until the front reaches the
//    other browser tests, then at normal priority. An idle-class process runs
//    only on a core nothing else wants and yields it at once, so the back lane
//    fills the front's idle time (the real-time stage leaves 40 % of 2 cores
//    idle) without delaying it; once the front is throughput work too, both
//    share the machine as equals, and the unit files whose processes watch one
//    another's heartbeats (never to be starved) join them. The files that
//    flood loopback or launch browsers join the back lane only once the
//    real-time stage is over (their kernel work escapes the idle class and
//    slowed the real-time tests).
// Last, once both lanes are done, WebKit's tests with nothing beside them.
import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

import { processTree } from '../lab/proctree.js';
import { listTestFiles, testConcurrency, testRuns } from './test-unit.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PLAYWRIGHT = ['node_modules/@playwright/test/cli.js', 'test', '-c', 'e2e/playwright.config.js'];

/**
 * The Playwright project that runs with nothing beside it, not even the idle-class lane: WebKitGTK
 * under Xvfb is the real-time test most disturbed by it (beside the lane, Chromium->WebKit p95 once
 * reached 1439 ms against a bound of 1000 ms, and one frame once read a position 9559 off). It runs
 * last: run first, it kept the back lane from filling its idle CPU and npm test took 20 s longer.
 */
export const SOLO_PROJECTS = Object.freeze(['webkit']);
/** The other Playwright projects of the real-time phase (e2e/playwright.config.js). */
export const REALTIME_PROJECTS = Object.freeze(['chromium-realtime', 'firefox-realtime']);
/** The Playwright projects that run beside the unit tests. */
export const SHARED_PROJECTS = Object.freeze(['firefox', 'chromium-long', 'chromium']);

/**
 * @typedef {object} Step
 * @property {string} name prefixes the step's output lines (steps always share the machine)
 * @property {string[]} argv run with this Node (argv[0] is a script)
 */

/**
 * @typedef {object} TestPlan
 * @property {Step[]} setup run at once, before anything else but backFromStart
 * @property {Step[]} backFromStart need no build: at once with the setup, in the idle class, then as the back lane
 * @property {Step[][]} front stages after the setup, one after another; a stage's steps at once
 * @property {Step[]} back after the setup, at once, in the idle class beside the front
 * @property {Step[][]} after stages once the front and the back lane are done, one after another
 * @property {Step[]} backAfterRealtime in the back lane (idle class, then as it), from the front's second stage on
 * @property {Step[]} backLate at normal priority, beside the front from its stage backEqualFrom on
 * @property {number} backEqualFrom the front stage from which the back lane runs at normal priority
 */

/**
 * The stages of `npm test`.
 * @param {{ files: string[], concurrency: number }} o
 * @returns {TestPlan}
 */
export function testPlan({ files, concurrency }) {
  const { pool, timed, liveness, loading, quiet } = testRuns(files, concurrency);
  const projects = (/** @type {readonly string[]} */ names) => names.flatMap((n) => ['--project', n]);
  const unit = (/** @type {string} */ name, /** @type {import('./test-unit.js').UnitRun | null} */ run) => (run ? [{ name, argv: run.args }] : []);
  // --no-deps: each stage runs only its own projects; the ones they depend on ran in a stage before.
  const front = [
    // --workers 1: without the dependency between them, Playwright would run the two projects side by side.
    [{ name: 'e2e real-time', argv: [...PLAYWRIGHT, ...projects(REALTIME_PROJECTS), '--no-deps', '--workers', '1'] }],
    unit('unit quiet', quiet),
    unit('unit timed', timed),
    [{ name: 'e2e', argv: [...PLAYWRIGHT, ...projects(SHARED_PROJECTS), '--no-deps'] }],
  ].filter((stage) => stage.length > 0);
  return {
    // One build before anything serves it: the fleet tests and the e2e server would each build a
    // stale web/dist otherwise, and a build empties the folder another process is serving.
    setup: [{ name: 'build', argv: ['scripts/build-web.js'] }],
    // The type check in the idle lane: 60-76 s there instead of 10 s, but off the front's path. It
    // needs no build, so it starts with it and takes the core the build leaves idle.
    backFromStart: [{ name: 'typecheck', argv: ['node_modules/typescript/bin/tsc', '--noEmit', '-p', 'tsconfig.json'] }],
    front,
    back: unit('unit', pool),
    after: [[{ name: 'e2e webkit', argv: [...PLAYWRIGHT, ...projects(SOLO_PROJECTS), '--no-deps'] }]],
    // Once the real-time stage is over: the light pool is done by then, and these fill the idle
    // CPU the quiet and timed stages leave (10-17 s of 2 cores idle when they waited for stage 4).
    backAfterRealtime: unit('unit loading', loading),
    backLate: unit('unit liveness', liveness),
    backEqualFrom: front.length - 1,
  };
}

/**
 * @typedef {{ name: string, seconds: number, code: number }} StepResult
 */

/** Whether this machine can start a process in the idle scheduling class (util-linux's chrt). */
function canRunIdle() {
  return process.platform === 'linux' && spawnSync('chrt', ['--idle', '0', 'true']).status === 0;
}

/**
 * Runs one step, each output line prefixed with its name.
 * @param {Step} step
 * @param {{ idle?: boolean, started?: (pid: number) => void }} [o] idle: in the idle scheduling class
 * @returns {Promise<StepResult>}
 */
function runStep(step, o = {}) {
  const started = performance.now();
  const [command, args] = o.idle ? ['chrt', ['--idle', '0', process.execPath, ...step.argv]] : [process.execPath, step.argv];
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    if (child.pid !== undefined) o.started?.(child.pid);
    for (const [from, to] of /** @type {const} */ ([[child.stdout, process.stdout], [child.stderr, process.stderr]])) {
      createInterface({ input: from }).on('line', (line) => to.write(`[${step.name}] ${line}\n`));
    }
    child.on('exit', (code, signal) => {
      const seconds = (performance.now() - started) / 1000;
      const result = { name: step.name, seconds, code: code ?? (signal ? 1 : 0) };
      process.stdout.write(`# ${step.name}: ${result.code === 0 ? 'passed' : `FAILED (exit ${result.code})`} after ${seconds.toFixed(0)} s\n`);
      resolve(result);
    });
  });
}

/**
 * Moves processes and all their threads to the normal scheduling class; children they start
 * later inherit it. Twice, for a child forked while the first pass ran.
 * @param {number[]} roots
 */
function toNormalPriority(roots) {
  for (let pass = 0; pass < 2; pass++) {
    for (const pid of processTree(roots)) spawnSync('chrt', ['--other', '--all-tasks', '--pid', '0', String(pid)], { stdio: 'ignore' });
  }
}

/**
 * The front stage at which backAfterRealtime starts: the one after the real-time stage (the last, if none follows).
 * @param {TestPlan} plan
 */
function afterRealtimeStage(plan) {
  return Math.min(1, plan.front.length - 1);
}

/**
 * What runs in the back lane beside front stage i, and at which priority.
 * @param {TestPlan} plan
 * @param {number} i
 * @param {boolean} idle whether the idle class is available
 */
function backDescription(plan, i, idle) {
  const steps = [...plan.backFromStart, ...plan.back, ...(i >= afterRealtimeStage(plan) ? plan.backAfterRealtime : []),
    ...(i >= plan.backEqualFrom ? plan.backLate : [])]
    .map((s) => s.name).join(' + ');
  return `${steps} (${idle && i < plan.backEqualFrom ? 'idle class' : 'normal priority'})`;
}

/**
 * Runs a plan: the setup, then the front stages beside the back lane, then the stages after both.
 * @param {TestPlan} plan
 * @returns {Promise<StepResult[]>}
 */
export async function runPlan(plan) {
  const idle = canRunIdle();
  /** @type {number[]} */
  const backPids = [];
  const inBack = (/** @type {Step} */ s) => runStep(s, { idle, started: (pid) => backPids.push(pid) });
  const early = Promise.all(plan.backFromStart.map(inBack));
  const done = await Promise.all(plan.setup.map((s) => runStep(s)));
  const back = Promise.all([early, ...plan.back.map(inBack)]).then(([first, ...rest]) => [...first, ...rest]);
  /** @type {Promise<StepResult[]>} */
  let late = Promise.resolve([]);
  /** @type {Promise<StepResult[]>} */
  let mid = Promise.resolve([]);
  const midFrom = afterRealtimeStage(plan);
  for (const [i, stage] of plan.front.entries()) {
    if (i === midFrom) {
      mid = Promise.all(plan.backAfterRealtime.map((s) => runStep(s, { idle: idle && i < plan.backEqualFrom, started: (pid) => backPids.push(pid) })));
    }
    if (i === plan.backEqualFrom) {
      if (idle) toNormalPriority(backPids);
      late = Promise.all(plan.backLate.map((s) => runStep(s)));
    }
    process.stdout.write(`# front: ${stage.map((s) => s.name).join(' + ')}; back: ${backDescription(plan, i, idle)}\n`);
    done.push(...await Promise.all(stage.map((s) => runStep(s))));
  }
  done.push(...await back, ...await mid, ...await late);
  for (const stage of plan.after) {
    process.stdout.write(`# alone: ${stage.map((s) => s.name).join(' + ')}\n`);
    done.push(...await Promise.all(stage.map((s) => runStep(s))));
  }
  return done;
}

const HELP = `usage: npm test  (node scripts/test.js)

Builds the web app, then runs two lanes side by side. The front lane, at normal
priority, one stage after another: the real-time browser tests; the two unit
files that measure timing; the unit files with wall-clock bounds; the other
browser tests. The back lane: the type check (from the start, beside the
build) and the other unit files, in the
idle scheduling class (chrt --idle) until the front reaches the other browser
tests, then at normal priority, joined by the unit files whose processes watch
one another's heartbeats; those that flood loopback or launch browsers join the
back lane once the real-time tests are done. Last, alone: WebKit's browser tests. Every step runs
even when one before failed;
the exit code is non-zero when any failed. Each output line starts with its
step's name.

environment:
  CARLAB_TEST_CONCURRENCY  unit test files at once (default: cores + 1)
  CARLAB_E2E_WORKERS       browser specs at once in the shared stage (default 3)
`;

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
  const started = performance.now();
  const done = await runPlan(testPlan({ files: listTestFiles(), concurrency: testConcurrency() }));
  const failed = done.filter((d) => d.code !== 0);
  process.stdout.write(`\n# npm test: ${done.map((d) => `${d.name} ${d.seconds.toFixed(0)} s`).join(', ')}; `
    + `${((performance.now() - started) / 1000).toFixed(0)} s in all, ${failed.length === 0 ? 'all passed' : `FAILED: ${failed.map((d) => d.name).join(', ')}`}\n`);
  process.exitCode = failed.length === 0 ? 0 : 1;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
