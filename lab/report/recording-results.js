// Results from a study recording as read (recording.js): a results object
// (docs/architecture.md "Results files") with one run per (transport, group,
// browser family) and one per (transport, group) over every family, plus a
// table of the devices that took part.
//
// Every measurement is the lab's own: RT from the reports' merged RT
// histograms, loss, duplicates, reorders, jitter and freshness from
// lab/report/aggregate.js aggregateRun over client records rebuilt from the reports,
// exactly as `carlab sim` and `carlab bench` compute them from CarClient.stats().

import os from 'node:os';
import path from 'node:path';

import { CYCLE_MODES } from '../../core/cycle.js';
import { countableAgainst } from '../../core/metrics.js';
import { summarizePlayout } from '../../core/report.js';
import { describeUserAgent } from '../../server/user-agent.js';
import { aggregateRun } from './aggregate.js';
import { recordingScene } from './recording-scene.js';
import { compareTransports } from './format.js';

/** @typedef {import('./recording.js').RecordedSession} RecordedSession */
/** @typedef {import('./recording.js').Recording} Recording */

/** A session id is a secret while its session lives (docs/study.md): tables show this many hex digits of it. */
export const SESSION_PREFIX = 8;

/**
 * A recorded session as a client record of the lab's aggregation
 * (core/metrics.js ClientStats, the shape CarClient.stats() has), with its
 * RT histogram as `rtHist` (lab/report/aggregate.js rtSummaryOf).
 *
 * @typedef {object} SessionClient
 * @property {number} id
 * @property {string} group stream key: group name and the group's instance (see groupInstances)
 * @property {string} groupName
 * @property {string} transport
 * @property {string} family
 * @property {string} cycleMode
 * @property {number} cycleMs
 * @property {import('../../core/report.js').RtHistogramJson} rtHist
 * @property {number} rtWarmupN
 * @property {Record<string, number>} sentTo
 * @property {Record<string, number>} pendingTo older pages only
 * @property {number} [cutoffSeq] newer pages: the loss record of the newest report (core/metrics.js SenderLossRecord)
 * @property {Record<string, number>} [cutoffTo] per receiver id, the cutoff of this sender's report of that
 *   receiver's last report's time (see withReceiverCutoffs)
 * @property {Record<string, number[]>} [sentSeqs]
 * @property {Record<string, number[]>} [ackedBy]
 * @property {number[]} [ackedAllSeqs]
 * @property {number} takenBack
 * @property {Record<string, number>} acksFrom
 * @property {Record<string, import('../../core/metrics.js').StreamRecord>} recv
 * @property {number} updatesSent
 * @property {number} completed
 * @property {number} ackTimeouts
 * @property {number} skippedCycles
 * @property {number} lateAcks
 * @property {object | null} setup
 * @property {object | null} channel
 * @property {RecordedSession} session
 * @property {import('../../server/user-agent.js').DeviceInfo} device
 */

/**
 * @param {RecordedSession} s
 * @param {string} instance
 * @returns {SessionClient}
 */
export function sessionClient(s, instance) {
  const r = s.r;
  const device = describeUserAgent(s.ua);
  return {
    id: r.clientId,
    group: `${r.group}\u0000${instance}`,
    groupName: r.group,
    transport: r.transport,
    family: device.family,
    cycleMode: r.cycleMode,
    cycleMs: r.cycleMs,
    rtHist: r.rt,
    rtWarmupN: r.rtWarmupN,
    sentTo: r.sentTo,
    pendingTo: r.pendingTo ?? {},
    ...(r.sentSeqs && r.cutoffSeq !== undefined
      ? { cutoffSeq: r.cutoffSeq, sentSeqs: r.sentSeqs, ackedBy: r.ackedBy ?? {}, ackedAllSeqs: r.ackedAllSeqs ?? [] }
      : {}),
    takenBack: r.updates.takenBack ?? 0,
    acksFrom: r.acksFrom,
    recv: r.recv,
    updatesSent: r.updates.sent,
    completed: r.updates.completed,
    ackTimeouts: r.updates.ackTimeouts,
    skippedCycles: r.updates.skippedCycles,
    lateAcks: r.updates.lateAcks,
    setup: r.setup,
    channel: r.channel,
    session: s,
    device,
  };
}

