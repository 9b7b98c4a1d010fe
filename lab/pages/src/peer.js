// The browser fleet page: hosts one or more simulated peers (scripted poses,
// no camera) for the e2e tests and `carlab bench`. Query parameters:
//   group      group name (peers=K > 1: K peers split into groups of `size`)
//   token      the group's access token, from the join link (optional)
//   transport  relay | relay-faithful | p2p | p2p-reliable
//   peers      peers hosted in this page (default 1)
//   size       group size (default: all in one group); offset: index of this
//              page's first peer in the population; total: population size
//              (so the last, smaller group knows its size); stride: step between
//              this page's peers (default 1; the bench under --net interleaves
//              pages so a group's members sit in different network namespaces)
//   cycle      action cycle ms (default 167);  ackTimeout ms (default 20000)
//   mode       action cycle mode: pipelined (default, the product's) | gated (the paper's)
//   warmup     ms;  updates  max updates per peer (0 = until stopped)
//   autostart  0 to wait for window.carlab.start() (default 1)
//   discard    p2p test knob: fraction of received updates to drop
//   server     base URL of the carlab server under test (default: this page's own origin). The
//              page is then hosted by the lab (lab/bench/page-host.js, which answers /config.json and
//              /reports by passing them on to that server); the relay and PeerJS connections go
//              straight to it, so it must allow this page's origin (--allowed-origins)
//   indices    the population indices of this page's peers, comma-separated (a fleet agent's
//              share, lab/fleet/fleet.js); instead of offset and stride
//   edits      edits of the shared scene per minute and peer (lab/shared/edits.js; 0 or absent: none);
//              editsStop() ends them, and stats() then carries each peer's scene log (sceneMember)
//   reports    seconds between each peer's client reports (POST /reports, core/report.js), sent as
//              the phone app sends them: periodic ones with fetch keepalive, the last one with
//              navigator.sendBeacon when the page hides (or on finishReports()); 0 or absent: none
//              (the bench passes lab/shared/flags.js reportPeriodMs of --reports)
//   playout    playout modes, comma-separated (bench --playout): every peer draws its neighbours in
//              each from the same arrivals at `fps` frames per second (default 60) and measures the
//              drawing against the scripted truth (core/playout-probe.js DrawnMeasurement); drawn() returns it
//   recovery   1: every peer keeps a recovery probe (core/recovery.js, bench --net-events); netMark({ index,
//              phase, epochMs }) tells it an event's moment, and stats() carries each peer's record
// window.carlab exposes ready (a promise), start(), stop(), editsStop(), stats(), drawn(), settled(), finishReports(),
// reportCounts(), netMark(), close().

import { Peer } from 'peerjs';
import { CarClient, DEFAULT_CYCLE_MODE, parseCycleMode } from '../../../core/client.js';
import { epochNow, scriptedPose } from '../../../core/path.js';
import { summarize } from '../../../core/metrics.js';
import { Reporter, overSession, tallyReports } from '../../../core/report.js';
import { createTransport } from '../../../web/src/transport/index.js';
import { joinErrorText } from '../../../web/src/ui/join-errors.js';
import { startEditing } from '../../shared/edits.js';
import { tokenFrom } from '../../../web/src/ui/join-link.js';
import { DrawnMeasurement } from '../../../core/playout-probe.js';
import { scriptedTruth } from '../../shared/drawn-measure.js';
import { parsePlayoutModes } from '../../../core/playout.js';
import { RecoveryProbe } from '../../../core/recovery.js';
import { measuringHook } from '../../shared/client-events.js';

