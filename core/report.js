/**
 * Client reports for studies with real phones (docs/study.md): what a client
 * core measured, as counts and histograms that merge exactly across reports
 * and clients, sent to the server every few seconds and once when leaving.
 * A report is cumulative for its page session: the newest report of a
 * session holds everything the session measured, so a lost report costs
 * nothing but freshness, and a study is the sum over sessions of their newest
 * report. No DOM, no Node built-ins: the phone app, the lab's pages and the
 * Node clients share it.
 *
 * @module core/report
 */

import { REPORT_LIMITS } from './defaults.js';
import { compactRanges, isSeqRanges } from './seqset.js';
import { percentile } from './metrics.js';
import { MARK_FIELDS, sceneReport, sceneReportProblem } from './scene-report.js';

export { REPORT_LIMITS };

/** The report format's version (docs/study.md "The record format"). */
export const REPORT_VERSION = 1;

/** Who sent a report: the phone app, a bench page's peer or a Node sim client. */
export const REPORT_KINDS = Object.freeze(['app', 'bench', 'sim']);

/**
 * The RT histogram's bucket of a value (ms): two significant digits (0.1 ms
 * below 10 ms, 1 ms below 100 ms, 10 ms below 1 s, 100 ms below 10 s, then
 * 1 s), so a percentile read from it is within 5 % of the exact one and a
 * report stays small (an RT spread over 5..35 ms takes 76 buckets, not 300).
 * Mean and Dev are exact: sum and sum of squares travel with the buckets.
 *
 * @param {number} ms
 * @returns {number}
 */
export function rtBucket(ms) {
  if (ms < 10) return Math.round(ms * 10) / 10;
  if (ms < 100) return Math.round(ms);
  if (ms < 1000) return Math.round(ms / 10) * 10;
  if (ms < 10000) return Math.round(ms / 100) * 100;
  return Math.round(ms / 1000) * 1000;
}

/**
 * A mergeable RT histogram as JSON.
 *
 * @typedef {object} RtHistogramJson
 * @property {number} n values
 * @property {number} sum of the values (ms)
 * @property {number} sumSq of their squares (ms²)
 * @property {number | null} min
 * @property {number | null} max
 * @property {Record<string, number>} buckets rtBucket(value) -> count
 */

/** An RT histogram: add values, merge others, read the summary. */
export class RtHistogram {
  constructor() {
    this.n = 0;
    this.sum = 0;
    this.sumSq = 0;
    /** @type {number | null} */
    this.min = null;
    /** @type {number | null} */
    this.max = null;
    /** @type {Map<number, number>} */
    this.buckets = new Map();
  }

  /** @param {number} ms */
  add(ms) {
    this.n++;
    this.sum += ms;
    this.sumSq += ms * ms;
    if (this.min === null || ms < this.min) this.min = ms;
    if (this.max === null || ms > this.max) this.max = ms;
    const key = rtBucket(ms);
    this.buckets.set(key, (this.buckets.get(key) ?? 0) + 1);
  }

  /** @param {RtHistogramJson} h */
  merge(h) {
    this.n += h.n;
    this.sum += h.sum;
    this.sumSq += h.sumSq;
    if (h.min !== null && (this.min === null || h.min < this.min)) this.min = h.min;
    if (h.max !== null && (this.max === null || h.max > this.max)) this.max = h.max;
    for (const [k, c] of Object.entries(h.buckets)) this.buckets.set(Number(k), (this.buckets.get(Number(k)) ?? 0) + c);
    return this;
  }

  /** @returns {RtHistogramJson} */
  toJSON() {
    return { n: this.n, sum: this.sum, sumSq: this.sumSq, min: this.min, max: this.max, buckets: Object.fromEntries(this.buckets) };
  }

