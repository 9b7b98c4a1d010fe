/**
 * The live study the dashboard shows (docs/study.md): the newest client
 * report of every page session, grouped by working group, turned into one
 * row per member (browser, transport, paths, RT, loss into it, freshness,
 * staleness, tracking) and, per group, a short time series of RT and
 * freshness for the charts. Fed by the report intake with the reports this
 * node accepted and those other nodes of a cluster accepted (over NATS).
 *
 * Memory is bounded (at most `maxSessions` sessions, a fixed number of
 * series points per group) and the live feed's cost follows what changed:
 * `delta()` touches only the groups that got a report (or whose members went
 * stale or away) since the previous call.
 *
 * @module server/live-study
 */

import { createHash } from 'node:crypto';

import { FREEZE_MS, countStream, countableAgainst, expectedAt, summarizeFreshness } from '../core/metrics.js';
import { REPORT_LIMITS, RtHistogram, reportProblem, summarizePlayout } from '../core/report.js';
import { createLiveScene } from './live-scene.js';
import { describeUserAgent } from './user-agent.js';

/** Earlier reports per session whose counts are kept to read a sender's count at a receiver's report time (~20 s). */
const SENT_HISTORY = 4;

/** How long members stay visible (and how the series are binned) unless told otherwise. */
export const LIVE_STUDY_DEFAULTS = Object.freeze({
  /** a member that left (final report) stays on the dashboard, marked, this long (ms) */
  keepLeftMs: 60_000,
  /** a member not heard of this long (a phone that died without a final report) drops off too (ms) */
  keepSilentMs: 10 * 60_000,
  /** one series point per this much server time (ms): the clients' report interval */
  bucketMs: REPORT_LIMITS.intervalMs,
  /** the series cover this much time (ms) */
  seriesMs: 30 * 60_000,
});

/**
 * What the intake hands over for every accepted report (also those from other
 * nodes): server time of arrival, the accepting node, the User-Agent header.
 *
 * @typedef {object} StudyRecord
 * @property {number} at server epoch ms when the report arrived
 * @property {string} node server node id that accepted it
 * @property {string} ua User-Agent header of the request
 * @property {import('../core/report.js').ClientReport} r
 */

/**
 * One member on the dashboard.
 *
 * @typedef {object} MemberRow
 * @property {string} key short stable id derived from the session (never the session id: that lets reports in)
 * @property {number} clientId
 * @property {string} name
 * @property {string} node
 * @property {string} kind
 * @property {string} transport
 * @property {number} cycleMs
 * @property {{ browser: string, browserVersion: string, os: string, device: string, family: string }} device
 * @property {string | null} effectiveType
 * @property {{ id: number, path: string }[]} paths per link (p2p), empty for relay transports
 * @property {{ last: number | null, mean: number | null, p95: number | null }} rt ms
 * @property {number | null} lossPct of the streams into this member, null when nothing was expected
 * @property {{ updatesPerStreamPerS: number | null, frozenPct: number | null }} freshness over the session
 * @property {boolean} stale a neighbour froze (age > FREEZE_MS) or the member went silent
 * @property {number[]} staleFrom ids of the neighbours whose age exceeds FREEZE_MS
 * @property {{ fps: number | null, msPerFrame: number | null, visiblePct: number | null } | null} tracking
 * @property {number} lastReportAgoMs at the snapshot's (delta's) `at`
 * @property {boolean} left the member's final report arrived
 * @property {{ objects: number, inStep: boolean } | null} scene the shared scene as its newest report
 *   says: objects held, and whether its neighbours' digests equalled its own (the HUD's "in sync")
 * @property {{ mode: string, behindMs: number | null, holdingPct: number | null, jumpsPerMinute: number | null } | null} drawn
 *   how it draws its neighbours (core/report.js summarizePlayout of its report's `playout`)
 */

/**
 * One point of a group's series: the reports that arrived in [t, t + bucketMs).
 *
 * @typedef {object} SeriesPoint
 * @property {number} t bucket start, server epoch ms
 * @property {number | null} rtMean ms, RTs measured in the bucket over the group
 * @property {number | null} updatesPerStreamPerS fresh updates per stream per second in the bucket
 * @property {number | null} frozenPct share of stream time in freezes in the bucket
 * @property {MemberPoint[]} members the same per member that reported in the bucket (by member key)
 */

