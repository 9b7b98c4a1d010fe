/**
 * The lab's output side: results files, the CAR-paper tables, the supported
 * clients summary and one-line terminal summaries.
 *
 * Rendering only, autocannon style: the runners produce a results object
 * (docs/architecture.md "Results files") and hand it here; nothing in this module runs,
 * measures or aggregates anything.
 *
 * @module lab/output
 */


import { RT_LIMIT_MS } from '../../core/defaults.js';
import { TRANSPORTS, transportInfo } from '../../core/transports.js';
import { isLabRun, renderExperimentTables } from './browsers-tables.js';
import { renderNetTables } from './net-tables.js';
import { NONE, compareTransports, fmt, isObject, markdownTable, netName, num } from './format.js';

/** Mean RT above which a population is not supported (docs/architecture.md "Supported clients"). */
export { RT_LIMIT_MS };

/** Loss % from which an unreliable transport's population is not supported. */
export const LOSS_LIMIT_PCT = 2;

/** Transports in the registry's order (core/transports.js); tables and charts list them this way, others after, by name. */
export const TRANSPORT_ORDER = TRANSPORTS;

/**
 * @typedef {object} Stats
 * @property {number | null} [mean]
 * @property {number | null} [dev]
 * @property {number | null} [p50]
 * @property {number | null} [p95]
 * @property {number | null} [p99]
 * @property {number | null} [max]
 * @property {number | null} [n]
 */

/**
 * setupMs of a p2p run (lab/report/aggregate.js aggregateSetup): signaling open and
 * peer setup (channel open) per connection, the peer setup milestones, the
 * candidate types seen and the bytes setup took. Older records may carry
 * other delay statistics beside these.
 *
 * @typedef {object} SetupDelays
 * @property {Stats | null} [signaling]
 * @property {Stats | null} [peer]
 * @property {Record<string, Stats | null>} [phases] offerAnswerMs, iceConnectedMs, dtlsConnectedMs, channelOpenMs
 * @property {Record<string, number>} [candidateTypes] connections per selected candidate pair type
 * @property {Record<string, Stats | null>} [setupBytes] sent, received, packetsSent, packetsReceived
 */

/**
 * The data channel parameters the clients read back (lab/report/aggregate.js aggregateChannel).
 *
 * @typedef {object} ChannelParams
 * @property {boolean | null} [ordered]
 * @property {number | null} [maxRetransmits]
 * @property {number | null} [maxPacketLifeTime]
 * @property {boolean | null} [uniform]
 * @property {number} [clients] clients that reported these
 */

/**
 * A mixed fleet's figures per browser (lab/report/aggregate.js byBrowserOf).
 *
 * @typedef {object} BrowserFigures
 * @property {number} [clients]
 * @property {Stats | null} [rt]
 * @property {number | null} [lossPct]
 * @property {number | null} [dups]
 * @property {number | null} [reorders]
 * @property {number | null} [jitterMs]
 */

/**
 * Freshness at the receivers (docs/architecture.md "Freshness"; lab/report/aggregate.js freshnessOf).
 *
 * @typedef {object} FreshnessFigures
 * @property {number | null} [updatesPerStreamPerS]
 * @property {{ p50?: number | null, p99?: number | null, max?: number | null } | null} [freezeMs]
 * @property {number | null} [frozenPct]
 * @property {number} [streams]
 * @property {number} [gaps]
 */

/**
 * A run on several relays joined through NATS (lab/target/cluster.js clusterRunFields).
 *
 * @typedef {object} ClusterFigures
 * @property {number | null} [nodes]
 * @property {string} [placement]
 * @property {number | null} [crossNodeUpdates]
 * @property {number | null} [crossNodePct]
 * @property {number} [remoteUpdatesDelivered]
 * @property {number} [acksRouted]
 * @property {number} [brokerMessages]
 * @property {string | null} [natsVersion]
 * @property {string} [natsUrl]
 * @property {number | null} [natsCpuPct]
 * @property {(number | null)[]} [relayCpuPct]
 * @property {number} [unknownSender]
 */

/**
 * A relay killed mid-run (lab/target/cluster.js clusterRunFields).
 *
 * @typedef {object} FailoverFigures
 * @property {number} [killedAtS]
 * @property {number} [relayPid]
 * @property {number | null} [clientsMoved]
 * @property {{ p50?: number | null, p99?: number | null, max?: number | null } | null} [reconnectMs]
 * @property {number | null} [lostUpdates]
 * @property {number} [stillDown]
 * @property {string} [note]
 */

/**
 * Clients that lost the relay and reconnected (lab/report/aggregate.js outageOf).
 *
 * @typedef {object} OutageFigures
 * @property {number} clientsReconnected
 * @property {number} reconnects
 * @property {number} stillDown
 * @property {Stats} outageMs
 * @property {number} updatesLost
 * @property {number} abandoned
 * @property {number} pausedCycles
 */

