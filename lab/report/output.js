/**
 * tables.md: the CAR-paper tables (one per transport, group size and cycle),
 * the supported clients table, the per-browser table of mixed fleets, and
 * renderTables() putting every section of tables.md together (freshness,
 * recordings, scale-out, networks, fleet, and the browser experiments').
 *
 * Rendering only, autocannon style: the runners produce a results object
 * (docs/architecture.md "Results files") and hand it here; nothing in this module runs,
 * measures or aggregates anything.
 *
 * @module lab/output
 */

import { isLabRun, renderExperimentTables } from './browsers-tables.js';
import { renderNetTables } from './net-tables.js';
import { NONE, fmt, markdownTable, mdText } from './format.js';
import { SOURCE_LEGEND, carRuns, compareNumbers, groupRuns, mdData, runsOf, showSources, sourceLabel } from './runs.js';
import { LOSS_LIMIT_PCT, RT_LIMIT_MS, supportedBySource, supportedClients } from './supported.js';
import { renderRecordingTables } from './recording-tables.js';
import { renderFreshnessTable } from './freshness-table.js';
import { renderRecoveryTable } from './recovery-table.js';
import { renderSceneTable } from './scene-table.js';
import { renderDrawnTable } from './drawn.js';
import { renderSlowdownTable } from './slowdown-table.js';
import { renderServerCostTable } from './server-cost.js';
import { renderFleetTable, renderScaleOutTable } from './scale-out-tables.js';
import { LOAD_FLAGS_NOTE, loadFlagLabels, loadFlagNotes } from './saturation.js';

/** @typedef {import('./types.js').Results} Results */
/** @typedef {import('./types.js').Run} Run */
/** @typedef {import('./types.js').RunTable} RunTable */
/** @typedef {import('./types.js').Supported} Supported */

/** Columns of the CAR paper's tables. */
export const TABLE_COLUMNS = Object.freeze(['Size', 'RT', 'Dev', 'CPU', 'RTS', '% loss']);

/**
 * One table row in the CAR layout: clients, RT mean and Dev (ms, 0 decimals),
 * server CPU % (1 decimal), RTS mean (ms, 1 decimal), loss % (2 decimals).
 * A run flagged saturated or unsettled (lab/report/saturation.js) says so
 * beside its size, e.g. `300 [saturated]`; its figures stay as measured.
 *
 * @param {Run} run
 * @returns {string[]}
 */
export function tableRow(run) {
  const marks = loadFlagLabels(run);
  return [
    `${fmt(run?.clients)}${marks.length ? ` [${marks.join(', ')}]` : ''}`,
    fmt(run?.rt?.mean),
    fmt(run?.rt?.dev),
    fmt(run?.cpu?.server, 1),
    fmt(run?.rts?.mean, 1),
    fmt(run?.lossPct, 2),
  ];
}

/**
 * The runs split into one table per (transport, group size, cycle), each
 * sorted by clients; tables in transport, group, cycle order.
 *
 * @param {Results} results
 * @returns {RunTable[]}
 */
export function runTables(results) {
  return groupRuns(carRuns(runsOf(results))).map(({ transport, group, cycleMs, net, cycleMode, reports, runs }) => ({
    transport,
    group,
    cycleMs,
    title: tableTitle(transport, group, cycleMs, net, cycleMode, reports),
    runs: [...runs].sort((a, b) => compareNumbers(a.clients, b.clients) || String(sourceLabel(a) ?? '').localeCompare(String(sourceLabel(b) ?? ''))),
  }));
}

/**
 * @param {string} transport
 * @param {number | null} group
 * @param {number | null} cycleMs
 * @param {string | null} [net] network profile (--net)
 * @param {string | null} [cycleMode] action cycle mode, when the runs say
 * @param {string | null} [reports] client reports, when the runs had them ({@link reportsLabel})
 * @returns {string}
 */