/**
 * Each sender's cutoff per receiver: the cutoff of the sender's newest report
 * that may be counted against the receiver's last one (core/metrics.js
 * countableAgainst). Both ends' last reports are up to a report interval
 * apart; counted at a later sender cutoff, what it sent after the receiver's
 * last report would look lost.
 * @param {SessionClient[]} population one group name's clients
 */
export function withReceiverCutoffs(population) {
  for (const sender of population) {
    if (sender.cutoffSeq === undefined || !sender.sentSeqs) continue;
    /** @type {Record<string, number>} */
    const cutoffTo = {};
    for (const rid of Object.keys(sender.sentSeqs)) {
      const receiver = population.find((c) => c.group === sender.group && String(c.id) === rid);
      if (!receiver) continue;
      let seq = 0;
      for (const c of sender.session.cutoffs ?? []) if (countableAgainst(c.at, c.horizonMs, receiver.session.lastAt)) seq = Math.max(seq, c.seq);
      cutoffTo[rid] = Math.min(seq, sender.cutoffSeq);
    }
    sender.cutoffTo = cutoffTo;
  }
}

/**
 * The clients of one group name in one id space, split into instances of
 * the group: sessions that overlapped in time (server clock, from a
 * session's start to its last report). A relay forgets an empty group and
 * may hand its ids out again, so the same id in two instances is two
 * clients; streams are matched by (group, instance, id). Sessions that never
 * got an id (clientId 0) join no instance.
 *
 * @param {RecordedSession[]} sessions of one group name and id space
 * @returns {Map<RecordedSession, string>} session -> instance ('0', '1', ...; '-' without an id)
 */
export function groupInstances(sessions) {
  /** @type {Map<RecordedSession, string>} */
  const out = new Map();
  const joined = sessions.filter((s) => s.r.clientId > 0).sort((a, b) => a.startAt - b.startAt || a.lastAt - b.lastAt);
  let index = -1;
  let end = -Infinity;
  for (const s of joined) {
    if (s.startAt > end) index++;
    end = Math.max(end, s.lastAt);
    out.set(s, String(index));
  }
  for (const s of sessions) if (!out.has(s)) out.set(s, '-');
  return out;
}

/**
 * The most common value (the smallest on a tie) and every value seen.
 * @template T
 * @param {T[]} values
 * @returns {{ value: T | null, seen: T[] }}
 */
function modeOf(values) {
  /** @type {Map<T, number>} */
  const counts = new Map();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  const seen = [...counts.keys()].sort();
  let value = null;
  let best = 0;
  for (const v of seen) {
    const c = /** @type {number} */ (counts.get(v));
    if (c > best) [value, best] = [v, c];
  }
  return { value, seen };
}

/**
 * AR.js tracking over clients: frames per second of tracked time, processing
 * ms per frame and the share of frames that saw the marker; null when no
 * client reported tracking.
 * @param {SessionClient[]} clients
 * @returns {{ fps: number | null, msPerFrame: number | null, visiblePct: number | null, clients: number } | null}
 */
export function trackingOf(clients) {
  const t = clients.map((c) => c.session.r.tracking).filter((x) => x !== null && x !== undefined);
  if (!t.length) return null;
  const sum = (/** @type {'frames' | 'visibleFrames' | 'processMsSum' | 'spanMs'} */ k) => t.reduce((s, x) => s + x[k], 0);
  const frames = sum('frames');
  const spanMs = sum('spanMs');
  return {
    fps: spanMs > 0 ? (1000 * frames) / spanMs : null,
    msPerFrame: frames > 0 ? sum('processMsSum') / frames : null,
    visiblePct: frames > 0 ? (100 * sum('visibleFrames')) / frames : null,
    clients: t.length,
  };
}