/**
 * One member's part of a series point: a line each on the dashboard.
 *
 * @typedef {object} MemberPoint
 * @property {string} key the member's key (MemberRow.key)
 * @property {number | null} rtMean
 * @property {number | null} updatesPerStreamPerS
 * @property {number | null} frozenPct
 */

/**
 * @typedef {object} GroupView
 * @property {string} group
 * @property {MemberRow[]} members sorted by client id
 * @property {SeriesPoint[]} series oldest first
 * @property {import('./live-scene.js').SceneView | null} scene the group's shared scene (server/live-scene.js),
 *   null when no member reported one
 */

/**
 * The whole dashboard state.
 *
 * @typedef {object} StudySnapshot
 * @property {number} at server epoch ms
 * @property {number} sessions sessions held (also those no longer shown)
 * @property {number} members members shown
 * @property {GroupView[]} groups groups with at least one member shown, by name
 */

/**
 * What changed since the previous delta(): for every group that changed, all
 * its member rows (loss into a member depends on the other members' reports)
 * and its new or updated series points (a group the previous delta did not
 * list comes with its whole series); members and groups no longer shown. With
 * `resync`, `groups` is the whole state, as in a snapshot (too much changed
 * while nobody asked).
 *
 * @typedef {object} StudyDelta
 * @property {number} at
 * @property {number} sessions
 * @property {number} members
 * @property {number} groupCount groups shown
 * @property {GroupView[]} groups changed groups
 * @property {{ key: string, group: string }[]} removed members no longer shown (or moved away from `group`)
 * @property {string[]} removedGroups groups no longer shown
 * @property {boolean} [resync]
 */

/**
 * @typedef {object} LiveStudy
 * @property {(record: StudyRecord, options?: { check?: boolean }) => boolean} ingest keeps the report when it is
 *   the session's newest (checked with reportProblem only when `check`: the intake checked it already)
 *   (returns false for an older or repeated seq and for a malformed report)
 * @property {(group: string, clientId: number) => string | undefined} holderOf the live session holding
 *   that client id in that group
 * @property {() => StudySnapshot} snapshot
 * @property {() => StudyDelta} delta
 */

/**
 * @typedef {object} Entry one page session
 * @property {string} session
 * @property {string} key
 * @property {StudyRecord} rec its newest record
 * @property {number} heardAt local clock when `rec` arrived
 * @property {SenderCount} settled what `rec` says of its streams as a loss count needs it (settledTo),
 *   worked out once per report
 * @property {{ heardAt: number, settled: SenderCount }[]} past its earlier reports' `settled`,
 *   newest last, at most SENT_HISTORY (the one a receiver's report is counted against)
 * @property {Group} group
 * @property {boolean} visible shown on the dashboard
 * @property {number} leftAt local clock when its final report arrived
 * @property {Omit<MemberRow, 'lossPct' | 'stale' | 'staleFrom' | 'lastReportAgoMs' | 'left'> | null} base
 *   the part of its row that depends on its own report only (computed once per report)
 */

/**
 * @typedef {object} Bucket
 * @property {number} t
 * @property {number} rtN
 * @property {number} rtSum
 * @property {number} freshN
 * @property {number} spanMs
 * @property {number} frozenMs
 * @property {Map<string, Omit<Bucket, 't' | 'members'>>} members the same counts per member key
 */

/**
 * @typedef {object} Group
 * @property {string} name
 * @property {Map<string, Entry>} entries every session held, shown or not
 * @property {number} visible entries shown
 * @property {Map<number, Entry>} holders client id -> the newest non-final session that claimed it
 * @property {Bucket[]} series oldest first, at most seriesMs / bucketMs
 * @property {number | null} seriesFrom the oldest bucket changed since the previous delta
 * @property {boolean} listed whether the previous delta (or resync) showed this group
 */

/**
 * A short id for a session that does not reveal it: 12 hex digits of its
 * SHA-256 (the same on every node of a cluster).
 *
 * @param {string} session
 */
export function memberKey(session) {
  return createHash('sha256').update(session).digest('hex').slice(0, 12);
}

/**
 * Creates the live study.
 *
 * @param {{ maxSessions?: number, now?: () => number, staleAfterMs?: number, keepLeftMs?: number,
 *   keepSilentMs?: number, bucketMs?: number, seriesMs?: number }} [options]
 *   staleAfterMs: a member not heard of this long is marked stale and no longer holds its
 *   client id (default three report intervals)
 * @returns {LiveStudy}
 */