/**
 * One run as docs/architecture.md's results.json holds it. Every value may be null or
 * missing (older files, failed points) and runs may carry more fields than these;
 * lab/sim/sim.js, lab/bench/bench.js, lab/target/cluster.js and the browsers study (lab/browsers/) add
 * the optional ones.
 *
 * @typedef {object} Run
 * @property {string} transport
 * @property {number | null} [clients]
 * @property {number | null} [group]
 * @property {number | null} [cycleMs]
 * @property {string | null} [cycleMode] 'pipelined' | 'gated' (docs/architecture.md "The action cycle")
 * @property {unknown} [browser] what drove a bench: a name, names joined by '+', or older shapes ({@link describeDriver})
 * @property {unknown} [sim] what drove a sim: `{ workers, generator, clientsPerProcess }` in lab/sim/sim.js
 * @property {string | import('./net-tables.js').NetRecord} [net] network profile record (--net), or its name on a failed point
 * @property {Record<string, BrowserFigures>} [byBrowser] per browser of a mixed fleet (aggregate.js byBrowserOf)
 * @property {Stats | null} [rt]
 * @property {Stats | null} [rtWarmup] RTs of warm-up updates, reported apart
 * @property {{ mean?: number | null, max?: number | null, n?: number } | null} [rts]
 * @property {{ server?: number | null, clients?: number | null } | null} [cpu]
 * @property {number | null} [serverCpuUsPerUpdate]
 * @property {number | null} [lossPct]
 * @property {number | null} [ackLossPct]
 * @property {number | null} [dups]
 * @property {number | null} [reorders]
 * @property {number | null} [jitterMs]
 * @property {FreshnessFigures | null} [freshness] at the receivers (docs/architecture.md "Freshness")
 * @property {(SetupDelays & Record<string, unknown>) | null} [setupMs] other keys: further delay statistics ({@link SetupDelays})
 * @property {ChannelParams & { mixed?: ChannelParams[] } | null} [channel]
 *   `{ mixed: [...] }` when the clients' channels disagreed
 * @property {number} [connected] clients that joined
 * @property {Record<string, number | null>} [updates] sent, completed, ackTimeouts, skippedCycles, lateAcks, expected, received, lost
 * @property {Record<string, unknown> | null} [relay] the relay's counters over the measured window
 * @property {number | null} [durationS] measured window
 * @property {number | null} [serverRssBytes]
 * @property {boolean} [stoppedEarly]
 * @property {import('../sim/sim.js').TimelineBucket[]} [timeline] RT and server memory per bucket (lab/sim/sim.js)
 * @property {ReturnType<typeof import('../sim/sim.js').stabilityOf>} [stability] RT drift and memory growth (lab/sim/sim.js)
 * @property {number} [serverFaults] faults the server child reported (lab/sim/sim.js)
 * @property {{ atS: number, serverDownMs: number, note?: string }} [restart] the relay restarted mid-run (--restart-at)
 * @property {OutageFigures} [outage] clients that reconnected (lab/report/aggregate.js outageOf)
 * @property {ClusterFigures | null} [cluster] runs on several relays joined through NATS (lab/target/cluster.js)
 * @property {FailoverFigures | null} [failover] a relay killed mid-run (lab/target/cluster.js)
 * @property {number | null} [peersPerPage] bench: client peers per browser page
 * @property {string} [experiment] `carlab browsers`: the experiment (lab/browsers/)
 * @property {string} [pair] `carlab browsers`: the browser pair, e.g. `C-F`
 * @property {string} [error] why the run failed (the runners keep the point and its error)
 * @property {number} [reportsIntervalS] sim/bench --reports: seconds between client reports, 0 when off
 * @property {{ sent: number, failed: number, skipped?: number, failedBy?: Record<string, number> }} [reports] what the
 *   clients' reports did (with reports on; lab/sim/sim.js ReportTally): sent, not accepted (failedBy: HTTP status or
 *   'network', 'timeout', 'beacon'), skipped (the server would have refused them as too frequent)
 * @property {string} [source] where the run comes from: 'recording' (lab/report/recording.js), or in a
 *   combined report (`carlab report A B --out C`) the results folder's name
 * @property {string} [sourceName] the recording's (or, combined, the input folder's) name
 * @property {string} [groupName] a recording's working group, by name (`group` is its size)
 * @property {string} [family] a recording run of one browser family (lab/report/recording.js)
 * @property {string[]} [families] a recording run over every family of its group: the families
 * @property {number} [sessions] a recording run's page sessions
 * @property {{ fps: number | null, msPerFrame: number | null, visiblePct: number | null, clients: number } | null} [tracking]
 *   AR.js tracking the phones reported
 * @property {Record<string, number>} [effectiveTypes] sessions per navigator.connection.effectiveType
 * @property {{ clientsReconnected: number, reconnects: number, outageMs: number }} [connection] a recording's reconnects
 * @property {string | null} [firstSeen] a recording run's first report (ISO, server clock)
 * @property {string | null} [lastSeen] its last report
 */

/**
 * A recording's summary in results.json (lab/report/recording.js recordingToResults).
 *
 * @typedef {object} RecordingInfo
 * @property {string} name the folder's name
 * @property {string} [dir]
 * @property {number} [sessions]
 * @property {{ file: string }[]} [segments]
 * @property {string | null} [firstAt]
 * @property {string | null} [lastAt]
 * @property {Record<string, number>} [counts] lines, reports, tornLines, invalid, other, superseded, idCollisions
 */

/**
 * @typedef {object} Results
 * @property {Record<string, unknown>} [env]
 * @property {Run[]} runs
 * @property {import('./recording.js').DeviceRow[]} [devices] a recording's page sessions
 * @property {RecordingInfo} [recording] results of one recording
 * @property {RecordingInfo[]} [recordings] a combined report: every recording among its inputs
 */

/**
 * @typedef {object} RunTable one table of the CAR layout
 * @property {string} transport
 * @property {number | null} group
 * @property {number | null} cycleMs
 * @property {string} title e.g. `relay · group 25 · cycle 167 ms`
 * @property {Run[]} runs sorted by clients
 */

/**
 * @typedef {object} Supported the supported population of one transport x group x cycle
 * @property {string} transport
 * @property {number | null} group
 * @property {number | null} cycleMs
 * @property {string | null} [net] network profile (--net)
 * @property {string | null} [cycleMode] action cycle mode, when the runs say
 * @property {string | null} [reports] client reports, when the runs had them ({@link reportsLabel})
 * @property {boolean} unreliable whether loss counts too
 * @property {number | null} supported largest client count whose runs all pass, null if none
 * @property {number | null} smallest smallest client count tested
 * @property {number | null} largest largest client count tested
 * @property {string} label `supported`, or `< smallest` when none passes (`–` when nothing was tested)
 */

// ---------------------------------------------------------------------------
// Values and formatting

/**
 * Whether a run's transport is unreliable, so loss decides support too:
 * its channel has maxRetransmits 0, or it is `relay-udp` (or `p2p` without a
 * reported channel).
 *
 * @param {Run} run
 * @returns {boolean}
 */
export function isUnreliable(run) {
  const channel = isObject(run?.channel) ? run.channel : null;
  if (channel?.maxRetransmits === 0) return true;
  // Clients that disagree (`{ mixed: [...] }`): unreliable if any channel was.
  if (Array.isArray(channel?.mixed) && channel.mixed.some((entry) => entry?.maxRetransmits === 0)) return true;
  // Otherwise the registry says; a peer transport's live channel, when reported, wins.
  const info = transportInfo(String(run?.transport));
  return info?.reliable === false && (info.path === 'server' || channel === null);
}

