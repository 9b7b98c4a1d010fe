// What every chart of report.html shares: the chart spec's shape, colours per
// transport and shades per group size, axes and options, series per
// (transport, group), runs split by cycle, and rounding for plain JSON.

import { TRANSPORTS, transportInfo } from '../../core/transports.js';
import { compareTransports, fmt, num } from './format.js';
import { groupRuns } from './runs.js';

/** @typedef {import('./types.js').Run} Run */

/**
 * @typedef {object} ChartSpec one chart of the report
 * @property {string} id the canvas element id
 * @property {'rt' | 'supported' | 'loss' | 'setup' | 'cpu' | 'fresh' | 'freeze' | 'drawn' | 'drawn-time' | 'recovery'} kind
 * @property {string} title
 * @property {string} subtitle
 * @property {number} [height] canvas height in CSS pixels, when not the default
 * @property {Record<string, any>} config a Chart.js configuration, plain JSON; datasets may carry
 *   `tips` (per data point, extra tooltip lines)
 */

/** Colour per transport; unknown transports take {@link EXTRA_COLORS} in order. */
const TRANSPORT_COLORS = Object.fromEntries(TRANSPORTS.map((name) => [name, transportInfo(name)?.color ?? '']));
/** Colours of transports the registry has none for, in order. */
export const EXTRA_COLORS = ['#0891b2', '#ca8a04', '#db2777', '#4b5563', '#65a30d', '#7c3aed'];

/** Point style per group size (in ascending order of the sizes in a chart). */
const POINT_STYLES = ['circle', 'rect', 'triangle', 'rectRot', 'star', 'crossRot'];

/** Colour of a chart's limit line (the RT limit). */
export const LIMIT_COLOR = '#6b7280';
const GRID_COLOR = 'rgba(15, 23, 42, 0.08)';

/**
 * A colour for each transport in the results.
 *
 * @param {string[]} transports
 * @returns {Map<string, string>}
 */
export function transportColors(transports) {
  const colors = new Map();
  let extra = 0;
  for (const transport of [...new Set(transports)].sort(compareTransports)) {
    colors.set(transport, Object.hasOwn(TRANSPORT_COLORS, transport) ? TRANSPORT_COLORS[transport] : EXTRA_COLORS[extra++ % EXTRA_COLORS.length]);
  }
  return colors;
}

/**
 * A colour mixed toward white by `t` (0..1).
 *
 * @param {string} hex `#rrggbb`
 * @param {number} t
 * @returns {string}
 */
function lighten(hex, t) {
  const channel = (/** @type {number} */ i) => Math.round(parseInt(hex.slice(i, i + 2), 16) * (1 - t) + 255 * t);
  return `#${[1, 3, 5].map((i) => channel(i).toString(16).padStart(2, '0')).join('')}`;
}

/**
 * `#rrggbb` with an alpha.
 *
 * @param {string} hex
 * @param {number} alpha
 * @returns {string}
 */
export function withAlpha(hex, alpha) {
  return `${hex}${Math.round(alpha * 255).toString(16).padStart(2, '0')}`;
}

/**
 * Styling of one series: colour by transport, lighter and another point
 * style for each smaller group size.
 *
 * @param {string} color
 * @param {number} groupIndex index of the group size among the chart's sizes, ascending
 * @param {number} groupCount
 * @returns {Record<string, any>}
 */
function seriesStyle(color, groupIndex, groupCount) {
  const shade = groupCount > 1 ? lighten(color, (0.5 * (groupCount - 1 - groupIndex)) / (groupCount - 1)) : color;
  return {
    borderColor: shade,
    backgroundColor: shade,
    pointStyle: POINT_STYLES[groupIndex % POINT_STYLES.length],
    pointRadius: 4,
    pointHoverRadius: 6,
    borderWidth: 2,
    tension: 0,
  };
}

/**
 * Linear, or logarithmic when the values span more than `ratio` (all positive).
 *
 * @param {number[]} values
 * @param {number} [ratio]
 * @returns {'linear' | 'logarithmic'}
 */
export function scaleType(values, ratio = 20) {
  const finite = values.filter((v) => Number.isFinite(v));
  if (finite.length < 2 || finite.some((v) => v <= 0)) return 'linear';
  return Math.max(...finite) / Math.min(...finite) > ratio ? 'logarithmic' : 'linear';
}

/**
 * Common options of every chart.
 *
 * @param {string} xTitle
 * @param {string} yTitle
 * @param {{ xType?: string, yType?: string }} [scales]
 * @returns {Record<string, any>}
 */
export function baseOptions(xTitle, yTitle, { xType = 'linear', yType = 'linear' } = {}) {
  return {
    responsive: true,
    maintainAspectRatio: false,
    animation: false,
    interaction: { mode: 'nearest', intersect: false },
    plugins: {
      legend: { position: 'bottom', labels: { usePointStyle: true, boxWidth: 8, boxHeight: 8, padding: 14 } },
      tooltip: {},
    },
    scales: { x: axis(xType, xTitle), y: axis(yType, yTitle) },
  };
}