/**
 * @param {number} ms epoch
 * @returns {string}
 */
const iso = (ms) => new Date(ms).toISOString();

/**
 * One row of the devices table: a page session and what its user agent says.
 *
 * @typedef {object} DeviceRow
 * @property {string} session the first SESSION_PREFIX hex digits of the session id
 * @property {string} family
 * @property {string} browser
 * @property {string} browserVersion
 * @property {string} os
 * @property {string} osVersion
 * @property {string} device mobile, tablet, desktop, tv or server
 * @property {string | null} effectiveType navigator.connection.effectiveType
 * @property {string} transport
 * @property {string} group the group's name
 * @property {string} name the client's name as typed (data: escape it)
 * @property {number} clientId
 * @property {string} kind app, bench or sim
 * @property {number} reports valid reports of the session
 * @property {number} seq the newest report's number
 * @property {boolean} final whether the newest report is the one sent when leaving
 * @property {string} firstSeen ISO time (server clock) of its first report
 * @property {string} lastSeen ISO time of its last report
 * @property {string} [sourceName] the recording it comes from
 */

/**
 * @param {SessionClient} c
 * @param {string} sourceName
 * @returns {DeviceRow}
 */
function deviceRow(c, sourceName) {
  const { r } = c.session;
  return {
    session: r.session.slice(0, SESSION_PREFIX),
    family: c.device.family,
    browser: c.device.browser,
    browserVersion: c.device.browserVersion,
    os: c.device.os,
    osVersion: c.device.osVersion,
    device: c.device.device,
    effectiveType: r.effectiveType,
    transport: r.transport,
    group: r.group,
    name: r.name,
    clientId: r.clientId,
    kind: r.kind,
    reports: c.session.reports,
    seq: r.seq,
    final: r.final,
    firstSeen: iso(c.session.firstAt),
    lastSeen: iso(c.session.lastAt),
    sourceName,
  };
}

/**
 * The results object of a recording: `env`, `runs` (per transport x group x
 * browser family, then per transport x group over every family: `browser: 'all'`),
 * `devices` (one row per session) and `recording` (where it came from and what
 * was skipped). Every run passes lab/report/schema.js; it has the fields of a
 * `carlab sim|bench` run (lab/report/aggregate.js aggregateRun) and also:
 * `source: 'recording'`, `sourceName` (the folder's name), `groupName`,
 * `family` (per-family runs) or `families` (the group's run), `sessions`,
 * `tracking`, `effectiveTypes`, `connection`, `firstSeen`, `lastSeen`, and
 * `cycleMsSeen` / `cycleModesSeen` when the sessions disagreed. `group` is
 * the group's size: the most client ids an instance of the group had
 * (see groupInstances); `clients` the distinct clients of the run's sessions.
 * CPU and RTS are null: client reports carry neither.
 *
 * @param {Recording} recording
 * @param {{ now?: Date }} [options]
 * @returns {RecordingResults}
 */