export function createLiveStudy({
  maxSessions = REPORT_LIMITS.maxSessions,
  now = Date.now,
  staleAfterMs = 3 * REPORT_LIMITS.intervalMs,
  keepLeftMs = LIVE_STUDY_DEFAULTS.keepLeftMs,
  keepSilentMs = LIVE_STUDY_DEFAULTS.keepSilentMs,
  bucketMs = LIVE_STUDY_DEFAULTS.bucketMs,
  seriesMs = LIVE_STUDY_DEFAULTS.seriesMs,
} = {}) {
  const maxPoints = Math.max(1, Math.ceil(seriesMs / bucketMs));
  /** Every session held, least recently heard first (re-inserted on each report). @type {Map<string, Entry>} */
  const sessions = new Map();
  /** Sessions with a final report, in the order they left (forgotten first when full). @type {Map<string, Entry>} */
  const finals = new Map();
  /** Shown, not final, heard within staleAfterMs; least recently heard first. @type {Map<string, Entry>} */
  const fresh = new Map();
  /** Shown and not final; least recently heard first (hidden after keepSilentMs). @type {Map<string, Entry>} */
  const quiet = new Map();
  /** Shown and final; in the order they left (hidden after keepLeftMs). @type {Map<string, Entry>} */
  const leaving = new Map();
  /** @type {Map<string, Group>} */
  const groups = new Map();
  const scenes = createLiveScene({ now });
  /** Groups to put in the next delta. @type {Set<Group>} */
  const changed = new Set();
  /** Members no longer shown since the previous delta: key -> group. @type {Map<string, string>} */
  const removed = new Map();
  let shown = 0;
  let shownGroups = 0;
  let resync = false;

  /** @param {Group} g */
  const touch = (g) => { changed.add(g); };

  /** @param {string} name @returns {Group} */
  function groupOf(name) {
    let g = groups.get(name);
    if (!g) {
      g = { name, entries: new Map(), visible: 0, holders: new Map(), series: [], seriesFrom: null, listed: false };
      groups.set(name, g);
    }
    return g;
  }

  /** @param {Entry} e */
  function show(e) {
    if (e.visible) return;
    e.visible = true;
    if (e.group.visible++ === 0) shownGroups++;
    shown++;
    removed.delete(e.key);
    touch(e.group);
  }

  /** @param {Entry} e */
  function hide(e) {
    fresh.delete(e.session);
    quiet.delete(e.session);
    leaving.delete(e.session);
    if (!e.visible) return;
    e.visible = false;
    if (--e.group.visible === 0) shownGroups--;
    shown--;
    removed.set(e.key, e.group.name);
    if (removed.size > maxSessions) {
      // Nobody asked for a delta for a long while: the next one is the whole state.
      resync = true;
      removed.clear();
    }
    touch(e.group);
  }

  /** Takes an entry out of its group (forgotten, or moved to another group). @param {Entry} e */
  function detach(e) {
    hide(e);
    const g = e.group;
    g.entries.delete(e.session);
    scenes.forget(g.name, e.key);
    const id = e.rec.r.clientId;
    if (g.holders.get(id) === e) g.holders.delete(id);
    if (g.entries.size === 0) groups.delete(g.name);
  }

  /** @param {Entry} e */
  function forget(e) {
    detach(e);
    sessions.delete(e.session);
    finals.delete(e.session);
  }

  /** Makes room: the session that left longest ago, else the one not heard of for longest. */
  function evictOne() {
    const victim = finals.values().next().value ?? sessions.values().next().value;
    if (victim) forget(victim);
  }

  /** Time-driven changes: members going silent, and away. @param {number} t */
  function sweep(t) {
    for (const e of fresh.values()) {
      if (t - e.heardAt <= staleAfterMs) break;
      fresh.delete(e.session);
      touch(e.group); // its row turns stale
    }
    for (const e of quiet.values()) {
      if (t - e.heardAt <= keepSilentMs) break;
      hide(e);
    }
    for (const e of leaving.values()) {
      if (t - e.leftAt <= keepLeftMs) break;
      hide(e);
    }
  }

  /**
   * Adds what a session measured between two of its reports to its group's
   * series bucket.
   * @param {Group} g
   * @param {import('../core/report.js').ClientReport | null} before the session's previous report;
   *   null: count from zero (its first report)
   * @param {import('../core/report.js').ClientReport} r
   * @param {number} at server time of `r`
   * @param {string} key the member's key
   */
  function addToSeries(g, before, r, at, key) {
    let rtN = r.rt.n - (before?.rt.n ?? 0);
    let rtSum = r.rt.sum - (before?.rt.sum ?? 0);
    if (rtN < 0 || rtSum < 0) { rtN = 0; rtSum = 0; }
    let freshN = 0;
    let spanMs = 0;
    let frozenMs = 0;
    for (const [id, s] of Object.entries(r.recv)) {
      const f = s.fresh;
      if (!f) continue;
      const p = before?.recv[id]?.fresh;
      if (p && f.spanMs >= p.spanMs && f.n >= p.n) {
        freshN += f.n - p.n;
        spanMs += f.spanMs - p.spanMs;
        frozenMs += Math.max(0, f.frozenMs - p.frozenMs);
      } else {
        // a new stream, or its window started again: all of it is new
        freshN += f.n;
        spanMs += f.spanMs;
        frozenMs += f.frozenMs;
      }
    }
    if (rtN === 0 && spanMs === 0) return;
    const t = Math.floor(at / bucketMs) * bucketMs;
    const series = g.series;
    let b = null;
    // a record from another node may be a little late: find its bucket among the last few
    for (let i = series.length - 1; i >= 0 && i >= series.length - 4; i--) {
      if (series[i].t === t) { b = series[i]; break; }
      if (series[i].t < t) break;
    }
    if (!b) {
      const last = series[series.length - 1];
      if (last && last.t > t) {
        if (last.t - t >= seriesMs) return;
        b = last; // older than the buckets we keep open: count it in the newest
      } else {
        b = { t, rtN: 0, rtSum: 0, freshN: 0, spanMs: 0, frozenMs: 0, members: new Map() };
        series.push(b);
        while (series.length > maxPoints || series[0].t <= t - seriesMs) series.shift();
      }
    }
    for (const counts of [b, memberCounts(b, key)]) {
      counts.rtN += rtN;
      counts.rtSum += rtSum;
      counts.freshN += freshN;
      counts.spanMs += spanMs;
      counts.frozenMs += frozenMs;
    }
    if (g.seriesFrom === null || b.t < g.seriesFrom) g.seriesFrom = b.t;
  }

  /**
   * @param {StudyRecord} record a report its caller checked (reportProblem): the intake does for
   *   its own and for other nodes' reports, so it is not checked twice per report
   * @param {{ check?: boolean }} [options] check: check it here (callers that did not)
   * @returns {boolean}
   */
  function ingest(record, { check = false } = {}) {
    const r = record?.r;
    if (check ? reportProblem(r) !== null : typeof r?.session !== 'string') return false;
    const t = now();
    let e = sessions.get(r.session);
    if (e && r.seq <= e.rec.r.seq) return false;
    /** @type {import('../core/report.js').ClientReport | null | undefined} the baseline of the series deltas */
    let before;
    if (!e) {
      if (sessions.size >= maxSessions) evictOne();
      // A session first seen mid-way (this server started after it) has no
      // baseline: its history is not this bucket's.
      before = r.seq === 1 ? null : undefined;
      e = {
        session: r.session, key: memberKey(r.session), rec: record, heardAt: t, settled: settledTo(r), past: [],
        group: groupOf(r.group), visible: false, leftAt: 0, base: null,
      };
      e.group.entries.set(e.session, e);
    } else {
      before = e.rec.r;
      const old = e.rec.r;
      if (old.group !== r.group) {
        detach(e);
        e.group = groupOf(r.group);
        e.group.entries.set(e.session, e);
      } else if (old.clientId !== r.clientId && e.group.holders.get(old.clientId) === e) {
        e.group.holders.delete(old.clientId);
      }
      e.past.push({ heardAt: e.heardAt, settled: e.settled });
      if (e.past.length > SENT_HISTORY) e.past.shift();
      e.rec = record;
      e.settled = settledTo(r);
      e.heardAt = t;
      e.base = null;
    }
    const g = e.group;
    const at = Number.isFinite(record.at) ? record.at : t;
    if (before !== undefined) addToSeries(g, before, r, at, e.key);
    if (r.scene) scenes.add(g.name, e.key, r.scene, at, r.final);
    if (r.clientId > 0) {
      if (!r.final) g.holders.set(r.clientId, e);
      else if (g.holders.get(r.clientId) === e) g.holders.delete(r.clientId);
    }
    sessions.delete(e.session);
    sessions.set(e.session, e);
    fresh.delete(e.session);
    quiet.delete(e.session);
    if (r.final) {
      if (!finals.has(e.session)) {
        e.leftAt = t;
        finals.set(e.session, e);
        leaving.set(e.session, e);
      }
    } else {
      finals.delete(e.session);
      leaving.delete(e.session);
      fresh.set(e.session, e);
      quiet.set(e.session, e);
    }
    // a later final of a session already hidden after leaving stays hidden
    if (!r.final || leaving.has(e.session)) show(e);
    touch(g);
    return true;
  }

  /** @param {string} group @param {number} clientId */
  function holderOf(group, clientId) {
    const e = groups.get(group)?.holders.get(clientId);
    if (!e || e.rec.r.final || now() - e.heardAt > staleAfterMs) return undefined;
    return e.session;
  }

  /**
   * The member rows of a group as of `t`.
   * @param {Group} g @param {number} t
   * @returns {MemberRow[]}
   */
  function rowsOf(g, t) {
    /** @type {Entry[]} */
    const members = [];
    for (const e of g.entries.values()) if (e.visible) members.push(e);
    members.sort((a, b) => (a.rec.r.clientId - b.rec.r.clientId) || (a.key < b.key ? -1 : 1));
    // the senders: per client id, its most recently heard session
    /** @type {Map<number, Entry>} */
    const byId = new Map();
    for (const e of members) {
      const id = e.rec.r.clientId;
      const other = byId.get(id);
      if (id > 0 && (!other || other.heardAt <= e.heardAt)) byId.set(id, e);
    }
    return members.map((m) => {
      const r = m.rec.r;
      const base = m.base ?? (m.base = baseRow(m));
      const staleFrom = [];
      for (const [id, age] of Object.entries(r.ages)) if (age !== null && age > FREEZE_MS) staleFrom.push(Number(id));
      const silent = !r.final && t - m.heardAt > staleAfterMs;
      return {
        ...base,
        lossPct: lossInto(m, byId),
        stale: staleFrom.length > 0 || silent,
        staleFrom,
        lastReportAgoMs: Math.max(0, t - m.heardAt),
        left: r.final,
      };
    });
  }

  /** @param {Group} g @param {number} t @param {boolean} all @returns {SeriesPoint[]} */
  function pointsOf(g, t, all) {
    /** @type {SeriesPoint[]} */
    const out = [];
    if (!all && g.seriesFrom === null) return out;
    const from = all || g.seriesFrom === null ? -Infinity : g.seriesFrom;
    for (const b of g.series) {
      if (b.t < from || b.t <= t - seriesMs) continue;
      out.push({ t: b.t, ...figuresOf(b), members: [...b.members].map(([key, m]) => ({ key, ...figuresOf(m) })) });
    }
    return out;
  }

  /** @returns {StudySnapshot} */
  function snapshot() {
    const t = now();
    sweep(t);
    /** @type {GroupView[]} */
    const out = [];
    for (const g of groups.values()) if (g.visible > 0) out.push({ group: g.name, members: rowsOf(g, t), series: pointsOf(g, t, true), scene: scenes.view(g.name) });
    out.sort((a, b) => (a.group < b.group ? -1 : a.group > b.group ? 1 : 0));
    return { at: t, sessions: sessions.size, members: shown, groups: out };
  }

  /** @returns {StudyDelta} */
  function delta() {
    const t = now();
    sweep(t);
    if (resync) {
      resync = false;
      changed.clear();
      removed.clear();
      for (const g of groups.values()) { g.seriesFrom = null; g.listed = g.visible > 0; }
      const s = snapshot();
      return { at: s.at, sessions: s.sessions, members: s.members, groupCount: s.groups.length, groups: s.groups, removed: [], removedGroups: [], resync: true };
    }
    /** @type {GroupView[]} */
    const out = [];
    /** @type {string[]} */
    const removedGroups = [];
    for (const g of changed) {
      if (g.visible === 0) {
        if (g.listed) removedGroups.push(g.name);
        g.listed = false;
      } else {
        out.push({ group: g.name, members: rowsOf(g, t), series: pointsOf(g, t, !g.listed), scene: scenes.view(g.name) });
        g.listed = true;
      }
      g.seriesFrom = null;
    }
    const gone = [...removed].map(([key, group]) => ({ key, group }));
    changed.clear();
    removed.clear();
    return { at: t, sessions: sessions.size, members: shown, groupCount: shownGroups, groups: out, removed: gone, removedGroups };
  }

  return { ingest, holderOf, snapshot, delta };
}

