/**
 * report.html: one self-contained page with charts (Chart.js inlined), the
 * CAR-paper tables, every run in detail and the environment. It opens from
 * file:// with no network at all: its Content-Security-Policy forbids every
 * request, Chart.js and the data are inline.
 *
 * Chart configurations are plain JSON built here, in Node, so they can be
 * tested without a browser; the page's own script only hands them to
 * Chart.js.
 *
 * @module lab/report-html
 */

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

import { TRANSPORTS, transportInfo } from '../../core/transports.js';
import { experimentReport } from './browsers-section.js';
import { isLabRun } from './browsers-tables.js';
import {
  FRESHNESS_COLUMNS,
  FRESHNESS_LEGEND,
  LOSS_LIMIT_PCT,
  SCALE_OUT_COLUMNS,
  SCALE_OUT_LEGEND,
  RT_LIMIT_MS,
  SUPPORTED_COLUMNS,
  SUPPORTED_LEGEND,
  TABLE_COLUMNS,
  TABLE_LEGEND,
  DEVICE_COLUMNS,
  DEVICE_LEGEND,
  RECORDING_COLUMNS,
  RECORDING_LEGEND,
  SOURCE_LEGEND,
  carRuns,
  describeDriver,
  deviceRow,
  freshnessRow,
  freshnessRuns,
  groupRuns,
  isFamilyRun,
  recordingGroupTitle,
  recordingGroups,
  recordingRow,
  recordingSummary,
  recordingsOf,
  showSources,
  sourceLabel,
  supportedBySource,
  isUnreliable,
  orderedRuns,
  runTables,
  runsOf,
  scaleOutRow,
  supportedClients,
  supportedRow,
  tableRow,
} from './output.js';
import { NONE, compareTransports, fmt, netName, num } from './format.js';
import { netReportSection } from './net-tables.js';

/** @typedef {import('./output.js').Results} Results */
/** @typedef {import('./output.js').Run} Run */
/** @typedef {import('./output.js').Stats} Stats */
/** @typedef {Record<string, unknown>} StatsRecord a statistics object as a run holds it (mean, dev, p50, ..., some with min) */

/**
 * @typedef {object} ChartSpec one chart of the report
 * @property {string} id the canvas element id
 * @property {'rt' | 'supported' | 'loss' | 'setup' | 'cpu' | 'fresh' | 'freeze'} kind
 * @property {string} title
 * @property {string} subtitle
 * @property {number} [height] canvas height in CSS pixels, when not the default
 * @property {Record<string, any>} config a Chart.js configuration, plain JSON; datasets may carry
 *   `tips` (per data point, extra tooltip lines)
 */

// ---------------------------------------------------------------------------
// Chart.js source

/** @type {string | null} */
let chartJsCache = null;

/**
 * Path of Chart.js's UMD build in node_modules.
 *
 * @returns {string}
 */
export function chartJsPath() {
  // chart.js exports no ./package.json; its CommonJS entry sits in dist/ beside the UMD build.
  const entry = createRequire(import.meta.url).resolve('chart.js');
  return path.join(path.dirname(entry), 'chart.umd.js');
}

/**
 * Chart.js's UMD build, read once, made safe to sit inside a <script> element.
 *
 * @returns {string}
 */
export function chartJsSource() {
  if (chartJsCache === null) chartJsCache = inlineScript(readFileSync(chartJsPath(), 'utf8'));
  return chartJsCache;
}

/**
 * JavaScript made safe for an inline <script>: no `</script` and no `<!--`
 * (both only ever appear inside strings or regexps, where `<\/` and `<\!`
 * mean the same).
 *
 * @param {string} code
 * @returns {string}
 */
export function inlineScript(code) {
  return code.replace(/<\/(script)/gi, '<\\/$1').replace(/<!--/g, '<\\!--');
}

// ---------------------------------------------------------------------------
// Escaping

/**
 * Text or an attribute value made safe for HTML.
 *
 * @param {unknown} value
 * @returns {string}
 */
