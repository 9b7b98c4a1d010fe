// The "Recovery from network events" section of tables.md and report.html
// (docs/architecture.md "Recovery"): one row per (run, event), and the chart
// with the events on the window's time axis.

import { NONE, fmt, isObject, markdownTable, netName, num } from './format.js';
import { carRuns, orderedRuns } from './runs.js';
import { EXTRA_COLORS, baseOptions, round } from './charts-common.js';

/** @typedef {import('./types.js').Run} Run */
/** @typedef {import('./charts-common.js').ChartSpec} ChartSpec */

/** Columns of the recovery table. */
export const RECOVERY_COLUMNS = Object.freeze([
  'Transport', 'Net', 'Size', 'Group', 'Event', 'At (s)', 'Back (s)', 'Moving', 'Recovered', 'Recovery p50', 'p99', 'max',
  'Out max', 'In max', 'Fell out', '% lost during', '% lost outside', 'p2p links back (run)',
]);

/** What the recovery columns mean. */
export const RECOVERY_LEGEND = 'Per network event of --net-events (docs/architecture.md "Recovery"), on the links of the '
  + 'moving members (Moving: how many). At / Back: when the change was made and when the network was back, seconds into the '
  + 'measured window. Recovery (ms, p50 / p99 / max over the moving members): from the network being back until the member\'s '
  + 'first update sent after it reached every neighbour (Out) and every neighbour\'s reached it (In), the later of the two; '
  + 'Recovered: members who got there. Fell out: members their neighbours saw leave. % lost during: of the updates sent '
  + 'to or from a moving member while the event changed the network; % lost outside (the run\'s, in every row): every other update. '
  + 'p2p links back: over the run, redials after a link failed / links moved onto the relay fallback / back onto a channel / ICE restarts.';

/**
 * The runs that played network events, in table order.
 * @param {Run[]} runs
 */
export function recoveryRuns(runs) {
  return orderedRuns(carRuns(runs).filter((run) => isObject(run.recovery) && !run.error));
}

/**
 * The rows of one run: one per event.
 * @param {Run} run
 * @returns {string[][]}
 */
export function recoveryRows(run) {
  const played = new Map((run.netEvents?.events ?? []).map((/** @type {any} */ e) => [e.index, e]));
  return (run.recovery?.events ?? []).map((/** @type {any} */ e) => {
    const p = played.get(e.index) ?? {};
    const s = (/** @type {unknown} */ ms) => (num(ms) === null ? NONE : fmt(/** @type {number} */ (ms) / 1000, 1));
    const head = [String(run.transport), netName(run) ?? NONE, fmt(run.clients), fmt(run.group), String(e.text ?? e.kind), s(p.beganMs ?? p.atMs), s(p.backMs)];
    const back = run.recovery?.linksBack;
    const links = back ? `${back.redials} / ${back.fallbacks} / ${back.recoveries} / ${back.iceRestarts}` : NONE;
    if (!e.happened) return [...head, fmt(run.recovery?.moving), 'did not happen', NONE, NONE, NONE, NONE, NONE, NONE, NONE, fmt(run.recovery?.lossOutside?.lossPct, 2), links];
    return [...head, fmt(e.members), fmt(e.recovered), fmt(e.recoveryMs?.p50), fmt(e.recoveryMs?.p99), fmt(e.recoveryMs?.max),
      fmt(e.outMs?.max), fmt(e.inMs?.max), fmt(e.fellOut), fmt(e.lostDuring?.lossPct, 2), fmt(run.recovery?.lossOutside?.lossPct, 2), links];
  });
}

/**
 * The section of tables.md: empty when no run played network events.
 * @param {Run[]} runs
 */
export function renderRecoveryTable(runs) {
  const rs = recoveryRuns(runs);
  if (!rs.length) return '';
  return ['## Recovery from network events', '', RECOVERY_LEGEND, '',
    markdownTable([...RECOVERY_COLUMNS], rs.flatMap(recoveryRows), RECOVERY_COLUMNS.map((_, i) => (i < 2 || i === 4 ? 'left' : 'right'))), ''].join('\n');
}

/**
 * Recovery on the window's time axis: per transport, each event's recovery p50
 * and max at the time its network was back; the events' spans are drawn as bands.
 * @param {Run[]} runs
 * @param {Map<string, string>} colors
 * @returns {Omit<ChartSpec, 'id' | 'kind'> | null}
 */
export function recoveryChart(runs, colors) {
  const rs = recoveryRuns(runs);
  if (!rs.length) return null;
  /** @type {any[]} */
  const datasets = [];
  for (const run of rs) {
    const color = colors.get(String(run.transport)) ?? EXTRA_COLORS[0];
    const played = new Map((run.netEvents?.events ?? []).map((/** @type {any} */ e) => [e.index, e]));
    const events = (run.recovery?.events ?? []).filter((/** @type {any} */ e) => e.happened && num(played.get(e.index)?.backMs) !== null);
    const label = `${run.transport} · ${fmt(run.clients)} clients`;
    const at = (/** @type {any} */ e) => round(/** @type {number} */ (played.get(e.index).backMs) / 1000, 2);
    for (const [which, shape] of /** @type {const} */ ([['max', 'triangle'], ['p50', 'circle']])) {
      datasets.push({
        label: `${label} · ${which}`,
        data: events.map((/** @type {any} */ e) => ({ x: at(e), y: round(num(e.recoveryMs?.[which]) ?? 0, 0) })),
        tips: events.map((/** @type {any} */ e) => `${e.text}: ${fmt(e.recovered)} of ${fmt(e.members)} back, ${fmt(e.fellOut)} fell out, ${fmt(e.lostDuring?.lossPct, 2)} % lost during`),
        borderColor: color, backgroundColor: color, pointStyle: shape, pointRadius: 5, showLine: false,
      });
    }
  }
  // the events themselves, as spans on the axis (from every run: they share the timeline)
  const spans = new Map();
  for (const run of rs) {
    for (const e of run.netEvents?.events ?? []) {
      const from = num(e.beganMs ?? e.atMs);
      const to = num(e.backMs);
      if (from !== null && to !== null && !spans.has(e.index)) spans.set(e.index, { text: e.text, from: round(from / 1000, 2), to: round(Math.max(to, from + 100) / 1000, 2) });
    }
  }
  for (const span of spans.values()) {
    datasets.push({
      label: span.text, data: [{ x: span.from, y: 0 }, { x: span.to, y: 0 }], tips: [span.text, span.text],
      borderColor: '#94a3b8', backgroundColor: '#94a3b8', borderWidth: 8, pointRadius: 0, showLine: true,
    });
  }
  return {
    title: 'Recovery from network events',
    subtitle: 'Time from the network being back until the moving members\' updates reach every neighbour and theirs reach them (ms), at the second of the window it was back; grey bars: the events.',
    config: { type: 'scatter', data: { datasets }, options: baseOptions('seconds into the measured window', 'recovery (ms)') },
  };
}
