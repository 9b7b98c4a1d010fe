#!/usr/bin/env node
// `npm run test:unit`: every *.test.js under the source folders with Node's
// test runner, most files side by side (--test-concurrency), then the few that
// must not overlap one another, one at a time (QUIET_FILES says why each).
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
 * Files run one at a time after the others, with nothing beside them: they
 * hold timing to account. The soak keeps RT steady over 15 s (beside the fuzz
 * run on 2 cores its last window's RT went from 0.8 to 106 ms); fairness counts
 * every member's updates in every second (beside the others one second once
 * carried 1 update of a stream). The namespace tests that put this machine on a
 * bridge run side by side: each has its own /16 (10.202, 10.203, 10.204).
 */
export const QUIET_FILES = Object.freeze([
  'lab/soak.test.js',
  'relay/fairness.test.js',
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

/**
 * The two runs: the files side by side, then the serial ones.
 * @param {string[]} files
 * @param {number} concurrency
 * @returns {{ label: string, args: string[] }[]}
 */
export function testRuns(files, concurrency) {
  const serial = files.filter((f) => QUIET_FILES.includes(f));
  const parallel = files.filter((f) => !QUIET_FILES.includes(f));
  const base = ['--test', '--test-force-exit', '--test-reporter=spec'];
  return [
    { label: `${parallel.length} files, ${concurrency} at a time`, args: [...base, `--test-concurrency=${concurrency}`, ...parallel] },
    { label: `${serial.length} files one at a time (they measure timing)`, args: [...base, '--test-concurrency=1', ...serial] },
  ].filter((r) => r.args.length > base.length + 1);
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
  const runs = testRuns(listTestFiles(), testConcurrency());
  let failed = 0;
  for (const run of runs) {
    const started = performance.now();
    process.stdout.write(`\n# unit tests: ${run.label}\n`);
    const code = await runNode(run.args);
    process.stdout.write(`# ${run.label}: exit ${code} after ${((performance.now() - started) / 1000).toFixed(0)} s\n`);
    if (code !== 0 && failed === 0) failed = code;
  }
  process.exitCode = failed;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