  /**
   * Mean, Dev (population), p50/p95/p99 (nearest rank over the buckets, never
   * outside [min, max]), max and count: the shape of metrics.summarize.
   * @returns {import('./metrics.js').Summary}
   */
  summary() {
    const n = this.n;
    if (n === 0) return { mean: null, dev: null, p50: null, p95: null, p99: null, max: null, n: 0 };
    const mean = this.sum / n;
    const keys = [...this.buckets.keys()].sort((a, b) => a - b);
    const lo = /** @type {number} */ (this.min);
    const hi = /** @type {number} */ (this.max);
    /** @param {number} p */
    const pct = (p) => {
      const rank = Math.max(1, Math.ceil((p / 100) * n));
      let seen = 0;
      for (const k of keys) {
        seen += /** @type {number} */ (this.buckets.get(k));
        if (seen >= rank) return Math.min(hi, Math.max(lo, k));
      }
      return hi;
    };
    return { mean, dev: Math.sqrt(Math.max(0, this.sumSq / n - mean * mean)), p50: pct(50), p95: pct(95), p99: pct(99), max: hi, n };
  }

  /**
   * One histogram from many (JSON), e.g. every report of a run.
   * @param {Iterable<RtHistogramJson | null | undefined>} list
   */
  static merged(list) {
    const h = new RtHistogram();
    for (const item of list) if (item) h.merge(item);
    return h;
  }
}

export { percentile };

/**
 * What a client measured besides the client core (tracking, network), for
 * the report. Every field optional.
 *
 * @typedef {object} ReportExtras
 * @property {TrackingCounts | null} [tracking]
 * @property {string | null} [effectiveType] navigator.connection.effectiveType
 * @property {PlayoutReport | null} [playout]
 */

/**
 * How the page draws its neighbours (core/playout.js PlayoutWatch): its playout mode, and per
 * neighbour id the time drawn, how far behind the neighbour's present on average, the share of
 * time in each state and the jumps seen against the neighbour's own updates.
 * @typedef {{ mode: string, streams: Record<string, { seconds: number, behindMs: number | null,
 *   shares: Record<string, number> | null, jumps: number, jumpsPerMinute: number | null }> }} PlayoutReport
 */

/**
 * AR.js tracking over the session: frames processed, frames with the marker,
 * processing time summed, and the time tracked (ms).
 *
 * @typedef {object} TrackingCounts
 * @property {number} frames
 * @property {number} visibleFrames
 * @property {number} processMsSum
 * @property {number} spanMs
 */

/**
 * One client report (docs/study.md "What a report holds").
 *
 * @typedef {object} ClientReport
 * @property {1} v
 * @property {string} session random per page session (32 hex digits)
 * @property {number} seq report number in the session, from 1
 * @property {boolean} final sent when leaving
 * @property {'app' | 'bench' | 'sim'} kind
 * @property {number} uptimeMs the session's age on its own clock
 * @property {string} group
 * @property {string} name
 * @property {number} clientId 0 before the server gave one
 * @property {string} transport
 * @property {number} cycleMs
 * @property {string} cycleMode
 * @property {RtHistogramJson} rt measured updates (after warm-up)
 * @property {number | null} rtLastMs the newest RT measured (warm-up included), null before any
 * @property {number} rtWarmupN
 * @property {{ sent: number, completed: number, ackTimeouts: number, skippedCycles: number, lateAcks: number, takenBack?: number }} updates
 *   (`takenBack`: sent to a member that left before answering, not in `sentTo`; absent from older pages)
 * @property {Record<string, number>} sentTo updates sent per receiver id that count as expected there
 *   (docs/architecture.md "Loss")
 * @property {Record<string, number>} [pendingTo] older pages: per receiver, updates of `sentTo` still on their way
 * @property {number} [cutoffSeq] the loss count's cutoff when the report was taken (core/cycle.js
 *   cutoffSeq; absent from older pages, which are counted the old way)
 * @property {number} [horizonMs] the delivery horizon that cutoff is behind
 * @property {Record<string, number[]>} [sentSeqs] per receiver id, the seqs sent that count there (flat ranges)
 * @property {Record<string, number[]>} [ackedBy] per receiver id, the seqs it ACKed (flat ranges)
 * @property {number[]} [ackedAllSeqs] the seqs the relay answered for all (flat ranges)
 * @property {Record<string, number>} acksFrom ACKs received per receiver id
 * @property {Record<string, import('./metrics.js').StreamRecord>} recv per sender id
 * @property {Record<string, number | null>} ages per current member: ms since its newest fresh
 *   update arrived (null before any); over FREEZE_MS its avatar is stale
 * @property {object | null} channel the transport's live channel parameters as read back
 * @property {object | null} setup p2p setup stages, candidate types and paths per link
 * @property {{ reconnects: number, outageMs: number }} connection
 * @property {TrackingCounts | null} tracking
 * @property {string | null} effectiveType
 * @property {PlayoutReport | null} [playout] how the page draws its neighbours (absent from older pages)
 * @property {import('./scene-report.js').SceneReport | null} [scene] the shared scene: the marks of the
 *   member's scene log since the previous report, and again those the previous report brought (so one
 *   lost report leaves no gap), on the server's clock (absent from older pages)
 */

