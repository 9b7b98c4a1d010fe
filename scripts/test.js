#!/usr/bin/env node
// `npm test`: the type check, the unit tests and the browser tests, in stages
// that keep the machine quiet for the tests that hold timing to account and
// busy otherwise. On 2 cores the unit files and the browser specs that are not
// real-time mostly wait on sockets, child processes, ICE and timers (run one
// after the other they left the machine 55 % idle), so they run side by side;
// the real-time AR specs and the two unit files that measure RT or per-second
// rates run with nothing beside them.
import { spawn } from 'node:child_process';
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
 * @property {string} name short, prefixes the step's output lines when it shares its stage
 * @property {string[]} argv run with this Node (argv[0] is a script)
 */

/**
 * The stages of `npm test`, in order; the steps of one stage run at once.
 * @param {{ files: string[], concurrency: number }} o
 * @returns {Step[][]}
 */
export function testPlan({ files, concurrency }) {
  const [pool, quiet] = testRuns(files, concurrency);
  const projects = (/** @type {readonly string[]} */ names) => names.flatMap((n) => ['--project', n]);
  return [
    [
      { name: 'typecheck', argv: ['node_modules/typescript/bin/tsc', '--noEmit', '-p', 'tsconfig.json'] },
      // One build before anything serves it: the fleet tests and the e2e server would each build a
      // stale web/dist otherwise, and a build empties the folder another process is serving.
      { name: 'build', argv: ['scripts/build-web.js'] },
    ],
    [{ name: 'e2e real-time', argv: [...PLAYWRIGHT, ...projects(REALTIME_PROJECTS)] }],
    ...(quiet ? [[{ name: 'unit quiet', argv: quiet.args }]] : []),
    [
      { name: 'unit', argv: pool.args },
      // --no-deps: the real-time projects they depend on ran in their own stage above.
      { name: 'e2e', argv: [...PLAYWRIGHT, ...projects(SHARED_PROJECTS), '--no-deps'] },
    ],
  ];
}

/**
 * Runs one step; when it shares its stage, each output line is prefixed with its name.
 * @param {Step} step
 * @param {boolean} shared
 * @returns {Promise<number>} the exit code
 */
function runStep(step, shared) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, step.argv, { cwd: ROOT, stdio: shared ? ['ignore', 'pipe', 'pipe'] : 'inherit' });
    if (shared) {
      for (const [from, to] of /** @type {const} */ ([[child.stdout, process.stdout], [child.stderr, process.stderr]])) {
        if (from) createInterface({ input: from }).on('line', (line) => to.write(`[${step.name}] ${line}\n`));
      }
    }
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

/**
 * Runs the stages one after another and each stage's steps at once.
 * @param {Step[][]} plan
 * @returns {Promise<{ name: string, seconds: number, code: number }[]>}
 */
export async function runPlan(plan) {
  /** @type {{ name: string, seconds: number, code: number }[]} */
  const done = [];
  for (const stage of plan) {
    process.stdout.write(`\n# ${stage.map((s) => s.name).join(' + ')}\n`);
    await Promise.all(stage.map(async (step) => {
      const started = performance.now();
      const code = await runStep(step, stage.length > 1);
      done.push({ name: step.name, seconds: (performance.now() - started) / 1000, code });
      process.stdout.write(`# ${step.name}: ${code === 0 ? 'passed' : `FAILED (exit ${code})`} after ${((performance.now() - started) / 1000).toFixed(0)} s\n`);
    }));
  }
  return done;
}

const HELP = `usage: npm test  (node scripts/test.js)

Runs the type check and the web build, the real-time browser specs alone, the
unit files that measure timing alone, then the other unit files beside the other
browser specs. Every stage runs even when one before failed; the exit code is
non-zero when any step failed.

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
