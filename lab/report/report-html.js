/**
 * report.html: one self-contained page with charts (Chart.js inlined), the
 * CAR-paper tables, every run in detail and the environment. It opens from
 * file:// with no network at all: its Content-Security-Policy forbids every
 * request, Chart.js and the data are inline.
 *
 * This module puts the page together: its sections, navigation, styles and
 * the page's own script, which only hands the chart configurations
 * (charts.js, plain JSON built in Node) to Chart.js.
 *
 * @module lab/report-html
 */

import { experimentReport } from './browsers-section.js';
import { isLabRun } from './browsers-tables.js';
import { SUPPORTED_COLUMNS, SUPPORTED_LEGEND, TABLE_COLUMNS, TABLE_LEGEND, runTables, supportedRow, tableRow } from './output.js';
import { FRESHNESS_COLUMNS, FRESHNESS_LEGEND, freshnessRow, freshnessRuns } from './freshness-table.js';
import { RECOVERY_COLUMNS, RECOVERY_LEGEND, recoveryRows, recoveryRuns } from './recovery-table.js';
import { SLOWDOWN_COLUMNS, SLOWDOWN_LEGEND, slowdownRow, slowdownRuns } from './slowdown-table.js';
import { COST_COLUMNS, COST_LEGEND, costRow, costRuns } from './server-cost.js';
import { SCENE_LEGEND, sceneColumns, sceneRow, sceneRuns } from './scene-table.js';
import { DRAWN_COLUMNS, DRAWN_LEGEND, drawnRows } from './drawn.js';
import { SCALE_OUT_COLUMNS, SCALE_OUT_LEGEND, scaleOutRow } from './scale-out-tables.js';
import {
  DEVICE_COLUMNS,
  DEVICE_LEGEND,
  RECORDING_COLUMNS,
  RECORDING_LEGEND,
  deviceRow,
  recordingGroupTitle,
  recordingGroups,
  recordingRow,
  recordingSummary,
  recordingsOf,
} from './recording-tables.js';
import { SOURCE_LEGEND, carRuns, isFamilyRun, orderedRuns, runsOf, showSources, sourceLabel } from './runs.js';
import { LOSS_LIMIT_PCT, RT_LIMIT_MS, supportedBySource, supportedClients } from './supported.js';
import { NONE, compareTransports, num } from './format.js';
import { netReportSection } from './net-tables.js';
import { escapeHtml, jsonForScript } from './html-escape.js';
import { chartJsSource } from './chartjs-source.js';
import { buildCharts } from './charts.js';
import { distinctNumbers } from './charts-common.js';
import { envRows, flags, htmlTable, loadFlagNotesHtml, runsTable } from './html-tables.js';
import { loadFlagLabels } from './saturation.js';

/** @typedef {import('./types.js').Results} Results */
/** @typedef {import('./types.js').Run} Run */
/** @typedef {import('./charts-common.js').ChartSpec} ChartSpec */

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
ul.flags { margin: 10px 0 4px; padding-left: 18px; color: var(--warn); font-size: 13px; }
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
 * The saturated and unsettled notes under a table, on a line of their own; '' without.
 * @param {Run[]} runs
 */
function notesHtml(runs) {
  const notes = loadFlagNotesHtml(runs);
  return notes ? `\n  ${notes}` : '';
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
        const classes = [loadFlagLabels(run).length ? 'warn' : '', flagged.rt, '', '', '', flagged.loss];
        return tagged ? { cells: [sourceLabel(run) ?? NONE, ...cells], classes: ['', ...classes] } : { cells, classes };
      });
      return `<div class="card${tagged ? ' scroll' : ''}">
  <h3>${escapeHtml(table.title)}</h3>
  ${htmlTable(columns, rows, { numeric: columns.map((c) => c !== 'Source') })}${notesHtml(table.runs)}
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
<p class="legend">${escapeHtml(TABLE_LEGEND)}${tagged ? ` ${escapeHtml(SOURCE_LEGEND)}` : ''} Red: mean RT ≥ ${RT_LIMIT_MS} ms or loss ≥ ${LOSS_LIMIT_PCT} % on an unreliable transport; amber: loss on a reliable transport${runs.some((run) => loadFlagLabels(run).length) ? ', or a size marked [saturated] or [unsettled] (the notes under its table say why)' : ''}.</p>
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
  const recovering = recoveryRuns(runs);
  if (recovering.length) {
    const rows = recovering.flatMap(recoveryRows).map((cells) => {
      const classes = cells.map(() => '');
      if (cells[8] !== cells[7]) classes[8] = 'bad'; // a moving member that never got back
      if (cells[14] !== '0' && cells[14] !== '–') classes[14] = 'bad';
      return { cells, classes };
    });
    out.push(`<section id="recovery">