/**
 * Pools the `playout` parts of reports (one page's, or every page's of a group or run): its
 * modes, how far behind the drawings were on average, the share of time held or extrapolating,
 * and jumps per minute, all weighted by each stream's time drawn. Null when none drew anything.
 * @param {Iterable<PlayoutReport | null | undefined>} parts
 * @returns {{ modes: string[], streams: number, seconds: number, behindMs: number | null, holdingPct: number | null,
 *   extrapolatingPct: number | null, jumpsPerMinute: number | null } | null}
 */
export function summarizePlayout(parts) {
  const modes = new Set();
  let streams = 0; let ms = 0; let behind = 0; let held = 0; let ahead = 0; let jumps = 0;
  for (const p of parts) {
    if (!p) continue;
    modes.add(p.mode);
    for (const st of Object.values(p.streams)) {
      const m = st.seconds * 1000;
      if (m <= 0) continue;
      streams++; ms += m; jumps += st.jumps;
      behind += (st.behindMs ?? 0) * m;
      held += (st.shares?.holding ?? 0) * m;
      ahead += (st.shares?.extrapolating ?? 0) * m;
    }
  }
  if (ms === 0) return null;
  const r1 = (/** @type {number} */ x) => Math.round(x * 10) / 10;
  return {
    modes: [...modes].sort(), streams, seconds: r1(ms / 1000), behindMs: Math.round(behind / ms),
    holdingPct: r1((100 * held) / ms), extrapolatingPct: r1((100 * ahead) / ms), jumpsPerMinute: Math.round((jumps / (ms / 60_000)) * 100) / 100,
  };
}

/**
 * Builds a report from a client core and a histogram kept up to date with
 * its RTs (see Reporter).
 *
 * @param {import('./client.js').CarClient} client
 * @param {{ session: string, seq: number, final: boolean, kind: ClientReport['kind'], uptimeMs: number,
 *   rt: RtHistogram, extras?: ReportExtras, scene?: import('./scene-report.js').SceneReport | null }} at
 * @returns {ClientReport}
 */
export function buildReport(client, { session, seq, final, kind, uptimeMs, rt, extras = {}, scene = null }) {
  const s = client.stats();
  return {
    v: REPORT_VERSION,
    session,
    seq,
    final,
    kind,
    uptimeMs: Math.max(0, Math.round(uptimeMs)),
    group: s.group,
    name: s.name,
    clientId: s.id,
    transport: s.transport ?? '',
    cycleMs: client.options.cycleMs ?? 0,
    cycleMode: s.cycleMode ?? '',
    rt: rt.toJSON(),
    rtLastMs: lastOf(s.rt) ?? lastOf(s.rtWarmup),
    rtWarmupN: s.rtWarmup.length,
    updates: {
      sent: s.updatesSent, completed: s.completed, ackTimeouts: s.ackTimeouts, skippedCycles: s.skippedCycles, lateAcks: s.lateAcks,
      takenBack: s.takenBack ?? 0,
    },
    sentTo: { ...s.sentTo },
    cutoffSeq: s.cutoffSeq,
    horizonMs: Math.round(s.horizonMs ?? 0),
    sentSeqs: compactMap(s.sentSeqs),
    ackedBy: compactMap(s.ackedBy),
    ackedAllSeqs: compactRanges(s.ackedAllSeqs ?? [], REPORT_LIMITS.maxSeqRanges),
    acksFrom: { ...s.acksFrom },
    recv: compactRecv(s.recv),
    ages: Object.fromEntries([...client.freshnessAges()].map(([id, a]) => [String(id), a.ageMs === null ? null : Math.max(0, Math.round(a.ageMs))])),
    channel: s.channel ?? null,
    setup: s.setup ?? null,
    connection: { reconnects: s.reconnects, outageMs: Math.round(s.outageMs) },
    tracking: extras.tracking ?? null,
    effectiveType: extras.effectiveType ?? null,
    playout: extras.playout ?? null,
    scene,
  };
}

