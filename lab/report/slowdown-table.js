// The "Phone-speed peers" section of tables.md and report.html (bench
// --cpu-slowdown and --tracking, lab/bench/throttle.js): per run, the
// slowdown, which browsers ran at it, the peers' own RT and the tracking
// page's frame rate, so runs of one population at 1x and Nx read side by side.

import { NONE, fmt, markdownTable } from './format.js';
import { carRuns, modeCell, orderedRuns } from './runs.js';

/** @typedef {import('./types.js').Run} Run */

/** Columns of the slowdown table. */
export const SLOWDOWN_COLUMNS = Object.freeze([
  'Transport', 'Mode', 'Browser', 'Size', 'Group', 'Slowdown', 'Throttled', 'RT', 'RT p95', 'Browser CPU %', 'Tracking fps', 'ms/frame', 'Marker found %',
]);

/** What the slowdown columns mean. */
export const SLOWDOWN_LEGEND = 'Slowdown: every Chromium page\'s CPU throttled this many times (DevTools '
  + 'Emulation.setCPUThrottlingRate), as on a slower phone; Throttled: the browsers that ran at it (Firefox and WebKit '
  + 'cannot be throttled: their peers run at full speed). RT and RT p95 (ms): the peers\' own, as above. Browser CPU %: '
  + 'the browsers\' process trees (100 = one core). Tracking: the AR page on the synthetic camera (--tracking), over the '
  + 'measured window: frames processed per second, ms of processing per frame, % of frames that found the marker.';

/**
 * The lab runs of the section: a slowdown given, or a tracking page measured.
 * @param {Run[]} runs
 * @returns {Run[]}
 */
export function slowdownRuns(runs) {
  return orderedRuns(carRuns(runs).filter((run) => !run.error && run.source !== 'recording'
    && (typeof run.cpuSlowdown === 'number' || (run.tracking !== undefined && run.tracking !== null))));
}

/**
 * One row of the slowdown table.
 * @param {Run} run
 * @returns {string[]}
 */
export function slowdownRow(run) {
  const t = run.tracking ?? null;
  const throttled = Array.isArray(run.cpuThrottled) ? run.cpuThrottled.join(', ') || NONE : NONE;
  return [
    String(run.transport), modeCell(run), String(run.browser ?? NONE), fmt(run.clients), fmt(run.group),
    typeof run.cpuSlowdown === 'number' ? `${fmt(run.cpuSlowdown)}x` : '1x', throttled,
    fmt(run.rt?.mean), fmt(run.rt?.p95), fmt(run.cpu?.clients, 1), fmt(t?.fps, 1), fmt(t?.msPerFrame, 1), fmt(t?.visiblePct, 1),
  ];
}

/**
 * The "Phone-speed peers" section: empty when no run has a slowdown or a tracking page.
 * @param {Run[]} runs
 * @returns {string}
 */
export function renderSlowdownTable(runs) {
  const rs = slowdownRuns(runs);
  if (!rs.length) return '';
  return ['## Phone-speed peers', '', SLOWDOWN_LEGEND, '',
    markdownTable(SLOWDOWN_COLUMNS, rs.map(slowdownRow), SLOWDOWN_COLUMNS.map((_, i) => (i < 3 || i === 6 ? 'left' : 'right'))), ''].join('\n');
}
