// results.csv: one row per run, every field of the run flattened into a
// dotted column (`rt.mean`, `setupMs.peer.p95`), the known ones first.
import { isObject } from './format.js';
import { runsOf } from './runs.js';

/** @typedef {import('./types.js').Results} Results */
/** @typedef {import('./types.js').Run} Run */

/** Preferred order of top-level run fields in the CSV; others follow as first seen. */
const FIELD_ORDER = [
  'transport', 'clients', 'group', 'cycleMs', 'cycleMode', 'browser', 'sim', 'source', 'sourceName', 'groupName', 'family', 'families', 'sessions',
  'rt', 'rts', 'cpu', 'lossPct', 'ackLossPct', 'dups', 'reorders', 'jitterMs', 'freshness', 'setupMs', 'channel',
];

/** Preferred order of nested keys. */
const SUB_ORDER = [
  'mean', 'dev', 'min', 'p50', 'p95', 'p99', 'max', 'n',
  'server', 'clients', 'signaling', 'peer', 'ordered', 'maxRetransmits',
];

/** Columns every CSV has, so consumers can rely on them even when all values are null. */
export const CSV_BASE_COLUMNS = Object.freeze([
  'transport', 'clients', 'group', 'cycleMs',
  'rt.mean', 'rt.dev', 'rt.p50', 'rt.p95', 'rt.p99', 'rt.max', 'rt.n',
  'rts.mean', 'rts.max', 'cpu.server', 'cpu.clients',
  'lossPct', 'ackLossPct', 'dups', 'reorders', 'jitterMs',
  'channel.ordered', 'channel.maxRetransmits',
]);

/**
 * One CSV field (RFC 4180): quoted when it holds a comma, quote, line break
 * or leading/trailing space, with quotes doubled. Null and undefined are
 * empty; objects and arrays are written as JSON.
 *
 * @param {unknown} value
 * @returns {string}
 */
export function csvField(value) {
  let text;
  if (value === null || value === undefined) text = '';
  else if (typeof value === 'number') text = Number.isFinite(value) ? String(value) : '';
  else if (typeof value === 'object') text = JSON.stringify(value);
  else text = String(value);
  return /[",\r\n]|^\s|\s$/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/**
 * A run flattened into dotted keys (`rt.mean`, `setupMs.peer.p95`, …).
 * Null or empty objects contribute nothing; arrays stay whole.
 *
 * @param {unknown} value
 * @param {string} [prefix]
 * @param {Map<string, unknown>} [into]
 * @returns {Map<string, unknown>}
 */
export function flatten(value, prefix = '', into = new Map()) {
  if (isObject(value)) {
    for (const [key, child] of Object.entries(value)) flatten(child, prefix ? `${prefix}.${key}` : key, into);
  } else if (prefix && value !== null && value !== undefined) {
    into.set(prefix, value);
  }
  return into;
}

/**
 * results.csv: a header row, then one row per run with flattened columns
 * (the {@link CSV_BASE_COLUMNS} always, then every other field present),
 * lines ending in `\n`.
 *
 * @param {Results} results
 * @returns {string}
 */
export function renderCsv(results) {
  const runs = runsOf(results);
  const flat = runs.map((run) => flatten(run));
  /** First-seen index of every key prefix, to keep related columns together. */
  /** @type {Map<string, number>} */
  const seen = new Map();
  const note = (/** @type {string} */ key) => {
    const parts = key.split('.');
    for (let i = 1; i <= parts.length; i++) {
      const prefix = parts.slice(0, i).join('.');
      if (!seen.has(prefix)) seen.set(prefix, seen.size);
    }
  };
  CSV_BASE_COLUMNS.forEach(note);
  for (const row of flat) for (const key of row.keys()) note(key);
  // A key that is a leaf in one run and an object in another keeps both columns.
  const columns = [...new Set([...CSV_BASE_COLUMNS, ...flat.flatMap((row) => [...row.keys()])])];
  columns.sort((a, b) => compareColumns(a, b, seen));
  const lines = [columns.map(csvField).join(',')];
  for (const row of flat) lines.push(columns.map((column) => csvField(row.get(column))).join(','));
  return `${lines.join('\n')}\n`;
}

/**
 * @param {string} a
 * @param {string} b
 * @param {Map<string, number>} seen
 * @returns {number}
 */
function compareColumns(a, b, seen) {
  const pa = a.split('.');
  const pb = b.split('.');
  for (let i = 0; i < Math.min(pa.length, pb.length); i++) {
    if (pa[i] === pb[i]) continue;
    const order = i === 0 ? FIELD_ORDER : SUB_ORDER;
    const ra = order.indexOf(pa[i]);
    const rb = order.indexOf(pb[i]);
    if (ra !== rb) return (ra === -1 ? Infinity : ra) - (rb === -1 ? Infinity : rb) || 0;
    return (seen.get(pa.slice(0, i + 1).join('.')) ?? 0) - (seen.get(pb.slice(0, i + 1).join('.')) ?? 0);
  }
  return pa.length - pb.length;
}