export function escapeHtml(value) {
  return String(value ?? '').replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

/**
 * JSON for a `<script type="application/json">` element: `<`, `>`, `&` and
 * the JavaScript line separators are escaped, so no data can end the element.
 *
 * @param {unknown} value
 * @returns {string}
 */
export function jsonForScript(value) {
  return JSON.stringify(value ?? null)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

// ---------------------------------------------------------------------------
// Chart configurations

/** Colour per transport; unknown transports take {@link EXTRA_COLORS} in order. */
const TRANSPORT_COLORS = Object.fromEntries(TRANSPORTS.map((name) => [name, transportInfo(name)?.color ?? '']));
const EXTRA_COLORS = ['#0891b2', '#ca8a04', '#db2777', '#4b5563', '#65a30d', '#7c3aed'];

/** Point style per group size (in ascending order of the sizes in a chart). */
const POINT_STYLES = ['circle', 'rect', 'triangle', 'rectRot', 'star', 'crossRot'];

const LIMIT_COLOR = '#6b7280';
const GRID_COLOR = 'rgba(15, 23, 42, 0.08)';

/**
 * A colour for each transport in the results.
 *
 * @param {string[]} transports
 * @returns {Map<string, string>}
 */
function transportColors(transports) {
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
function withAlpha(hex, alpha) {
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
function scaleType(values, ratio = 20) {
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
function baseOptions(xTitle, yTitle, { xType = 'linear', yType = 'linear' } = {}) {
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
function hasLoss(run) {
  return num(run.lossPct) !== null;
}

/**
 * Distinct finite values, ascending.
 *
 * @param {unknown[]} values
 * @returns {number[]}
 */
function distinctNumbers(values) {
  return [...new Set(values.map(num).filter((v) => v !== null))].sort((a, b) => a - b);
}

/**
 * Runs by cycle, ascending (runs without a cycle last, as one bucket).
 *
 * @param {Run[]} runs
 * @returns {{ cycleMs: number | null, runs: Run[] }[]}
 */
function byCycle(runs) {
  const cycles = distinctNumbers(runs.map((run) => run.cycleMs));
  /** @type {{ cycleMs: number | null, runs: Run[] }[]} */
  const buckets = cycles.map((cycleMs) => ({ cycleMs, runs: runs.filter((run) => num(run.cycleMs) === cycleMs) }));
  const none = runs.filter((run) => num(run.cycleMs) === null);
  if (none.length) buckets.push({ cycleMs: null, runs: none });
  return buckets;
}

/**
 * The configurations of every chart for a results object: RT mean vs
 * clients (with the 250 ms line), loss % vs group size and CPU vs clients,
 * once per action cycle; setup delay when any run has setupMs. A chart with
 * no data is left out.
 *
 * @param {Results} results
 * @returns {ChartSpec[]}
 */
export function buildCharts(results) {
  // A recording's per-family runs are parts of its group's run: charted as the group only.
  const runs = carRuns(runsOf(results));
  const colors = transportColors(runs.map((run) => String(run.transport ?? '?')));
  const cycles = byCycle(runs);
  const many = cycles.length > 1;
  /** @type {ChartSpec[]} */
  const charts = [];
  const add = (/** @type {ChartSpec['kind']} */ kind, /** @type {Omit<ChartSpec, 'id' | 'kind'> | null} */ spec) => spec && charts.push({ id: `chart-${charts.length + 1}-${kind}`, kind, ...spec });

  for (const { cycleMs, runs: cycleRuns } of cycles) add('rt', rtChart(cycleRuns, cycleMs, colors, many));
  add('supported', supportedChart(runs, colors));
  for (const { cycleMs, runs: cycleRuns } of cycles) add('loss', lossChart(cycleRuns, cycleMs, colors, many));
  add('setup', setupChart(runs));
  for (const { cycleMs, runs: cycleRuns } of cycles) add('cpu', cpuChart(cycleRuns, cycleMs, colors, many));
  add('fresh', freshnessChart(runs, colors, 'fresh'));
  add('freeze', freshnessChart(runs, colors, 'freeze'));
  return charts;
}

/** A run's series in the freshness charts: transport, and cycle mode when it has one. @param {Run} run */
const freshSeries = (run) => `${String(run.transport ?? '?')}${typeof run.cycleMode === 'string' ? ` · ${run.cycleMode}` : ''}`;

/** A run's category in the freshness charts: network profile, population and group. @param {Run} run */
const freshCategory = (run) => `${netName(run) ?? 'no profile'} · ${fmt(run.clients)} clients · group ${fmt(run.group)}`;

/**
 * Grouped bars of the receivers' freshness (docs/architecture.md "Freshness"):
 * one category per (profile, clients, group), one bar per transport x cycle
 * mode; `fresh`: fresh updates per stream per second, `freeze`: freeze p99.
 * Gated bars are the transport's colour, hollow.
 * @param {Run[]} runs
 * @param {Map<string, string>} colors
 * @param {'fresh' | 'freeze'} which
 * @returns {Omit<ChartSpec, 'id' | 'kind'> | null}
 */
function freshnessChart(runs, colors, which) {
  const value = (/** @type {Run} */ run) => (which === 'fresh' ? num(run.freshness?.updatesPerStreamPerS) : num(run.freshness?.freezeMs?.p99));
  const rs = orderedRuns(runs.filter((run) => !run.error && value(run) !== null));
  if (!rs.length) return null;
  const categories = [...new Set(rs.map(freshCategory))];
  const series = [...new Set(rs.map(freshSeries))];
  const datasets = series.map((name) => {
    const first = /** @type {Run} */ (rs.find((run) => freshSeries(run) === name));
    const color = colors.get(String(first.transport ?? '?')) ?? EXTRA_COLORS[0];
    const cells = categories.map((c) => rs.filter((run) => freshSeries(run) === name && freshCategory(run) === c));
    const style = barStyle(color);
    return {
      label: name,
      data: cells.map((hits) => (hits.length ? round(/** @type {number} */ (value(hits[hits.length - 1])), 2) : null)),
      tips: cells.map((hits) => hits.map((run) => `freeze p50 ${fmt(run.freshness?.freezeMs?.p50)} ms, max ${fmt(run.freshness?.freezeMs?.max)} ms, ${fmt(run.freshness?.frozenPct, 2)} % frozen`)),
      ...style,
      ...(first.cycleMode === 'gated' ? { backgroundColor: withAlpha(color, 0.2), borderWidth: 2 } : {}),
    };
  });
  const options = groupedBarOptions('network profile · population', which === 'fresh' ? 'fresh updates / stream / s' : 'freeze p99 (ms)');
  return which === 'fresh'
    ? {
      title: 'Fresh updates per stream per second',
      subtitle: 'Updates a receiver applied per sender and second, on its own clock (6 at most on a 167 ms cycle). Hollow: gated cycle.',
      config: { type: 'bar', data: { labels: categories, datasets }, options },
    }
    : {
      title: 'Freeze p99',
      subtitle: 'The 99th percentile gap between fresh updates at a receiver (ms): how long an avatar stands still. Hollow: gated cycle.',
      config: { type: 'bar', data: { labels: categories, datasets }, options },
    };
}

/**
 * @param {number | null} cycleMs
 * @param {boolean} many whether the report has several cycles
 * @returns {string}
 */
function cycleSuffix(cycleMs, many) {
  return many || cycleMs !== null ? ` · cycle ${fmt(cycleMs)} ms` : '';
}

/**
 * Series per (transport, group) of runs, with their style and label.
 *
 * @param {Run[]} runs
 * @param {Map<string, string>} colors
 * @returns {{ label: string, runs: (Run & { clients: number })[], style: Record<string, any>, color: string }[]}
 */
function seriesOf(runs, colors) {
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
 * @param {Run[]} runs
 * @param {number | null} cycleMs
 * @param {Map<string, string>} colors
 * @param {boolean} many
 * @returns {Omit<ChartSpec, 'id' | 'kind'> | null}
 */
function rtChart(runs, cycleMs, colors, many) {
  const datasets = [];
  const xs = [];
  const ys = [RT_LIMIT_MS];
  for (const series of seriesOf(runs, colors)) {
    const points = series.runs.flatMap((run) => {
      const mean = num(run.rt?.mean);
      return run.rt && mean !== null ? [{ run, rt: run.rt, mean }] : [];
    });
    if (!points.length) continue;
    xs.push(...points.map(({ run }) => run.clients));
    ys.push(...points.map(({ mean }) => mean));
    datasets.push({
      label: series.label,
      data: points.map(({ run, mean }) => ({ x: run.clients, y: round(mean) })),
      tips: points.map(({ run, rt }) => [
        `Dev ${fmt(rt.dev)} ms · p95 ${fmt(rt.p95)} · p99 ${fmt(rt.p99)} · max ${fmt(rt.max)} ms`,
        `n ${fmt(rt.n)}${describeDriver(run) ? ` · ${describeDriver(run)}` : ''}`,
      ]),
      ...series.style,
    });
  }
  if (!datasets.length) return null;
  // The clients axis starts at zero; the limit spans all of it.
  const hi = Math.max(1, ...xs);
  datasets.push({
    label: `${RT_LIMIT_MS} ms limit`,
    data: [{ x: 0, y: RT_LIMIT_MS }, { x: hi, y: RT_LIMIT_MS }],
    tips: [['largest RT for a usable shared scene'], ['largest RT for a usable shared scene']],
    borderColor: LIMIT_COLOR,
    backgroundColor: LIMIT_COLOR,
    borderDash: [7, 5],
    borderWidth: 1.5,
    pointRadius: 0,
    pointHoverRadius: 0,
    pointStyle: 'line',
  });
  // Log scale only when the RTs span nearly two decades (e.g. loopback ms next to timeouts).
  const options = baseOptions('clients', 'RT mean (ms)', { yType: scaleType(ys, 60) });
  // Room above the limit line so it never sits on the frame.
  if (options.scales.y.type === 'linear') options.scales.y.suggestedMax = Math.round(RT_LIMIT_MS * 1.12);
  return {
    title: `Response time vs clients${cycleSuffix(cycleMs, many)}`,
    subtitle: `Mean RT per population; the dashed line is the ${RT_LIMIT_MS} ms limit.`,
    config: { type: 'line', data: { datasets }, options },
  };
}

/**
 * Supported clients (docs/architecture.md: the largest population with mean RT < 250 ms,
 * and loss < 2 % where unreliable) as grouped bars: one category per group
 * size (and cycle and network profile, when the runs have several), one bar
 * per transport. A transport that passed at none of its tested populations
 * gets a zero bar; the tooltip says which populations were tested.
 *
 * @param {Run[]} runs
 * @param {Map<string, string>} colors
 * @returns {Omit<ChartSpec, 'id' | 'kind'> | null}
 */
function supportedChart(runs, colors) {
  const entries = supportedClients(runs.filter((run) => num(run.rt?.mean) !== null)).filter((entry) => entry.smallest !== null);
  if (!entries.length) return null;
  const manyCycles = new Set(entries.map((entry) => entry.cycleMs)).size > 1;
  const manyNets = new Set(entries.map((entry) => entry.net ?? null)).size > 1;
  const categoryOf = (/** @type {import('./output.js').Supported} */ entry) => JSON.stringify([entry.group, entry.cycleMs, entry.net ?? null]);
  const categories = [...new Map(entries.map((entry) => [categoryOf(entry), entry])).values()].sort(
    (a, b) => (a.cycleMs ?? Infinity) - (b.cycleMs ?? Infinity) || (a.group ?? Infinity) - (b.group ?? Infinity) || String(a.net ?? '').localeCompare(String(b.net ?? '')),
  );
  const labels = categories.map((entry) => [
    `group ${fmt(entry.group)}`,
    ...(manyCycles ? [`${fmt(entry.cycleMs)} ms`] : []),
    ...(manyNets ? [entry.net ?? 'loopback'] : []),
  ].join(' · '));
  const transports = [...new Set(entries.map((entry) => entry.transport))].sort(compareTransports);
  const datasets = transports.map((transport) => {
    const color = colors.get(transport) ?? EXTRA_COLORS[0];
    const cells = categories.map((category) =>
      entries.find((entry) => entry.transport === transport && categoryOf(entry) === categoryOf(category)) ?? null);
    return {
      label: transport,
      data: cells.map((entry) => (entry ? entry.supported ?? 0 : null)),
      tips: cells.map((entry) => {
        if (!entry) return [];
        const tested = entry.smallest === entry.largest ? fmt(entry.smallest) : `${fmt(entry.smallest)}–${fmt(entry.largest)}`;
        const verdict = entry.supported === null
          ? `none passed (supported ${entry.label})`
          : entry.supported === entry.largest ? 'every tested population passed: the limit may be higher' : `${fmt(entry.supported)} supported`;
        return [`tested ${tested} clients`, verdict];
      }),
      ...barStyle(color),
    };
  });
  const options = groupedBarOptions('', 'supported clients');
  return {
    title: 'Supported clients per transport and group size',
    subtitle: `Largest tested population with mean RT < ${RT_LIMIT_MS} ms (and loss < ${LOSS_LIMIT_PCT} % where unreliable); a stub bar: none passed.`,
    config: { type: 'bar', data: { labels, datasets }, options },
  };
}

/**
 * How every bar of a grouped bar chart looks: translucent fill, a visible stub for zero.
 * @param {string} color
 */
function barStyle(color) {
  return { backgroundColor: withAlpha(color, 0.75), borderColor: color, borderWidth: 1, minBarLength: 2 };
}

/**
 * Options of a grouped bar chart whose tooltip lists every bar of a category.
 * @param {string} xLabel
 * @param {string} yLabel
 */
function groupedBarOptions(xLabel, yLabel) {
  const options = baseOptions(xLabel, yLabel, { xType: 'category' });
  options.interaction = { mode: 'index', intersect: false };
  return options;
}

/**
 * @param {Run[]} runs
 * @param {number | null} cycleMs
 * @param {Map<string, string>} colors
 * @param {boolean} many
 * @returns {Omit<ChartSpec, 'id' | 'kind'> | null}
 */
function lossChart(runs, cycleMs, colors, many) {
  const withLoss = runs.filter(hasLoss);
  if (!withLoss.length) return null;
  const groups = distinctNumbers(withLoss.map((run) => run.group));
  const hasNoGroup = withLoss.some((run) => num(run.group) === null);
  const keys = [...groups, ...(hasNoGroup ? [null] : [])];
  const transports = [...new Set(withLoss.map((run) => String(run.transport ?? '?')))].sort(compareTransports);
  const datasets = transports.map((transport) => {
    const color = colors.get(transport) ?? EXTRA_COLORS[0];
    const cells = keys.map((group) =>
      withLoss
        .filter((run) => String(run.transport ?? '?') === transport && num(run.group) === group)
        .sort((a, b) => (num(a.clients) ?? 0) - (num(b.clients) ?? 0)),
    );
    return {
      label: transport,
      data: cells.map((members) => (members.length ? round(Math.max(...members.map((run) => run.lossPct)), 3) : null)),
      tips: cells.map((members) => members.map((run) => `${fmt(run.clients)} clients: ${fmt(run.lossPct, 2)} %`)),
      ...barStyle(color),
    };
  });
  const options = groupedBarOptions('group size', 'loss % (worst population)');
  return {
    title: `Loss vs group size${cycleSuffix(cycleMs, many)}`,
    subtitle: `Worst loss % over the tested populations; unreliable transports are supported below ${LOSS_LIMIT_PCT} %, reliable ones must show 0.`,
    config: { type: 'bar', data: { labels: keys.map((group) => `group ${fmt(group)}`), datasets }, options },
  };
}

/** Names of the peer setup milestones the runners report under setupMs.phases. */
const PHASE_NAMES = { offerAnswerMs: 'offer/answer', iceConnectedMs: 'ICE connected', dtlsConnectedMs: 'DTLS connected', channelOpenMs: 'channel open' };

/**
 * Whether a value is a statistics object with something to plot.
 *
 * @param {unknown} value
 * @returns {value is StatsRecord}
 */
function isStats(value) {
  return value !== null && typeof value === 'object' && ['p50', 'p95', 'mean', 'max'].some((key) => num(/** @type {StatsRecord} */ (value)[key]) !== null);
}

/**
 * The setup delays of a run in timeline order: signaling, the peer setup
 * milestones (offer/answer, ICE, DTLS) when reported, peer setup (channel
 * open), then any other delay statistics. Non-delay parts (candidate types,
 * setup bytes) are left out.
 *
 * @param {unknown} setupMs a run's setupMs
 * @returns {[string, StatsRecord][]}
 */
export function setupPhases(setupMs) {
  if (!setupMs || typeof setupMs !== 'object') return [];
  const setup = /** @type {StatsRecord} */ (setupMs);
  const phases = /** @type {StatsRecord} */ (setup.phases && typeof setup.phases === 'object' ? setup.phases : {});
  /** @type {[string, StatsRecord][]} */
  const out = [];
  if (isStats(setup.signaling)) out.push(['signaling', setup.signaling]);
  for (const key of /** @type {const} */ (['offerAnswerMs', 'iceConnectedMs', 'dtlsConnectedMs'])) if (isStats(phases[key])) out.push([PHASE_NAMES[key], phases[key]]);
  if (isStats(setup.peer)) out.push([Object.keys(phases).length ? 'peer (channel open)' : 'peer', setup.peer]);
  else if (isStats(phases.channelOpenMs)) out.push([PHASE_NAMES.channelOpenMs, phases.channelOpenMs]);
  for (const [key, value] of Object.entries(setup)) {
    if (!['signaling', 'peer', 'phases', 'setupBytes'].includes(key) && isStats(value)) out.push([key, value]);
  }
  for (const [key, value] of Object.entries(phases)) {
    if (!Object.hasOwn(PHASE_NAMES, key) && isStats(value)) out.push([key.replace(/Ms$/, ''), value]);
  }
  return out;
}

/**
 * Setup delay per phase (signaling, peer, and any other phase a run
 * reports): a box from p50 to p95 with mean and max marks.
 *
 * @param {Run[]} runs
 * @returns {Omit<ChartSpec, 'id' | 'kind'> | null}
 */
function setupChart(runs) {
  const setupRuns = runs.filter((run) => setupPhases(run.setupMs).length > 0);
  /** @type {{ label: string | string[], stats: StatsRecord, run: Run }[]} */
  const rows = [];
  for (const run of setupRuns) {
    const who = [run.transport, describeDriver(run), num(run.clients) !== null ? `${run.clients} clients` : '']
      .filter(Boolean)
      .join(' · ');
    for (const [phase, stats] of setupPhases(run.setupMs)) rows.push({ label: setupRuns.length > 1 ? [phase, who] : phase, stats, run });
  }
  if (!rows.length) return null;
  const value = (/** @type {StatsRecord} */ stats, /** @type {string} */ key) => {
    const v = num(stats[key]);
    return v === null ? null : round(v);
  };
  const box = rows.map(({ stats }) => {
    const lo = value(stats, 'p50');
    const hi = value(stats, 'p95');
    if (lo === null && hi === null) return null;
    return [lo ?? hi, hi ?? lo];
  });
  const tips = rows.map(({ stats }) => [
    ['min', 'p50', 'p95', 'p99', 'max']
      .filter((key) => num(stats[key]) !== null)
      .map((key) => `${key} ${fmt(stats[key], 1)}`)
      .join(' · ') + ' ms',
    `mean ${fmt(stats.mean, 1)} ± ${fmt(stats.dev, 1)} ms${num(stats.n) !== null ? ` · n ${fmt(stats.n)}` : ''}`,
  ]);
  const marks = (/** @type {string} */ label, /** @type {string} */ key, /** @type {string} */ pointStyle, /** @type {string} */ color, /** @type {number} */ radius) => ({
    type: 'line',
    label,
    data: rows.map(({ stats }) => value(stats, key)),
    tips,
    showLine: false,
    pointStyle,
    // Whisker ticks across the horizontal boxes.
    rotation: pointStyle === 'line' ? 90 : 0,
    pointRadius: radius,
    pointHoverRadius: radius + 2,
    borderColor: color,
    backgroundColor: color,
    borderWidth: 2,
  });
  const datasets = [
    {
      type: 'bar',
      label: 'p50 – p95',
      data: box,
      tips,
      backgroundColor: withAlpha('#2563eb', 0.28),
      borderColor: '#2563eb',
      borderWidth: 1.5,
      borderSkipped: false,
      minBarLength: 3,
      barPercentage: 0.6,
      order: 2,
    },
    { ...marks('mean', 'mean', 'crossRot', '#111827', 6), order: 1 },
    { ...marks('max', 'max', 'line', '#dc2626', 9), order: 1 },
  ];
  if (rows.some(({ stats }) => num(stats.min) !== null)) datasets.push({ ...marks('min', 'min', 'line', '#16a34a', 9), order: 1 });
  const all = rows.flatMap(({ stats }) => ['min', 'p50', 'p95', 'mean', 'max'].map((key) => num(stats[key]))).filter((v) => v !== null);
  // Horizontal: phase and run names stay readable on the category axis.
  const options = baseOptions('delay (ms)', '', { xType: scaleType(all), yType: 'category' });
  options.indexAxis = 'y';
  options.interaction = { mode: 'index', axis: 'y', intersect: false };
  const only = setupRuns.length === 1 ? setupRuns[0] : null;
  const onlyName = only
    ? ` (${[only.transport, describeDriver(only), num(only.clients) !== null ? `${only.clients} clients` : ''].filter(Boolean).join(' · ')})`
    : '';
  return {
    title: 'Connection setup delay',
    subtitle: `Signaling (new Peer → open) and peer setup (connect → channel open)${onlyName}: box p50–p95, ✕ mean, | max${datasets.length > 3 ? ' and min' : ''}.`,
    config: { type: 'bar', data: { labels: rows.map((row) => row.label), datasets }, options },
    height: Math.max(300, 110 + rows.length * (setupRuns.length > 1 ? 58 : 52)),
  };
}

/**
 * @param {Run[]} runs
 * @param {number | null} cycleMs
 * @param {Map<string, string>} colors
 * @param {boolean} many
 * @returns {Omit<ChartSpec, 'id' | 'kind'> | null}
 */
function cpuChart(runs, cycleMs, colors, many) {
  const datasets = [];
  for (const series of seriesOf(runs, colors)) {
    for (const side of /** @type {const} */ (['server', 'clients'])) {
      const points = series.runs.flatMap((run) => {
        const cpu = num(run.cpu?.[side]);
        return cpu === null ? [] : [{ run, cpu }];
      });
      if (!points.length) continue;
      datasets.push({
        label: `${series.label} · ${side}`,
        data: points.map(({ run, cpu }) => ({ x: run.clients, y: round(cpu, 1) })),
        tips: points.map(({ run }) => [`${side === 'server' ? 'relay/server process' : 'browsers and generators'}${describeDriver(run) ? ` · ${describeDriver(run)}` : ''}`]),
        ...series.style,
        ...(side === 'clients' ? { borderDash: [5, 4], backgroundColor: '#ffffff' } : {}),
      });
    }
  }
  if (!datasets.length) return null;
  return {
    title: `CPU vs clients${cycleSuffix(cycleMs, many)}`,
    subtitle: 'Mean CPU % over the measured window (100 % = one core): server solid, clients dashed.',
    config: { type: 'line', data: { datasets }, options: baseOptions('clients', 'CPU %') },
  };
}

/**
 * @param {number} value
 * @param {number} [digits]
 * @returns {number}
 */
function round(value, digits = 2) {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

// ---------------------------------------------------------------------------
// HTML

/**
 * An HTML table.
 *
 * @param {readonly string[]} header
 * @param {{ cells: string[], classes?: string[] }[]} rows cells are text (escaped here)
 * @param {{ numeric?: boolean[], className?: string }} [opts]
 * @returns {string}
 */
function htmlTable(header, rows, { numeric = [], className = '' } = {}) {
  const cls = (/** @type {number} */ i, extra = '') => {
    const names = [numeric[i] ? 'num' : '', extra].filter(Boolean).join(' ');
    return names ? ` class="${escapeHtml(names)}"` : '';
  };
  const head = header.map((text, i) => `<th scope="col"${cls(i)}>${escapeHtml(text)}</th>`).join('');
  const body = rows
    .map(({ cells, classes = [] }) => `<tr>${cells.map((text, i) => `<td${cls(i, classes[i] ?? '')}>${escapeHtml(text)}</td>`).join('')}</tr>`)
    .join('\n');
  return `<table${className ? ` class="${escapeHtml(className)}"` : ''}><thead><tr>${head}</tr></thead><tbody>\n${body}\n</tbody></table>`;
}

/**
 * Classes flagging a run's RT and loss: `bad` over the limits, `warn` for
 * loss on a reliable transport (a bug by docs/architecture.md).
 *
 * @param {Run} run
 * @returns {{ rt: string, loss: string }}
 */
function flags(run) {
  const rt = num(run.rt?.mean);
  const loss = num(run.lossPct);
  let lossClass = '';
  if (loss !== null && loss > 0) lossClass = isUnreliable(run) ? (loss >= LOSS_LIMIT_PCT ? 'bad' : '') : 'warn';
  return { rt: rt !== null && rt >= RT_LIMIT_MS ? 'bad' : '', loss: lossClass };
}

/**
 * The channel parameters in a few words.
 *
 * @param {Run} run
 * @returns {string}
 */
function describeChannel(run) {
  const channel = run.channel;
  if (!channel || typeof channel !== 'object') return NONE;
  if (Array.isArray(channel.mixed)) return `mixed (${channel.mixed.length} settings)`;
  const parts = [];
  if (typeof channel.ordered === 'boolean') parts.push(channel.ordered ? 'ordered' : 'unordered');
  if (num(channel.maxRetransmits) !== null) parts.push(`rtx ${channel.maxRetransmits}`);
  else if (channel.maxRetransmits === null) parts.push('reliable');
  return parts.join(' · ') || NONE;
}

/**
 * The table of every run with all measurements.
 *
 * @param {Run[]} runs in table order
 * @returns {string}
 */
function runsTable(runs) {
  const candidates = (/** @type {Run} */ run) => {
    const types = run.setupMs?.candidateTypes;
    if (!types || typeof types !== 'object') return NONE;
    return Object.entries(types).map(([type, count]) => `${type} ${count}`).join(', ') || NONE;
  };
  /** @type {{ header: string, value: (run: Run) => string, numeric?: boolean, className?: string, present: (run: Run) => boolean }[]} */
  const optionalColumns = [
    { header: 'Candidates', value: candidates, numeric: false, present: (run) => candidates(run) !== NONE },
    { header: 'Peers/page', value: (run) => fmt(run.peersPerPage), present: (run) => num(run.peersPerPage) !== null },
    { header: 'Duration (s)', value: (run) => fmt(run.durationS, 1), present: (run) => num(run.durationS) !== null },
    { header: 'Error', value: (run) => String(run.error ?? ''), numeric: false, className: 'err', present: (run) => Boolean(run.error) },
  ];
  const optional = optionalColumns.filter(({ present }) => runs.some(present));
  const setup = (/** @type {Run} */ run, /** @type {'signaling' | 'peer'} */ phase) => fmt(run.setupMs?.[phase]?.p50 ?? run.setupMs?.[phase]?.mean);
  /** @type {{ header: string, value: (run: Run) => string, numeric?: boolean, flag?: 'rt' | 'loss', className?: string }[]} */
  const columns = [
    ...(runs.some((run) => sourceLabel(run) !== null) ? [{ header: 'Source', value: (/** @type {Run} */ run) => sourceLabel(run) ?? NONE }] : []),
    { header: 'Transport', value: (run) => String(run.transport ?? '?') },
    { header: 'Driver', value: (run) => describeDriver(run) || NONE },
    { header: 'Clients', value: (run) => fmt(run.clients), numeric: true },
    { header: 'Group', value: (run) => fmt(run.group), numeric: true },
    { header: 'Cycle (ms)', value: (run) => fmt(run.cycleMs), numeric: true },
    { header: 'RT mean', value: (run) => fmt(run.rt?.mean, 1), numeric: true, flag: 'rt' },
    { header: 'Dev', value: (run) => fmt(run.rt?.dev, 1), numeric: true },
    { header: 'p50', value: (run) => fmt(run.rt?.p50), numeric: true },
    { header: 'p95', value: (run) => fmt(run.rt?.p95), numeric: true },
    { header: 'p99', value: (run) => fmt(run.rt?.p99), numeric: true },
    { header: 'max', value: (run) => fmt(run.rt?.max), numeric: true },
    { header: 'n', value: (run) => fmt(run.rt?.n), numeric: true },
    { header: 'RTS mean', value: (run) => fmt(run.rts?.mean, 2), numeric: true },
    { header: 'RTS max', value: (run) => fmt(run.rts?.max, 1), numeric: true },
    { header: 'CPU server %', value: (run) => fmt(run.cpu?.server, 1), numeric: true },
    { header: 'CPU clients %', value: (run) => fmt(run.cpu?.clients, 1), numeric: true },
    { header: 'Loss %', value: (run) => fmt(run.lossPct, 2), numeric: true, flag: 'loss' },
    { header: 'ACK loss %', value: (run) => fmt(run.ackLossPct, 2), numeric: true },
    { header: 'Dups', value: (run) => fmt(run.dups), numeric: true },
    { header: 'Reorders', value: (run) => fmt(run.reorders), numeric: true },
    { header: 'Jitter (ms)', value: (run) => fmt(run.jitterMs, 2), numeric: true },
    { header: 'Channel', value: describeChannel },
    { header: 'Signaling p50', value: (run) => setup(run, 'signaling'), numeric: true },
    { header: 'Peer setup p50', value: (run) => setup(run, 'peer'), numeric: true },
    ...optional.map(({ header, value, numeric = true, className = '' }) => ({ header, value, numeric, className })),
  ];
  const rows = runs.map((run) => {
    const flagged = flags(run);
    return {
      cells: columns.map((column) => column.value(run)),
      classes: columns.map((column) => (column.flag ? flagged[column.flag] : (column.className ?? ''))),
    };
  });
  return htmlTable(
    columns.map((column) => column.header),
    rows,
    { numeric: columns.map((column) => Boolean(column.numeric)), className: 'wide' },
  );
}

/**
 * The environment as key/value rows: nested objects as dotted keys, arrays
 * of values joined, a CPU list summarised as `count × model`.
 *
 * @param {unknown} env
 * @returns {[string, string][]}
 */
export function envRows(env) {
  /** @type {[string, string][]} */
  const rows = [];
  const visit = (/** @type {unknown} */ value, /** @type {string} */ key) => {
    if (value === null || value === undefined) {
      if (key) rows.push([key, NONE]);
    } else if (Array.isArray(value)) {
      if (value.length && value.every((item) => item && typeof item === 'object' && typeof item.model === 'string')) {
        const counts = new Map();
        for (const { model } of value) counts.set(model, (counts.get(model) ?? 0) + 1);
        rows.push([key, [...counts].map(([model, count]) => `${count} × ${model.trim()}`).join(', ')]);
      } else {
        rows.push([key, value.map((item) => (item && typeof item === 'object' ? JSON.stringify(item) : String(item))).join(' ')]);
      }
    } else if (typeof value === 'object') {
      const entries = Object.entries(value);
      if (!entries.length && key) rows.push([key, '{}']);
      for (const [child, childValue] of entries) visit(childValue, key ? `${key}.${child}` : child);
    } else if (typeof value === 'number' && /bytes$/i.test(key) && value >= 2 ** 20) {
      rows.push([key, `${value} (${(value / 2 ** 30).toFixed(1)} GiB)`]);
    } else {
      rows.push([key || 'env', String(value)]);
    }
  };
  visit(env, '');
  return rows;
}

/**
 * A one-line summary of the results for the page header.
 *
 * @param {Run[]} runs
 * @returns {string}
 */
function headerSummary(runs) {
  const transports = [...new Set(runs.map((run) => String(run.transport ?? '?')))].sort(compareTransports);
  const clients = distinctNumbers(runs.map((run) => run.clients));
  const groups = distinctNumbers(runs.map((run) => run.group));
  const cycles = distinctNumbers(runs.map((run) => run.cycleMs));
  const parts = [`${runs.length} run${runs.length === 1 ? '' : 's'}`];
  if (transports.length) parts.push(transports.join(', '));
  if (clients.length) parts.push(`${clients[0]}${clients.length > 1 ? `–${clients[clients.length - 1]}` : ''} clients`);
  if (groups.length) parts.push(`group${groups.length > 1 ? 's' : ''} ${groups.join(', ')}`);
  if (cycles.length) parts.push(`cycle ${cycles.join(', ')} ms`);
  return parts.join(' · ');
}

const STYLE = `
:root { color-scheme: light; --fg: #1f2937; --muted: #6b7280; --line: #e5e7eb; --bg: #f5f6f8; --card: #fff; --accent: #2563eb; --bad: #b91c1c; --warn: #b45309; }
* { box-sizing: border-box; }
html { background: var(--bg); }
body { margin: 0; color: var(--fg); font: 14px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
header { background: #111827; color: #f9fafb; padding: 22px 32px 20px; }
header h1 { margin: 0; font-size: 22px; font-weight: 650; letter-spacing: 0.01em; }
header p { margin: 4px 0 0; color: #d1d5db; }
nav { display: flex; gap: 18px; padding: 10px 32px; overflow-x: auto; white-space: nowrap; background: #fff; border-bottom: 1px solid var(--line); position: sticky; top: 0; z-index: 1; }
nav a { color: var(--fg); text-decoration: none; font-weight: 550; }
nav a:hover { color: var(--accent); }
main { max-width: 1440px; margin: 0 auto; padding: 8px 32px 40px; }
section { margin-top: 26px; }
h2 { font-size: 18px; margin: 0 0 4px; }
h3 { font-size: 14px; margin: 0 0 2px; }
.legend, .sub { color: var(--muted); margin: 0 0 12px; font-size: 13px; }
.grid { display: grid; gap: 16px; grid-template-columns: repeat(auto-fit, minmax(520px, 1fr)); }
.tables { display: grid; gap: 16px; grid-template-columns: repeat(auto-fill, minmax(320px, 1fr)); }
.tables.tagged { grid-template-columns: repeat(auto-fill, minmax(480px, 1fr)); }
.stack { display: grid; gap: 16px; margin-bottom: 16px; }
h3.recording { font-size: 15px; margin: 18px 0 2px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 16px 18px; box-shadow: 0 1px 2px rgba(15, 23, 42, 0.04); min-width: 0; }
figure { margin: 0; }
.chart { position: relative; height: 340px; }
.scroll { overflow-x: auto; }
.fit { width: fit-content; max-width: 100%; }
.fit th, .fit td { padding-left: 14px; padding-right: 14px; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { padding: 5px 9px; border-bottom: 1px solid var(--line); text-align: left; white-space: nowrap; }
th { font-weight: 600; color: #374151; background: #f9fafb; border-bottom-color: #d1d5db; }
tbody tr:nth-child(even) td { background: #fafbfc; }
tbody tr:hover td { background: #eff6ff; }
.num { text-align: right; }
td.bad { color: var(--bad); font-weight: 650; }
td.warn { color: var(--warn); font-weight: 650; }
td.err { color: var(--bad); white-space: normal; min-width: 260px; }
table.wide { font-size: 13px; }
table.wide th, table.wide td { padding: 4px 7px; }
table.kv td:first-child { color: var(--muted); width: 1%; }
table.kv td:last-child { white-space: normal; word-break: break-word; font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 12.5px; }
.empty { color: var(--muted); font-style: italic; }
.chart-error { color: var(--bad); }
footer { color: var(--muted); font-size: 12px; text-align: center; padding: 0 32px 28px; }
@media (max-width: 640px) { .grid { grid-template-columns: 1fr; } main, header, nav { padding-left: 14px; padding-right: 14px; } }
@media print { nav { display: none; } .card { break-inside: avoid; box-shadow: none; } html { background: #fff; } }
`;

/** The page's own script: hands the JSON chart configurations to Chart.js. */
const CLIENT_SCRIPT = `
(function () {
  'use strict';
  var specs = JSON.parse(document.getElementById('carlab-charts').textContent);
  var charts = [];
  window.carlabCharts = charts;
  if (typeof Chart === 'undefined') {
    console.error('carlab report: Chart.js did not load');
    return;
  }
  Chart.defaults.font.family = getComputedStyle(document.body).fontFamily;
  Chart.defaults.color = '#374151';
  specs.forEach(function (spec) {
    var canvas = document.getElementById(spec.id);
    if (!canvas) return;
    var config = spec.config;
    // Legends in dataset order, whatever the drawing order.
    config.options.plugins.legend.labels.sort = function (a, b) { return a.datasetIndex - b.datasetIndex; };
    config.options.plugins.tooltip.callbacks = {
      afterLabel: function (ctx) {
        var tips = ctx.dataset.tips;
        return (tips && tips[ctx.dataIndex]) || '';
      }
    };
    try {
      charts.push(new Chart(canvas, config));
    } catch (err) {
      console.error('carlab report: chart ' + spec.id + ' failed: ' + (err && err.message));
      var note = document.createElement('p');
      note.className = 'chart-error';
      note.textContent = 'This chart could not be drawn: ' + (err && err.message);
      canvas.parentNode.replaceChild(note, canvas);
    }
  });
})();
`;

/**
 * The header line of a `carlab browsers` report.
 *
 * @param {Run[]} runs
 * @returns {string}
 */
function labSummary(runs) {
  const experiments = [...new Set(runs.map((run) => run.experiment).filter(Boolean))];
  const pairs = [...new Set(runs.map((run) => run.pair).filter(Boolean))];
  return `${runs.length} run${runs.length === 1 ? '' : 's'} · ${experiments.join(', ')}${pairs.length ? ` · ${pairs.join(', ')}` : ''}`;
}

/**
 * One card per chart: a canvas the client script draws on.
 *
 * @param {ChartSpec[]} charts
 * @returns {string}
 */
function chartCardsHtml(charts) {
  return charts
    .map(
      (chart) => `<figure class="card">
  <h3>${escapeHtml(chart.title)}</h3>
  <p class="sub">${escapeHtml(chart.subtitle)}</p>
  <div class="chart"${chart.height ? ` style="height: ${Math.round(chart.height)}px"` : ''}><canvas id="${escapeHtml(chart.id)}" data-kind="${escapeHtml(chart.kind)}" role="img" aria-label="${escapeHtml(chart.title)}"></canvas></div>
</figure>`,
    )
    .join('\n');
}

/**
 * One card per results table, flagged cells coloured.
 *
 * @param {ReturnType<typeof runTables>} tables
 * @returns {string}
 */
function tableCardsHtml(tables, tagged = false) {
  const columns = tagged ? ['Source', ...TABLE_COLUMNS] : [...TABLE_COLUMNS];
  return tables
    .map((table) => {
      const rows = table.runs.map((run) => {
        const flagged = flags(run);
        const cells = tableRow(run);
        const classes = ['', flagged.rt, '', '', '', flagged.loss];
        return tagged ? { cells: [sourceLabel(run) ?? NONE, ...cells], classes: ['', ...classes] } : { cells, classes };
      });
      return `<div class="card${tagged ? ' scroll' : ''}">
  <h3>${escapeHtml(table.title)}</h3>
  ${htmlTable(columns, rows, { numeric: columns.map((c) => c !== 'Source') })}
</div>`;
    })
    .join('\n');
}

/**
 * The sections of sweep (CAR) runs, in page order: charts, the network
 * section when runs ran under --net, tables, supported clients, all runs.
 *
 * @param {Results} results the sweep runs only
 * @param {{ html: string } | null} net
 * @param {ChartSpec[]} charts
 * @returns {string[]}
 */
function carSectionsHtml(results, net, charts) {
  const runs = runsOf(results);
  const tables = runTables(results);
  const tagged = showSources(carRuns(runs));
  // Every run: the tables' order, then the per-family runs of recordings.
  const ordered = [...tables.flatMap((table) => table.runs), ...runs.filter(isFamilyRun)];
  const supported = tagged
    ? supportedBySource(runs).map(({ source, entry }) => ({ cells: [source ?? NONE, ...supportedRow(entry)], classes: ['', '', '', '', '', entry.supported === null ? 'bad' : ''] }))
    : supportedClients(carRuns(runs)).map((entry) => ({ cells: supportedRow(entry), classes: ['', '', '', '', entry.supported === null ? 'bad' : ''] }));
  const supportedColumns = tagged ? ['Source', ...SUPPORTED_COLUMNS] : [...SUPPORTED_COLUMNS];
  return [
    `<section id="charts">
<h2>Charts</h2>
${charts.length ? `<noscript><p class="empty">The charts need JavaScript; the tables below do not.</p></noscript>\n<div class="grid">\n${chartCardsHtml(charts)}\n</div>` : '<p class="empty">No data to chart.</p>'}
</section>`,
    ...(net ? [net.html] : []),
    `<section id="tables">
<h2>Response time, CPU and loss</h2>
<p class="legend">${escapeHtml(TABLE_LEGEND)}${tagged ? ` ${escapeHtml(SOURCE_LEGEND)}` : ''} Red: mean RT ≥ ${RT_LIMIT_MS} ms or loss ≥ ${LOSS_LIMIT_PCT} % on an unreliable transport; amber: loss on a reliable transport.</p>
${tables.length ? `<div class="tables${tagged ? ' tagged' : ''}">\n${tableCardsHtml(tables, tagged)}\n</div>` : '<p class="empty">No runs.</p>'}
</section>`,
    ...freshnessSectionsHtml(runs),
    `<section id="supported">
<h2>Supported clients</h2>
<p class="legend">${escapeHtml(SUPPORTED_LEGEND)}</p>
${supported.length ? `<div class="card scroll fit">${htmlTable(supportedColumns, supported, { numeric: supportedColumns.map((_, i) => i >= supportedColumns.length - 4) })}</div>` : '<p class="empty">No runs.</p>'}
</section>`,
    `<section id="runs">
<h2>All runs</h2>
<p class="legend">Every measurement of every run, times in ms. The data is also in this file as JSON (script #carlab-results).</p>
${ordered.length ? `<div class="card scroll">${runsTable(ordered)}</div>` : '<p class="empty">No runs.</p>'}
</section>`,
  ];
}

/**
 * The freshness table (every run that measured it) and the scale-out table
 * (runs with `cluster` or `failover`); nothing for runs without them.
 * @param {Run[]} runs
 * @returns {string[]}
 */
export function freshnessSectionsHtml(runs) {
  const out = [];
  const fresh = freshnessRuns(runs);
  if (fresh.length) {
    const tagged = showSources(fresh);
    const columns = tagged ? ['Source', ...FRESHNESS_COLUMNS] : [...FRESHNESS_COLUMNS];
    const shift = tagged ? 1 : 0;
    const rows = fresh.map((run) => {
      const p99 = num(run.freshness?.freezeMs?.p99);
      const classes = columns.map(() => '');
      if (p99 !== null && p99 >= 1000) classes[8 + shift] = 'bad';
      return { cells: tagged ? [sourceLabel(run) ?? NONE, ...freshnessRow(run)] : freshnessRow(run), classes };
    });
    out.push(`<section id="freshness">
<h2>Freshness at the receiver</h2>
<p class="legend">${escapeHtml(FRESHNESS_LEGEND)}${tagged ? ` ${escapeHtml(SOURCE_LEGEND)}` : ''} Red: freeze p99 of 1 s or more.</p>
<div class="card scroll">${htmlTable(columns, rows, { numeric: columns.map((_, i) => i >= 3 + shift) })}</div>
</section>`);
  }
  const scale = orderedRuns(runs.filter((run) => (run.cluster && typeof run.cluster === 'object') || (run.failover && typeof run.failover === 'object')));
  if (scale.length) {
    out.push(`<section id="scale-out">
<h2>Scale-out</h2>
<p class="legend">${escapeHtml(SCALE_OUT_LEGEND)}</p>
<div class="card scroll">${htmlTable(SCALE_OUT_COLUMNS, scale.map((run) => ({ cells: scaleOutRow(run) })), { numeric: SCALE_OUT_COLUMNS.map((_, i) => i >= 3 && i !== 6) })}</div>
</section>`);
  }
  return out;
}

/**
 * The "Recordings" section: per recording, a card per (transport, group)
 * with a row per browser family and one for the whole group, then the
 * devices; null when the results hold no recording. Every value from the
 * data (client and group names, user agents) is escaped by htmlTable.
 *
 * @param {Results} results
 * @returns {string | null}
 */
export function recordingSectionHtml(results) {
  const recordings = recordingsOf(results);
  if (!recordings.length) return null;
  const runs = runsOf(results);
  const several = recordings.length > 1;
  const devices = Array.isArray(results.devices) ? results.devices.filter((d) => d && typeof d === 'object') : [];
  const parts = recordings.map((recording) => {
    const name = String(recording.name ?? '');
    const cards = recordingGroups(runs, several ? recording : null).map((entry) => {
      const rows = entry.runs.map((run) => {
        const flagged = flags(run);
        const classes = RECORDING_COLUMNS.map(() => '');
        classes[3] = flagged.rt;
        classes[8] = flagged.loss;
        if ((num(run.freshness?.freezeMs?.p99) ?? 0) >= 1000) classes[11] = 'bad';
        return { cells: recordingRow(run), classes };
      });
      return `<div class="card scroll">
  <h3>${escapeHtml(recordingGroupTitle(entry))}</h3>
  ${htmlTable(RECORDING_COLUMNS, rows, { numeric: RECORDING_COLUMNS.map((_, i) => i > 0) })}
</div>`;
    });
    const mine = devices.filter((d) => !several || String(d.sourceName ?? '') === name);
    const deviceCard = mine.length
      ? `<div class="card scroll">
  <h3>Devices</h3>
  <p class="sub">${escapeHtml(DEVICE_LEGEND)}</p>
  ${htmlTable(DEVICE_COLUMNS, mine.map((d) => ({ cells: deviceRow(d) })), { numeric: DEVICE_COLUMNS.map((_, i) => i === 9 || i === 10), className: 'wide' })}
</div>`
      : '<p class="empty">No devices recorded.</p>';
    return `<h3 class="recording">Recording ${escapeHtml(name)}</h3>
<p class="sub">${escapeHtml(recordingSummary(recording))}</p>
${cards.length ? `<div class="stack">\n${cards.join('\n')}\n</div>` : '<p class="empty">No session of this recording joined a group.</p>'}
${deviceCard}`;
  });
  return `<section id="recordings">
<h2>Recordings</h2>
<p class="legend">${escapeHtml(RECORDING_LEGEND)} Red: mean RT ≥ ${RT_LIMIT_MS} ms, loss ≥ ${LOSS_LIMIT_PCT} % on an unreliable transport, or freeze p99 of 1 s or more; amber: loss on a reliable transport.</p>
${parts.join('\n')}
</section>`;
}

/**
 * The environment section: results.json's env as a key/value table.
 *
 * @param {Results} results
 * @returns {string}
 */
function envSectionHtml(results) {
  const env = results && typeof results.env === 'object' ? results.env : null;
  const envTable = env ? envRows(env) : [];
  return `<section id="env">
<h2>Environment</h2>
${envTable.length ? `<div class="card scroll">${htmlTable(['Key', 'Value'], envTable.map((cells) => ({ cells })), { className: 'kv' })}</div>` : '<p class="empty">No environment recorded.</p>'}
</section>`;
}

/**
 * The page's navigation: the lab sections' links, then the sweep sections', then Environment.
 *
 * @param {{ href: string, label: string }[]} labLinks
 * @param {boolean} carSections
 * @param {boolean} hasNet
 * @param {{ freshness: boolean, scaleOut: boolean, recordings?: boolean }} [extra] sections present
 * @returns {string}
 */
function navHtml(labLinks, carSections, hasNet, extra = { freshness: false, scaleOut: false, recordings: false }) {
  const more = (extra.freshness ? '<a href="#freshness">Freshness</a>' : '') + (extra.scaleOut ? '<a href="#scale-out">Scale-out</a>' : '')
    + (extra.recordings ? '<a href="#recordings">Recordings</a>' : '');
  return `${labLinks.map((link) => `<a href="${escapeHtml(link.href)}">${escapeHtml(link.label)}</a>`).join('')}${carSections ? '<a href="#charts">Charts</a>' + (hasNet ? '<a href="#network">Network</a>' : '') + '<a href="#tables">Tables</a>' + more + '<a href="#supported">Supported clients</a><a href="#runs">All runs</a>' : ''}<a href="#env">Environment</a>`;
}

/**
 * The HTML document around the sections: styles, header, the results and
 * chart specs as JSON, Chart.js and the client script inlined.
 *
 * @param {{ title: string, summary: string, renderedAt: Date, nav: string, sections: string[], results: Results, charts: unknown[] }} page
 * @returns {string}
 */
function documentHtml({ title, summary, renderedAt, nav, sections, results, charts }) {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<link rel="icon" href="data:,">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<header>
<h1>${escapeHtml(title)}</h1>
<p>${escapeHtml(summary)} · rendered ${escapeHtml(renderedAt.toISOString().replace(/\.\d+Z$/, 'Z'))}</p>
</header>
<nav>${nav}</nav>
<main>
${sections.join('\n')}
</main>
<footer>carlab · charts by Chart.js (MIT), inlined: this file needs no network.</footer>
<script type="application/json" id="carlab-results">${jsonForScript(results)}</script>
<script type="application/json" id="carlab-charts">${jsonForScript(charts)}</script>
<script>${chartJsSource()}</script>
<script>${CLIENT_SCRIPT}</script>
</body>
</html>
`;
}

/**
 * The whole report: one self-contained HTML document.
 *
 * @param {Results} results
 * @param {{ title?: string, renderedAt?: Date }} [options]
 * @returns {string}
 */
export function renderReportHtml(results, { title = 'carlab results', renderedAt = new Date() } = {}) {
  const allResults = results;
  // `carlab browsers`: its experiments get their own sections (lab/report/browsers-section.js);
  // the CAR sections below show only the bench runs among them.
  const lab = runsOf(results).some(isLabRun) ? experimentReport(runsOf(results)) : null;
  if (lab) results = { ...results, runs: runsOf(results).filter((run) => !isLabRun(run)) };
  const runs = runsOf(results);
  const charts = buildCharts(results);
  const net = netReportSection(runs);
  const carSections = !lab || runs.length > 0;
  const recordings = recordingSectionHtml(results);
  const car = carSections ? carSectionsHtml(results, net, charts) : net ? [net.html] : [];
  // The recordings go after the CAR tables and freshness, before supported clients and all runs.
  if (recordings) car.splice(carSections ? Math.max(0, car.length - 2) : car.length, 0, recordings);
  const sections = [
    ...(lab ? [lab.html] : []),
    ...car,
    envSectionHtml(results),
  ];
  return documentHtml({
    title,
    summary: lab ? labSummary(runsOf(allResults)) : headerSummary(runs),
    renderedAt,
    nav: navHtml(lab ? lab.nav : [], carSections, Boolean(net), {
      freshness: freshnessRuns(runs).length > 0,
      scaleOut: runs.some((run) => Boolean(run.cluster || run.failover)),
      recordings: Boolean(recordings),
    }),
    sections,
    results: allResults,
    charts: [...charts, ...(lab?.charts ?? []), ...(net?.charts ?? [])],
  });
}