export function tableTitle(transport, group, cycleMs, net = null, cycleMode = null, reports = null) {
  return `${transport} · group ${fmt(group)} · cycle ${fmt(cycleMs)} ms${cycleMode ? ` ${cycleMode}` : ''}${reports ? ` · ${reports}` : ''}${net ? ` · net ${net}` : ''}`;
}

/** Columns of the supported clients table. */
export const SUPPORTED_COLUMNS = Object.freeze(['Transport', 'Group', 'Cycle (ms)', 'Tested', 'Supported clients']);

/**
 * One row of the supported clients table.
 *
 * @param {Supported} entry
 * @returns {string[]}
 */
export function supportedRow(entry) {
  let tested = NONE;
  if (entry.smallest !== null) {
    tested = entry.smallest === entry.largest ? String(entry.smallest) : `${entry.smallest}–${entry.largest}`;
  }
  const name = `${entry.transport}${entry.cycleMode ? ` · ${entry.cycleMode}` : ''}${entry.reports ? ` · ${entry.reports}` : ''}${entry.net ? ` · net ${entry.net}` : ''}`;
  return [name, fmt(entry.group), fmt(entry.cycleMs), tested, entry.label];
}

/** What the table columns mean, one paragraph. */
export const TABLE_LEGEND =
  'Size: clients. RT, Dev: response time mean and standard deviation (ms). ' +
  'CPU: relay/server process CPU % (100 = one core). RTS: relay response time mean (ms). ' +
  '% loss: updates lost.';

/** How supported clients are decided, one paragraph. */
export const SUPPORTED_LEGEND =
  `Largest population with mean RT < ${RT_LIMIT_MS} ms (and loss < ${LOSS_LIMIT_PCT} % where the ` +
  'transport is unreliable); "< N" when even the smallest tested population N misses it.';

const PER_BROWSER_COLUMNS = Object.freeze(['Transport', 'Browser', 'Size', 'Group', 'Peers', 'RT', 'Dev', 'p95', '% loss', 'Jitter (ms)']);
const PER_BROWSER_LEGEND = 'A fleet of several browsers split by browser: RT of the updates its peers sent (sender\'s clock); '
  + 'loss and jitter of the streams its peers received, from any sender.';

/**
 * One row per browser of a mixed-fleet run (`byBrowser`, lab/report/aggregate.js).
 * @param {Run} run
 * @returns {string[][]}
 */
export function perBrowserRows(run) {
  return Object.entries(run.byBrowser ?? {}).map(([name, b]) => [
    String(run.transport), name, fmt(run.clients), fmt(run.group), fmt(b.clients),
    fmt(b.rt?.mean), fmt(b.rt?.dev), fmt(b.rt?.p95), fmt(b.lossPct, 2), fmt(b.jitterMs, 2),
  ]);
}

/**
 * The lines under a table whose runs are flagged saturated or unsettled: one
 * per flag, then the rules they were judged by; none when no run is.
 * @param {Run[]} runs
 * @returns {string[]}
 */
function loadFlagMarkdown(runs) {
  const { lines, rules } = loadFlagNotes(runs);
  if (!lines.length) return [];
  return ['', ...lines.map((line) => `- ${mdText(line)}`), '', ...rules.map((rule) => `Rule — ${mdText(rule)}.`), LOAD_FLAGS_NOTE];
}

/**
 * A heading made of data: on one line, no HTML.
 * @param {unknown} value
 * @returns {string}
 */
function mdHeading(value) {
  return mdText(value).replace(/[<>]/g, '\\$&');
}

/**
 * Markdown tables in the CAR paper's layout: one per (transport, group size,
 * cycle), then the supported clients table.
 *
 * @param {Results} results
 * @returns {string}
 */
