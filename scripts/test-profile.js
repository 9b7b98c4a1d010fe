#!/usr/bin/env node
// `node scripts/test-profile.js`: what each test costs the machine. Every
// unit file runs alone (`node --test FILE`), then the browser tests of the
// shared stage one at a time (Playwright, one worker), and each is charged
// the CPU the whole machine spent while it ran (/proc/stat) and its wall
// time. Run it with nothing else on the machine: what else runs is charged
// too. The table, heaviest first, says where `npm test`'s time goes (it is
// CPU-bound on 2 cores) and what to cut first.
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { OWNER_VAR } from './owned.js';
import { PLAYWRIGHT, SHARED_PROJECTS } from './test.js';
import { busyCores, cpuJiffies } from './test-machine.js';
import { GUARD_ARGS, NODE_TEST_ARGS, listTestFiles } from './test-unit.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** Jiffies per second of /proc/stat (USER_HZ, 100 on Linux). */
const USER_HZ = 100;
/** Where the Playwright reporter (scripts/test-profile-reporter.js) writes a line per test. */
export const E2E_LINES_VAR = 'CARLAB_TEST_PROFILE_LINES';

/**
 * @typedef {object} Cost one test file or browser test
 * @property {string} name
 * @property {number} cpuS CPU-seconds the machine spent while it ran
 * @property {number} wallS
 * @property {string} status 'passed', or why not
 */

/** CPU-seconds of the whole machine so far. */
export function machineCpuS() {
  return cpuJiffies().busy / USER_HZ;
}

/**
 * The table, heaviest first, with the totals under it.
 * @param {Cost[]} costs
 * @returns {string}
 */
export function costTable(costs) {
  const sorted = [...costs].sort((a, b) => b.cpuS - a.cpuS || a.name.localeCompare(b.name));
  const cpu = costs.reduce((s, c) => s + c.cpuS, 0);
  const wall = costs.reduce((s, c) => s + c.wallS, 0);
  const rows = sorted.map((c) => `${c.cpuS.toFixed(1).padStart(7)} ${c.wallS.toFixed(1).padStart(7)}  ${c.status === 'passed' ? '' : `[${c.status}] `}${c.name}`);
  return [' CPU-s  wall-s  test', ...rows, `${cpu.toFixed(1).padStart(7)} ${wall.toFixed(1).padStart(7)}  total of ${costs.length}`].join('\n');
}

/**
 * The costs as tab-separated lines (cpuS, wallS, status, name), for a spreadsheet.
 * @param {Cost[]} costs
 */
export function costTsv(costs) {
  return ['cpu_s\twall_s\tstatus\tname', ...costs.map((c) => `${c.cpuS.toFixed(2)}\t${c.wallS.toFixed(2)}\t${c.status}\t${c.name}`)].join('\n') + '\n';
}

/**
 * Runs a command to its end with its output kept, as one owner's (scripts/owned.js).
 * @param {string[]} argv after this Node
 * @param {NodeJS.ProcessEnv} env
 * @returns {Promise<{ code: number, output: string }>}
 */
function runNode(argv, env) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, argv, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env });
    let output = '';
    const keep = (/** @type {Buffer} */ d) => { output = (output + d).slice(-20_000); };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.on('exit', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), output }));
  });
}

/**
 * Each unit file alone, with the test guard `npm test` loads.
 * @param {string[]} files
 * @param {(line: string) => void} log
 * @returns {Promise<Cost[]>}
 */
async function profileUnitFiles(files, log) {
  /** @type {Cost[]} */
  const costs = [];
  for (const [i, file] of files.entries()) {
    const cpu0 = machineCpuS();
    const t0 = performance.now();
    const { code } = await runNode([...GUARD_ARGS, ...NODE_TEST_ARGS, '--test-reporter=dot', file],
      { ...process.env, [OWNER_VAR]: `carlab-test-profile-${process.pid}/unit` });
    const cost = { name: file, cpuS: machineCpuS() - cpu0, wallS: (performance.now() - t0) / 1000, status: code === 0 ? 'passed' : `exit ${code}` };
    costs.push(cost);
    log(`[${i + 1}/${files.length}] ${cost.cpuS.toFixed(1)} CPU-s in ${cost.wallS.toFixed(1)} s  ${file}${code === 0 ? '' : ` (exit ${code})`}`);
  }
  return costs;
}

