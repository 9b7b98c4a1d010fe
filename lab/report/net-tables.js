// The "Network conditions" part of tables.md and report.html: per profile x
// transport x cycle mode, RT mean and p99, loss, jitter, the ACKed-update rate
// and the receivers' freshness (fresh updates per stream per second, freeze p99) beside
// the calibrated loss and rate of the links, with calibration flags; plus
// charts (Chart.js configurations as plain JSON, drawn by the report's script).

import { fmt, markdownTable, netName, num } from './format.js';
import { transportInfo } from '../../core/transports.js';

const GRID = 'rgba(15, 23, 42, 0.08)';

/** @typedef {import('./types.js').Run} Run */

/**
 * One link direction: a profile's target or what calibration achieved.
 * @typedef {{ lossPct?: number | null, rateKbit?: number | null, delayMs?: number | null, jitterMs?: number | null }} NetLink
 */

/**
 * A run's `net` record (lab/net/network.js netRecord) as results.json holds it.
 * @typedef {object} NetRecord
 * @property {string} profile
 * @property {string} [description]
 * @property {string} [shape]
 * @property {{ up?: NetLink, down?: NetLink }} [target]
 * @property {number} [links]
 * @property {number[]} [peersPerLink]
 * @property {{ up?: NetLink, down?: NetLink, flagged?: boolean, flags: string[] }} [calibration]
 * @property {boolean} [flagged] calibration more than 20 % off the target
 */

/**
 * The run's network record, when it has one (a failed point keeps only the profile's name).
 * @param {Pick<Run, 'net'>} run
 * @returns {NetRecord | null}
 */
const netOf = (run) => (run.net && typeof run.net === 'object' ? run.net : null);

/** Columns of the network table. */
export const NET_COLUMNS = Object.freeze([
  'Profile', 'Transport', 'Mode', 'Clients', 'RT mean', 'RT p99', '% loss', 'Jitter', 'ACKed/s', 'Fresh/s', 'Freeze p99',
  'Loss up/down (achieved)', 'Rate up/down kbit/s (achieved)', 'Calibration',
]);

/** Index of the first and past the last numeric column, and of the calibration column. */
const NUM_FROM = 3;
const NUM_TO = 11;
const CALIBRATION = 13;

/** What the columns mean. */
export const NET_LEGEND = 'RT in ms. % loss: updates lost (ACKs apart). Jitter: RFC 3550, ms. '
  + 'ACKed/s: updates per client per second that every neighbour acknowledged (6 at most on a 167 ms cycle). '
  + 'Fresh/s: fresh updates applied per (receiver, sender) stream per second; freeze p99: the 99th percentile gap between '
  + 'them (ms), measured at the receivers. Mode: the action cycle (pipelined or gated). '
  + 'Achieved: the links\' loss (%) and rate per peer measured by the calibration probe before the point; '
  + '"off" when a figure is more than 20 % from the profile\'s target (beyond sampling error).';

/**
 * Updates per client per second that got every neighbour's ACK in the measured window.
 * @param {Pick<Run, 'rt' | 'durationS' | 'clients'>} run
 * @returns {number | null}
 */
export function ackedRate(run) {
  const n = num(run?.rt?.n);
  const s = num(run?.durationS);
  const c = num(run?.clients);
  return n === null || !s || !c ? null : n / s / c;
}

/** Runs that ran under a network profile (--net). @param {Run[]} runs */
export const netRuns = (runs) => runs.filter((r) => netName(r) !== null);

/** Achieved rate per peer where the profile sets one (else the link is not rate-limited). @param {Run} run @param {'up' | 'down'} d */
const rateOf = (run, d) => (netOf(run)?.target?.[d]?.rateKbit == null ? null : netOf(run)?.calibration?.[d]?.rateKbit ?? null);

/** @param {number | null | undefined} a @param {number | null | undefined} b @param {number} digits */
const pair = (a, b, digits) => (a === null && b === null ? '–' : `${fmt(a, digits)} / ${fmt(b, digits)}`);