export function renderTables(results) {
  const runs = runsOf(results);
  if (runs.some(isLabRun)) {
    // `carlab browsers`: its experiments' tables, then the CAR tables of its `car` runs.
    const carRuns = runs.filter((run) => !isLabRun(run));
    const parts = [renderExperimentTables(runs)];
    if (carRuns.length) parts.push(renderTables({ ...results, runs: carRuns }));
    return parts.join('\n');
  }
  const out = ['## Response time, CPU and loss', ''];
  if (runs.length === 0) {
    out.push('_No runs._', '');
    const recordings = renderRecordingTables(results);
    if (recordings) out.push(recordings);
    return out.join('\n');
  }
  const tagged = showSources(carRuns(runs));
  out.push(tagged ? `${TABLE_LEGEND} ${SOURCE_LEGEND}` : TABLE_LEGEND, '');
  for (const table of runTables(results)) {
    out.push(`### ${mdHeading(table.title)}`, '');
    if (tagged) {
      const columns = ['Source', ...TABLE_COLUMNS];
      out.push(markdownTable(columns, table.runs.map((run) => [mdData(sourceLabel(run) ?? NONE), ...tableRow(run)]), columns.map((_, i) => (i === 0 ? 'left' : 'right'))));
    } else {
      out.push(markdownTable(TABLE_COLUMNS, table.runs.map(tableRow), TABLE_COLUMNS.map(() => 'right')));
    }
    const failed = table.runs.filter((run) => run.error);
    if (failed.length) out.push('', ...failed.map((run) => `- ${fmt(run.clients)} clients failed: ${mdText(run.error)}`));
    const lost = table.runs.flatMap((run) => (/** @type {any} */ (run).fleet?.lost ?? []).map((/** @type {any} */ l) => ({ run, l })));
    if (lost.length) {
      out.push('', ...lost.map(({ run, l }) => `- ${fmt(run.clients)} clients: ${fmt(l.peers)} peers lost with agent ${mdText(l.agent)} (${mdText(l.host)}) `
        + `at ${fmt(l.atS, 1)} s (${mdText(l.phase)}): ${mdText(l.reason)}; they are left out of loss`));
    }
    out.push(...loadFlagMarkdown(table.runs), '');
  }
  out.push('## Supported clients', '', SUPPORTED_LEGEND, '');
  if (tagged) {
    const columns = ['Source', ...SUPPORTED_COLUMNS];
    out.push(markdownTable(columns, supportedBySource(runs).map(({ source, entry }) => [mdData(source ?? NONE), ...supportedRow(entry)]), ['left', 'left', 'right', 'right', 'right', 'right']));
  } else {
    out.push(markdownTable(SUPPORTED_COLUMNS, supportedClients(carRuns(runs)).map(supportedRow), ['left', 'right', 'right', 'right', 'right']));
  }
  out.push('');
  const perBrowser = runs.filter((run) => run.byBrowser);
  if (perBrowser.length) {
    out.push('## Per browser in mixed fleets', '', PER_BROWSER_LEGEND, '');
    out.push(markdownTable(PER_BROWSER_COLUMNS, perBrowser.flatMap(perBrowserRows), PER_BROWSER_COLUMNS.map((_, i) => (i < 2 ? 'left' : 'right'))));
    out.push('');
  }
  const fresh = renderFreshnessTable(runs);
  if (fresh) out.push(fresh);
  const recovery = renderRecoveryTable(runs);
  if (recovery) out.push(recovery);
  const scene = renderSceneTable(runs);
  if (scene) out.push(scene);
  const drawn = renderDrawnTable(runs);
  if (drawn) out.push(drawn);
  const slowdown = renderSlowdownTable(runs);
  if (slowdown) out.push(slowdown);
  const recordings = renderRecordingTables(results);
  if (recordings) out.push(recordings);
  const cost = renderServerCostTable(runs);
  if (cost) out.push(cost);
  const scale = renderScaleOutTable(runs);
  if (scale) out.push(scale);
  const net = renderNetTables(runs);
  if (net) out.push(net);
  const fleet = renderFleetTable(runs);
  if (fleet) out.push(fleet);
  return out.join('\n');
}