/**
 * The shared stage's browser tests one at a time, each charged by the reporter.
 * @param {string} linesFile where the reporter writes
 * @param {(line: string) => void} log
 * @returns {Promise<Cost[]>}
 */
async function profileBrowserTests(linesFile, log) {
  log('building the web pages first (scripts/build-web.js)');
  const build = await runNode(['scripts/build-web.js'], process.env);
  if (build.code !== 0) throw new Error(`the web build failed:\n${build.output}`);
  rmSync(linesFile, { force: true });
  const projects = SHARED_PROJECTS.flatMap((p) => ['--project', p]);
  const reporter = fileURLToPath(new URL('./test-profile-reporter.js', import.meta.url));
  log(`browser tests of ${SHARED_PROJECTS.join(', ')}, one at a time`);
  const { code, output } = await runNode([...GUARD_ARGS, ...PLAYWRIGHT, ...projects, '--no-deps', '--workers', '1', `--reporter=list,${reporter}`],
  { ...process.env, [OWNER_VAR]: `carlab-test-profile-${process.pid}/e2e`, [E2E_LINES_VAR]: linesFile });
  /** @type {Cost[]} */
  const costs = readFileSync(linesFile, 'utf8').trim().split('\n').filter(Boolean).map((line) => JSON.parse(line))
    .filter((/** @type {Cost} */ c) => c.status !== 'skipped');
  if (code !== 0) log(`Playwright exited ${code}; its last output:\n${output.split('\n').slice(-30).join('\n')}`);
  return costs;
}

const HELP = `usage: node scripts/test-profile.js [--unit] [--e2e] [--files F,G] [--out DIR]

What each test costs: every unit file alone, then the shared stage's browser
tests (${SHARED_PROJECTS.join(', ')}) one at a time, each charged the CPU the
whole machine spent while it ran and its wall time. Run it with nothing else
on the machine. Prints a table, heaviest first, and writes DIR/test-profile.tsv
(default DIR: test-results).

  --unit      unit files only          --e2e       browser tests only
  --files L   these unit files only (comma-separated, repository-relative)
  --out DIR   where the TSV goes
`;

/**
 * @param {string[]} args
 * @returns {{ unit: boolean, e2e: boolean, files: string[] | null, out: string } | string} the options, or what is wrong
 */
export function parseProfileArgs(args) {
  const o = { unit: false, e2e: false, files: /** @type {string[] | null} */ (null), out: 'test-results' };
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--unit') o.unit = true;
    else if (a === '--e2e') o.e2e = true;
    else if (a === '--files' || a === '--out') {
      const v = args[++i];
      if (!v || v.startsWith('--')) return `${a} needs a value`;
      if (a === '--files') o.files = v.split(',').filter(Boolean);
      else o.out = v;
    } else return `unknown argument ${JSON.stringify(a)}`;
  }
  if (!o.unit && !o.e2e) { o.unit = true; o.e2e = !o.files; }
  return o;
}

async function main() {
  const args = process.argv.slice(2);
  if (args.includes('--help') || args.includes('-h')) { process.stdout.write(HELP); return; }
  const o = parseProfileArgs(args);
  if (typeof o === 'string') { process.stderr.write(`scripts/test-profile.js: ${o}\n\n${HELP}`); process.exitCode = 2; return; }
  const log = (/** @type {string} */ line) => process.stderr.write(`${line}\n`);
  const busy = await busyCores(2, 500);
  if (busy > 0.3) log(`warning: ${busy.toFixed(1)} cores are busy with other work; it is charged to the tests too`);
  /** @type {Cost[]} */
  const costs = [];
  if (o.unit) costs.push(...await profileUnitFiles(o.files ?? listTestFiles(), log));
  mkdirSync(path.resolve(ROOT, o.out), { recursive: true });
  if (o.e2e) costs.push(...await profileBrowserTests(path.resolve(ROOT, o.out, 'test-profile-e2e.ndjson'), log));
  const tsv = path.resolve(ROOT, o.out, 'test-profile.tsv');
  writeFileSync(tsv, costTsv(costs));
  process.stdout.write(`${costTable(costs)}\n\nwrote ${path.relative(ROOT, tsv)}\n`);
  process.exitCode = costs.every((c) => c.status === 'passed') ? 0 : 1;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