/**
 * Per id, flat seq ranges cut to the report's bound (REPORT_LIMITS.maxSeqRanges).
 * @param {Record<string, number[]> | undefined} map
 */
function compactMap(map) {
  return Object.fromEntries(Object.entries(map ?? {}).map(([id, flat]) => [id, compactRanges(flat, REPORT_LIMITS.maxSeqRanges)]));
}

/** @param {Record<string, import('./metrics.js').StreamRecord>} recv */
function compactRecv(recv) {
  /** @type {Record<string, import('./metrics.js').StreamRecord>} */
  const out = {};
  for (const [id, st] of Object.entries(recv)) {
    out[id] = { ...st, seqs: compactRanges(st.seqs ?? [], REPORT_LIMITS.maxSeqRanges), superseded: compactRanges(st.superseded ?? [], REPORT_LIMITS.maxSeqRanges) };
  }
  return out;
}

/** @param {number[]} list @returns {number | null} */
function lastOf(list) {
  return list.length ? list[list.length - 1] : null;
}

/**
 * A fresh page-session id: 128 random bits as 32 hex digits. It is also
 * what lets a session's later reports in (docs/study.md): nobody else can
 * guess it.
 *
 * @returns {string}
 */
export function randomSessionId() {
  const bytes = new Uint8Array(16);
  globalThis.crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * A report's delivery that prefers the client's own relay session: STATS on
 * it when one is open (no HTTP request and answer for the server to handle;
 * a refusal comes back as an ERROR the client core counts in
 * `reportsRefused`), else `post` (HTTP). docs/study.md "How a report travels".
 * @param {import('./client.js').CarClient} client
 * @param {(report: ClientReport) => void | Promise<unknown>} post
 * @returns {(report: ClientReport) => void | Promise<unknown>}
 */
export function overSession(client, post) {
  return (report) => (client.transport.sendStats?.(report) ? undefined : post(report));
}

/**
 * What a population's reports did, for a run record (lab/report/tallies.js ReportTally):
 * sent and skipped as the reporters counted them; failed by why: the HTTP
 * deliveries' failures as given (status, 'network', ...) and the refusals
 * that came back on relay sessions, by reason code.
 * @param {Reporter[]} reporters
 * @param {{ failed: number, failedBy: Record<string, number> }} http
 * @returns {{ sent: number, failed: number, skipped: number, failedBy: Record<string, number> }}
 */
export function tallyReports(reporters, http) {
  const failedBy = { ...http.failedBy };
  let failed = http.failed;
  for (const r of reporters) {
    for (const [code, n] of Object.entries(r.client.reportsRefused)) {
      failedBy[code] = (failedBy[code] ?? 0) + n;
      failed += n;
    }
  }
  const sum = (/** @type {(r: Reporter) => number} */ f) => reporters.reduce((total, r) => total + f(r), 0);
  return { sent: sum((r) => r.sent), failed, skipped: sum((r) => r.skipped), failedBy };
}

/**
 * @typedef {object} ReporterOptions
 * @property {import('./client.js').CarClient} client
 * @property {(report: ClientReport) => void | Promise<unknown>} send delivers one report (periodic ones)
 * @property {(report: ClientReport) => void} [sendFinal] delivers the last one while the page goes
 *   away (a browser's sendBeacon); default `send`
 * @property {number} [intervalMs] default REPORT_LIMITS.intervalMs; 0: only the final report
 * @property {ClientReport['kind']} [kind] default 'app'
 * @property {() => ReportExtras} [extras]
 * @property {string} [session] default randomSessionId()
 * @property {() => number} [now] the client's clock (default the client core's)
 * @property {number} [minGapMs] a periodic report is skipped while the previous delivery is
 *   unanswered or was answered less than this ago (default: the server's minimum interval and a
 *   few ms, so timer drift never earns a 429)
 */

/** Timers drift: a report exactly the server's minimum interval after the last one may arrive a little early. */
const MIN_GAP_GUARD_MS = 5;

/**
 * Sends a client's reports: every `intervalMs`, and once (final) on finish().
 * Keeps the RT histogram current by adding only the RTs measured since the
 * last report.
 */
export class Reporter {
  /** @param {ReporterOptions} options */
  constructor(options) {
    this.options = options;
    this.client = options.client;
    this.session = options.session ?? randomSessionId();
    this.kind = options.kind ?? 'app';
    this.intervalMs = options.intervalMs ?? REPORT_LIMITS.intervalMs;
    this.minGapMs = options.minGapMs ?? REPORT_LIMITS.minIntervalMs + MIN_GAP_GUARD_MS;
    this.now = options.now ?? (() => this.client.now());
    this.startedAt = this.now();
    this.seq = 0;
    this.rt = new RtHistogram();
    /** RTs of client.rt already in the histogram. */
    this.rtSeen = 0;
    this.finished = false;
    /** Reports handed to a delivery (over the relay session or HTTP). */
    this.sent = 0;
    /** Reports whose delivery failed (counted, never retried: the next one carries everything). */
    this.failures = 0;
    /** Periodic reports not sent: the previous one was unanswered, or answered less than minGapMs ago. */
    this.skipped = 0;
    /** @type {Promise<void> | null} the delivery in flight (when `send` gives a promise) */
    this.inflight = null;
    /** When the newest delivery was answered (the reporter's clock). */
    this.answeredAt = -Infinity;
    /** @type {ReturnType<typeof setInterval> | null} */
    this.timer = null;
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.startTimer = null;
    /** Index in the client's scene log of the first mark no report has carried yet. */
    this.sceneFrom = 0;
    /**
     * Index of the first mark the previous report carried for the first time: every report
     * carries those again, so that one report refused or lost on its way loses no mark (a
     * STATS report is never answered unless refused, and a refusal does not say which).
     */
    this.sceneResendFrom = 0;
  }

  /**
   * Starts the periodic reports; with `delayMs`, the first one goes after it
   * (a population's reports spread over the period instead of coming at once).
   * @param {number} [delayMs]
   */
  start(delayMs = 0) {
    if (this.timer || this.startTimer || this.finished || !(this.intervalMs > 0)) return;
    if (delayMs > 0) {
      this.startTimer = setTimeout(() => {
        this.startTimer = null;
        this.send(false);
        this.start();
      }, delayMs);
      return;
    }
    this.timer = setInterval(() => { this.send(false); }, this.intervalMs);
  }

  /** Stops the periodic reports (the final one is still to come: finish()). */
  stop() {
    if (this.startTimer) clearTimeout(this.startTimer);
    if (this.timer) clearInterval(this.timer);
    this.startTimer = null;
    this.timer = null;
  }

  /** The report as of now (advances the report number). @param {boolean} final */
  next(final) {
    const rts = this.client.rt;
    for (; this.rtSeen < rts.length; this.rtSeen++) this.rt.add(rts[this.rtSeen]);
    this.seq++;
    const scene = sceneReport(this.client, this.sceneResendFrom);
    if (scene) {
      const end = scene.from + scene.log.length / MARK_FIELDS;
      this.sceneResendFrom = Math.min(this.sceneFrom, end);
      this.sceneFrom = Math.max(this.sceneFrom, end);
    }
    return buildReport(this.client, {
      session: this.session, seq: this.seq, final, kind: this.kind, uptimeMs: this.now() - this.startedAt,
      rt: this.rt, extras: this.options.extras?.() ?? {}, scene,
    });
  }

  /** @param {boolean} final */
  send(final) {
    if (this.finished) return;
    // the server refuses a session's reports closer than its minimum (429): skip instead
    if (!final && (this.inflight || this.now() - this.answeredAt < this.minGapMs)) {
      this.skipped++;
      return;
    }
    /** @type {ClientReport} */
    let report;
    try {
      report = this.next(final);
    } catch {
      this.failures++;
      return;
    }
    const deliver = final ? (this.options.sendFinal ?? this.options.send) : this.options.send;
    this.sent++;
    try {
      const sent = /** @type {unknown} */ (deliver(report));
      if (sent instanceof Promise) this.track(sent, report.scene?.from);
    } catch {
      this.failures++;
      this.resendSceneFrom(report.scene?.from);
    }
  }

  /**
   * A report that did not get through: the next one carries its scene marks again
   * (the reader of a recording and the dashboard take each mark once, by its index).
   * @param {number | undefined} from
   */
  resendSceneFrom(from) {
    if (from === undefined) return;
    this.sceneFrom = Math.min(this.sceneFrom, from);
    this.sceneResendFrom = Math.min(this.sceneResendFrom, from);
  }

  /**
   * Follows a delivery until it is answered.
   * @param {Promise<unknown>} sent
   * @param {number} [sceneFrom] where its scene marks began
   */
  track(sent, sceneFrom) {
    /** @type {Promise<void>} */
    const settled = sent.then(() => {}, () => { this.failures++; this.resendSceneFrom(sceneFrom); }).then(() => {
      this.answeredAt = this.now();
      if (this.inflight === settled) this.inflight = null;
    });
    this.inflight = settled;
  }

  /** Resolves once no delivery is in flight. */
  async idle() {
    while (this.inflight) await this.inflight;
  }

  /** Stops the timers and sends the final report (once). */
  finish() {
    if (this.finished) return;
    this.stop();
    this.send(true);
    this.finished = true;
  }
}

/** @param {unknown} v */
const isCount = (v) => typeof v === 'number' && Number.isFinite(v) && v >= 0;
/** @param {unknown} v */
const isObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);
/** @param {unknown} v @param {number} max */
const isText = (v, max) => typeof v === 'string' && v.length <= max;