const q = new URLSearchParams(location.search);
const num = (/** @type {string} */ name, /** @type {number} */ dflt) => (q.has(name) ? Number(q.get(name)) : dflt);
/** @param {string | null} text "3,5,8" -> [3, 5, 8]; null or empty -> null */
const indexList = (text) => (text ? text.split(',').map(Number) : null);
const settings = {
  group: q.get('group') ?? 'fleet',
  server: q.get('server') ?? location.origin,
  indices: indexList(q.get('indices')),
  token: tokenFrom(q),
  transport: q.get('transport') ?? 'relay',
  peers: q.has('indices') ? (indexList(q.get('indices')) ?? []).length : num('peers', 1),
  size: num('size', 0),
  offset: num('offset', 0),
  stride: num('stride', 1),
  total: num('total', 0),
  cycleMs: num('cycle', 167),
  cycleMode: parseCycleMode(q.get('mode')) ?? DEFAULT_CYCLE_MODE,
  ackTimeoutMs: num('ackTimeout', 20000),
  warmupMs: num('warmup', 0),
  maxUpdates: num('updates', 0),
  autostart: q.get('autostart') !== '0',
  discard: num('discard', 0),
  editsPerMinute: num('edits', 0),
  name: q.get('name') ?? 'peer',
  reportsS: num('reports', 0),
  playout: q.get('playout') ? parsePlayoutModes(/** @type {string} */ (q.get('playout'))) : null,
  renderFps: num('fps', 60),
  recovery: q.get('recovery') === '1',
};

const summaryEl = /** @type {HTMLElement} */ (document.getElementById('summary'));
const tbody = /** @type {HTMLElement} */ (document.querySelector('#peers tbody'));

/** @type {CarClient[]} */
const clients = [];
/** playout=: the drawn error of every peer's drawing. */
const drawn = settings.playout ? new DrawnMeasurement(settings.playout, scriptedTruth(clients)) : null;

/** recovery=1: each peer's probe, by i. @type {RecoveryProbe[]} */
const probes = [];

/**
 * The client hooks of what this page measures beside the stats: the drawn error, recovery.
 * @param {number} i
 * @returns {((event: string, detail: any) => void) | undefined}
 */
function eventsOf(i) {
  return measuringHook(i, drawn, settings.recovery ? (probes[i] = new RecoveryProbe()) : null);
}

/** The population index of this page's i-th peer. @param {number} i */
const indexOf = (i) => (settings.indices ? settings.indices[i] : settings.offset + i * settings.stride);

async function boot() {
  const res = await fetch('/config.json');
  if (!res.ok) throw new Error(`GET /config.json: ${res.status}`);
  const config = await res.json();
  const t0 = performance.now();
  const joins = [];
  for (let i = 0; i < settings.peers; i++) {
    const index = indexOf(i);
    const group = settings.size > 0 ? `${settings.group}-${Math.floor(index / settings.size)}` : settings.group;
    const transport = createTransport(settings.transport, {
      baseUrl: settings.server, config, Peer, discardIncomingFraction: settings.discard || undefined,
    });
    const client = new CarClient({
      transport, group, name: `${settings.name}${index}`, token: settings.token || undefined,
      cycleMs: settings.cycleMs, cycleMode: settings.cycleMode, ackTimeoutMs: settings.ackTimeoutMs,
      warmupMs: settings.warmupMs, maxUpdates: settings.maxUpdates,
      pose: () => scriptedPose(index, epochNow()),
    });
    const onEvent = eventsOf(i);
    if (onEvent) client.options.onEvent = onEvent;
    clients.push(client);
    joins.push(client.connect());
  }
  await Promise.all(joins);
  return { joinMs: performance.now() - t0 };
}

// Client reports (reports=S): each peer reports like the phone app, on a
// timer of its own that the action cycle never waits for; outcomes are only counted.

