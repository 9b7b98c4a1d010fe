// The results folder: results.json, results.csv, tables.md and report.html,
// each written whole (a temporary name, then a rename) so that a reader or a
// crash never leaves half a file.
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { renderCsv } from './csv.js';
import { isObject } from './format.js';
import { renderTables } from './output.js';

/** @typedef {import('./types.js').Results} Results */

/**
 * Why a value is not a results object, or null when it is one.
 *
 * @param {unknown} results
 * @returns {string | null}
 */
export function validateResults(results) {
  if (!isObject(results)) return 'results must be a JSON object';
  if (!Array.isArray(results.runs)) return 'results has no "runs" array';
  const bad = results.runs.findIndex((run) => !isObject(run));
  if (bad !== -1) return `runs[${bad}] is not an object`;
  if (results.env !== undefined && results.env !== null && !isObject(results.env)) return '"env" must be an object';
  return null;
}

/**
 * Write DIR/results.json (pretty), DIR/results.csv, DIR/tables.md and
 * DIR/report.html, creating DIR. Each file is written to a temporary name
 * and renamed, so readers never see half a file.
 *
 * @param {string} dir
 * @param {Results} results
 * @param {{ json?: boolean, html?: boolean }} [options] skip results.json (when re-rendering it) or report.html
 * @returns {Promise<{ json: string | null, csv: string, md: string, html: string | null }>} the paths written
 */
export async function writeResults(dir, results, { json = true, html = true } = {}) {
  const invalid = validateResults(results);
  if (invalid) throw new TypeError(`writeResults: ${invalid}`);
  await mkdir(dir, { recursive: true });
  const paths = {
    json: json ? path.join(dir, 'results.json') : null,
    csv: path.join(dir, 'results.csv'),
    md: path.join(dir, 'tables.md'),
    html: html ? path.join(dir, 'report.html') : null,
  };
  if (paths.json) await writeAtomic(paths.json, `${JSON.stringify(results, null, 2)}\n`);
  await writeAtomic(paths.csv, renderCsv(results));
  await writeAtomic(paths.md, renderTables(results));
  if (paths.html) {
    // Lazy: the HTML report reads Chart.js (200 kB); table-only callers never pay for it.
    const { renderReportHtml } = await import('./report-html.js');
    await writeAtomic(paths.html, renderReportHtml(results));
  }
  return paths;
}

/**
 * @param {string} file
 * @param {string} text
 * @returns {Promise<void>}
 */
async function writeAtomic(file, text) {
  const temp = `${file}.${process.pid}.tmp`;
  try {
    await writeFile(temp, text);
    await rename(temp, file);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
}