/**
 * What is wrong with a report's shape, or null when it is a valid report.
 * The server refuses what this names (docs/security.md "Client reports");
 * the reader of a recording skips it.
 *
 * @param {any} r
 * @returns {string | null}
 */
export function reportProblem(r) {
  if (!isObject(r)) return 'a report is a JSON object';
  if (r.v !== REPORT_VERSION) return `v must be ${REPORT_VERSION}`;
  if (typeof r.session !== 'string' || !/^[0-9a-f]{32}$/.test(r.session)) return 'session must be 32 hex digits';
  if (!Number.isInteger(r.seq) || r.seq < 1) return 'seq must be a positive integer';
  if (typeof r.final !== 'boolean') return 'final must be true or false';
  if (!REPORT_KINDS.includes(r.kind)) return `kind must be one of ${REPORT_KINDS.join(', ')}`;
  for (const k of ['uptimeMs', 'cycleMs', 'rtWarmupN']) if (!isCount(r[k])) return `${k} must be a number >= 0`;
  if (!isText(r.group, REPORT_LIMITS.maxText) || r.group === '') return `group must be 1..${REPORT_LIMITS.maxText} characters`;
  if (!isText(r.name, REPORT_LIMITS.maxText)) return `name must be at most ${REPORT_LIMITS.maxText} characters`;
  if (!Number.isInteger(r.clientId) || r.clientId < 0 || r.clientId > 0xffffffff) return 'clientId must be a u32';
  if (!isText(r.transport, 40) || !isText(r.cycleMode, 20)) return 'transport and cycleMode must be short strings';
  return rtProblem(r.rt) ?? countsProblem(r) ?? recvProblem(r.recv) ?? restProblem(r);
}

