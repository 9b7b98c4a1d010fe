#!/usr/bin/env node
// `npm test`: the type check, the unit tests and the browser tests, packed
// onto the machine so that the tests that hold timing to account get the CPU
// they need and the rest use what is left. Two lanes:
//  - the front lane, at normal priority, one stage after another: the web build;
//    the real-time browser tests; the unit files that measure timing beside the
//    type check; the other browser tests;
//  - the back lane, at the lowest priority (nice 19), from the end of the build:
//    the other unit files, side by side. On Linux a nice-19 process gets about
//    1.5 % of a core against a busy normal one, so it fills the front lane's idle
//    time (the real-time stage leaves 40 % of 2 cores idle) without delaying it.
import { spawn } from 'node:child_process';
import { setPriority } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

import { listTestFiles, testConcurrency, testRuns } from './test-unit.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PLAYWRIGHT = ['node_modules/@playwright/test/cli.js', 'test', '-c', 'e2e/playwright.config.js'];

/** The Playwright projects of the real-time phase (e2e/playwright.config.js). */
export const REALTIME_PROJECTS = Object.freeze(['chromium-realtime', 'firefox-realtime', 'webkit']);
/** The Playwright projects that run beside the unit tests. */
export const SHARED_PROJECTS = Object.freeze(['chromium', 'firefox']);

/**
 * @typedef {object} Step
 * @property {string} name prefixes the step's output lines (steps always share the machine)
 * @property {string[]} argv run with this Node (argv[0] is a script)
 */

/**
 * @typedef {object} TestPlan
 * @property {Step[]} setup run at once, before anything else
 * @property {Step[][]} front stages after the setup, one after another; a stage's steps at once
 * @property {Step[]} back after the setup, one after another at the lowest priority, beside the front
 */

/** The back lane's niceness: the lowest priority. */
export const BACK_NICE = 19;

/**
 * The stages of `npm test`.
 * @param {{ files: string[], concurrency: number }} o
 * @returns {TestPlan}
 */
export function testPlan({ files, concurrency }) {
  const [pool, quiet] = testRuns(files, concurrency);
  const projects = (/** @type {readonly string[]} */ names) => names.flatMap((n) => ['--project', n]);
  const typecheck = { name: 'typecheck', argv: ['node_modules/typescript/bin/tsc', '--noEmit', '-p', 'tsconfig.json'] };
  return {
    // One build before anything serves it: the fleet tests and the e2e server would each build a
    // stale web/dist otherwise, and a build empties the folder another process is serving.
    setup: [{ name: 'build', argv: ['scripts/build-web.js'] }],
    front: [
      [{ name: 'e2e real-time', argv: [...PLAYWRIGHT, ...projects(REALTIME_PROJECTS)] }],
      quiet ? [{ name: 'unit timing', argv: quiet.args }, typecheck] : [typecheck],
      // --no-deps: the real-time projects they depend on ran in their own stage above.
      [{ name: 'e2e', argv: [...PLAYWRIGHT, ...projects(SHARED_PROJECTS), '--no-deps'] }],
    ],
    back: [{ name: 'unit', argv: pool.args }],
  };
}

/**
 * @typedef {{ name: string, seconds: number, code: number }} StepResult
 */

/**
 * Runs one step, each output line prefixed with its name.
 * @param {Step} step
 * @param {number} nice the child's niceness (inherited by everything it starts)
 * @returns {Promise<StepResult>}
 */
function runStep(step, nice = 0) {
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, step.argv, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    // Before the child has loaded enough to start anything of its own (tens of ms).
    if (nice !== 0 && child.pid !== undefined) {
      try { setPriority(child.pid, nice); } catch { /* not permitted here: runs at normal priority */ }
    }
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
 * Runs steps one after another.
 * @param {Step[]} steps @param {number} nice
 * @returns {Promise<StepResult[]>}
 */
async function inSequence(steps, nice) {
  /** @type {StepResult[]} */
  const done = [];
  for (const step of steps) done.push(await runStep(step, nice));
  return done;
}

/**
 * Runs a plan: the setup, then the front stages beside the back lane.
 * @param {TestPlan} plan
 * @returns {Promise<StepResult[]>}
 */
export async function runPlan(plan) {
  const done = await Promise.all(plan.setup.map((s) => runStep(s)));
  const back = inSequence(plan.back, BACK_NICE);
  for (const stage of plan.front) {
    process.stdout.write(`# front: ${stage.map((s) => s.name).join(' + ')}; back: ${plan.back.map((s) => s.name).join(', ')}\n`);
    done.push(...await Promise.all(stage.map((s) => runStep(s))));
  }
  done.push(...await back);
  return done;
}

const HELP = `usage: npm test  (node scripts/test.js)

Builds the web app, then runs in one lane, one stage after another: the
real-time browser tests, the unit files that measure timing beside the type
check, the other browser tests; and beside them, at the lowest priority (nice
19), the other unit files. Every step runs even when one before failed; the
exit code is non-zero when any step failed. Each output line starts with its
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
