/**
 * `carlab report DIR [DIR ...] [--out OUT]`: results files from a results
 * folder (re-rendered), from a study recording (`carlab start --record DIR`,
 * read by lab/report/recording.js and turned into results by
 * lab/report/recording-results.js), or from several of them side by side in
 * one combined report.
 *
 * @module lab/commands/report
 */

import { readFile, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

import { renderTables } from '../report/output.js';
import { validateResults, writeResults } from '../report/files.js';
import { isRecordingDir, readRecording } from '../report/recording.js';
import { recordingToResults } from '../report/recording-results.js';

/**
 * @typedef {object} ReportIo
 * @property {NodeJS.ProcessEnv} [env]
 * @property {NodeJS.WritableStream} [stdout]
 * @property {NodeJS.WritableStream} [stderr]
 */

/**
 * One input of `carlab report`, loaded.
 *
 * @typedef {object} ReportInput
 * @property {string} target as given on the command line
 * @property {string} dir the folder (of results.json, or the recording)
 * @property {'results' | 'recording'} kind
 * @property {import('../report/types.js').Results} results
 * @property {string} [note] one line about what was read (recordings)
 */

/**
 * The help text of `carlab report`.
 *
 * @returns {string}
 */
export function reportHelp() {
  return [
    'Usage: carlab report DIR [options]',
    '       carlab report DIR [DIR ...] --out OUT [options]',
    '',
    'Write results files (results.json, results.csv, tables.md and report.html: charts,',
    'opens offline) and print the tables (markdown) to stdout. Each DIR is one of:',
    '',
    '  a results folder   what `carlab bench|sim --out DIR` wrote (or its results.json',
    '                     file): re-rendered from DIR/results.json, which is left alone;',
    '                     the files are written to DIR, or to OUT with --out (results.json',
    '                     copied there too).',
    '  a recording        what `carlab start --record DIR` wrote (DIR/reports-*.ndjson,',
    '                     DIR/study.json): every page session\'s newest client report, as',
    '                     runs per transport x group x browser family and per transport x',
    '                     group, plus a devices table; written to DIR (beside the segments)',
    '                     or to OUT. A recording is read afresh each time, also when DIR',
    '                     holds a results.json from an earlier report. Torn lines (a killed',
    '                     server) and invalid reports are skipped and counted on stderr.',
    '',
    'Several DIRs make one combined report, written to OUT (--out is required): every run',
    'of every input, each tagged with its source (the folder\'s name, or "recording"), the',
    'same transport x group size x cycle from each input in one table, with a Source column.',
    'The inputs are left alone.',
    '',
    'Options:',
    '  --out OUT   write the files to OUT (created if missing); required with several DIRs',
    '  --no-html   skip report.html',
    '  -h, --help  show this help',
    '',
    'The list of files written goes to stderr; stdout is only the tables.',
    '',
    'Exit status: 0 done, 1 writing failed, 2 bad usage or an input that is neither a',
    'results folder nor a recording (or cannot be read).',
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
  /** @type {{ values: { help?: boolean, 'no-html'?: boolean, out?: string }, positionals: string[] }} */
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: { help: { type: 'boolean', short: 'h' }, 'no-html': { type: 'boolean' }, out: { type: 'string' } },
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
  const targets = parsed.positionals;
  const out = parsed.values.out;
  if (targets.length === 0) return usageError(stderr, 'missing DIR');
  if (out !== undefined && out.trim() === '') return usageError(stderr, '--out needs a folder');
  if (targets.length > 1 && out === undefined) {
    return usageError(stderr, `${targets.length} DIRs make one combined report: say where with --out OUT`);
  }

  /** @type {ReportInput[]} */
  const inputs = [];
  for (const target of targets) {
    const loaded = await loadInput(target);
    if ('error' in loaded) {
      stderr.write(`carlab report: ${loaded.error}\n`);
      return 2;
    }
    if (loaded.note) stderr.write(`${loaded.note}\n`);
    inputs.push(loaded);
  }

  const single = inputs.length === 1 ? inputs[0] : null;
  const results = single ? single.results : combineResults(inputs);
  const dir = out ?? /** @type {ReportInput} */ (single).dir;
  // results.json is written unless it is the very file the results came from.
  const json = !(single && single.kind === 'results' && path.resolve(dir) === path.resolve(single.dir));
  let written;
  try {
    written = await writeResults(dir, results, { json, html: !parsed.values['no-html'] });
  } catch (err) {
    stderr.write(`carlab report: writing to ${dir} failed: ${/** @type {Error} */ (err)?.message ?? err}\n`);
    return 1;
  }
  stdout.write(renderTables(results));
  // The file list goes to stderr so stdout stays plain markdown for pipes.
  for (const file of [written.json, written.html, written.md, written.csv]) if (file) stderr.write(`wrote ${file}\n`);
  return 0;
}

/**
 * One input: a recording (isRecordingDir) turned into results, else a
 * results folder or results.json file.
 *
 * @param {string} target
 * @returns {Promise<ReportInput | { error: string }>}
 */
export async function loadInput(target) {
  if (isRecordingDir(target)) {
    let recording;
    try {
      recording = await readRecording(target);
    } catch (err) {
      return { error: `cannot read the recording ${target}: ${/** @type {Error} */ (err)?.message ?? err}` };
    }
    const results = recordingToResults(recording);
    return { target, dir: target, kind: 'recording', results, note: recordingNote(target, recording) };
  }
  const loaded = await loadResults(target);
  if ('error' in loaded) return loaded;
  return { target, dir: loaded.dir, kind: 'results', results: loaded.results };
}

/**
 * What was read from a recording, for stderr: `recording DIR: 8 sessions, 25
 * reports in 2 segments; skipped 1 torn line, 1 invalid report`.
 *
 * @param {string} target
 * @param {import('../report/recording.js').Recording} recording
 * @returns {string}
 */
export function recordingNote(target, recording) {
  const c = recording.counts;
  const plural = (/** @type {number} */ n, /** @type {string} */ word) => `${n} ${word}${n === 1 ? '' : 's'}`;
  const skipped = [
    c.tornLines ? plural(c.tornLines, 'torn line') : '',
    c.invalid ? plural(c.invalid, 'invalid report') : '',
    c.other ? plural(c.other, 'line that is no record') : '',
  ].filter(Boolean);
  const joined = recording.sessions.filter((s) => s.r.clientId > 0).length;
  return `recording ${target}: ${plural(recording.sessions.length, 'session')}, ${plural(c.reports, 'report')} in ${plural(recording.segments.length, 'segment')}`
    + `${skipped.length ? `; skipped ${skipped.join(', ')}` : ''}`
    + `${joined < recording.sessions.length ? `; ${plural(recording.sessions.length - joined, 'session')} never joined a group` : ''}`;
}

/**
 * One results object from several inputs, side by side: every run, tagged
 * with `source` (a recording's runs keep 'recording'; a results folder's
 * runs get the folder's name unless they already carry a source) and
 * `sourceName` (the input's name, unique among the inputs); the devices of
 * every recording; `recordings`, the summary of each; `env.sources`, each
 * input's environment.
 *
 * @param {ReportInput[]} inputs
 * @returns {import('../report/types.js').Results}
 */
export function combineResults(inputs) {
  /** @type {Set<string>} */
  const taken = new Set();
  const named = inputs.map((input) => {
    const base = path.basename(path.resolve(input.dir)) || input.dir;
    let name = base;
    for (let i = 2; taken.has(name); i++) name = `${base} (${i})`;
    taken.add(name);
    return { input, name };
  });
  const runs = named.flatMap(({ input, name }) => (input.results.runs ?? []).map((run) => {
    const recorded = run.source === 'recording';
    // A combined results folder keeps the names it already gave.
    const keep = Array.isArray(input.results.recordings) && typeof run.sourceName === 'string';
    return {
      ...run,
      source: recorded ? 'recording' : (typeof run.source === 'string' && run.source ? run.source : name),
      sourceName: keep ? run.sourceName : name,
    };
  }));
  const devices = named.flatMap(({ input, name }) => (Array.isArray(input.results.devices) ? input.results.devices : [])
    .map((d) => ({ ...d, sourceName: Array.isArray(input.results.recordings) && typeof d.sourceName === 'string' ? d.sourceName : name })));
  const recordings = named.flatMap(({ input, name }) => {
    if (Array.isArray(input.results.recordings)) return input.results.recordings;
    return input.results.recording ? [{ ...input.results.recording, name }] : [];
  });
  const cpus = inputs.map((input) => input.results.env?.cpus).find((n) => typeof n === 'number');
  return {
    env: {
      date: new Date().toISOString(),
      combined: true,
      // results.json requires it: the first input's, else this machine's.
      cpus: typeof cpus === 'number' ? cpus : os.cpus().length,
      sources: named.map(({ input, name }) => ({ source: name, kind: input.kind, dir: path.resolve(input.dir), env: input.results.env ?? null })),
    },
    runs,
    ...(devices.length ? { devices } : {}),
    ...(recordings.length ? { recordings } : {}),
  };
}

/**
 * Read and check DIR/results.json (or the given .json file).
 *
 * @param {string} target a results directory or a results.json path
 * @returns {Promise<{ dir: string, results: import('../report/types.js').Results } | { error: string }>}
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
    if (/** @type {NodeJS.ErrnoException} */ (err)?.code === 'ENOENT') {
      return { error: `${file} not found: ${target} is neither a results folder (carlab bench|sim --out ${target}) nor a recording (carlab start --record ${target})` };
    }
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
