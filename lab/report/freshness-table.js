// The "Freshness at the receiver" section of tables.md (docs/architecture.md
// "Freshness"): which runs it shows, its rows, columns and legend, which
// report.html shows too.

import { NONE, fmt, isObject, markdownTable, netName } from './format.js';
import { carRuns, mdData, modeCell, orderedRuns, showSources, sourceLabel } from './runs.js';

/** @typedef {import('./types.js').Run} Run */

/** Columns of the freshness table. */
export const FRESHNESS_COLUMNS = Object.freeze([
  'Transport', 'Mode', 'Net', 'Size', 'Group', 'Cycle (ms)', 'Fresh/stream/s', 'Freeze p50', 'Freeze p99', 'Freeze max', '% frozen', 'RT', '% loss',
]);

/** What the freshness columns mean. */
export const FRESHNESS_LEGEND = 'Measured at the receivers, per (receiver, sender) stream, on the receiver\'s own clock '
  + '(docs/architecture.md "Freshness"). Fresh/stream/s: updates applied (newer than any before) per stream and second, '
  + '6 at most on a 167 ms cycle. Freeze: gaps between consecutive fresh updates (ms), the time an avatar stands still. '
  + '% frozen: share of stream time spent in gaps over 1 s. Mode: pipelined sends every cycle; gated (the paper\'s) '
  + 'waits for every ACK of the previous update or its ACK timeout. RT mean (ms) and % loss as above.';

/**
 * One row of the freshness table.
 * @param {Run} run
 * @returns {string[]}
 */
export function freshnessRow(run) {
  const f = run.freshness ?? null;
  return [
    String(run.transport), modeCell(run), netName(run) ?? NONE, fmt(run.clients), fmt(run.group), fmt(run.cycleMs),
    fmt(f?.updatesPerStreamPerS, 2), fmt(f?.freezeMs?.p50), fmt(f?.freezeMs?.p99), fmt(f?.freezeMs?.max), fmt(f?.frozenPct, 2),
    fmt(run.rt?.mean), fmt(run.lossPct, 2),
  ];
}

/**
 * The "Freshness at the receiver" section: empty when no run measured it.
 * @param {Run[]} runs
 * @returns {string}
 */
export function renderFreshnessTable(runs) {
  const rs = freshnessRuns(runs);
  if (!rs.length) return '';
  if (showSources(rs)) {
    const columns = ['Source', ...FRESHNESS_COLUMNS];
    return ['## Freshness at the receiver', '', FRESHNESS_LEGEND, '',
      markdownTable(columns, rs.map((run) => [mdData(sourceLabel(run) ?? NONE), ...freshnessRow(run)]), columns.map((_, i) => (i < 4 ? 'left' : 'right'))), ''].join('\n');
  }
  return ['## Freshness at the receiver', '', FRESHNESS_LEGEND, '',
    markdownTable(FRESHNESS_COLUMNS, rs.map(freshnessRow), FRESHNESS_COLUMNS.map((_, i) => (i < 3 ? 'left' : 'right'))), ''].join('\n');
}

/**
 * The runs of the freshness table, in table order (a recording's per-family
 * runs are in its own section).
 * @param {Run[]} runs
 * @returns {Run[]}
 */
export function freshnessRuns(runs) {
  return orderedRuns(carRuns(runs).filter((run) => isObject(run.freshness) && !run.error));
}
