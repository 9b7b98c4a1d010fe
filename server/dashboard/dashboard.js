/**
 * The live study dashboard page (served by server/dashboard.js): one card
 * per working group with a table of its members and two charts, kept current
 * from the server's event feed (a snapshot, then deltas). Every value that
 * came from a report or a person (names, groups, user agents) is put in the
 * page as text (textContent), never as markup. Rows are updated in place.
 *
 * The token is read from this page's own address and used only in the feed's
 * URL.
 */

/** @typedef {import('../live-study.js').StudySnapshot} StudySnapshot */
/** @typedef {import('../live-study.js').StudyDelta} StudyDelta */
/** @typedef {import('../live-study.js').GroupView} GroupView */
/** @typedef {import('../live-study.js').MemberRow} MemberRow */
/** @typedef {import('../live-study.js').SeriesPoint} SeriesPoint */
/** @typedef {{ x: number, y: number }} XY */
/** @typedef {import('chart.js').Chart<'line', XY[]>} LineChart */

/** The charts show this much time (the server keeps as much). */
const SERIES_MS = 30 * 60_000;
/** Loss above this is marked (docs/architecture.md "Supported clients"). */
const LOSS_MARK_PCT = 2;
/** RT above this is marked (core/defaults.js RT limit). */
const RT_MARK_MS = 250;
/** After the feed failed for good (an HTTP error), try again this often. */
const RETRY_MS = 5000;
/** A member whose newest RT mean is over this many times its group's stands out (and over RT_MARK_MS). */
const STRUGGLE_RATIO = 2;
/** A member whose newest frozen share is over this stands out in the freshness chart (%). */
const FROZEN_MARK_PCT = 5;
/** Members' line colours, in client id order; the group's line is dark, a struggling member's red. */
const PALETTE = ['#2563eb', '#059669', '#d97706', '#7c3aed', '#0891b2', '#db2777', '#65a30d', '#9ca3af'];
const GROUP_COLOUR = '#111827';
const STRUGGLE_COLOUR = '#dc2626';

/**
 * @typedef {object} Column
 * @property {string} id
 * @property {string} label
 * @property {string} [title] tooltip of the header
 * @property {boolean} [num] right-aligned figures
 */

/** @type {Column[]} */
const COLUMNS = [
  { id: 'id', label: '#', title: 'client id', num: true },
  { id: 'name', label: 'Name' },
  { id: 'browser', label: 'Browser' },
  { id: 'os', label: 'OS' },
  { id: 'device', label: 'Device', title: 'device class and network type' },
  { id: 'transport', label: 'Transport', title: 'transport and action cycle' },
  { id: 'paths', label: 'Paths', title: 'per link: how updates travel (p2p)' },
  { id: 'rtLast', label: 'RT last', title: 'newest round trip (ms)', num: true },
  { id: 'rtMean', label: 'RT mean', title: 'mean round trip over the session (ms)', num: true },
  { id: 'rtP95', label: 'RT p95', title: '95th percentile round trip (ms)', num: true },
  { id: 'loss', label: 'Loss %', title: 'updates lost on the streams into this member', num: true },
  { id: 'ups', label: 'Upd/s', title: 'fresh updates per stream per second', num: true },
  { id: 'frozen', label: 'Frozen %', title: 'share of stream time in freezes over 1 s', num: true },
  { id: 'state', label: 'State', title: 'stale: a neighbour froze for over 1 s, or the member went silent' },
  { id: 'scene', label: 'Scene', title: 'shared scene: objects held; in sync when every neighbour\'s scene digest equalled its own' },
  { id: 'behind', label: 'Drawn behind', title: 'how far behind their present it draws its neighbours, ms (mean over the session)', num: true },
  { id: 'held', label: 'Held %', title: 'share of time it drew a neighbour held still: updates lost or late past the playout\'s limit', num: true },
  { id: 'jumps', label: 'Jumps/min', title: 'frames where a neighbour\'s drawing moved well beyond what its updates say it moved', num: true },
  { id: 'fps', label: 'fps', title: 'tracking frames per second', num: true },
  { id: 'marker', label: 'Marker %', title: 'frames with the marker visible', num: true },
  { id: 'node', label: 'Node', title: 'server node the member reports to' },
  { id: 'ago', label: 'Report', title: 'time since its newest report', num: true },
];