/** The period of each peer's reports (ms), 0 for none. */
const reportsMs = Number.isFinite(settings.reportsS) && settings.reportsS > 0 ? settings.reportsS * 1000 : 0;
/** Keepalive bodies in flight are capped per page (64 KiB in the Fetch spec); above this, periodic reports go as plain fetches. */
const KEEPALIVE_BUDGET_BYTES = 48 * 1024;
let keepaliveBytes = 0;
/** This page's HTTP reports not accepted (or not queued, for a beacon) and why; the rest of the tally is the reporters' (tallyReports). */
const reportTally = { failed: 0, failedBy: /** @type {Record<string, number>} */ ({}) };
/** @type {Reporter[]} every peer's reporter (core/report.js skips a report the server would refuse) */
const reporting = [];

/** @param {string} why */
function reportFailed(why) {
  reportTally.failed++;
  reportTally.failedBy[why] = (reportTally.failedBy[why] ?? 0) + 1;
}

/**
 * A periodic report: a keepalive fetch (it outlives the page); rejects unless accepted.
 * @param {import('../../../core/report.js').ClientReport} report
 * @returns {Promise<void>}
 */
function postReport(report) {
  const body = JSON.stringify(report);
  const keepalive = keepaliveBytes + body.length <= KEEPALIVE_BUDGET_BYTES;
  if (keepalive) keepaliveBytes += body.length;
  return fetch('/reports', { method: 'POST', headers: { 'content-type': 'application/json' }, body, keepalive })
    .then(async (res) => {
      await res.arrayBuffer().catch(() => {});
      if (!res.ok) { reportFailed(String(res.status)); throw new Error(`report refused: ${res.status}`); }
    }, (err) => { reportFailed('network'); throw err; })
    .finally(() => { if (keepalive) keepaliveBytes -= body.length; });
}

/**
 * The last report, with navigator.sendBeacon: queued for delivery even as the page goes.
 * @param {import('../../../core/report.js').ClientReport} report
 */
function beaconReport(report) {
  if (!navigator.sendBeacon('/reports', new Blob([JSON.stringify(report)], { type: 'application/json' }))) reportFailed('beacon');
}

/** Gives every peer its reporter: its first report after a random delay in [0, period), then one every period (spread evenly from the start). */
function startReports() {
  if (!reportsMs || reporting.length) return;
  for (const client of clients) {
    // STATS on the peer's relay session, HTTP when none is open; the last one by beacon, as a phone's
    const reporter = new Reporter({ client, kind: 'bench', intervalMs: reportsMs, send: overSession(client, postReport), sendFinal: beaconReport });
    reporter.start(Math.random() * reportsMs);
    reporting.push(reporter);
  }
}

/** Stops the periodic reports (the last one stays to send). */
function stopPeriodicReports() {
  for (const r of reporting) r.stop();
}

/** Every peer's last report, by beacon (each once; a no-op without reports). */
function sendFinalReports() {
  stopPeriodicReports();
  for (const r of reporting) r.finish();
}
addEventListener('pagehide', sendFinalReports);

function render() {
  const rows = clients.map((c, i) => {
    const rt = summarize(c.rt.slice(-200));
    // the live channel's parameters (relay-udp, p2p): core types them as a plain object
    const ch = /** @type {{ ordered?: boolean, maxRetransmits?: number | null } | null} */ (c.transport.channelInfo());
    const loss = c.transport.name.startsWith('p2p')
      ? /** @type {{ counters?: { discarded?: number } }} */ (c.transport).counters?.discarded ?? 0 : 0;
    return `<tr><td>${c.options.name}</td><td>${c.options.group}</td><td>${c.id}</td><td>${c.members.size}</td>`
      + `<td>${c.cycle.updatesSent}</td><td>${fmt(rt.mean)}</td><td>${fmt(rt.p95)}</td><td>${loss}</td>`
      + `<td>${ch ? `${ch.ordered ? 'ordered' : 'unordered'}, rtx ${ch.maxRetransmits ?? '∞'}` : ''}</td></tr>`;
  });
  tbody.innerHTML = rows.slice(0, 50).join('');
  const all = summarize(clients.flatMap((c) => c.rt));
  summaryEl.textContent = `${clients.length} peers on ${settings.transport} (${settings.cycleMode}), RT mean ${fmt(all.mean)} ms, p95 ${fmt(all.p95)} ms, n ${all.n}`;
}