/**
 * The sum of a histogram's counts (bucket value -> count), or -1 when it is
 * not one: more than `max` buckets, a bucket that is not a number >= 0, a
 * count that is not a whole number >= 0. A for-in loop, not entries(): the
 * intake runs it on every report (docs/results.md, what reports cost).
 * @param {Record<string, unknown>} buckets @param {number} max
 */
function histogramTotal(buckets, max) {
  let total = 0;
  let size = 0;
  for (const k in buckets) {
    const c = buckets[k];
    const at = +k;
    if (++size > max || !(at >= 0) || at === Infinity || typeof c !== 'number' || !Number.isInteger(c) || c < 0) return -1;
    total += c;
  }
  return total;
}

/**
 * Whether a map is client id -> `valid(value)`, with at most `max` entries.
 * @param {Record<string, unknown>} map @param {(v: any) => boolean} valid @param {number} max
 */
function isIdMap(map, valid, max) {
  let size = 0;
  for (const id in map) {
    if (++size > max || id.length > 10 || !isDigits(id) || !valid(map[id])) return false;
  }
  return true;
}

/** @param {string} text */
function isDigits(text) {
  if (text.length === 0) return false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/** @param {any} h @returns {string | null} */
function rtProblem(h) {
  if (!isObject(h)) return 'rt must be a histogram';
  for (const k of ['n', 'sum', 'sumSq']) if (!isCount(h[k])) return `rt.${k} must be a number >= 0`;
  for (const k of ['min', 'max']) if (h[k] !== null && !isCount(h[k])) return `rt.${k} must be a number >= 0 or null`;
  if (!isObject(h.buckets)) return 'rt.buckets must be an object';
  const total = histogramTotal(h.buckets, REPORT_LIMITS.maxBuckets);
  if (total < 0) return `rt.buckets must map bucket (ms) to a count, at most ${REPORT_LIMITS.maxBuckets} buckets`;
  if (total !== h.n) return 'rt.buckets do not add up to rt.n';
  return null;
}

/** @param {any} r @returns {string | null} */
function countsProblem(r) {
  if (!isObject(r.updates)) return 'updates must be an object';
  for (const k of ['sent', 'completed', 'ackTimeouts', 'skippedCycles', 'lateAcks']) if (!isCount(r.updates[k])) return `updates.${k} must be a count`;
  if (r.updates.takenBack !== undefined && !isCount(r.updates.takenBack)) return 'updates.takenBack must be a count';
  for (const field of ['sentTo', 'acksFrom', 'pendingTo']) {
    if (field === 'pendingTo' && r[field] === undefined) continue; // older pages
    if (!isObject(r[field])) return `${field} must be an object`;
    if (!isIdMap(r[field], isCount, REPORT_LIMITS.maxStreams)) return `${field} must map client id to a count, at most ${REPORT_LIMITS.maxStreams} entries`;
  }
  return seqSetsProblem(r);
}

/** @param {unknown} v */
const isReportRanges = (v) => isSeqRanges(v, REPORT_LIMITS.maxSeqRanges);

/**
 * The loss record's seq sets (absent together from older pages).
 * @param {any} r @returns {string | null}
 */
function seqSetsProblem(r) {
  if (r.cutoffSeq === undefined && r.sentSeqs === undefined) return null;
  if (!isCount(r.cutoffSeq) || !Number.isInteger(r.cutoffSeq)) return 'cutoffSeq must be a whole number >= 0';
  if (r.horizonMs !== undefined && !isCount(r.horizonMs)) return 'horizonMs must be a number >= 0';
  for (const field of ['sentSeqs', 'ackedBy']) {
    if (!isObject(r[field]) || !isIdMap(r[field], isReportRanges, REPORT_LIMITS.maxStreams)) {
      return `${field} must map client id to seq ranges [from, to, ...] (sorted, at most ${REPORT_LIMITS.maxSeqRanges})`;
    }
  }
  if (!isReportRanges(r.ackedAllSeqs)) return 'ackedAllSeqs must be seq ranges [from, to, ...]';
  return null;
}

/** @param {any} recv @returns {string | null} */
function recvProblem(recv) {
  if (!isObject(recv)) return 'recv must be an object';
  if (!isIdMap(recv, isObject, REPORT_LIMITS.maxStreams)) return `recv must map sender id to a stream, at most ${REPORT_LIMITS.maxStreams} streams`;
  for (const id in recv) {
    const s = recv[id];
    for (const k of ['received', 'duplicates', 'reorders', 'jitterMs', 'acksSent']) if (!isCount(s[k])) return `recv.${id}.${k} must be a number >= 0`;
    for (const k of ['seqs', 'superseded']) if (s[k] !== undefined && !isReportRanges(s[k])) return `recv.${id}.${k} must be seq ranges [from, to, ...]`;
    const f = s.fresh;
    if (f !== undefined) {
      if (!isObject(f) || !isCount(f.n) || !isCount(f.spanMs) || !isCount(f.frozenMs) || !isCount(f.maxGapMs) || !isObject(f.gaps)) return `recv.${id}.fresh is not a freshness record`;
      if (histogramTotal(f.gaps, REPORT_LIMITS.maxBuckets) < 0) return `recv.${id}.fresh.gaps must map gap (ms) to a count, at most ${REPORT_LIMITS.maxBuckets} buckets`;
    }
  }
  return null;
}

/**
 * Whether a JSON value nests at most `depth` objects or arrays deep (iterative: no recursion to overflow).
 * @param {unknown} value @param {number} depth
 */
function withinDepth(value, depth) {
  /** @type {[unknown, number][]} */
  const stack = [[value, 0]];
  while (stack.length) {
    const [v, d] = /** @type {[unknown, number]} */ (stack.pop());
    if (typeof v !== 'object' || v === null) continue;
    if (d >= depth) return false;
    for (const child of Object.values(v)) stack.push([child, d + 1]);
  }
  return true;
}

/**
 * The `playout` part: absent or null (older pages, Node clients), else a mode and per neighbour figures.
 * @param {any} p @returns {string | null}
 */
function playoutProblem(p) {
  if (p === undefined || p === null) return null;
  if (!isObject(p) || !isText(p.mode, 20) || !isObject(p.streams)) return 'playout must be { mode, streams } or null';
  const isFraction = (/** @type {unknown} */ x) => typeof x === 'number' && x >= 0 && x <= 1;
  const valid = (/** @type {any} */ s) => isObject(s) && isCount(s.seconds) && isCount(s.jumps)
    && (s.behindMs === null || isCount(s.behindMs)) && (s.jumpsPerMinute === null || isCount(s.jumpsPerMinute))
    && (s.shares === null || (isObject(s.shares) && Object.keys(s.shares).length <= 4 && Object.values(s.shares).every(isFraction)));
  if (!isIdMap(p.streams, valid, REPORT_LIMITS.maxStreams)) {
    return `playout.streams must map member id to { seconds, behindMs, shares, jumps, jumpsPerMinute }, at most ${REPORT_LIMITS.maxStreams}`;
  }
  return null;
}

/** @param {any} r @returns {string | null} */
function restProblem(r) {
  if (r.rtLastMs !== null && !isCount(r.rtLastMs)) return 'rtLastMs must be a number >= 0 or null';
  if (!isObject(r.ages) || !isIdMap(r.ages, (a) => a === null || isCount(a), REPORT_LIMITS.maxStreams)) return 'ages must map member id to ms or null';
  if (r.channel !== null && !isObject(r.channel)) return 'channel must be an object or null';
  if (r.setup !== null && !isObject(r.setup)) return 'setup must be an object or null';
  // Free-form parts are bounded in depth: a deep one would overflow the stack of whoever serialises it.
  if (!withinDepth(r.channel, REPORT_LIMITS.maxDepth)) return `channel nests deeper than ${REPORT_LIMITS.maxDepth}`;
  if (!withinDepth(r.setup, REPORT_LIMITS.maxDepth)) return `setup nests deeper than ${REPORT_LIMITS.maxDepth}`;
  if (!isObject(r.connection) || !isCount(r.connection.reconnects) || !isCount(r.connection.outageMs)) return 'connection must be { reconnects, outageMs }';
  if (r.tracking !== null) {
    const t = r.tracking;
    if (!isObject(t) || !['frames', 'visibleFrames', 'processMsSum', 'spanMs'].every((k) => isCount(t[k]))) return 'tracking must be { frames, visibleFrames, processMsSum, spanMs } or null';
    if (t.visibleFrames > t.frames) return 'tracking.visibleFrames exceeds tracking.frames';
  }
  if (r.effectiveType !== null && !isText(r.effectiveType, 20)) return 'effectiveType must be a short string or null';
  const playout = playoutProblem(r.playout);
  if (playout) return playout;
  return sceneReportProblem(r.scene);
}
