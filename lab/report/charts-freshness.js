// report.html's freshness charts (docs/architecture.md "Freshness"): fresh
// updates per stream per second and freeze p99, as grouped bars.

import { fmt, netName, num } from './format.js';
import { orderedRuns } from './runs.js';
import { EXTRA_COLORS, barStyle, groupedBarOptions, round, withAlpha } from './charts-common.js';

/** @typedef {import('./types.js').Run} Run */
/** @typedef {import('./charts-common.js').ChartSpec} ChartSpec */

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
export function freshnessChart(runs, colors, which) {
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
