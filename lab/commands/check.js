/**
 * `carlab check` (`npm run test:realtime`): the benchmark gates of
 * lab/gates/gates.js, one at a time, each a `carlab sim` or `carlab bench`
 * run with its `--fail-if` conditions or a `carlab fuzz` or `churn` run; a table of every
 * figure beside its bound. A gate fails when a figure is past its bound or missing.
 *
 * @module lab/commands/check
 */

import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { GATES } from '../gates/gates.js';
import { failedConditions, figureAt } from '../shared/flags.js';
import { markdownTable } from '../report/format.js';

const CARLAB = fileURLToPath(new URL('../../scripts/carlab.js', import.meta.url));

/** The condition that breaks a bound: the figure on the wrong side of it. */
const BREAKS = Object.freeze({ '<': '>=', '<=': '>', '>': '<=', '>=': '<' });

/** @returns {string} */
export function checkHelp() {
  return [
    'Usage: carlab check [--only NAME,...] [--list] [--keep DIR]',
    '',
    'Run the benchmark gates (lab/gates/gates.js) one at a time, each a carlab sim or bench run',
    'with --fail-if or a carlab fuzz or churn run, and print every figure beside its bound. Exit 1',
    'when a figure is past its bound or missing. Run nothing else on the machine beside it: the',
    'bounds are for a 2-core machine of this project\'s class with at most one busy core beside it.',
    '',
    '  --only NAME,...  just these gates',
    '  --list           name the gates and what each holds, run nothing',
    '  --keep DIR       keep each gate\'s results folder under DIR (default: removed)',
    '',
    `Gates: ${GATES.map((g) => g.name).join(', ')}`,
  ].join('\n');
}

/**
 * The --fail-if text of a gate: each bound's breaking condition.
 * @param {import('../gates/gates.js').Gate} gate
 */
export function failIfOf(gate) {
  return gate.holds.map((h) => `${h.figure}${BREAKS[h.op]}${h.bound}`).join(',');
}

/**
 * One gate's rows of the table from its run record (null: the run wrote none).
 * @param {import('../gates/gates.js').Gate} gate @param {Record<string, any> | null} run
 */
export function gateRows(gate, run) {
  return gate.holds.map((h) => {
    const value = figureAt(run, h.figure);
    const broken = run ? failedConditions([{ path: h.figure, op: BREAKS[h.op], value: h.bound, text: h.figure }], run) : ['no run'];
    const shown = typeof value === 'number' ? String(Math.round(value * 100) / 100) : 'missing';
    return { gate: gate.name, figure: h.figure, bound: `${h.op} ${h.bound}`, measured: shown, ok: broken.length === 0 };
  });
}

/**
 * The command line of a gate's run and the file its record lands in: sim and bench write a results
 * folder (its first run is the record), fuzz and churn one JSON report (the record itself).
 * @param {import('../gates/gates.js').Gate} gate @param {string} out
 */
export function gateCommand(gate, out) {
  if (gate.command === 'fuzz' || gate.command === 'churn') {
    const file = path.join(out, `${gate.command}.json`);
    return { argv: [CARLAB, gate.command, ...gate.args, '--json', file], file };
  }
  return { argv: [CARLAB, gate.command, ...gate.args, '--no-progress', '--out', out, '--fail-if', failIfOf(gate)], file: path.join(out, 'results.json') };
}

/**
 * Runs one gate's command; resolves with its record, or null.
 * @param {import('../gates/gates.js').Gate} gate @param {string} out @param {NodeJS.WritableStream} log
 */
function runGate(gate, out, log) {
  const { argv, file } = gateCommand(gate, out);
  log.write(`# gate ${gate.name}: carlab ${argv.slice(1).join(' ')}\n`);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, argv, { stdio: ['ignore', 'inherit', 'inherit'] });
    child.on('exit', () => {
      try {
        const written = JSON.parse(readFileSync(file, 'utf8'));
        resolve(written.runs ? written.runs[0] ?? null : written);
      } catch {
        resolve(null);
      }
    });
  });
}

/**
 * @param {string[]} argv
 * @param {{ stdout?: NodeJS.WritableStream, stderr?: NodeJS.WritableStream }} [io]
 * @returns {Promise<number>} 0 every gate held, 1 one did not, 2 usage
 */
export async function run(argv, { stdout = process.stdout, stderr = process.stderr } = {}) {
  let values;
  try {
    ({ values } = parseArgs({ args: argv, options: { only: { type: 'string' }, list: { type: 'boolean' }, keep: { type: 'string' }, help: { type: 'boolean', short: 'h' } } }));
  } catch (err) {
    stderr.write(`carlab check: ${/** @type {Error} */ (err).message}\n\n${checkHelp()}\n`);
    return 2;
  }
  if (values.help) { stdout.write(`${checkHelp()}\n`); return 0; }
  const names = values.only ? values.only.split(',').map((s) => s.trim()).filter(Boolean) : GATES.map((g) => g.name);
  const unknown = names.filter((n) => !GATES.some((g) => g.name === n));
  if (unknown.length) { stderr.write(`carlab check: no gate named ${unknown.join(', ')}\n\n${checkHelp()}\n`); return 2; }
  const gates = GATES.filter((g) => names.includes(g.name));
  if (values.list) {
    for (const g of gates) stdout.write(`${g.name}: ${g.what}\n  carlab ${g.command} ${g.args.join(' ')}${['fuzz', 'churn'].includes(g.command) ? '' : ` --fail-if "${failIfOf(g)}"`}\n`);
    return 0;
  }
  const rows = [];
  for (const gate of gates) {
    // fuzz and churn write a file, not a folder: the folder is made here
    const out = values.keep ? path.join(values.keep, gate.name) : mkdtempSync(path.join(tmpdir(), `carlab-gate-${gate.name}-`));
    mkdirSync(out, { recursive: true });
    const started = performance.now();
    rows.push(...gateRows(gate, await runGate(gate, out, stderr)));
    stderr.write(`# gate ${gate.name}: ${((performance.now() - started) / 1000).toFixed(0)} s\n`);
    if (!values.keep) rmSync(out, { recursive: true, force: true });
  }
  const cells = rows.map((r) => [r.gate, r.figure, r.bound, r.measured, r.ok ? 'ok' : 'FAILED']);
  stdout.write(`\n${markdownTable(['Gate', 'Figure', 'Bound', 'Measured', ''], cells, ['left', 'left', 'left', 'right', 'left'])}\n`);
  const failed = [...new Set(rows.filter((r) => !r.ok).map((r) => r.gate))];
  stdout.write(`\n# carlab check: ${gates.length - failed.length} of ${gates.length} gates held${failed.length ? `; FAILED: ${failed.join(', ')}` : ''}\n`);
  return failed.length ? 1 : 0;
}