/**
 * @typedef {object} RowView
 * @property {HTMLTableRowElement} tr
 * @property {Record<string, HTMLTableCellElement>} cells
 * @property {MemberRow} row
 * @property {number} receivedAt performance.now() when `row` arrived
 * @property {Card} card
 */

/**
 * @typedef {object} Card
 * @property {string} group
 * @property {HTMLElement} el
 * @property {HTMLElement} count
 * @property {HTMLTableSectionElement} tbody
 * @property {Map<string, RowView>} rows by member key
 * @property {Map<number, string>} names client id -> name, for paths and stale neighbours
 * @property {Map<string, { name: string, clientId: number }>} members member key -> its name and id, kept
 *   after it left (its line stays in the charts)
 * @property {SeriesPoint[]} series oldest first
 * @property {number} at server time of the newest state (the charts' 0 s)
 * @property {{ rt: LineChart, fresh: LineChart } | null} charts
 * @property {HTMLElement} sceneLine the group's shared scene in one line
 * @property {HTMLElement} wrap the table's box (stacked when the table would not fit it)
 * @property {HTMLTableElement} table
 */

/** @type {typeof import('chart.js').Chart | undefined} */
const ChartJs = /** @type {any} */ (window).Chart;

const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));
const main = $('groups');
const empty = $('empty');
const status = $('status');

/** @type {Map<string, Card>} by group name */
const cards = new Map();
/** @type {Map<string, RowView>} by member key */
const rows = new Map();
let staleCount = 0;
/** @type {number | null} */
let lastEventAt = null;

/** @param {number | null | undefined} v @param {number} [digits] */
function fmt(v, digits = 1) {
  return v === null || v === undefined ? '—' : v.toFixed(digits);
}

