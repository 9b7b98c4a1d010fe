// Reading runs for every table and chart: the runs of a results object,
// grouped (transport, group, cycle, mode, reports, profile) and ordered,
// where each comes from (a results folder, a recording), what drove it, and
// the short labels and markdown-safe text the tables print for them.

import { NONE, compareTransports, isObject, mdText, netName, num } from './format.js';

/** @typedef {import('./types.js').Results} Results */
/** @typedef {import('./types.js').Run} Run */

/**
 * The runs of a results object, objects only.
 *
 * @param {Results} results
 * @returns {Run[]}
 */
export function runsOf(results) {
  return Array.isArray(results?.runs) ? results.runs.filter(isObject) : [];
}

/**
 * Runs grouped by (transport, group, cycleMs, cycle mode, client reports, network profile),
 * sorted by transport, group, cycle, mode, reports (none first); profiles in the order they ran.
 *
 * @param {Run[]} runs
 * @returns {{ transport: string, group: number | null, cycleMs: number | null, net: string | null, cycleMode: string | null,
 *   reports: string | null, runs: Run[] }[]}
 */
export function groupRuns(runs) {
  /** @type {Map<string, { transport: string, group: number | null, cycleMs: number | null, net: string | null, cycleMode: string | null,
   *   reports: string | null, runs: Run[] }>} */
  const groups = new Map();
  for (const run of runs) {
    if (!isObject(run)) continue;
    const transport = typeof run.transport === 'string' ? run.transport : String(run.transport ?? '?');
    const group = num(run.group);
    const cycleMs = num(run.cycleMs);
    const net = netName(run);
    const cycleMode = typeof run.cycleMode === 'string' ? run.cycleMode : null;
    const reports = reportsLabel(run);
    const key = JSON.stringify([transport, group, cycleMs, cycleMode, reports, net]);
    let entry = groups.get(key);
    if (!entry) groups.set(key, (entry = { transport, group, cycleMs, net, cycleMode, reports, runs: [] }));
    entry.runs.push(run);
  }
  return [...groups.values()].sort(
    (a, b) => compareTransports(a.transport, b.transport) || compareNumbers(a.group, b.group) || compareNumbers(a.cycleMs, b.cycleMs)
      || String(a.cycleMode ?? '').localeCompare(String(b.cycleMode ?? ''))
      || (num(a.runs[0].reportsIntervalS) ?? 0) - (num(b.runs[0].reportsIntervalS) ?? 0),
  );
}

/**
 * Ascending, nulls last.
 *
 * @param {unknown} a
 * @param {unknown} b
 * @returns {number}
 */
export function compareNumbers(a, b) {
  const x = num(a);
  const y = num(b);
  if (x === null || y === null) return (x === null ? 1 : 0) - (y === null ? 1 : 0);
  return x - y;
}

/**
 * Runs in table order: profiles as they ran, then transport, mode, group, cycle, clients.
 * @param {Run[]} runs
 * @returns {Run[]}
 */
export function orderedRuns(runs) {
  const profiles = [...new Set(runs.map(netName))];
  return [...runs].sort((a, b) => profiles.indexOf(netName(a)) - profiles.indexOf(netName(b))
    || compareTransports(String(a.transport), String(b.transport))
    || String(a.cycleMode ?? '').localeCompare(String(b.cycleMode ?? ''))
    || compareNumbers(a.group, b.group) || compareNumbers(a.cycleMs, b.cycleMs) || compareNumbers(a.clients, b.clients)
    || compareNumbers(a.reportsIntervalS ?? 0, b.reportsIntervalS ?? 0)
    || String(sourceLabel(a) ?? '').localeCompare(String(sourceLabel(b) ?? '')));
}

/**
 * A short name for what drove a run: the browser(s), or `sim`.
 *
 * @param {Run} run
 * @returns {string} empty when unknown
 */
export function describeDriver(run) {
  const name = (/** @type {unknown} */ value) => {
    if (typeof value === 'string') return value;
    if (isObject(value)) {
      const named = value.name ?? value.browser ?? value.channel;
      if (typeof named === 'string') return value.version ? `${named} ${value.version}` : named;
    }
    return '';
  };
  const { browser, sim } = run ?? {};
  if (Array.isArray(browser)) return browser.map(name).filter(Boolean).join('+');
  if (browser !== undefined && browser !== null && browser !== false) return name(browser) || 'browser';
  if (sim !== undefined && sim !== null && sim !== false) return typeof sim === 'string' ? `sim ${sim}` : 'sim';
  return '';
}

/**
 * Whether a run is one browser family's part of a recording's group
 * (lab/report/recording-results.js): shown in the Recordings section; the CAR tables,
 * supported clients, freshness table and charts show the group's run over
 * every family.
 *
 * @param {Run} run
 * @returns {boolean}
 */
export function isFamilyRun(run) {
  return run?.source === 'recording' && typeof run.family === 'string';
}

/**
 * The runs of the CAR tables: all but the per-family runs of recordings.
 *
 * @param {Run[]} runs
 * @returns {Run[]}
 */
export function carRuns(runs) {
  return runs.filter((run) => !isFamilyRun(run));
}

/**
 * Where a run comes from, in a few words: `recording NAME · GROUP` for a
 * recording's run, the input folder's name in a combined report; null when
 * the run does not say.
 *
 * @param {Run} run
 * @returns {string | null}
 */
export function sourceLabel(run) {
  if (run?.source === 'recording') {
    const name = typeof run.sourceName === 'string' && run.sourceName ? ` ${run.sourceName}` : '';
    const group = typeof run.groupName === 'string' ? ` · ${run.groupName}` : '';
    return `recording${name}${group}`;
  }
  return typeof run?.source === 'string' && run.source ? run.source : null;
}

/**
 * Whether tables need a Source column: the runs come from more than one source.
 *
 * @param {Run[]} runs
 * @returns {boolean}
 */
export function showSources(runs) {
  return new Set(runs.map(sourceLabel)).size > 1;
}

/** What the Source column says. */
export const SOURCE_LEGEND = 'Source: the results folder a row comes from, or the recording and its working group.';

/**
 * The client reports a run had (sim/bench --reports), e.g. `reports 5 s`;
 * null when it had none (reportsIntervalS 0 or absent).
 * @param {Run} run
 * @returns {string | null}
 */
export function reportsLabel(run) {
  const s = num(run?.reportsIntervalS);
  return s ? `reports ${s} s` : null;
}

/**
 * A run's Mode cell: its cycle mode, and its client reports when it had them.
 * @param {Run} run
 * @returns {string}
 */
export function modeCell(run) {
  const reports = reportsLabel(run);
  return `${run.cycleMode ?? NONE}${reports ? ` · ${reports}` : ''}`;
}

/**
 * Text from the data (a client's name, a group's, what a user agent says)
 * made inert in markdown: no HTML, no emphasis, no links.
 *
 * @param {unknown} value
 * @returns {string}
 */
export function mdData(value) {
  return mdText(value).replace(/[\\`*_[\]<>]/g, '\\$&');
}
