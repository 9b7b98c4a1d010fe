// report.html's drawn-error charts (--playout; docs/architecture.md "Drawn
// error"): p95 by playout mode for every run that measured it, and each such
// run's error over time with the updates found missing marked.

import { fmt, netName, num } from './format.js';
import { orderedRuns } from './runs.js';
import { EXTRA_COLORS, barStyle, baseOptions, groupedBarOptions, round, withAlpha } from './charts-common.js';

/** @typedef {import('./types.js').Run} Run */
/** @typedef {import('./charts-common.js').ChartSpec} ChartSpec */

/** A colour per playout mode, the same in every chart. */
const MODE_COLORS = /** @type {Record<string, string>} */ ({ ease: '#b45309', interpolate: '#2563eb', predict: '#059669' });
/** Colour of the missing-update bars. */
const MISSING_COLOR = '#b91c1c';
/** Over-time charts drawn at most (the first runs in table order); the table has every run. */
export const MAX_TIME_CHARTS = 6;

/** @param {string} mode @param {number} i */
const modeColor = (mode, i) => MODE_COLORS[mode] ?? EXTRA_COLORS[i % EXTRA_COLORS.length];

/** The run's drawn-error record: its clients' (--playout), else its AR pair's (--ar-pair). @param {Run} run */
const drawnOf = (run) => /** @type {any} */ (run).drawn ?? /** @type {any} */ (run).arDrawn ?? null;

/** A run's label in the drawn charts. @param {Run} run */
const runLabel = (run) => `${String(run.transport ?? '?')} · ${netName(run) ?? 'no profile'} · ${fmt(run.clients)} clients · ${fmt(run.cycleMs)} ms`;

/**
 * Grouped bars: per run, the p95 position error of each playout mode.
 * @param {Run[]} runs
 * @returns {Omit<ChartSpec, 'id' | 'kind'> | null}
 */
export function drawnModesChart(runs) {
  const rs = orderedRuns(runs.filter((run) => !run.error && drawnOf(run)));
  if (!rs.length) return null;
  const modes = [...new Set(rs.flatMap((run) => Object.keys(drawnOf(run).modes)))];
  const datasets = modes.map((mode, i) => ({
    label: mode,
    data: rs.map((run) => { const p95 = num(drawnOf(run).modes[mode]?.positionCm?.p95); return p95 === null ? null : round(p95, 2); }),
    tips: rs.map((run) => {
      const d = drawnOf(run).modes[mode];
      return d ? `p50 ${fmt(d.positionCm.p50, 1)} cm, p99 ${fmt(d.positionCm.p99, 1)} cm, ${fmt(d.jumpsPerMinute, 2)} jumps/min` : '';
    }),
    ...barStyle(modeColor(mode, i)),
  }));
  return {
    title: 'Drawn error p95 by playout mode',
    subtitle: 'How far a receiver draws a neighbour from where it is (cm, 95th percentile of every rendered frame), each mode from the same arrivals.',
    config: { type: 'bar', data: { labels: rs.map(runLabel), datasets }, options: groupedBarOptions('run', 'drawn error p95 (cm)') },
  };
}

/**
 * Lines: a run's mean drawn error per second of the measured window, per mode; bars on the
 * right axis: the updates receivers found missing in that second (lost, or late).
 * @param {Run} run
 * @returns {Omit<ChartSpec, 'id' | 'kind'> | null}
 */
export function drawnTimeChart(run) {
  const timeline = /** @type {{ s: number, missing: number, meanCm: Record<string, number | null> }[]} */ (drawnOf(run)?.timeline ?? []);
  if (timeline.length < 2) return null;
  const modes = Object.keys(drawnOf(run).modes);
  const lines = modes.map((mode, i) => ({
    type: 'line', label: `${mode} (mean cm)`, yAxisID: 'y',
    data: timeline.map((b) => ({ x: b.s, y: b.meanCm[mode] == null ? null : round(/** @type {number} */ (b.meanCm[mode]), 2) })),
    borderColor: modeColor(mode, i), backgroundColor: modeColor(mode, i), pointRadius: 0, borderWidth: 2, tension: 0.2,
  }));
  const missing = {
    type: 'bar', label: 'updates missing', yAxisID: 'y2',
    data: timeline.map((b) => ({ x: b.s, y: b.missing })),
    backgroundColor: withAlpha(MISSING_COLOR, 0.35), borderColor: MISSING_COLOR, borderWidth: 0, barPercentage: 1, categoryPercentage: 1,
  };
  const options = baseOptions('seconds into the measured window', 'mean drawn error (cm)');
  options.scales.y2 = { type: 'linear', position: 'right', beginAtZero: true, grid: { drawOnChartArea: false }, title: { display: true, text: 'updates missing' } };
  return {
    title: `Drawn error over time: ${runLabel(run)}`,
    subtitle: 'Mean drawn error of every stream per second, by mode; red bars: updates that receivers found missing that second.',
    config: { type: 'bar', data: { datasets: [...lines, missing] }, options },
  };
}

/**
 * Every drawn-error chart of the results, in page order.
 * @param {Run[]} runs
 * @returns {{ kind: 'drawn' | 'drawn-time', spec: Omit<ChartSpec, 'id' | 'kind'> | null }[]}
 */
export function drawnCharts(runs) {
  const withDrawn = orderedRuns(runs.filter((run) => !run.error && drawnOf(run)));
  return [
    { kind: 'drawn', spec: drawnModesChart(withDrawn) },
    ...withDrawn.slice(0, MAX_TIME_CHARTS).map((run) => ({ kind: /** @type {const} */ ('drawn-time'), spec: drawnTimeChart(run) })),
  ];
}
