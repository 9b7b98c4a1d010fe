#!/usr/bin/env node
// `npm test`: correctness, on any machine. The system programs (system-deps.js), the web build
// beside the type check, the unit tests (`node --test`'s own discovery) and the browser tests
// (e2e/playwright.config.js declares projects and workers). Timing is the gates' (npm run
// test:realtime). What a step starts carries its owner (owned.js); what outlives it fails the run.
import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

import { OWNER_VAR, describeOwned, endOwned } from './owned.js';
import { ensureSystemDeps } from './system-deps.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** Loaded into every test process: nothing a test starts outlives it (guard.js). */
const GUARD = ['--import', fileURLToPath(new URL('./guard.js', import.meta.url))];
const RUN_OWNER = `carlab-test-${process.pid}`;
/** A failed step's last lines are printed again at the end: its reporter's summary names the failures. */
const TAIL_LINES = 60;

/** The stages in order, a stage's steps side by side (unit and e2e apart: each uses every core). Unit
 * files wait more than they compute: four per core keep the cores busy (2 cores: 124 s; two per core
 * 145 s). A hung test fails after 5 min instead of holding the run. */
export const STAGES = [
  [
    { name: 'build', argv: ['scripts/build-web.js'] },
    { name: 'typecheck', argv: ['node_modules/typescript/bin/tsc', '--noEmit', '-p', 'tsconfig.json'] },
  ],
  [{ name: 'unit', argv: ['--test', '--test-force-exit', '--test-timeout=300000', `--test-concurrency=${4 * availableParallelism()}`, '--test-reporter=spec'] }],
  [{ name: 'e2e', argv: ['node_modules/@playwright/test/cli.js', 'test', '-c', 'e2e/playwright.config.js'] }],
];

/**
 * Runs one step in a process group of its own, its lines prefixed with its name; resolves with its
 * exit code (1 when something it started outlived it) and its last lines, which hold its failures.
 * @param {{ name: string, argv: string[] }} step
 * @returns {Promise<{ name: string, seconds: number, code: number, tail: string[] }>}
 */
export function runStep(step) {
  const started = performance.now();
  const owner = `${RUN_OWNER}/${step.name}`;
  /** @type {string[]} */
  const tail = [];
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...GUARD, ...step.argv], {
      cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], detached: true, env: { ...process.env, [OWNER_VAR]: owner },
    });
    for (const [from, to] of /** @type {const} */ ([[child.stdout, process.stdout], [child.stderr, process.stderr]])) {
      createInterface({ input: from }).on('line', (line) => {
        to.write(`[${step.name}] ${line}\n`);
        if (tail.push(line) > TAIL_LINES) tail.shift();
      });
    }
    child.on('exit', (code, signal) => {
      const left = endOwned(owner);
      if (left.length) process.stdout.write(`[${step.name}] ${left.length} process(es) outlived the step; ended them:\n${describeOwned(left)}\n`);
      const seconds = (performance.now() - started) / 1000;
      const result = { name: step.name, seconds, code: (code ?? (signal ? 1 : 0)) || Number(left.length > 0), tail };
      process.stdout.write(`# ${step.name}: ${result.code === 0 ? 'passed' : `FAILED (exit ${result.code})`} after ${seconds.toFixed(0)} s\n`);
      resolve(result);
    });
  });
}

/** Ctrl-C or SIGTERM: every step and everything this run started is ended. @param {NodeJS.Signals} signal */
function onSignal(signal) {
  const left = endOwned(RUN_OWNER, { graceMs: 1000 });
  process.stdout.write(`\n# npm test: ${signal}; ended ${left.length} process(es)\n`);
  process.exit(signal === 'SIGINT' ? 130 : 143);
}

async function main() {
  const usage = 'usage: npm test (no arguments; one file: node --test FILE, one browser test: npm run test:e2e -- FILE)';
  if (process.argv.length > 2) { process.stderr.write(`${usage}\n`); process.exitCode = 2; return; }
  const deps = ensureSystemDeps();
  if (deps !== 0) { process.exitCode = deps; return; }
  for (const signal of /** @type {const} */ (['SIGINT', 'SIGTERM', 'SIGHUP'])) process.once(signal, () => onSignal(signal));
  const started = performance.now();
  const done = [];
  for (const stage of STAGES) done.push(...await Promise.all(stage.map(runStep)));
  const left = endOwned(RUN_OWNER, { graceMs: 1000 });
  if (left.length) process.stdout.write(`# npm test: ${left.length} process(es) outlived the run; ended them:\n${describeOwned(left)}\n`);
  for (const d of done.filter((s) => s.code !== 0)) process.stdout.write(`\n# ${d.name} FAILED; its last lines:\n${d.tail.join('\n')}\n`);
  const failed = [...done.filter((d) => d.code !== 0).map((d) => d.name), ...(left.length ? ['leftovers'] : [])];
  process.stdout.write(`\n# npm test: ${done.map((d) => `${d.name} ${d.seconds.toFixed(0)} s`).join(', ')}; `
    + `${((performance.now() - started) / 1000).toFixed(0)} s in all, ${failed.length ? `FAILED: ${failed.join(', ')}` : 'all passed'}\n`);
  process.exitCode = failed.length ? 1 : 0;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