/**
 * Whether one run meets the supported-clients bar: mean RT < 250 ms and,
 * where unreliable, loss < 2 %. A missing value never passes.
 *
 * @param {Run} run
 * @returns {boolean}
 */
export function runPasses(run) {
  const rt = num(run?.rt?.mean);
  if (rt === null || rt >= RT_LIMIT_MS) return false;
  if (!isUnreliable(run)) return true;
  const loss = num(run.lossPct);
  return loss !== null && loss < LOSS_LIMIT_PCT;
}

/**
 * Ascending, nulls last.
 *
 * @param {unknown} a
 * @param {unknown} b
 * @returns {number}
 */
function compareNumbers(a, b) {
  const x = num(a);
  const y = num(b);
  if (x === null || y === null) return (x === null ? 1 : 0) - (y === null ? 1 : 0);
  return x - y;
}

/**
 * A short name for what drove a run: the browser(s), or `sim`.
 *
 * @param {Run} run
 * @returns {string} empty when unknown
 */
export function describeDriver(run) {
  const name = (/** @type {unknown} */ value) => {
    if (typeof value === 'string') return value;
    if (isObject(value)) {
      const named = value.name ?? value.browser ?? value.channel;
      if (typeof named === 'string') return value.version ? `${named} ${value.version}` : named;
    }
    return '';
  };
  const { browser, sim } = run ?? {};
  if (Array.isArray(browser)) return browser.map(name).filter(Boolean).join('+');
  if (browser !== undefined && browser !== null && browser !== false) return name(browser) || 'browser';
  if (sim !== undefined && sim !== null && sim !== false) return typeof sim === 'string' ? `sim ${sim}` : 'sim';
  return '';
}

// ---------------------------------------------------------------------------
// Tables

/** Columns of the CAR paper's tables. */
export const TABLE_COLUMNS = Object.freeze(['Size', 'RT', 'Dev', 'CPU', 'RTS', '% loss']);

/**
 * One table row in the CAR layout: clients, RT mean and Dev (ms, 0 decimals),
 * server CPU % (1 decimal), RTS mean (ms, 1 decimal), loss % (2 decimals).
 *
 * @param {Run} run
 * @returns {string[]}
 */
export function tableRow(run) {
  return [
    fmt(run?.clients),
    fmt(run?.rt?.mean),
    fmt(run?.rt?.dev),
    fmt(run?.cpu?.server, 1),
    fmt(run?.rts?.mean, 1),
    fmt(run?.lossPct, 2),
  ];
}

/**
 * The runs split into one table per (transport, group size, cycle), each
 * sorted by clients; tables in transport, group, cycle order.
 *
 * @param {Results} results
 * @returns {RunTable[]}
 */
export function runTables(results) {
  return groupRuns(carRuns(runsOf(results))).map(({ transport, group, cycleMs, net, cycleMode, reports, runs }) => ({
    transport,
    group,
    cycleMs,
    title: tableTitle(transport, group, cycleMs, net, cycleMode, reports),
    runs: [...runs].sort((a, b) => compareNumbers(a.clients, b.clients) || String(sourceLabel(a) ?? '').localeCompare(String(sourceLabel(b) ?? ''))),
  }));
}

// ---------------------------------------------------------------------------
// Sources and recordings

/**
 * Whether a run is one browser family's part of a recording's group
 * (lab/report/recording.js): shown in the Recordings section; the CAR tables,
 * supported clients, freshness table and charts show the group's run over
 * every family.
 *
 * @param {Run} run
 * @returns {boolean}
 */
export function isFamilyRun(run) {
  return run?.source === 'recording' && typeof run.family === 'string';
}

/**
 * The runs of the CAR tables: all but the per-family runs of recordings.
 *
 * @param {Run[]} runs
 * @returns {Run[]}
 */
export function carRuns(runs) {
  return runs.filter((run) => !isFamilyRun(run));
}

/**
 * Where a run comes from, in a few words: `recording NAME · GROUP` for a
 * recording's run, the input folder's name in a combined report; null when
 * the run does not say.
 *
 * @param {Run} run
 * @returns {string | null}
 */
export function sourceLabel(run) {
  if (run?.source === 'recording') {
    const name = typeof run.sourceName === 'string' && run.sourceName ? ` ${run.sourceName}` : '';
    const group = typeof run.groupName === 'string' ? ` · ${run.groupName}` : '';
    return `recording${name}${group}`;
  }
  return typeof run?.source === 'string' && run.source ? run.source : null;
}

/**
 * Whether tables need a Source column: the runs come from more than one source.
 *
 * @param {Run[]} runs
 * @returns {boolean}
 */
export function showSources(runs) {
  return new Set(runs.map(sourceLabel)).size > 1;
}

/**
 * The recordings of a results object: its `recording` (every recording run
 * is its), or a combined report's `recordings` and any other recording its
 * runs name.
 *
 * @param {Results} results
 * @returns {RecordingInfo[]}
 */
export function recordingsOf(results) {
  /** @type {RecordingInfo[]} */
  const list = [];
  if (!Array.isArray(results?.recordings) && isObject(results?.recording)) return [/** @type {RecordingInfo} */ (results.recording)];
  if (Array.isArray(results?.recordings)) list.push(...results.recordings.filter(isObject).map((r) => /** @type {RecordingInfo} */ (r)));
  for (const run of runsOf(results)) {
    if (run.source !== 'recording') continue;
    const name = String(run.sourceName ?? '');
    if (!list.some((r) => String(r.name ?? '') === name)) list.push({ name });
  }
  return list;
}

/**
 * The runs of one recording, per (transport, group name) in results order:
 * each browser family's runs, then the group's run over every family.
 *
 * @param {Run[]} runs
 * @param {RecordingInfo | null} recording null: every recording run (results of one recording)
 * @returns {{ transport: string, groupName: string, runs: Run[] }[]}
 */