/**
 * One axis: value axes start at zero unless logarithmic, which the title says.
 *
 * @param {string} type
 * @param {string} title
 * @returns {Record<string, any>}
 */
function axis(type, title) {
  const log = type === 'logarithmic';
  return {
    type,
    ...(type === 'category' ? {} : { beginAtZero: !log, ticks: { maxRotation: 0, autoSkipPadding: 14 } }),
    title: { display: Boolean(title), text: log ? `${title} (log scale)` : title },
    grid: { color: GRID_COLOR },
  };
}

/**
 * Whether a run has a client count (the charts' x axis).
 *
 * @param {Run} run
 * @returns {run is Run & { clients: number }}
 */
function hasClients(run) {
  return num(run.clients) !== null;
}

/**
 * Whether a run has a loss figure.
 *
 * @param {Run} run
 * @returns {run is Run & { lossPct: number }}
 */
export function hasLoss(run) {
  return num(run.lossPct) !== null;
}

/**
 * Distinct finite values, ascending.
 *
 * @param {unknown[]} values
 * @returns {number[]}
 */
export function distinctNumbers(values) {
  return [...new Set(values.map(num).filter((v) => v !== null))].sort((a, b) => a - b);
}

/**
 * Runs by cycle, ascending (runs without a cycle last, as one bucket).
 *
 * @param {Run[]} runs
 * @returns {{ cycleMs: number | null, runs: Run[] }[]}
 */
export function byCycle(runs) {
  const cycles = distinctNumbers(runs.map((run) => run.cycleMs));
  /** @type {{ cycleMs: number | null, runs: Run[] }[]} */
  const buckets = cycles.map((cycleMs) => ({ cycleMs, runs: runs.filter((run) => num(run.cycleMs) === cycleMs) }));
  const none = runs.filter((run) => num(run.cycleMs) === null);
  if (none.length) buckets.push({ cycleMs: null, runs: none });
  return buckets;
}

/**
 * A chart title's cycle part (` · cycle 167 ms`): when the report has
 * several cycles or this one is known.
 *
 * @param {number | null} cycleMs
 * @param {boolean} many whether the report has several cycles
 * @returns {string}
 */
export function cycleSuffix(cycleMs, many) {
  return many || cycleMs !== null ? ` · cycle ${fmt(cycleMs)} ms` : '';
}

/**
 * Series per (transport, group) of runs, with their style and label.
 *
 * @param {Run[]} runs
 * @param {Map<string, string>} colors
 * @returns {{ label: string, runs: (Run & { clients: number })[], style: Record<string, any>, color: string }[]}
 */
export function seriesOf(runs, colors) {
  const groups = distinctNumbers(runs.map((run) => run.group));
  const transports = new Set(runs.map((run) => String(run.transport ?? '?')));
  const modes = new Set(runs.map((run) => run.cycleMode ?? null));
  const reportsSet = new Set(runs.map((run) => run.reportsIntervalS ?? 0));
  return groupRuns(runs).map((entry) => {
    const color = colors.get(entry.transport) ?? EXTRA_COLORS[0];
    const groupIndex = entry.group === null ? groups.length : groups.indexOf(entry.group);
    const parts = [];
    if (transports.size > 1 || groups.length <= 1) parts.push(entry.transport);
    if (groups.length > 1 || transports.size === 1) parts.push(`group ${fmt(entry.group)}`);
    if (modes.size > 1 && entry.cycleMode) parts.push(entry.cycleMode);
    if (reportsSet.size > 1) parts.push(entry.reports ?? 'no reports');
    return {
      label: parts.join(' · '),
      runs: [...entry.runs].filter(hasClients).sort((a, b) => a.clients - b.clients),
      style: seriesStyle(color, groupIndex, Math.max(groups.length, 1)),
      color,
    };
  });
}

/**
 * How every bar of a grouped bar chart looks: translucent fill, a visible stub for zero.
 * @param {string} color
 */
export function barStyle(color) {
  return { backgroundColor: withAlpha(color, 0.75), borderColor: color, borderWidth: 1, minBarLength: 2 };
}

/**
 * Options of a grouped bar chart whose tooltip lists every bar of a category.
 * @param {string} xLabel
 * @param {string} yLabel
 */
export function groupedBarOptions(xLabel, yLabel) {
  const options = baseOptions(xLabel, yLabel, { xType: 'category' });
  options.interaction = { mode: 'index', intersect: false };
  return options;
}

/**
 * A number rounded to `digits` decimals, for the charts' plain JSON.
 *
 * @param {number} value
 * @param {number} [digits]
 * @returns {number}
 */
export function round(value, digits = 2) {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