/**
 * Whether a delta carries nothing to show (the feed skips it).
 * @param {StudyDelta} d
 */
export function isEmptyDelta(d) {
  return !d.resync && d.groups.length === 0 && d.removed.length === 0 && d.removedGroups.length === 0;
}

/**
 * The part of a member's row that depends on its own report only.
 * @param {Entry} e
 * @returns {NonNullable<Entry['base']>}
 */
function baseRow(e) {
  const { r, ua, node } = e.rec;
  const d = describeUserAgent(ua);
  const rt = RtHistogram.merged([r.rt]).summary();
  const fr = summarizeFreshness(Object.values(r.recv).map((s) => s.fresh));
  const t = r.tracking;
  return {
    key: e.key,
    clientId: r.clientId,
    name: r.name,
    node: String(node ?? ''),
    kind: r.kind,
    transport: r.transport,
    cycleMs: r.cycleMs,
    device: { browser: d.browser, browserVersion: d.browserVersion, os: d.os, device: d.device, family: d.family },
    effectiveType: r.effectiveType,
    paths: pathsOf(r),
    rt: { last: round(r.rtLastMs, 1), mean: round(rt.mean, 1), p95: round(rt.p95, 1) },
    freshness: { updatesPerStreamPerS: round(fr.updatesPerStreamPerS, 2), frozenPct: round(fr.frozenPct, 2) },
    tracking: t
      ? {
        fps: t.spanMs > 0 ? round((t.frames / t.spanMs) * 1000, 1) : null,
        msPerFrame: t.frames > 0 ? round(t.processMsSum / t.frames, 1) : null,
        visiblePct: t.frames > 0 ? round((t.visibleFrames / t.frames) * 100, 1) : null,
      }
      : null,
    scene: r.scene ? { objects: r.scene.objects, inStep: r.scene.inStep } : null,
    drawn: drawnOf(r.playout),
  };
}