<h2>Recovery from network events</h2>
<p class="legend">${escapeHtml(RECOVERY_LEGEND)} Red: a member that did not get back, or fell out of its group.</p>
<div class="card scroll">${htmlTable([...RECOVERY_COLUMNS], rows, { numeric: RECOVERY_COLUMNS.map((_, i) => i >= 2 && i !== 4) })}</div>
</section>`);
  }
  const scene = sceneSectionHtml(runs);
  if (scene) out.push(scene);
  const drawn = drawnRows(runs);
  if (drawn.length) {
    out.push(`<section id="drawn">
<h2>Drawn error</h2>
<p class="legend">${escapeHtml(DRAWN_LEGEND)}</p>
<div class="card scroll">${htmlTable([...DRAWN_COLUMNS], drawn.map((cells) => ({ cells })), { numeric: DRAWN_COLUMNS.map((_, i) => i !== 0 && i !== 4 && i !== 5) })}</div>
</section>`);
  }
  const slow = slowdownRuns(runs);
  if (slow.length) {
    out.push(`<section id="slowdown">
<h2>Phone-speed peers</h2>
<p class="legend">${escapeHtml(SLOWDOWN_LEGEND)}</p>
<div class="card scroll">${htmlTable(SLOWDOWN_COLUMNS, slow.map((run) => ({ cells: slowdownRow(run) })), { numeric: SLOWDOWN_COLUMNS.map((_, i) => i >= 3 && i !== 6) })}</div>
</section>`);
  }
  const cost = costRuns(runs);
  if (cost.length) {
    out.push(`<section id="server-cost">
<h2>Server cost per delivered update</h2>
<p class="legend">${escapeHtml(COST_LEGEND)}</p>
<div class="card scroll">${htmlTable([...COST_COLUMNS], cost.map((run) => ({ cells: costRow(run, cost) })), { numeric: COST_COLUMNS.map((_, i) => i >= 3) })}</div>
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
 * The "Shared scene" section (runs with an edit workload), or '' when none edited.
 * @param {Run[]} runs
 * @returns {string}
 */
export function sceneSectionHtml(runs) {
  const scene = sceneRuns(runs);
  if (!scene.length) return '';
  const columns = sceneColumns(scene);
  const withSource = columns[0] === 'Source';
  const rows = scene.map((run) => {
    const s = /** @type {any} */ (run).scene;
    const classes = columns.map(() => '');
    if ((s.unconverged ?? 0) > 0) classes[columns.indexOf('Unconverged')] = 'bad';
    if ((s.atEnd?.disagreeing ?? 0) > 0) classes[columns.indexOf('Agree at end')] = 'bad';
    return { cells: sceneRow(run, withSource), classes };
  });
  const legend = withSource ? `${SCENE_LEGEND} ${SOURCE_LEGEND}` : SCENE_LEGEND;
  return `<section id="scene">
<h2>Shared scene</h2>
<p class="legend">${escapeHtml(legend)} Red: an edit that never converged, or a member whose scene differed from its group's at the end.</p>
<div class="card scroll">${htmlTable(columns, rows, { numeric: columns.map((_, i) => i >= (withSource ? 4 : 3)) })}</div>
</section>`;
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
 * @param {{ freshness: boolean, scaleOut: boolean, recordings?: boolean, drawn?: boolean }} [extra] sections present
 * @returns {string}
 */
function navHtml(labLinks, carSections, hasNet, extra = { freshness: false, scaleOut: false, recordings: false }) {
  const more = (extra.freshness ? '<a href="#freshness">Freshness</a>' : '') + (extra.drawn ? '<a href="#drawn">Drawn error</a>' : '') + (extra.scaleOut ? '<a href="#scale-out">Scale-out</a>' : '')
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
      drawn: drawnRows(runs).length > 0,
    }),
    sections,
    results: allResults,
    charts: [...charts, ...(lab?.charts ?? []), ...(net?.charts ?? [])],
  });
}