export function recordingGroups(runs, recording) {
  /** @type {Map<string, { transport: string, groupName: string, runs: Run[] }>} */
  const groups = new Map();
  for (const run of runs) {
    if (run.source !== 'recording' || (recording && String(run.sourceName ?? '') !== String(recording.name ?? ''))) continue;
    const transport = String(run.transport ?? '?');
    const groupName = String(run.groupName ?? '');
    const key = JSON.stringify([transport, groupName]);
    let entry = groups.get(key);
    if (!entry) groups.set(key, (entry = { transport, groupName, runs: [] }));
    entry.runs.push(run);
  }
  for (const entry of groups.values()) entry.runs.sort((a, b) => Number(!isFamilyRun(a)) - Number(!isFamilyRun(b)));
  return [...groups.values()];
}

/**
 * The title of one recording group's table, e.g.
 * `relay · group "lab1" · 4 clients · cycle 167 ms pipelined`.
 *
 * @param {{ transport: string, groupName: string, runs: Run[] }} entry
 * @returns {string}
 */
export function recordingGroupTitle({ transport, groupName, runs }) {
  const all = runs.find((run) => !isFamilyRun(run)) ?? runs[0];
  const mode = typeof all?.cycleMode === 'string' ? ` ${all.cycleMode}` : '';
  return `${transport} · group "${groupName}" · ${fmt(all?.group)} clients · cycle ${fmt(all?.cycleMs)} ms${mode}`;
}

/** Columns of a recording's per-family table: the papers' layout, freshness and tracking. */
export const RECORDING_COLUMNS = Object.freeze([
  'Browser', 'Size', 'Sessions', 'RT', 'Dev', 'p95', 'CPU', 'RTS', '% loss', 'Jitter (ms)',
  'Fresh/stream/s', 'Freeze p99', '% frozen', 'Tracking fps', 'Marker seen %',
]);

/** What the recording tables say. */
export const RECORDING_LEGEND = 'Real phones, from the client reports `carlab start --record` kept: each page session\'s newest report. '
  + 'One row per browser family (from the user agent), then the whole group ("all"). Size: clients (distinct ids) of the family; '
  + 'RT, Dev, p95 (ms): updates its phones sent, on the sender\'s clock, from the merged histograms (percentiles to 0.1 ms below '
  + '100 ms, 1 ms below 1 s); % loss, jitter and freshness: streams into its phones, from any sender. CPU and RTS are not in client '
  + 'reports. Tracking: AR.js frames per second and the share of frames that saw the marker.';

/**
 * One row of a recording's per-family table.
 *
 * @param {Run} run
 * @returns {string[]}
 */
export function recordingRow(run) {
  const f = run.freshness ?? null;
  const t = run.tracking ?? null;
  return [
    isFamilyRun(run) ? String(run.family) : 'all', fmt(run.clients), fmt(run.sessions),
    fmt(run.rt?.mean), fmt(run.rt?.dev), fmt(run.rt?.p95), fmt(run.cpu?.server, 1), fmt(run.rts?.mean, 1), fmt(run.lossPct, 2), fmt(run.jitterMs, 2),
    fmt(f?.updatesPerStreamPerS, 2), fmt(f?.freezeMs?.p99), fmt(f?.frozenPct, 2), fmt(t?.fps, 1), fmt(t?.visiblePct, 1),
  ];
}

/** Columns of the devices table. */
export const DEVICE_COLUMNS = Object.freeze([
  'Session', 'Name', 'Family', 'Browser', 'OS', 'Device', 'Network', 'Transport', 'Group', 'Id', 'Reports', 'First seen', 'Last seen',
]);

/** What the devices table says. */
export const DEVICE_LEGEND = 'One row per page session (the first 8 hex digits of its id): the name as typed, what its user agent '
  + 'says, navigator.connection.effectiveType, its transport and group, the client id the server gave (0: never joined), its reports '
  + 'and when the server first and last heard from it (UTC).';

/**
 * An ISO time as `YYYY-MM-DD HH:MM:SS`, or {@link NONE}.
 *
 * @param {unknown} value
 * @returns {string}
 */
export function timeText(value) {
  return typeof value === 'string' && value ? value.replace('T', ' ').replace(/(\.\d+)?Z$/, '') : NONE;
}

/**
 * One row of the devices table.
 *
 * @param {import('./recording.js').DeviceRow} d
 * @returns {string[]}
 */
export function deviceRow(d) {
  const text = (/** @type {unknown} */ v) => (typeof v === 'string' && v ? v : NONE);
  const joined = (/** @type {unknown} */ a, /** @type {unknown} */ b) => [a, b].filter((v) => typeof v === 'string' && v).join(' ') || NONE;
  return [
    text(d?.session), String(d?.name ?? ''), text(d?.family), joined(d?.browser, d?.browserVersion), joined(d?.os, d?.osVersion), text(d?.device),
    text(d?.effectiveType), text(d?.transport), text(d?.group), fmt(d?.clientId), fmt(d?.reports), timeText(d?.firstSeen), timeText(d?.lastSeen),
  ];
}

/**
 * One line about a recording: sessions, segments, time span and what the reader skipped.
 *
 * @param {RecordingInfo} recording
 * @returns {string}
 */
export function recordingSummary(recording) {
  const c = recording.counts ?? {};
  const segments = Array.isArray(recording.segments) ? recording.segments.length : null;
  const parts = [`${fmt(recording.sessions)} sessions${segments !== null ? ` in ${segments} segment${segments === 1 ? '' : 's'}` : ''}`];
  if (recording.firstAt || recording.lastAt) parts.push(`${timeText(recording.firstAt)} to ${timeText(recording.lastAt)} UTC`);
  if (num(c.lines) !== null) parts.push(`${fmt(c.lines)} lines, ${fmt(c.reports)} reports`);
  const skipped = [
    num(c.tornLines) ? `${fmt(c.tornLines)} torn line${c.tornLines === 1 ? '' : 's'}` : '',
    num(c.invalid) ? `${fmt(c.invalid)} invalid report${c.invalid === 1 ? '' : 's'}` : '',
    num(c.other) ? `${fmt(c.other)} other line${c.other === 1 ? '' : 's'}` : '',
  ].filter(Boolean);
  if (skipped.length) parts.push(`skipped ${skipped.join(', ')}`);
  if (num(c.idCollisions)) parts.push(`${fmt(c.idCollisions)} sessions shared a client id with another at the same time (their streams are matched to one of them)`);
  return parts.join('; ');
}