/**
 * How the member draws its neighbours (its report's `playout`): how far behind, the share of time
 * held, jumps per minute; null for a client that draws none (a Node client, an older page).
 * @param {import('../core/report.js').PlayoutReport | null | undefined} p
 */
function drawnOf(p) {
  const s = summarizePlayout([p]);
  return s ? { mode: s.modes.join(','), behindMs: s.behindMs, holdingPct: s.holdingPct, jumpsPerMinute: s.jumpsPerMinute } : null;
}

/**
 * Per link, how a p2p member's updates travel now (direct, turn, relay,
 * connecting), from the transport's channel info or its setup record.
 * @param {import('../core/report.js').ClientReport} r
 * @returns {{ id: number, path: string }[]}
 */
function pathsOf(r) {
  /** @param {unknown} o @returns {unknown[] | null} */
  const linksOf = (o) => {
    const links = o && typeof o === 'object' ? /** @type {{ links?: unknown }} */ (o).links : undefined;
    return Array.isArray(links) ? links : null;
  };
  const links = linksOf(r.channel) ?? linksOf(r.setup) ?? [];
  /** @type {{ id: number, path: string }[]} */
  const out = [];
  for (const l of links.slice(0, REPORT_LIMITS.maxStreams)) {
    if (!l || typeof l !== 'object') continue;
    const { id, path } = /** @type {{ id?: unknown, path?: unknown }} */ (l);
    if (typeof id !== 'number' || !Number.isInteger(id)) continue;
    out.push({ id, path: typeof path === 'string' ? path.slice(0, 32) : '' });
  }
  return out;
}