export function recordingToResults(recording, { now = new Date() } = {}) {
  const sourceName = path.basename(path.resolve(recording.dir));
  // Streams are matched inside one group name, whatever each member's transport: the relay
  // gives every member of a group its id from one space, p2p members too (docs/protocol.md §5.1).
  /** @type {Map<string, RecordedSession[]>} */
  const spaces = new Map();
  for (const s of recording.sessions) {
    const list = spaces.get(s.r.group);
    if (list) list.push(s);
    else spaces.set(s.r.group, [s]);
  }
  /** @type {SessionClient[]} */
  const clients = [];
  /** @type {Map<SessionClient, SessionClient[]>} client -> the population its streams belong to */
  const populationOf = new Map();
  /** @type {Map<SessionClient[], number>} population -> group size */
  const sizeOf = new Map();
  let idCollisions = 0;
  for (const sessions of spaces.values()) {
    const instances = groupInstances(sessions);
    // In instance and client id order, as the lab's runs list their clients: sums over them come out the same.
    const population = sessions.map((s) => sessionClient(s, /** @type {string} */ (instances.get(s))))
      .sort((a, b) => compareText(a.group, b.group) || a.id - b.id || a.session.firstAt - b.session.firstAt);
    withReceiverCutoffs(population);
    /** @type {Map<string, Set<number>>} */
    const distinct = new Map();
    for (const c of population) {
      if (c.id <= 0) continue;
      const set = distinct.get(c.group) ?? new Set();
      if (set.has(c.id)) idCollisions++;
      set.add(c.id);
      distinct.set(c.group, set);
    }
    sizeOf.set(population, Math.max(0, ...[...distinct.values()].map((set) => set.size)));
    for (const c of population) {
      clients.push(c);
      populationOf.set(c, population);
    }
  }

  /** @type {Map<string, { transport: string, groupName: string, population: SessionClient[], own: SessionClient[] }>} */
  const runKeys = new Map();
  for (const c of clients) {
    const key = JSON.stringify([c.transport, c.groupName]);
    let entry = runKeys.get(key);
    if (!entry) runKeys.set(key, (entry = { transport: c.transport, groupName: c.groupName, population: /** @type {SessionClient[]} */ (populationOf.get(c)), own: [] }));
    entry.own.push(c);
  }
  const order = [...runKeys.values()].sort((a, b) => compareTransports(a.transport, b.transport) || compareText(a.groupName, b.groupName));
  const runs = [];
  for (const { transport, groupName, population, own } of order) {
    // A family (or a whole group) none of whose sessions ever joined measured nothing: no run, a device row only.
    const families = [...new Set(own.filter((c) => c.id > 0).map((c) => c.family))].sort(compareText);
    if (!families.length) continue;
    const group = /** @type {number} */ (sizeOf.get(population));
    for (const family of families) {
      runs.push(recordingRun({ transport, groupName, group, population, sourceName, only: (c) => c.transport === transport && c.family === family, browser: family, family }));
    }
    const all = recordingRun({ transport, groupName, group, population, sourceName, only: (c) => c.transport === transport, browser: 'all', families });
    // The scene is the group's, whatever each member's transport: every transport's run of the group shows it.
    const scene = recordingScene(population);
    runs.push(scene ? { ...all, scene } : all);
  }

  const span = spanOf(recording.sessions);
  const starts = recording.segments.map((s) => s.startedAt).filter((x) => x !== null);
  const versions = [...new Set(recording.segments.map((s) => s.version).filter((x) => x !== null))];
  return {
    env: {
      date: now.toISOString(),
      source: 'recording',
      study: recording.study,
      carlab: versions.join(', ') || null,
      servers: recording.segments.map((s) => ({ segment: s.file, node: s.node, pid: s.pid, version: s.version, startedAt: s.startedAt })),
      // results.json requires it; a recording does not say the server's, so it is this machine's.
      cpus: os.cpus().length,
      cpusOf: 'the machine that rendered this report (a recording does not record the server\'s)',
      renderedBy: { node: process.version, platform: `${os.type()} ${os.release()} ${os.arch()}` },
    },
    runs,
    devices: clients
      .slice()
      .sort((a, b) => a.session.firstAt - b.session.firstAt || compareText(a.groupName, b.groupName) || a.id - b.id
        || compareText(a.session.r.session, b.session.r.session))
      .map((c) => deviceRow(c, sourceName)),
    recording: {
      name: sourceName,
      dir: path.resolve(recording.dir),
      sessions: recording.sessions.length,
      segments: recording.segments,
      firstAt: span ? iso(span.first) : (starts[0] ?? null),
      lastAt: span ? iso(span.last) : (starts[starts.length - 1] ?? null),
      counts: { ...recording.counts, idCollisions },
      problems: recording.problems,
    },
  };
}

