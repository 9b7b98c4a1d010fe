// report.html's charts of what a run cost: connection setup delay per phase
// (signaling, the peer setup milestones) and CPU vs clients.

import { fmt, num } from './format.js';
import { describeDriver } from './runs.js';
import { baseOptions, cycleSuffix, round, scaleType, seriesOf, withAlpha } from './charts-common.js';

/** @typedef {import('./types.js').Run} Run */
/** @typedef {import('./charts-common.js').ChartSpec} ChartSpec */

/** @typedef {Record<string, unknown>} StatsRecord a statistics object as a run holds it (mean, dev, p50, ..., some with min) */

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
export function setupChart(runs) {
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
 * CPU vs clients on one cycle: per series (transport, group) the server's
 * line solid and the clients' dashed; null when no run has a CPU figure.
 *
 * @param {Run[]} runs
 * @param {number | null} cycleMs
 * @param {Map<string, string>} colors
 * @param {boolean} many
 * @returns {Omit<ChartSpec, 'id' | 'kind'> | null}
 */
export function cpuChart(runs, cycleMs, colors, many) {
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