/** For an older page (no seq sets): how much earlier than a receiver's report its senders' counts are read, ms. */
const REPORT_SKEW_MS = 1000;

/**
 * A sender's report as a loss count needs it: its loss record (seq sets and
 * cutoff), or for an older page without one, per receiver the updates
 * expected there (sentTo less pendingTo).
 * @typedef {{ record: import('../core/metrics.js').SenderLossRecord } | { legacy: Record<string, number> }} SenderCount
 */

/**
 * Loss of the streams into member `m`, as docs/architecture.md "Loss" defines
 * it (core/metrics.js countStream): per sender in its group, the sender's
 * seqs sent to m at or below its cutoff, against the seqs m reports getting.
 * The sender's report counted is its newest that may be counted against m's
 * (core/metrics.js countableAgainst): its cutoff is a delivery horizon before
 * it, so what it counts had landed when m's report was taken. Older pages:
 * the newest heard REPORT_SKEW_MS before m's.
 *
 * @param {Entry} m
 * @param {Map<number, Entry>} senders
 * @returns {number | null}
 */
function lossInto(m, senders) {
  const me = m.rec.r;
  if (me.clientId === 0) return null;
  const myId = String(me.clientId);
  let expected = 0;
  let lost = 0;
  for (const [id, s] of senders) {
    if (s === m || id === me.clientId) continue;
    const count = countAt(s, m.heardAt);
    if (count === null) continue;
    const stream = me.recv[String(id)];
    if ('record' in count) {
      if (count.record.sentSeqs[myId] === undefined) continue;
      const c = countStream(count.record, myId, stream);
      expected += c.expected;
      lost += c.lost;
    } else if (count.legacy[myId] !== undefined) {
      expected += count.legacy[myId];
      lost += count.legacy[myId] - Math.min(count.legacy[myId], stream?.received ?? 0);
    }
  }
  return expected > 0 ? round((100 * lost) / expected, 2) : null;
}