/** @param {number} ms */
function ago(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** @param {number} t epoch ms */
function clock(t) {
  const d = new Date(t);
  return [d.getHours(), d.getMinutes(), d.getSeconds()].map((n) => String(n).padStart(2, '0')).join(':');
}

/** @param {string} version */
function shortVersion(version) {
  return version.split('.').slice(0, 2).join('.');
}

/**
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag @param {string} [className] @param {string} [text]
 * @returns {HTMLElementTagNameMap[K]}
 */
function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** Sets a cell's text and class only when they changed. @param {HTMLElement} cell @param {string} text @param {string} [cls] */
function put(cell, text, cls = '') {
  if (cell.textContent !== text) cell.textContent = text;
  if (cell.className !== cls) cell.className = cls;
}

// ---- the feed -------------------------------------------------------------

const token = new URLSearchParams(location.search).get('token');

/** @param {'live' | 'off'} state @param {string} text */
function setStatus(state, text) {
  status.className = `status ${state}`;
  status.textContent = text;
}

function connect() {
  if (!token) {
    setStatus('off', 'no token in the address (…/dashboard?token=…)');
    return;
  }
  const feed = new EventSource(`/dashboard/feed?token=${encodeURIComponent(token)}`);
  feed.onopen = () => setStatus('live', 'live');
  feed.onerror = () => {
    if (feed.readyState === EventSource.CLOSED) {
      // an HTTP error ends an EventSource for good: start a new one later
      setStatus('off', 'disconnected');
      setTimeout(connect, RETRY_MS);
    } else {
      setStatus('off', 'disconnected — reconnecting…');
    }
  };
  feed.addEventListener('snapshot', (ev) => {
    applySnapshot(JSON.parse(/** @type {MessageEvent<string>} */ (ev).data));
    setStatus('live', 'live');
  });
  feed.addEventListener('delta', (ev) => {
    applyDelta(JSON.parse(/** @type {MessageEvent<string>} */ (ev).data));
  });
}

// ---- applying state -------------------------------------------------------

/** @param {StudySnapshot} s */
function applySnapshot(s) {
  const present = new Set(s.groups.map((g) => g.group));
  for (const name of [...cards.keys()]) if (!present.has(name)) removeCard(name);
  for (const g of s.groups) applyGroup(g, true, s.at);
  setStats(s.sessions, s.groups.length, s.members);
}

/** @param {StudyDelta} d */
function applyDelta(d) {
  if (d.resync) {
    applySnapshot({ at: d.at, sessions: d.sessions, members: d.members, groups: d.groups });
    return;
  }
  for (const { key } of d.removed) removeRow(key);
  for (const name of d.removedGroups) removeCard(name);
  for (const g of d.groups) applyGroup(g, false, d.at);
  setStats(d.sessions, d.groupCount, d.members);
}

/** @param {number} sessions @param {number} groups @param {number} members */
function setStats(sessions, groups, members) {
  lastEventAt = Date.now();
  put($('stat-sessions'), String(sessions));
  put($('stat-groups'), String(groups));
  put($('stat-members'), String(members));
  put($('stat-stale'), String(staleCount), staleCount > 0 ? 'bad' : '');
  put($('stat-updated'), clock(lastEventAt));
  empty.hidden = cards.size > 0;
}

/** @param {GroupView} g @param {boolean} fullSeries @param {number} at server time of the state */
function applyGroup(g, fullSeries, at) {
  const card = cards.get(g.group) ?? createCard(g.group);
  card.names = new Map(g.members.map((m) => [m.clientId, m.name]));
  for (const m of g.members) card.members.set(m.key, { name: m.name || '(no name)', clientId: m.clientId });
  card.at = at;
  const now = performance.now();
  const seen = new Set();
  for (const m of g.members) {
    seen.add(m.key);
    upsertRow(card, m, now);
  }
  // the list is the group's whole membership
  for (const key of [...card.rows.keys()]) if (!seen.has(key)) removeRow(key);
  put(card.count, `${g.members.length} member${g.members.length === 1 ? '' : 's'}`);
  renderScene(card, g.scene);
  mergeSeries(card, g.series, fullSeries);
  fitTable(card);
}

/**
 * The members' table stacks (a block of labelled figures per member) when
 * its columns would not fit the card: no column is ever cut, from a phone's
 * width to a wide screen.
 * @param {Card} card
 */
function fitTable(card) {
  card.el.classList.remove('stacked');
  card.el.classList.toggle('stacked', card.table.scrollWidth > card.wrap.clientWidth + 1);
}
window.addEventListener('resize', () => { for (const card of cards.values()) fitTable(card); });

/** @param {string} group @returns {Card} */
function createCard(group) {
  const section = el('section', 'group');
  const head = el('header', 'group-head');
  head.append(el('h2', '', group));
  const count = el('span', 'count');
  head.append(count);
  section.append(head);
  const sceneLine = el('p', 'scene-line');
  sceneLine.hidden = true;
  section.append(sceneLine);

  const wrap = el('div', 'table-wrap');
  const table = el('table', 'members');
  const thead = el('thead');
  const hr = el('tr');
  for (const c of COLUMNS) {
    const th = el('th', c.num ? 'num' : '', c.label);
    if (c.title) th.title = c.title;
    hr.append(th);
  }
  thead.append(hr);
  const tbody = el('tbody');
  table.append(thead, tbody);
  wrap.append(table);
  section.append(wrap);

  const chartRow = el('div', 'charts');
  section.append(chartRow);
  /** @type {Card} */
  const card = {
    group, el: section, count, tbody, rows: new Map(), names: new Map(), members: new Map(), series: [], at: Date.now(), charts: null, sceneLine, wrap, table,
  };
  card.charts = createCharts(chartRow);

  // cards in group order
  const after = [...cards.values()].find((c) => c.group > group);
  main.insertBefore(section, after ? after.el : null);
  cards.set(group, card);
  empty.hidden = true;
  return card;
}

/** @param {string} group */
function removeCard(group) {
  const card = cards.get(group);
  if (!card) return;
  for (const key of [...card.rows.keys()]) removeRow(key);
  card.charts?.rt.destroy();
  card.charts?.fresh.destroy();
  card.el.remove();
  cards.delete(group);
}

/** @param {Card} card @param {MemberRow} m @param {number} now */
function upsertRow(card, m, now) {
  let view = rows.get(m.key);
  if (view && view.card !== card) {
    removeRow(m.key);
    view = undefined;
  }
  if (!view) {
    const tr = el('tr');
    /** @type {Record<string, HTMLTableCellElement>} */
    const cells = {};
    for (const c of COLUMNS) {
      const td = el('td');
      td.dataset.label = c.label; // the stacked layout's label (fitTable)
      cells[c.id] = td;
      tr.append(td);
    }
    view = { tr, cells, row: m, receivedAt: now, card };
    const next = [...card.rows.values()].find((v) => v.row.clientId > m.clientId);
    card.tbody.insertBefore(tr, next ? next.tr : null);
    card.rows.set(m.key, view);
    rows.set(m.key, view);
    if (isStale(m)) staleCount++;
  } else {
    staleCount += (isStale(m) ? 1 : 0) - (isStale(view.row) ? 1 : 0);
    if (view.row.clientId !== m.clientId) {
      // a new id: back into order
      const next = [...card.rows.values()].find((v) => v !== view && v.row.clientId > m.clientId);
      card.tbody.insertBefore(view.tr, next ? next.tr : null);
    }
    view.row = m;
    view.receivedAt = now;
  }
  renderRow(view);
}

/** @param {string} key */
function removeRow(key) {
  const view = rows.get(key);
  if (!view) return;
  if (isStale(view.row)) staleCount--;
  view.tr.remove();
  view.card.rows.delete(key);
  rows.delete(key);
}

/**
 * A member counted as stale in the header: one still in the group (who left is shown apart).
 * @param {{ stale: boolean, left: boolean }} m
 */
function isStale(m) {
  return m.stale && !m.left;
}

/** @param {RowView} view */
function renderRow(view) {
  const { row: m, cells: c, card } = view;
  // a member whose RT is over the mark stands out as a stale one does (its line in the RT chart is red)
  const trClass = m.left ? 'left' : m.stale ? 'stale' : (m.rt.mean ?? 0) > RT_MARK_MS ? 'struggling' : '';
  if (view.tr.className !== trClass) view.tr.className = trClass;
  put(c.id, m.clientId > 0 ? String(m.clientId) : '—', 'num');
  put(c.name, m.name === '' ? '(no name)' : m.name, m.name === '' ? 'name muted' : 'name');
  c.name.title = `${m.name} · ${m.kind} · member ${m.key}`;
  const d = m.device;
  put(c.browser, d.browserVersion ? `${d.browser} ${shortVersion(d.browserVersion)}` : d.browser, 'browser');
  c.browser.title = `${d.family}${d.browserVersion ? ` · ${d.browserVersion}` : ''}`;
  put(c.os, d.os || '—');
  put(c.device, m.effectiveType ? `${d.device} · ${m.effectiveType}` : d.device);
  put(c.transport, `${m.transport} · ${m.cycleMs} ms`);
  const paths = m.paths.length ? m.paths.map((p) => `${card.names.get(p.id) || `#${p.id}`}: ${p.path || '?'}`).join(', ') : '—';
  put(c.paths, paths, m.paths.some((p) => p.path === 'relay' || p.path === 'connecting') ? 'paths warn' : 'paths');
  c.paths.title = paths;
  put(c.rtLast, fmt(m.rt.last), markRt(m.rt.last));
  put(c.rtMean, fmt(m.rt.mean), markRt(m.rt.mean));
  put(c.rtP95, fmt(m.rt.p95), markRt(m.rt.p95));
  put(c.loss, fmt(m.lossPct, 2), m.lossPct !== null && m.lossPct > LOSS_MARK_PCT ? 'num bad' : m.lossPct ? 'num warn' : 'num');
  put(c.ups, fmt(m.freshness.updatesPerStreamPerS, 2), 'num');
  put(c.frozen, fmt(m.freshness.frozenPct, 1), m.freshness.frozenPct ? 'num warn' : 'num');
  const state = stateText(m, card);
  put(c.state, state, m.left ? 'state muted' : m.stale ? 'state bad' : 'state ok');
  c.state.title = state;
  put(c.scene, m.scene ? `${m.scene.objects} · ${m.scene.inStep ? 'in sync' : 'syncing'}` : '—', m.scene && !m.scene.inStep && !m.left ? 'warn' : '');
  put(c.behind, fmt(m.drawn?.behindMs, 0), 'num');
  c.behind.title = m.drawn ? `playout ${m.drawn.mode}` : 'draws no neighbours (no AR view, or an older page)';
  put(c.held, fmt(m.drawn?.holdingPct, 1), m.drawn?.holdingPct ? 'num warn' : 'num');
  put(c.jumps, fmt(m.drawn?.jumpsPerMinute, 1), m.drawn?.jumpsPerMinute ? 'num warn' : 'num');
  put(c.fps, fmt(m.tracking?.fps), 'num');
  put(c.marker, fmt(m.tracking?.visiblePct, 0), 'num');
  put(c.node, m.node.slice(0, 8), 'node');
  c.node.title = m.node;
  renderAge(view, performance.now());
}

/**
 * The group's shared scene in one line (server/live-scene.js): objects, members in sync,
 * convergence time and disagreement over the window (docs/architecture.md "The shared scene").
 * @param {Card} card @param {GroupView['scene']} scene
 */
function renderScene(card, scene) {
  card.sceneLine.hidden = !scene;
  if (!scene) return;
  const minutes = Math.round(scene.windowMs / 60_000);
  const conv = scene.convergenceMs.n > 0 ? `convergence p50 ${fmt(scene.convergenceMs.p50, 0)} ms, p99 ${fmt(scene.convergenceMs.p99, 0)} ms` : 'no edit yet';
  const parts = [
    `Shared scene: ${scene.objects} object${scene.objects === 1 ? '' : 's'}`,
    `${scene.inStep} of ${scene.members} in sync`,
    `${conv} (${scene.edits} edit${scene.edits === 1 ? '' : 's'} in ${minutes} min${scene.pending ? `, ${scene.pending} on their way` : ''})`,
    `disagreement ${fmt(scene.disagreementPct, 1)} %`,
  ];
  if (scene.membersIncomplete) parts.push(`${scene.membersIncomplete} left out (a report missing)`);
  put(card.sceneLine, parts.join(' · '), scene.inStep < scene.members ? 'scene-line warn' : 'scene-line');
  card.sceneLine.title = 'Convergence: from an edit until every member holds it. Disagreement: share of member-time a member lacked an edit. '
    + 'Times on the server\'s clock as each phone estimated it.';
}

/** @param {number | null} ms */
function markRt(ms) {
  return ms !== null && ms > RT_MARK_MS ? 'num bad' : 'num';
}

/** @param {MemberRow} m @param {Card} card */
function stateText(m, card) {
  if (m.left) return 'left';
  if (!m.stale) return 'ok';
  const from = m.staleFrom.map((id) => card.names.get(id) || `#${id}`);
  if (from.length) return `stale: ${from.join(', ')}`;
  return 'stale: silent';
}

/** @param {RowView} view @param {number} now */
function renderAge(view, now) {
  const ms = view.row.lastReportAgoMs + (now - view.receivedAt);
  put(view.cells.ago, ago(ms), ms > 3 * 5000 && !view.row.left ? 'num bad' : 'num');
}

// ---- charts ---------------------------------------------------------------

/** @param {HTMLElement} parent @returns {{ rt: LineChart, fresh: LineChart } | null} */
function createCharts(parent) {
  if (!ChartJs) {
    parent.append(el('p', 'muted', 'charts unavailable (chart.js did not load)'));
    return null;
  }
  /** @param {string} title */
  const box = (title) => {
    const fig = el('figure', 'chart');
    fig.append(el('figcaption', '', title));
    const holder = el('div', 'canvas-holder');
    const canvas = el('canvas');
    holder.append(canvas);
    fig.append(holder);
    parent.append(fig);
    return canvas;
  };
  const grid = '#e5e7eb';
  const small = { font: { size: 10 } };
  const common = {
    animation: /** @type {const} */ (false),
    responsive: true,
    maintainAspectRatio: false,
    parsing: /** @type {const} */ (false),
    normalized: true,
    interaction: { mode: /** @type {const} */ ('nearest'), axis: /** @type {const} */ ('x'), intersect: false },
  };
  const legend = { display: true, position: /** @type {const} */ ('bottom'), labels: { boxWidth: 10, boxHeight: 2, ...small } };
  const tooltip = { callbacks: { title: (/** @type {{ parsed: { x: number | null } }[]} */ items) => (items.length ? `${Math.round(items[0].parsed.x ?? 0)} s` : '') } };
  const x = () => ({
    type: /** @type {const} */ ('linear'),
    grid: { color: grid },
    ticks: { maxTicksLimit: 7, ...small, callback: (/** @type {string | number} */ v) => `${Math.round(Number(v))} s` },
    title: { display: true, text: '', ...small },
  });
  const y = (/** @type {string} */ text) => ({ beginAtZero: true, grid: { color: grid }, ticks: small, title: { display: true, text, ...small } });
  /** @type {import('chart.js').ChartData<'line', XY[]>} */
  const noData = { datasets: [] };
  const rt = new ChartJs(box('RT mean per member, and the group (5 s buckets)'), {
    type: 'line',
    data: noData,
    options: { ...common, plugins: { legend, tooltip }, scales: { x: x(), y: y('RT ms') } },
  });
  const fresh = new ChartJs(box('Freshness per member, and the group (5 s buckets)'), {
    type: 'line',
    data: /** @type {import('chart.js').ChartData<'line', XY[]>} */ ({ datasets: [] }),
    options: {
      ...common,
      plugins: { legend, tooltip },
      scales: {
        x: x(),
        y: y('fresh updates / stream / s'),
        y1: { ...y('group frozen %'), suggestedMax: 10, position: /** @type {const} */ ('right'), grid: { drawOnChartArea: false } },
      },
    },
  });
  // the datasets are set whole on every draw (drawCharts): typed as the line charts they are
  const asLine = (/** @type {unknown} */ chart) => /** @type {LineChart} */ (chart);
  return { rt: asLine(rt), fresh: asLine(fresh) };
}

/** @param {Card} card @param {SeriesPoint[]} points @param {boolean} full */
function mergeSeries(card, points, full) {
  if (full) card.series = points.slice();
  else if (points.length) {
    const byT = new Map(card.series.map((p) => [p.t, p]));
    for (const p of points) byT.set(p.t, p);
    card.series = [...byT.values()].sort((a, b) => a.t - b.t);
  } else {
    return;
  }
  const newest = card.series.length ? card.series[card.series.length - 1].t : 0;
  card.series = card.series.filter((p) => p.t > newest - SERIES_MS);
  if (card.charts) drawCharts(card, card.charts);
}

/**
 * The series of a member (or of the group: key null) as chart points, x in
 * seconds before the newest state.
 * @param {Card} card @param {string | null} key @param {(p: { rtMean: number | null, updatesPerStreamPerS: number | null, frozenPct: number | null }) => number | null} pick
 * @returns {XY[]}
 */
function lineOf(card, key, pick) {
  /** @type {XY[]} */
  const out = [];
  for (const p of card.series) {
    const part = key === null ? p : (p.members ?? []).find((m) => m.key === key);
    const v = part ? pick(part) : null;
    if (v !== null && v !== undefined) out.push({ x: (p.t - card.at) / 1000, y: v });
  }
  return out;
}

/**
 * The newest value of a line (null when it has none).
 * @param {XY[]} line
 */
const lastOf = (line) => (line.length ? line[line.length - 1].y : null);

/**
 * Draws both charts: a line per member, labelled with its name, the group's
 * line over them; a member who struggles (RT over RT_MARK_MS and over
 * STRUGGLE_RATIO times the group's; frozen over FROZEN_MARK_PCT) is drawn red
 * and named so in the legend. The x axis is seconds before the newest state,
 * its range said in its title.
 * @param {Card} card @param {{ rt: LineChart, fresh: LineChart }} charts
 */
function drawCharts(card, charts) {
  const keys = [...new Set(card.series.flatMap((p) => (p.members ?? []).map((m) => m.key)))]
    .sort((a, b) => (card.members.get(a)?.clientId ?? 0) - (card.members.get(b)?.clientId ?? 0));
  const groupRt = lineOf(card, null, (p) => p.rtMean);
  const groupRtNow = lastOf(groupRt);
  /** @param {string} key @param {number} i @param {boolean} struggling @param {XY[]} data */
  const memberLine = (key, i, struggling, data) => ({
    label: `${card.members.get(key)?.name ?? `member ${key.slice(0, 6)}`}${struggling ? ' (struggling)' : ''}`,
    data, borderColor: struggling ? STRUGGLE_COLOUR : PALETTE[i % PALETTE.length], backgroundColor: struggling ? STRUGGLE_COLOUR : PALETTE[i % PALETTE.length],
    borderWidth: struggling ? 2.5 : 1.2, pointRadius: 0, tension: 0.2, yAxisID: 'y',
  });
  const group = (/** @type {string} */ label, /** @type {XY[]} */ data) => ({
    label, data, borderColor: GROUP_COLOUR, backgroundColor: GROUP_COLOUR, borderWidth: 2.5, pointRadius: 0, tension: 0.2, yAxisID: 'y',
  });
  charts.rt.data.datasets = [group('group', groupRt), ...keys.map((key, i) => {
    const data = lineOf(card, key, (p) => p.rtMean);
    const now = lastOf(data);
    return memberLine(key, i, now !== null && now > RT_MARK_MS && (groupRtNow === null || keys.length < 2 || now > STRUGGLE_RATIO * groupRtNow), data);
  })];
  charts.fresh.data.datasets = [
    group('group', lineOf(card, null, (p) => p.updatesPerStreamPerS)),
    ...keys.map((key, i) => memberLine(key, i, (lastOf(lineOf(card, key, (p) => p.frozenPct)) ?? 0) > FROZEN_MARK_PCT, lineOf(card, key, (p) => p.updatesPerStreamPerS))),
    { ...group('group frozen %', lineOf(card, null, (p) => p.frozenPct)), borderColor: STRUGGLE_COLOUR, backgroundColor: STRUGGLE_COLOUR, borderDash: [4, 3], borderWidth: 1.2, yAxisID: 'y1' },
  ];
  const oldest = card.series.length ? card.series[0].t : card.at;
  const rangeS = Math.max(60, Math.ceil((card.at - oldest) / 1000 / 10) * 10);
  for (const chart of [charts.rt, charts.fresh]) {
    const xs = /** @type {any} */ (chart.options.scales?.x);
    xs.min = -rangeS;
    xs.max = 0;
    xs.title.text = `seconds before ${clock(card.at)} (the last ${ago(rangeS * 1000)})`;
    chart.update('none');
  }
}

// ---- clocks ---------------------------------------------------------------

setInterval(() => {
  const now = performance.now();
  for (const view of rows.values()) renderAge(view, now);
  if (lastEventAt !== null) put($('stat-updated'), `${clock(lastEventAt)} (${ago(Date.now() - lastEventAt)} ago)`);
}, 1000);

connect();

export {};