/**
 * The "Recordings" section of tables.md: per recording, a table per
 * (transport, group) with a row per browser family and one for the group,
 * then the devices; empty when the results hold no recording.
 *
 * @param {Results} results
 * @returns {string}
 */
export function renderRecordingTables(results) {
  const recordings = recordingsOf(results);
  if (!recordings.length) return '';
  const runs = runsOf(results);
  const several = recordings.length > 1;
  const devices = Array.isArray(results.devices) ? results.devices.filter(isObject) : [];
  const out = ['## Recordings', '', RECORDING_LEGEND, ''];
  for (const recording of recordings) {
    const name = String(recording.name ?? '');
    const of = several ? ` · recording ${mdData(name)}` : '';
    out.push(`_Recording ${mdData(name)}: ${mdData(recordingSummary(recording))}._`, '');
    for (const entry of recordingGroups(runs, several ? recording : null)) {
      out.push(`### ${mdData(recordingGroupTitle(entry))}${of}`, '');
      out.push(markdownTable(RECORDING_COLUMNS, entry.runs.map((run) => recordingRow(run).map(mdData)), RECORDING_COLUMNS.map((_, i) => (i === 0 ? 'left' : 'right'))), '');
    }
    const mine = devices.filter((d) => !several || String(d.sourceName ?? '') === name);
    if (mine.length) {
      out.push(`### Devices${of}`, '', DEVICE_LEGEND, '');
      out.push(markdownTable(DEVICE_COLUMNS, mine.map((d) => deviceRow(d).map(mdData)), DEVICE_COLUMNS.map((_, i) => (i >= 9 && i <= 10 ? 'right' : 'left'))), '');
    }
  }
  return out.join('\n');
}

/**
 * Text from the data (a client's name, a group's, what a user agent says)
 * made inert in markdown: no HTML, no emphasis, no links.
 *
 * @param {unknown} value
 * @returns {string}
 */