/**
 * What a report says of its sender's streams, worked out once per report.
 * @param {import('../core/report.js').ClientReport} r
 * @returns {SenderCount}
 */
function settledTo(r) {
  if (r.sentSeqs && r.cutoffSeq !== undefined) {
    return { record: { cutoffSeq: r.cutoffSeq, horizonMs: r.horizonMs, sentSeqs: r.sentSeqs, ackedBy: r.ackedBy, ackedAllSeqs: r.ackedAllSeqs } };
  }
  /** @type {Record<string, number>} */
  const legacy = {};
  for (const to of Object.keys(r.sentTo)) legacy[to] = expectedAt(r.sentTo, r.pendingTo, to).expected;
  return { legacy };
}

/**
 * The sender's count from its newest report that may be counted against a
 * receiver's report heard at `at` (local clock); null when every report kept
 * is too new (the stream cannot be judged at `at` yet).
 * @param {Entry} s @param {number} at
 * @returns {SenderCount | null}
 */
function countAt(s, at) {
  /** @param {number} heardAt @param {SenderCount} c */
  const fits = (heardAt, c) => ('record' in c ? countableAgainst(heardAt, c.record.horizonMs ?? 0, at) : heardAt <= at - REPORT_SKEW_MS);
  if (fits(s.heardAt, s.settled)) return s.settled;
  for (let i = s.past.length - 1; i >= 0; i--) if (fits(s.past[i].heardAt, s.past[i].settled)) return s.past[i].settled;
  return null;
}

/**
 * A bucket's (or a member's part of it) counts as figures.
 * @param {Omit<Bucket, 't' | 'members'>} b
 */
function figuresOf(b) {
  return {
    rtMean: b.rtN > 0 ? round(b.rtSum / b.rtN, 1) : null,
    updatesPerStreamPerS: b.spanMs > 0 ? round((1000 * b.freshN) / b.spanMs, 2) : null,
    frozenPct: b.spanMs > 0 ? round((100 * b.frozenMs) / b.spanMs, 2) : null,
  };
}

/**
 * A member's counts in a bucket, made on its first report there.
 * @param {Bucket} b @param {string} key
 */
function memberCounts(b, key) {
  let m = b.members.get(key);
  if (!m) {
    m = { rtN: 0, rtSum: 0, freshN: 0, spanMs: 0, frozenMs: 0 };
    b.members.set(key, m);
  }
  return m;
}

/** @param {number | null | undefined} x @param {number} digits */
function round(x, digits) {
  if (x === null || x === undefined || !Number.isFinite(x)) return null;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