/**
 * One row of the network table.
 * @param {Run} run
 * @returns {{ cells: string[], flagged: boolean }}
 */
export function netRow(run) {
  const cal = netOf(run)?.calibration;
  const flagged = Boolean(netOf(run)?.flagged);
  return {
    flagged,
    cells: [
      netName(run) ?? '–',
      String(run.transport),
      typeof run.cycleMode === 'string' ? run.cycleMode : '–',
      fmt(run.clients),
      run.error ? 'failed' : fmt(run.rt?.mean, 1),
      run.error ? '' : fmt(run.rt?.p99, 1),
      run.error ? '' : fmt(run.lossPct, 2),
      run.error ? '' : fmt(run.jitterMs, 2),
      run.error ? '' : fmt(ackedRate(run), 2),
      run.error ? '' : fmt(run.freshness?.updatesPerStreamPerS, 2),
      run.error ? '' : fmt(run.freshness?.freezeMs?.p99),
      cal ? pair(cal.up?.lossPct, cal.down?.lossPct, 2) : '–',
      cal ? pair(rateOf(run, 'up'), rateOf(run, 'down'), 0) : '–',
      cal ? (flagged ? `off: ${cal.flags.join('; ')}` : 'ok') : '–',
    ],
  };
}

/** Profiles in the order they ran, then rows in transport order. @param {Run[]} runs */
function ordered(runs) {
  const profiles = [...new Set(runs.map(netName))];
  return [...runs].sort((a, b) => profiles.indexOf(netName(a)) - profiles.indexOf(netName(b))
    || String(a.transport).localeCompare(String(b.transport)) || String(a.cycleMode ?? '').localeCompare(String(b.cycleMode ?? ''))
    || (a.clients ?? 0) - (b.clients ?? 0));
}

/**
 * The markdown section; empty when no run used --net.
 * @param {Run[]} runs
 */
export function renderNetTables(runs) {
  const rs = netRuns(runs);
  if (!rs.length) return '';
  const rows = ordered(rs).map((r) => netRow(r).cells);
  return ['## Network conditions', '', NET_LEGEND, '',
    markdownTable(NET_COLUMNS, rows, NET_COLUMNS.map((_, i) => (i < NUM_FROM || i >= NUM_TO ? 'left' : 'right'))), ''].join('\n');
}