export function mdData(value) {
  return mdText(value).replace(/[\\`*_[\]<>]/g, '\\$&');
}

/**
 * @param {string} transport
 * @param {number | null} group
 * @param {number | null} cycleMs
 * @param {string | null} [net] network profile (--net)
 * @param {string | null} [cycleMode] action cycle mode, when the runs say
 * @param {string | null} [reports] client reports, when the runs had them ({@link reportsLabel})
 * @returns {string}
 */
export function tableTitle(transport, group, cycleMs, net = null, cycleMode = null, reports = null) {
  return `${transport} · group ${fmt(group)} · cycle ${fmt(cycleMs)} ms${cycleMode ? ` ${cycleMode}` : ''}${reports ? ` · ${reports}` : ''}${net ? ` · net ${net}` : ''}`;
}

/**
 * The client reports a run had (sim/bench --reports), e.g. `reports 5 s`;
 * null when it had none (reportsIntervalS 0 or absent).
 * @param {Run} run
 * @returns {string | null}
 */
export function reportsLabel(run) {
  const s = num(run?.reportsIntervalS);
  return s ? `reports ${s} s` : null;
}

/**
 * A run's Mode cell: its cycle mode, and its client reports when it had them.
 * @param {Run} run
 * @returns {string}
 */
export function modeCell(run) {
  const reports = reportsLabel(run);
  return `${run.cycleMode ?? NONE}${reports ? ` · ${reports}` : ''}`;
}

/**
 * The supported population per transport x group x cycle: the largest client
 * count with mean RT < 250 ms (and loss < 2 % where unreliable). A client
 * count with several runs passes only if all of them pass; runs without a
 * client count are ignored.
 *
 * @param {Run[]} runs
 * @returns {Supported[]}
 */
export function supportedClients(runs) {
  return groupRuns(Array.isArray(runs) ? runs : []).map(({ transport, group, cycleMs, net, cycleMode, reports, runs: members }) => {
    /** @type {Map<number, boolean>} */
    const passBySize = new Map();
    for (const run of members) {
      const clients = num(run.clients);
      if (clients === null) continue;
      passBySize.set(clients, (passBySize.get(clients) ?? true) && runPasses(run));
    }
    const sizes = [...passBySize.keys()].sort((a, b) => a - b);
    const passing = sizes.filter((size) => passBySize.get(size));
    const supported = passing.length ? passing[passing.length - 1] : null;
    const smallest = sizes.length ? sizes[0] : null;
    const largest = sizes.length ? sizes[sizes.length - 1] : null;
    let label = NONE;
    if (supported !== null) label = String(supported);
    else if (smallest !== null) label = `< ${smallest}`;
    return {
      transport,
      group,
      cycleMs,
      net,
      cycleMode,
      reports,
      unreliable: members.some(isUnreliable),
      supported,
      smallest,
      largest,
      label,
    };
  });
}

/** Columns of the supported clients table. */
export const SUPPORTED_COLUMNS = Object.freeze(['Transport', 'Group', 'Cycle (ms)', 'Tested', 'Supported clients']);

/**
 * One row of the supported clients table.
 *
 * @param {Supported} entry
 * @returns {string[]}
 */
export function supportedRow(entry) {
  let tested = NONE;
  if (entry.smallest !== null) {
    tested = entry.smallest === entry.largest ? String(entry.smallest) : `${entry.smallest}–${entry.largest}`;
  }
  const name = `${entry.transport}${entry.cycleMode ? ` · ${entry.cycleMode}` : ''}${entry.reports ? ` · ${entry.reports}` : ''}${entry.net ? ` · net ${entry.net}` : ''}`;
  return [name, fmt(entry.group), fmt(entry.cycleMs), tested, entry.label];
}

/** What the table columns mean, one paragraph. */
export const TABLE_LEGEND =
  'Size: clients. RT, Dev: response time mean and standard deviation (ms). ' +
  'CPU: relay/server process CPU % (100 = one core). RTS: relay response time mean (ms). ' +
  '% loss: updates lost.';

/** How supported clients are decided, one paragraph. */
export const SUPPORTED_LEGEND =
  `Largest population with mean RT < ${RT_LIMIT_MS} ms (and loss < ${LOSS_LIMIT_PCT} % where the ` +
  'transport is unreliable); "< N" when even the smallest tested population N misses it.';

/**
 * Markdown tables in the CAR paper's layout: one per (transport, group size,
 * cycle), then the supported clients table.
 *
 * @param {Results} results
 * @returns {string}
 */
export function renderTables(results) {
  const runs = runsOf(results);
  if (runs.some(isLabRun)) {
    // `carlab browsers`: its experiments' tables, then the CAR tables of its `car` runs.
    const carRuns = runs.filter((run) => !isLabRun(run));
    const parts = [renderExperimentTables(runs)];
    if (carRuns.length) parts.push(renderTables({ ...results, runs: carRuns }));
    return parts.join('\n');
  }
  const out = ['## Response time, CPU and loss', ''];
  if (runs.length === 0) {
    out.push('_No runs._', '');
    const recordings = renderRecordingTables(results);
    if (recordings) out.push(recordings);
    return out.join('\n');
  }
  const tagged = showSources(carRuns(runs));
  out.push(tagged ? `${TABLE_LEGEND} ${SOURCE_LEGEND}` : TABLE_LEGEND, '');
  for (const table of runTables(results)) {
    out.push(`### ${mdHeading(table.title)}`, '');
    if (tagged) {
      const columns = ['Source', ...TABLE_COLUMNS];
      out.push(markdownTable(columns, table.runs.map((run) => [mdData(sourceLabel(run) ?? NONE), ...tableRow(run)]), columns.map((_, i) => (i === 0 ? 'left' : 'right'))));
    } else {
      out.push(markdownTable(TABLE_COLUMNS, table.runs.map(tableRow), TABLE_COLUMNS.map(() => 'right')));
    }
    const failed = table.runs.filter((run) => run.error);
    if (failed.length) out.push('', ...failed.map((run) => `- ${fmt(run.clients)} clients failed: ${mdText(run.error)}`));
    const lost = table.runs.flatMap((run) => (/** @type {any} */ (run).fleet?.lost ?? []).map((/** @type {any} */ l) => ({ run, l })));
    if (lost.length) {
      out.push('', ...lost.map(({ run, l }) => `- ${fmt(run.clients)} clients: ${fmt(l.peers)} peers lost with agent ${mdText(l.agent)} (${mdText(l.host)}) `
        + `at ${fmt(l.atS, 1)} s (${mdText(l.phase)}): ${mdText(l.reason)}; they are left out of loss`));
    }
    out.push('');
  }
  out.push('## Supported clients', '', SUPPORTED_LEGEND, '');
  if (tagged) {
    const columns = ['Source', ...SUPPORTED_COLUMNS];
    out.push(markdownTable(columns, supportedBySource(runs).map(({ source, entry }) => [mdData(source ?? NONE), ...supportedRow(entry)]), ['left', 'left', 'right', 'right', 'right', 'right']));
  } else {
    out.push(markdownTable(SUPPORTED_COLUMNS, supportedClients(carRuns(runs)).map(supportedRow), ['left', 'right', 'right', 'right', 'right']));
  }
  out.push('');
  const perBrowser = runs.filter((run) => run.byBrowser);
  if (perBrowser.length) {
    out.push('## Per browser in mixed fleets', '', PER_BROWSER_LEGEND, '');
    out.push(markdownTable(PER_BROWSER_COLUMNS, perBrowser.flatMap(perBrowserRows), PER_BROWSER_COLUMNS.map((_, i) => (i < 2 ? 'left' : 'right'))));
    out.push('');
  }
  const fresh = renderFreshnessTable(runs);
  if (fresh) out.push(fresh);
  const recordings = renderRecordingTables(results);
  if (recordings) out.push(recordings);
  const scale = renderScaleOutTable(runs);
  if (scale) out.push(scale);
  const net = renderNetTables(runs);
  if (net) out.push(net);
  const fleet = renderFleetTable(runs);
  if (fleet) out.push(fleet);
  return out.join('\n');
}

/** Columns of the fleet table (`carlab bench --agents`). */
export const FLEET_COLUMNS = Object.freeze([
  'Transport', 'Size', 'Group', 'Agent', 'Host', 'Peers', 'Browser CPU %', 'RSS max (MB)', 'Agent CPU %', 'Setup (ms)', 'Start skew (ms)', 'Lost',
]);

/** What the fleet columns mean. */
export const FLEET_LEGEND = 'One row per agent of a fleet run (docs/fleet.md). Browser CPU %: its browsers\' process trees over the '
  + 'measured window (100 = one core); Agent CPU %: the agent process itself; Setup: launching browsers and opening pages, on '
  + 'the agent\'s clock; Start skew: when it started its peers after the first agent did, estimated on the bench\'s clock '
  + '(send and reply times and the agent\'s own duration: no clocks compared).';

/**
 * The fleet table, or null when no run ran on agents.
 * @param {Run[]} runs
 * @returns {string | null}
 */
export function renderFleetTable(runs) {
  const rows = runs.flatMap((run) => (/** @type {any} */ (run).fleet?.agents ?? []).map((/** @type {any} */ a) => [
    String(run.transport), fmt(run.clients), fmt(run.group), mdData(a.name), mdData(a.host), fmt(a.peers), fmt(a.cpuPct, 1),
    fmt(a.rssMaxMb), fmt(a.agentCpuPct, 1), fmt(a.setupMs), fmt(a.startSkewMs, 1), a.lost ? 'lost' : NONE,
  ]));
  if (rows.length === 0) return null;
  return ['## Fleet', '', FLEET_LEGEND, '', markdownTable(FLEET_COLUMNS, rows, FLEET_COLUMNS.map((_, i) => (i === 0 || i === 3 || i === 4 ? 'left' : 'right'))), ''].join('\n');
}

/** Columns of the freshness table. */
export const FRESHNESS_COLUMNS = Object.freeze([
  'Transport', 'Mode', 'Net', 'Size', 'Group', 'Cycle (ms)', 'Fresh/stream/s', 'Freeze p50', 'Freeze p99', 'Freeze max', '% frozen', 'RT', '% loss',
]);

/** What the freshness columns mean. */
export const FRESHNESS_LEGEND = 'Measured at the receivers, per (receiver, sender) stream, on the receiver\'s own clock '
  + '(docs/architecture.md "Freshness"). Fresh/stream/s: updates applied (newer than any before) per stream and second, '
  + '6 at most on a 167 ms cycle. Freeze: gaps between consecutive fresh updates (ms), the time an avatar stands still. '
  + '% frozen: share of stream time spent in gaps over 1 s. Mode: pipelined sends every cycle; gated (the paper\'s) '
  + 'waits for every ACK of the previous update or its ACK timeout. RT mean (ms) and % loss as above.';

/**
 * One row of the freshness table.
 * @param {Run} run
 * @returns {string[]}
 */
export function freshnessRow(run) {
  const f = run.freshness ?? null;
  return [
    String(run.transport), modeCell(run), netName(run) ?? NONE, fmt(run.clients), fmt(run.group), fmt(run.cycleMs),
    fmt(f?.updatesPerStreamPerS, 2), fmt(f?.freezeMs?.p50), fmt(f?.freezeMs?.p99), fmt(f?.freezeMs?.max), fmt(f?.frozenPct, 2),
    fmt(run.rt?.mean), fmt(run.lossPct, 2),
  ];
}

/**
 * Runs in table order: profiles as they ran, then transport, mode, group, cycle, clients.
 * @param {Run[]} runs
 * @returns {Run[]}
 */
export function orderedRuns(runs) {
  const profiles = [...new Set(runs.map(netName))];
  return [...runs].sort((a, b) => profiles.indexOf(netName(a)) - profiles.indexOf(netName(b))
    || compareTransports(String(a.transport), String(b.transport))
    || String(a.cycleMode ?? '').localeCompare(String(b.cycleMode ?? ''))
    || compareNumbers(a.group, b.group) || compareNumbers(a.cycleMs, b.cycleMs) || compareNumbers(a.clients, b.clients)
    || compareNumbers(a.reportsIntervalS ?? 0, b.reportsIntervalS ?? 0)
    || String(sourceLabel(a) ?? '').localeCompare(String(sourceLabel(b) ?? '')));
}

/**
 * The "Freshness at the receiver" section: empty when no run measured it.
 * @param {Run[]} runs
 * @returns {string}
 */
export function renderFreshnessTable(runs) {
  const rs = freshnessRuns(runs);
  if (!rs.length) return '';
  if (showSources(rs)) {
    const columns = ['Source', ...FRESHNESS_COLUMNS];
    return ['## Freshness at the receiver', '', FRESHNESS_LEGEND, '',
      markdownTable(columns, rs.map((run) => [mdData(sourceLabel(run) ?? NONE), ...freshnessRow(run)]), columns.map((_, i) => (i < 4 ? 'left' : 'right'))), ''].join('\n');
  }
  return ['## Freshness at the receiver', '', FRESHNESS_LEGEND, '',
    markdownTable(FRESHNESS_COLUMNS, rs.map(freshnessRow), FRESHNESS_COLUMNS.map((_, i) => (i < 3 ? 'left' : 'right'))), ''].join('\n');
}

/**
 * The runs of the freshness table, in table order (a recording's per-family
 * runs are in its own section).
 * @param {Run[]} runs
 * @returns {Run[]}
 */
export function freshnessRuns(runs) {
  return orderedRuns(carRuns(runs).filter((run) => isObject(run.freshness) && !run.error));
}

/** What the Source column says. */
export const SOURCE_LEGEND = 'Source: the results folder a row comes from, or the recording and its working group.';

/**
 * Supported clients per source (each source decides its own populations),
 * sources in the order their runs come.
 * @param {Run[]} runs
 * @returns {{ source: string | null, entry: Supported }[]}
 */
export function supportedBySource(runs) {
  const rs = carRuns(runs);
  const sources = [...new Set(rs.map(sourceLabel))];
  return sources.flatMap((source) => supportedClients(rs.filter((run) => sourceLabel(run) === source)).map((entry) => ({ source, entry })));
}

/**
 * A heading made of data: on one line, no HTML.
 * @param {unknown} value
 * @returns {string}
 */
function mdHeading(value) {
  return mdText(value).replace(/[<>]/g, '\\$&');
}

/** Columns of the scale-out table. */
export const SCALE_OUT_COLUMNS = Object.freeze([
  'Transport', 'Mode', 'Net', 'Size', 'Nodes', 'Cross-node updates', 'NATS', 'Clients moved', 'Reconnect p50', 'Reconnect p99', 'Reconnect max', 'Lost updates',
]);

/** What the scale-out columns mean. */
export const SCALE_OUT_LEGEND = 'Runs on several relay processes joined through NATS. Nodes: relay processes; cross-node updates: '
  + 'updates forwarded to a member on another node; NATS: server version. A failover run kills a relay mid-run: clients moved '
  + 'to another node, their reconnect time (ms) and the updates lost meanwhile.';

/**
 * One row of the scale-out table.
 * @param {Run} run
 * @returns {string[]}
 */
export function scaleOutRow(run) {
  const c = run.cluster ?? null;
  const f = run.failover ?? null;
  return [
    String(run.transport), modeCell(run), netName(run) ?? NONE, fmt(run.clients),
    fmt(c?.nodes), fmt(c?.crossNodeUpdates), typeof c?.natsVersion === 'string' ? c.natsVersion : NONE,
    fmt(f?.clientsMoved), fmt(f?.reconnectMs?.p50), fmt(f?.reconnectMs?.p99), fmt(f?.reconnectMs?.max), fmt(f?.lostUpdates),
  ];
}

/**
 * The "Scale-out" section: empty when no run has `cluster` or `failover`.
 * @param {Run[]} runs
 * @returns {string}
 */
export function renderScaleOutTable(runs) {
  const rs = orderedRuns(runs.filter((run) => isObject(run.cluster) || isObject(run.failover)));
  if (!rs.length) return '';
  return ['## Scale-out', '', SCALE_OUT_LEGEND, '',
    markdownTable(SCALE_OUT_COLUMNS, rs.map(scaleOutRow), SCALE_OUT_COLUMNS.map((_, i) => (i < 3 || i === 6 ? 'left' : 'right'))), ''].join('\n');
}

const PER_BROWSER_COLUMNS = Object.freeze(['Transport', 'Browser', 'Size', 'Group', 'Peers', 'RT', 'Dev', 'p95', '% loss', 'Jitter (ms)']);
const PER_BROWSER_LEGEND = 'A fleet of several browsers split by browser: RT of the updates its peers sent (sender\'s clock); '
  + 'loss and jitter of the streams its peers received, from any sender.';

/**
 * One row per browser of a mixed-fleet run (`byBrowser`, lab/report/aggregate.js).
 * @param {Run} run
 * @returns {string[][]}
 */
export function perBrowserRows(run) {
  return Object.entries(run.byBrowser ?? {}).map(([name, b]) => [
    String(run.transport), name, fmt(run.clients), fmt(run.group), fmt(b.clients),
    fmt(b.rt?.mean), fmt(b.rt?.dev), fmt(b.rt?.p95), fmt(b.lossPct, 2), fmt(b.jitterMs, 2),
  ]);
}

// ---------------------------------------------------------------------------
// Terminal

/**
 * One line describing a run, for terminals and progress logs, e.g.
 * `relay 100 clients · group 25 · 167 ms · RT 45 ± 12 ms (p95 80, n 1200) · RTS 1.2 ms · CPU 35.0 % · loss 0.00 %`.
 *
 * @param {Run} run
 * @returns {string}
 */
export function renderSummaryLine(run) {
  const r = run ?? /** @type {Run} */ ({});
  const driver = describeDriver(r);
  const head = [
    `${mdText(r.transport ?? '?')}${driver ? ` (${mdText(driver)})` : ''} ${fmt(r.clients)} clients`,
    `group ${fmt(r.group)}`,
    `${fmt(r.cycleMs)} ms${r.cycleMode ? ` ${mdText(r.cycleMode)}` : ''}`,
    ...(reportsLabel(r) ? [/** @type {string} */ (reportsLabel(r))] : []),
  ];
  if (r.error) return `${head.join(' · ')} · failed: ${mdText(r.error)}`;
  const rt = r.rt ?? {};
  const rtDetail = [
    num(rt.p95) !== null ? `p95 ${fmt(rt.p95)}` : '',
    num(rt.max) !== null ? `max ${fmt(rt.max)}` : '',
    num(rt.n) !== null ? `n ${fmt(rt.n)}` : '',
  ].filter(Boolean);
  const parts = [
    `RT ${fmt(rt.mean)} ± ${fmt(rt.dev)} ms${rtDetail.length ? ` (${rtDetail.join(', ')})` : ''}`,
  ];
  if (num(r.rts?.mean) !== null) parts.push(`RTS ${fmt(r.rts?.mean, 1)} ms`);
  const cpu = [
    num(r.cpu?.server) !== null ? `server ${fmt(r.cpu?.server, 1)} %` : '',
    num(r.cpu?.clients) !== null ? `clients ${fmt(r.cpu?.clients, 1)} %` : '',
  ].filter(Boolean);
  if (cpu.length) parts.push(`CPU ${cpu.join(', ')}`);
  parts.push(`loss ${fmt(r.lossPct, 2)} %${num(r.ackLossPct) ? ` (ACK ${fmt(r.ackLossPct, 2)} %)` : ''}`);
  if (num(r.dups)) parts.push(`dups ${fmt(r.dups)}`);
  if (num(r.reorders)) parts.push(`reorders ${fmt(r.reorders)}`);
  if (num(r.jitterMs) !== null) parts.push(`jitter ${fmt(r.jitterMs, 1)} ms`);
  if (num(r.freshness?.updatesPerStreamPerS) !== null) {
    parts.push(`fresh ${fmt(r.freshness?.updatesPerStreamPerS, 2)}/stream/s, freeze p99 ${fmt(r.freshness?.freezeMs?.p99)} ms`);
  }
  if (isObject(r.setupMs)) {
    const setup = Object.entries(r.setupMs)
      .map(([phase, stats]) => /** @type {const} */ ([phase, isObject(stats) ? num(stats.p50 ?? stats.mean) : null]))
      .filter(([, ms]) => ms !== null)
      .map(([phase, ms]) => `${mdText(phase)} ${fmt(ms)}`);
    if (setup.length) parts.push(`setup ${setup.join(', ')} ms`);
  }
  const verdict = runPasses(r) ? '' : ` · over limit (RT ≥ ${RT_LIMIT_MS} ms${isUnreliable(r) ? ` or loss ≥ ${LOSS_LIMIT_PCT} %` : ''})`;
  return `${head.join(' · ')} · ${parts.join(' · ')}${verdict}`;
}

// ---------------------------------------------------------------------------
// Helpers

/**
 * The runs of a results object, objects only.
 *
 * @param {Results} results
 * @returns {Run[]}
 */
export function runsOf(results) {
  return Array.isArray(results?.runs) ? results.runs.filter(isObject) : [];
}

/**
 * Runs grouped by (transport, group, cycleMs, cycle mode, client reports, network profile),
 * sorted by transport, group, cycle, mode, reports (none first); profiles in the order they ran.
 *
 * @param {Run[]} runs
 * @returns {{ transport: string, group: number | null, cycleMs: number | null, net: string | null, cycleMode: string | null,
 *   reports: string | null, runs: Run[] }[]}
 */
export function groupRuns(runs) {
  /** @type {Map<string, { transport: string, group: number | null, cycleMs: number | null, net: string | null, cycleMode: string | null,
   *   reports: string | null, runs: Run[] }>} */
  const groups = new Map();
  for (const run of runs) {
    if (!isObject(run)) continue;
    const transport = typeof run.transport === 'string' ? run.transport : String(run.transport ?? '?');
    const group = num(run.group);
    const cycleMs = num(run.cycleMs);
    const net = netName(run);
    const cycleMode = typeof run.cycleMode === 'string' ? run.cycleMode : null;
    const reports = reportsLabel(run);
    const key = JSON.stringify([transport, group, cycleMs, cycleMode, reports, net]);
    let entry = groups.get(key);
    if (!entry) groups.set(key, (entry = { transport, group, cycleMs, net, cycleMode, reports, runs: [] }));
    entry.runs.push(run);
  }
  return [...groups.values()].sort(
    (a, b) => compareTransports(a.transport, b.transport) || compareNumbers(a.group, b.group) || compareNumbers(a.cycleMs, b.cycleMs)
      || String(a.cycleMode ?? '').localeCompare(String(b.cycleMode ?? ''))
      || (num(a.runs[0].reportsIntervalS) ?? 0) - (num(b.runs[0].reportsIntervalS) ?? 0),
  );
}
