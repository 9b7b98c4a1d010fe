/**
 * `carlab report DIR`: re-render DIR/report.html, DIR/tables.md and
 * DIR/results.csv from DIR/results.json and print the tables.
 *
 * @module lab/commands/report
 */

import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';

import { renderTables, validateResults, writeResults } from '../output.js';

/**
 * @typedef {object} ReportIo
 * @property {NodeJS.ProcessEnv} [env]
 * @property {NodeJS.WritableStream} [stdout]
 * @property {NodeJS.WritableStream} [stderr]
 */

/**
 * The help text of `carlab report`.
 *
 * @returns {string}
 */
export function reportHelp() {
  return [
    'Usage: carlab report DIR [options]',
    '',
    'Re-render the results of `carlab bench|sim --out DIR` from DIR/results.json:',
    'writes DIR/report.html (charts, opens offline), DIR/tables.md and DIR/results.csv,',
    'and prints the tables (markdown) to stdout. DIR may also be the results.json file.',
    '',
    'Options:',
    '  --no-html   skip report.html',
    '  -h, --help  show this help',
    '',
    'Exit status: 0 done, 1 writing failed, 2 bad usage or unreadable results.',
    '',
  ].join('\n');
}

/**
 * Run `carlab report`. Resolves with the exit code.
 *
 * @param {string[]} argv arguments after `report`
 * @param {ReportIo} [io]
 * @returns {Promise<number>}
 */
export async function run(argv, { stdout = process.stdout, stderr = process.stderr } = {}) {
  /** @type {{ values: { help?: boolean, 'no-html'?: boolean }, positionals: string[] }} */
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: { help: { type: 'boolean', short: 'h' }, 'no-html': { type: 'boolean' } },
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    return usageError(stderr, /** @type {Error} */ (err)?.message ?? String(err));
  }
  if (parsed.values.help) {
    stdout.write(reportHelp());
    return 0;
  }
  if (parsed.positionals.length === 0) return usageError(stderr, 'missing DIR');
  if (parsed.positionals.length > 1) return usageError(stderr, `expected one DIR, got ${parsed.positionals.length}`);

  const loaded = await loadResults(parsed.positionals[0]);
  if ('error' in loaded) {
    stderr.write(`carlab report: ${loaded.error}\n`);
    return 2;
  }

  let written;
  try {
    written = await writeResults(loaded.dir, loaded.results, { json: false, html: !parsed.values['no-html'] });
  } catch (err) {
    stderr.write(`carlab report: writing to ${loaded.dir} failed: ${/** @type {Error} */ (err)?.message ?? err}\n`);
    return 1;
  }
  stdout.write(renderTables(loaded.results));
  // The file list goes to stderr so stdout stays plain markdown for pipes.
  for (const file of [written.html, written.md, written.csv]) if (file) stderr.write(`wrote ${file}\n`);
  return 0;
}

/**
 * Read and check DIR/results.json (or the given .json file).
 *
 * @param {string} target a results directory or a results.json path
 * @returns {Promise<{ dir: string, results: import('../output.js').Results } | { error: string }>}
 */
export async function loadResults(target) {
  let info;
  try {
    info = await stat(target);
  } catch {
    return { error: `no such directory: ${target}` };
  }
  const file = info.isDirectory() ? path.join(target, 'results.json') : target;
  const dir = path.dirname(file);
  let text;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if (/** @type {NodeJS.ErrnoException} */ (err)?.code === 'ENOENT') return { error: `${file} not found (write it with carlab bench|sim --out ${target})` };
    return { error: `cannot read ${file}: ${/** @type {Error} */ (err)?.message ?? err}` };
  }
  let results;
  try {
    results = JSON.parse(text);
  } catch (err) {
    return { error: `${file} is not valid JSON: ${/** @type {Error} */ (err)?.message ?? err}` };
  }
  const invalid = validateResults(results);
  if (invalid) return { error: `${file} is not a carlab results file: ${invalid}` };
  return { dir, results };
}

/**
 * @param {NodeJS.WritableStream} stderr
 * @param {string} message
 * @returns {number}
 */
function usageError(stderr, message) {
  stderr.write(`carlab report: ${message}\n\n${reportHelp()}`);
  return 2;
}