/**
 * A recording's results object.
 *
 * @typedef {object} RecordingResults
 * @property {Record<string, unknown>} env
 * @property {import('./types.js').Run[]} runs
 * @property {DeviceRow[]} devices
 * @property {import('./types.js').RecordingInfo & { problems: Recording['problems'] }} recording
 */

/**
 * One run of a recording.
 * @param {{ transport: string, groupName: string, group: number, population: SessionClient[], sourceName: string,
 *   only: (c: SessionClient) => boolean, browser: string, family?: string, families?: string[] }} input
 */
function recordingRun({ transport, groupName, group, population, sourceName, only, browser, family, families }) {
  const own = population.filter(only);
  const cycleMs = modeOf(own.map((c) => c.cycleMs));
  const modes = modeOf(own.map((c) => c.cycleMode));
  const cycleMode = modes.seen.length === 1 && /** @type {readonly string[]} */ (CYCLE_MODES).includes(modes.seen[0]) ? modes.seen[0] : null;
  const clients = new Set(own.filter((c) => c.id > 0).map((c) => `${c.group}\u0000${c.id}`)).size;
  const run = aggregateRun({
    point: { transport, clients, group, cycleMs: cycleMs.value ?? 0 },
    clients: population,
    only: /** @type {(c: any) => boolean} */ (only),
    relay: null,
    cpu: { server: null, clients: null },
    extra: {
      groupName,
      browser,
      ...(family !== undefined ? { family } : { families }),
      source: 'recording',
      sourceName,
      sessions: own.length,
    },
  });
  const effectiveTypes = /** @type {Record<string, number>} */ ({});
  for (const c of own) if (c.session.r.effectiveType) effectiveTypes[c.session.r.effectiveType] = (effectiveTypes[c.session.r.effectiveType] ?? 0) + 1;
  const reconnected = own.filter((c) => c.session.r.connection.reconnects > 0);
  return {
    ...run,
    cycleMode,
    ...(cycleMs.seen.length > 1 ? { cycleMsSeen: cycleMs.seen } : {}),
    ...(modes.seen.length > 1 || (modes.seen.length === 1 && cycleMode === null) ? { cycleModesSeen: modes.seen } : {}),
    rtWarmup: { mean: null, dev: null, p50: null, p95: null, p99: null, max: null, n: own.reduce((s, c) => s + c.rtWarmupN, 0) },
    rts: null,
    tracking: trackingOf(own),
    // how the phones drew their neighbours (core/report.js summarizePlayout), null when none reported it
    playout: summarizePlayout(own.map((c) => c.session.r.playout)),
    effectiveTypes,
    connection: {
      clientsReconnected: reconnected.length,
      reconnects: own.reduce((s, c) => s + c.session.r.connection.reconnects, 0),
      outageMs: own.reduce((s, c) => s + c.session.r.connection.outageMs, 0),
    },
    ...seenOf(own.map((c) => c.session)),
  };
}

/**
 * When sessions were first and last heard from (server clock), null without any.
 * @param {RecordedSession[]} sessions
 * @returns {{ first: number, last: number } | null}
 */
function spanOf(sessions) {
  if (!sessions.length) return null;
  let first = Infinity;
  let last = -Infinity;
  for (const s of sessions) {
    if (s.firstAt < first) first = s.firstAt;
    if (s.lastAt > last) last = s.lastAt;
  }
  return { first, last };
}

/** @param {RecordedSession[]} sessions */
function seenOf(sessions) {
  const span = spanOf(sessions);
  return { firstSeen: span ? iso(span.first) : null, lastSeen: span ? iso(span.last) : null };
}

/** @param {string} a @param {string} b */
function compareText(a, b) {
  return a < b ? -1 : a > b ? 1 : 0;
}
