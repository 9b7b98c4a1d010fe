// Every chart of report.html for a results object, in page order: the chart
// configurations are plain JSON built in Node (tested without a browser).

import { carRuns, runsOf } from './runs.js';
import { byCycle, transportColors } from './charts-common.js';
import { lossChart, rtChart, supportedChart } from './charts-rt.js';
import { cpuChart, setupChart } from './charts-setup-cpu.js';
import { freshnessChart } from './charts-freshness.js';
import { drawnCharts } from './charts-drawn.js';
import { recoveryChart } from './recovery-table.js';

/** @typedef {import('./types.js').Results} Results */
/** @typedef {import('./charts-common.js').ChartSpec} ChartSpec */

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
  for (const { kind, spec } of drawnCharts(runs)) add(kind, spec);
  add('recovery', recoveryChart(runs, colors));
  return charts;
}
