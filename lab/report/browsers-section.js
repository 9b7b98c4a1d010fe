// The `carlab browsers` part of report.html: per experiment, charts like the
// study's figures (Chart.js configurations as plain JSON, drawn by the
// report's own script) and the same tables as tables.md. report-html.js
// calls experimentReport() when runs carry an `experiment`.

import { num } from './format.js';
import { byPair, experimentSections } from './browsers-tables.js';

const COLORS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#ca8a04', '#db2777'];
const PAIR_COLORS = { 'C-C': '#2563eb', 'F-F': '#ea580c', 'C-F': '#16a34a', 'F-C': '#9333ea', 'C+F': '#0891b2' };
const GRID = 'rgba(15, 23, 42, 0.08)';

/** @param {unknown} v */
function esc(v) {
  return String(v ?? '').replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

/** @param {string} pair @param {number} i */
const colorOf = (pair, i) => PAIR_COLORS[/** @type {keyof typeof PAIR_COLORS} */ (pair)] ?? COLORS[i % COLORS.length];
/** @param {unknown} v @param {number} [d] */
const r = (v, d = 2) => (num(v) === null ? null : Math.round(/** @type {number} */ (v) * 10 ** d) / 10 ** d);

/**
 * Chart options in the shape the report's script expects.
 * @param {string} xTitle
 * @param {string} yTitle
 * @param {{ xType?: string, stacked?: boolean }} [o]
 */
function options(xTitle, yTitle, o = {}) {
  const axis = (/** @type {string} */ type, /** @type {string} */ title) => ({
    type,
    ...(type === 'category' ? {} : { beginAtZero: true }),
    ...(o.stacked ? { stacked: true } : {}),
    title: { display: Boolean(title), text: title },
    grid: { color: GRID },
  });
  return {
    responsive: true,
    maintainAspectRatio: false,
    animation: false,
    interaction: { mode: 'index', intersect: false },
    plugins: { legend: { position: 'bottom', labels: { usePointStyle: true, boxWidth: 8, boxHeight: 8, padding: 14 } }, tooltip: {} },
    scales: { x: axis(o.xType ?? 'category', xTitle), y: axis('linear', yTitle) },
  };
}

/**
 * @param {string} label
 * @param {(number | null)[]} data
 * @param {string} color
 * @param {string[][]} [tips]
 * @param {Record<string, any>} [extra]
 */
function bars(label, data, color, tips, extra = {}) {
  return { label, data, tips, backgroundColor: `${color}bf`, borderColor: color, borderWidth: 1, minBarLength: 2, ...extra };
}

/**
 * @param {string} label
 * @param {{ x: number, y: number | null }[]} data
 * @param {string} color
 * @param {string[][]} [tips]
 */
function line(label, data, color, tips) {
  return { label, data, tips, borderColor: color, backgroundColor: color, pointRadius: 3, borderWidth: 2, tension: 0 };
}

/** @param {any} s */
const tipOf = (s) => (s ? [`mean ${r(s.mean, 1)} ± ${r(s.dev, 1)} · p50 ${r(s.p50, 1)} · p95 ${r(s.p95, 1)} · n ${s.n}`] : []);

/** @param {any[]} runs */
function setupCharts(runs) {
  const pairs = [...new Set(runs.map((x) => x.pair))];
  const find = (/** @type {string} */ pair, /** @type {boolean} */ hide) => runs.find((x) => x.pair === pair && Boolean(x.hideHostAddresses) === hide);
  const datasets = [];
  const phases = [['offerAnswer', 'offer/answer'], ['iceConnected', 'ICE connected'], ['dtlsConnected', 'DTLS connected'], ['peer', 'channel open']];
  for (const hide of [false, true]) {
    if (!pairs.some((p) => find(p, hide))) continue;
    const suffix = hide ? ' (obfuscated)' : '';
    const style = (/** @type {string} */ color) => (hide ? { backgroundColor: `${color}55`, borderDash: [4, 3] } : {});
    datasets.push(bars(`signaling${suffix}`, pairs.map((p) => r(find(p, hide)?.setupMs?.signaling?.mean, 1)), COLORS[5],
      pairs.map((p) => tipOf(find(p, hide)?.setupMs?.signaling)), style(COLORS[5])));
    phases.forEach(([key, name], k) => {
      datasets.push(bars(`${name}${suffix}`, pairs.map((p) => r(find(p, hide)?.setupMs?.[key]?.mean, 1)), COLORS[k],
        pairs.map((p) => tipOf(find(p, hide)?.setupMs?.[key])), style(COLORS[k])));
    });
  }
  return [{
    kind: 'setup',
    title: 'Setup delay per browser pair',
    subtitle: 'Means in ms: signaling open, then the peer setup phases measured from connect (each bar ends at that phase).',
    config: { type: 'bar', data: { labels: pairs, datasets }, options: options('pair (initiator-receiver)', 'ms') },
  }];
}

/** @param {any[]} runs */
function overheadCharts(runs) {
  const labels = [];
  const rows = [];
  for (const x of runs) {
    for (const role of ['initiator', 'receiver']) {
      labels.push(`${x.pair} ${role === 'initiator' ? 'init.' : 'recv.'} (${x[role]?.browser === 'firefox' ? 'F' : 'C'})`);
      rows.push(x[role] ?? {});
    }
  }
  const sig = (/** @type {any} */ e, /** @type {string} */ k) => (num(e.signalingOpen?.[k]?.mean) === null ? null : r(e.signalingOpen[k].mean + (e.signalingSetup?.[k]?.mean ?? 0), 0));
  const p2p = (/** @type {any} */ e, /** @type {string} */ k) => r((e.wire ?? e.p2p)?.[k]?.mean, 0);
  const datasets = [
    bars('signaling sent', rows.map((e) => sig(e, 'sent')), COLORS[0], undefined, { stack: 'sent' }),
    bars('peer-to-peer sent', rows.map((e) => p2p(e, 'sent')), COLORS[2], undefined, { stack: 'sent' }),
    bars('signaling received', rows.map((e) => sig(e, 'received')), COLORS[4], undefined, { stack: 'received' }),
    bars('peer-to-peer received', rows.map((e) => p2p(e, 'received')), COLORS[3], undefined, { stack: 'received' }),
  ];
  return [{
    kind: 'overhead',
    title: 'Setup overhead until the channel opens',
    subtitle: 'Bytes per end, means: signaling (PeerServer WebSocket) stacked with peer-to-peer (wire, or getStats without wire).',
    config: { type: 'bar', data: { labels, datasets }, options: options('', 'bytes', { stacked: true }) },
  }];
}

/** @param {any[]} runs */
function keepaliveCharts(runs) {
  const labels = [];
  const rows = [];
  for (const x of runs) {
    for (const role of ['initiator', 'receiver']) {
      labels.push(`${x.pair} ${role === 'initiator' ? 'init.' : 'recv.'} (${x[role]?.browser === 'firefox' ? 'F' : 'C'})`);
      rows.push(x[role] ?? {});
    }
  }
  const wire = rows.some((e) => num(e.wireKbitSent?.mean) !== null);
  return [{
    kind: 'keepalive',
    title: 'Idle keepalive per connection',
    subtitle: wire ? 'kbit/s sent on the wire (UDP incl. headers) and STUN Binding requests/s sent, means over connections.'
      : 'kbit/s sent (getStats payload) and STUN requests/s sent, means over connections.',
    config: {
      type: 'bar',
      data: {
        labels,
        datasets: [
          bars('kbit/s sent', rows.map((e) => r((wire ? e.wireKbitSent : e.payloadKbitSent)?.mean, 3)), COLORS[0]),
          bars('STUN requests/s sent', rows.map((e) => r((wire ? e.wireStunRequestsSent : e.requestsSent)?.mean, 3)), COLORS[1]),
        ],
      },
      options: options('', 'per second'),
    },
  }];
}

/** @param {any[]} runs */
function memoryCharts(runs) {
  const mb = (/** @type {any} */ m) => r((m?.ussBytes ?? m?.rssBytes) / 1e6, 1);
  const datasets = runs.map((x, i) => line(`${x.pair} (${x.client})`, [
    { x: 0, y: mb(x.m0) },
    ...(x.steps ?? []).map((/** @type {any} */ s) => ({ x: s.connections, y: mb(s) })),
  ], colorOf(x.pair, i), [['m_0'], ...(x.steps ?? []).map((/** @type {any} */ s) => [`PSS ${r(s.pssBytes / 1e6, 1)} MB · RSS ${r(s.rssBytes / 1e6, 1)} MB`])]));
  return [{
    kind: 'memory',
    title: 'Client browser memory vs idle connections',
    subtitle: 'Process-tree USS (private memory) in MB as idle connections are added; the last point is m_max at d_max.',
    config: { type: 'line', data: { datasets }, options: options('idle connections', 'USS (MB)', { xType: 'linear' }) },
  }];
}

/** @param {any[]} runs */
function cpuCharts(runs) {
  const datasets = runs.map((x, i) => line(`${x.pair} (${x.client})`, (x.steps ?? []).map((/** @type {any} */ s) => ({ x: s.k, y: r(s.clientCpuPct, 1) })),
    colorOf(x.pair, i), (x.steps ?? []).map((/** @type {any} */ s) => [`${r(s.throughputMBps, 1)} MB/s received · server CPU ${r(s.serverCpuPct, 1)} %`])));
  return [{
    kind: 'cpu',
    title: 'Client CPU under k simultaneous transfers',
    subtitle: 'Client browser process-tree CPU % (100 % = one core) per number of concurrent endless transfers.',
    config: { type: 'line', data: { datasets }, options: options('k (concurrent transfers)', 'CPU %', { xType: 'linear' }) },
  }];
}

/** @param {any[]} runs */
function transferCharts(runs) {
  const approaches = runs[0]?.approaches ?? [];
  const datasets = runs.map((x, i) => bars(`${x.pair}`, approaches.map((/** @type {any} */ a) => r((x.approaches ?? []).find((/** @type {any} */ y) => y.id === a.id)?.ms?.mean, 1)),
    colorOf(x.pair, i), approaches.map((/** @type {any} */ a) => tipOf((x.approaches ?? []).find((/** @type {any} */ y) => y.id === a.id)?.ms))));
  return [{
    kind: 'transfer',
    title: 'File-transfer approaches',
    subtitle: 'Mean ms to transfer the file (to the last ACK) per approach and pair; Dev in the tooltip.',
    config: { type: 'bar', data: { labels: approaches.map((/** @type {any} */ a) => a.label), datasets }, options: options('', 'ms') },
  }];
}

/** @param {any[]} runs */
function carCharts(runs) {
  const labels = runs.map((x) => `${x.pair ?? x.browser} · ${x.transport}`);
  return [{
    kind: 'car',
    title: 'Location-update RT per browser fleet',
    subtitle: 'Mean RT in ms; Dev, loss and jitter in the tooltip.',
    config: {
      type: 'bar',
      data: {
        labels,
        datasets: [bars('RT mean', runs.map((x) => r(x.rt?.mean, 1)), COLORS[0],
          runs.map((x) => [`Dev ${r(x.rt?.dev, 1)} · p95 ${r(x.rt?.p95, 1)} ms`, `loss ${r(x.lossPct, 2)} % · jitter ${r(x.jitterMs, 2)} ms`]))],
      },
      options: options('', 'RT (ms)'),
    },
  }];
}

const CHARTS = { setup: setupCharts, overhead: overheadCharts, keepalive: keepaliveCharts, memory: memoryCharts, cpu: cpuCharts, transfer: transferCharts, car: carCharts };

/**
 * @param {string[]} header
 * @param {string[][]} rows
 * @param {('left' | 'right')[]} align
 */
function htmlTable(header, rows, align) {
  const cls = (/** @type {number} */ i) => (align[i] === 'right' ? ' class="num"' : '');
  return `<table class="wide"><thead><tr>${header.map((h, i) => `<th scope="col"${cls(i)}>${esc(h)}</th>`).join('')}</tr></thead><tbody>\n`
    + `${rows.map((row) => `<tr>${row.map((c, i) => `<td${cls(i)}>${esc(c)}</td>`).join('')}</tr>`).join('\n')}\n</tbody></table>`;
}

/**
 * The experiment sections of report.html.
 * @param {any[]} runs every run of the results
 * @returns {{ html: string, nav: { href: string, label: string }[], charts: any[] }}
 */
export function experimentReport(runs) {
  const sections = experimentSections(runs);
  /** @type {any[]} */
  const charts = [];
  const nav = [];
  const html = [];
  for (const section of sections) {
    const rs = runs.filter((x) => x?.experiment === section.experiment && !x.error).sort(byPair);
    const specs = rs.length ? CHARTS[/** @type {keyof typeof CHARTS} */ (section.experiment)](rs) : [];
    const cards = specs.map((spec) => {
      const id = `chart-lab-${charts.length + 1}-${spec.kind}`;
      charts.push({ id, ...spec });
      return `<figure class="card">
  <h3>${esc(spec.title)}</h3>
  <p class="sub">${esc(spec.subtitle)}</p>
  <div class="chart"><canvas id="${esc(id)}" data-kind="${esc(spec.kind)}" role="img" aria-label="${esc(spec.title)}"></canvas></div>
</figure>`;
    });
    const tables = section.tables.map((t) => `<div class="card scroll">
  <h3>${esc(t.title)}</h3>
  ${t.legend ? `<p class="legend">${esc(t.legend)}</p>` : ''}
  ${htmlTable(t.header, t.rows, t.align)}
</div>`);
    const anchor = `lab-${section.experiment}`;
    nav.push({ href: `#${anchor}`, label: section.title });
    html.push(`<section id="${esc(anchor)}">
<h2>${esc(section.title)}</h2>
<p class="legend">${esc(section.intro)}</p>
${cards.length ? `<div class="grid">\n${cards.join('\n')}\n</div>` : ''}
${tables.join('\n')}
</section>`);
  }
  return { html: html.join('\n'), nav, charts };
}