/** @param {number | null} v */
function fmt(v) {
  return v === null ? '–' : v.toFixed(1);
}

/** @type {{ stop: () => void } | null} the edit workload (edits=N) */
let editing = null;
/** @type {number | null} when the peers stopped (ms since 1970): the end of their scene logs */
let stoppedAt = null;

/**
 * A peer's stats, and with the edit workload its scene as the measures see it (core/scene-metrics.js).
 * @param {CarClient} c
 * @param {number} i its place in this page (its probe's)
 */
function statsOf(c, i) {
  const stats = c.stats();
  return {
    ...stats,
    ...(settings.editsPerMinute ? { sceneMember: c.sceneMember(stoppedAt ?? performance.timeOrigin + performance.now()) } : {}),
    ...(probes[i] ? { recovery: probes[i].toJSON() } : {}),
  };
}

const ready = boot();
window.carlab = {
  settings,
  clients,
  ready,
  start() {
    for (const c of clients) c.start();
    drawn?.start(settings.warmupMs, settings.renderFps);
    if (settings.editsPerMinute > 0) editing = startEditing(clients, settings.editsPerMinute);
    startReports();
  },
  editsStop() { editing?.stop(); },
  /** recovery=1: an event's moment, on the run's shared clock (ms since 1970). @param {{ index: number, phase: 'began' | 'back', epochMs: number }} m */
  netMark(m) { for (const p of probes) p?.mark(m.index, m.phase, m.epochMs - performance.timeOrigin); },
  stop() {
    editing?.stop();
    stoppedAt = performance.timeOrigin + performance.now();
    for (const c of clients) c.stop();
    drawn?.stop();
  },
  stats() { return clients.map(statsOf); },
  /** With playout=: what this page's peers drew (DrawnErrorLab JSON), else null. */
  drawn() { return drawn ? drawn.toJSON() : null; },
  /** Every hosted peer's last update is one delivery horizon old: a count now covers all it sent. */
  settled() { return clients.every((c) => c.cycle.settled()); },
  /**
   * Ends the reports: no more periodic ones, the ones in flight answered (at
   * most 3 s), then every peer's last report by beacon. Resolves with what
   * the reports did, or null without reports.
   */
  async finishReports() {
    if (!reportsMs) return null;
    stopPeriodicReports();
    await Promise.race([Promise.all(reporting.map((r) => r.idle())), new Promise((r) => setTimeout(r, 3000))]);
    sendFinalReports();
    return window.carlab.reportCounts();
  },
  /** What this page's reports did so far, or null without reports. */
  reportCounts() {
    return reportsMs ? tallyReports(reporting, reportTally) : null;
  },
  /** Every hosted peer sees its whole working group (channels open, for p2p). */
  meshed() {
    return clients.every((c, i) => {
      if (settings.size <= 0 || settings.total <= 0) return true;
      const g = Math.floor(indexOf(i) / settings.size);
      return c.members.size === Math.min(settings.size, settings.total - g * settings.size) - 1;
    });
  },
  /** Live RT of the last second, for progress bars. */
  liveRt() {
    let sum = 0; let n = 0;
    for (const c of clients) for (let i = Math.max(0, c.rt.length - 6); i < c.rt.length; i++) { sum += c.rt[i]; n++; }
    return { sum, n };
  },
  close() { drawn?.stop(); sendFinalReports(); for (const c of clients) c.close(); },
};
ready.then(() => {
  if (settings.autostart) window.carlab.start();
  render();
  setInterval(render, 1000);
}, (err) => {
  summaryEl.textContent = `failed: ${joinErrorText(err, {
    group: settings.group, transport: settings.transport, hasToken: settings.token !== '',
  })}`;
  summaryEl.classList.add('error');
});
