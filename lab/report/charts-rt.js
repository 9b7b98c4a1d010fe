// report.html's response-time charts: RT mean vs clients (with the limit
// line), supported clients per transport and group size, and loss vs group
// size.

import { compareTransports, fmt, num } from './format.js';
import { describeDriver } from './runs.js';
import { LOSS_LIMIT_PCT, RT_LIMIT_MS, supportedClients } from './supported.js';
import {
  EXTRA_COLORS,
  LIMIT_COLOR,
  barStyle,
  baseOptions,
  cycleSuffix,
  distinctNumbers,
  groupedBarOptions,
  hasLoss,
  round,
  scaleType,
  seriesOf,
} from './charts-common.js';

/** @typedef {import('./types.js').Run} Run */
/** @typedef {import('./charts-common.js').ChartSpec} ChartSpec */

/**
 * RT mean vs clients on one cycle: a line per series (transport, group),
 * the RT limit dashed; null when no run has an RT mean.
 *
 * @param {Run[]} runs
 * @param {number | null} cycleMs
 * @param {Map<string, string>} colors
 * @param {boolean} many
 * @returns {Omit<ChartSpec, 'id' | 'kind'> | null}
 */
export function rtChart(runs, cycleMs, colors, many) {
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
export function supportedChart(runs, colors) {
  const entries = supportedClients(runs.filter((run) => num(run.rt?.mean) !== null)).filter((entry) => entry.smallest !== null);
  if (!entries.length) return null;
  const manyCycles = new Set(entries.map((entry) => entry.cycleMs)).size > 1;
  const manyNets = new Set(entries.map((entry) => entry.net ?? null)).size > 1;
  const categoryOf = (/** @type {import('./types.js').Supported} */ entry) => JSON.stringify([entry.group, entry.cycleMs, entry.net ?? null]);
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
 * Loss vs group size on one cycle: grouped bars, one per transport, each
 * the worst loss % over its populations; null when no run has a loss figure.
 *
 * @param {Run[]} runs
 * @param {number | null} cycleMs
 * @param {Map<string, string>} colors
 * @param {boolean} many
 * @returns {Omit<ChartSpec, 'id' | 'kind'> | null}
 */
export function lossChart(runs, cycleMs, colors, many) {
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