/** @param {unknown} v */
function esc(v) {
  return String(v ?? '').replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

/**
 * A run's series in the charts: its transport, and its cycle mode when it has one.
 * @param {Run} run
 */
const seriesName = (run) => `${run.transport}${typeof run.cycleMode === 'string' ? ` · ${run.cycleMode}` : ''}`;

/**
 * Grouped bars: one group per profile, one bar per transport (x cycle mode).
 * @param {Run[]} rs
 * @param {string} kind
 * @param {string} title
 * @param {string} subtitle
 * @param {string} yTitle
 * @param {(run: Run) => number | null} value
 */
function barChart(rs, kind, title, subtitle, yTitle, value) {
  const profiles = [...new Set(rs.map(netName))];
  const series = [...new Set(rs.map(seriesName))];
  const datasets = series.map((name) => {
    const first = rs.find((r) => seriesName(r) === name);
    const color = transportInfo(String(first?.transport))?.color ?? '#64748b';
    const gated = first?.cycleMode === 'gated';
    const data = profiles.map((p) => {
      const hits = rs.filter((r) => netName(r) === p && seriesName(r) === name && !r.error);
      const v = hits.length ? value(hits[hits.length - 1]) : null;
      return v === null ? null : Math.round(v * 100) / 100;
    });
    // gated: the same colour, hollow, so a transport's two modes sit side by side
    return { label: name, data, backgroundColor: gated ? `${color}33` : `${color}bf`, borderColor: color, borderWidth: gated ? 2 : 1, minBarLength: 2 };
  });
  const axis = (/** @type {string} */ type, /** @type {string} */ text) => ({ type, ...(type === 'linear' ? { beginAtZero: true } : {}), title: { display: Boolean(text), text }, grid: { color: GRID } });
  return {
    kind, title, subtitle,
    config: {
      type: 'bar',
      data: { labels: profiles, datasets },
      options: {
        responsive: true, maintainAspectRatio: false, animation: false,
        interaction: { mode: 'index', intersect: false },
        plugins: { legend: { position: 'bottom', labels: { usePointStyle: true, boxWidth: 8, boxHeight: 8, padding: 14 } }, tooltip: {} },
        scales: { x: axis('category', 'network profile'), y: axis('linear', yTitle) },
      },
    },
  };
}

/**
 * The report.html section: charts per profile x transport and the table.
 * @param {Run[]} runs
 * @returns {{ html: string, nav: { href: string, label: string }[], charts: (ReturnType<typeof barChart> & { id: string })[] } | null}
 */
export function netReportSection(runs) {
  const rs = netRuns(runs);
  if (!rs.length) return null;
  const specs = [
    barChart(rs, 'net-p99', 'RT p99 per network profile', 'The slowest 1 % of updates until every neighbour ACKed (ms).', 'RT p99 (ms)', (r) => num(r.rt?.p99)),
    barChart(rs, 'net-rt', 'RT mean per network profile', 'Mean response time (ms).', 'RT mean (ms)', (r) => num(r.rt?.mean)),
    barChart(rs, 'net-loss', 'Updates lost per network profile', 'Lost updates (%); reliable transports retransmit and must show 0.', '% loss', (r) => num(r.lossPct)),
    barChart(rs, 'net-acked', 'ACKed updates per client per second', 'Updates every neighbour acknowledged, per client and second.', 'updates/s', ackedRate),
  ];
  if (rs.some((r) => r.freshness)) {
    specs.push(
      barChart(rs, 'net-fresh', 'Fresh updates per stream per second', 'Updates a receiver applied per sender and second (its own clock).', 'updates/s', (r) => num(r.freshness?.updatesPerStreamPerS)),
      barChart(rs, 'net-freeze', 'Freeze p99 per network profile', 'The 99th percentile gap between fresh updates at a receiver (ms).', 'freeze p99 (ms)', (r) => num(r.freshness?.freezeMs?.p99)),
    );
  }
  const charts = specs.map((s, i) => ({ id: `chart-net-${i + 1}-${s.kind}`, ...s }));
  const cards = charts.map((c) => `<figure class="card">
  <h3>${esc(c.title)}</h3>
  <p class="sub">${esc(c.subtitle)}</p>
  <div class="chart"><canvas id="${esc(c.id)}" data-kind="${esc(c.kind)}" role="img" aria-label="${esc(c.title)}"></canvas></div>
</figure>`);
  const rows = ordered(rs).map(netRow);
  const isNum = (/** @type {number} */ i) => i >= NUM_FROM && i < NUM_TO;
  const head = NET_COLUMNS.map((h, i) => `<th scope="col"${isNum(i) ? ' class="num"' : ''}>${esc(h)}</th>`).join('');
  const body = rows.map((row) => `<tr>${row.cells.map((c, i) => `<td${isNum(i) ? ' class="num"' : ''}${i === CALIBRATION && row.flagged ? ' class="bad"' : ''}>${esc(c)}</td>`).join('')}</tr>`).join('\n');
  const flagged = rows.filter((r) => r.flagged).length;
  const html = `<section id="network">
<h2>Network conditions</h2>
<p class="legend">${esc(NET_LEGEND)}${flagged ? ` ${flagged} point(s) ran on links more than 20 % off their profile: read them with care.` : ''}</p>
<div class="grid">
${cards.join('\n')}
</div>
<div class="card scroll"><table><thead><tr>${head}</tr></thead><tbody>
${body}
</tbody></table></div>
</section>`;
  return { html, nav: [{ href: '#network', label: 'Network' }], charts };
}
