// Report lanes of `carlab fuzz` (issue "Real phones in the study", part 5):
// bad client reports thrown at a running server's POST /reports while
// well-behaved members exchange updates in a relay group and send good
// reports of their own (docs/security.md "Client reports", docs/study.md
// "How reports travel"):
//
//   report-garbage  a seeded set of bad bodies, one of each kind and more:
//                   not JSON, truncated JSON, over 64 KiB (declared, sent
//                   with a Content-Length, chunked), another content type,
//                   and a real report mutated per field into the wrong shape
//                   (negative counts, NaN-ish strings, too many streams, huge
//                   histograms, buckets not adding up, a bad session, seq 0,
//                   an unknown kind, a group too long, `__proto__` keys, deep
//                   nesting, ...). Each gets exactly its documented status
//                   (400/413/415/422); a body of exactly 64 KiB is accepted.
//   report-flood    one session posts reports in a tight loop for ~2 s: at
//                   most one a second is accepted (and its final one), the
//                   rest get 429 with Retry-After; the other members' reports
//                   are still accepted and their updates still flow.
//   report-claim    another session naming a member's (group, client id), a
//                   session moving to another group and a replayed report
//                   number get 409; the member's own next report gets 204,
//                   and once it left (final) its id is free.
//
// After the lanes, the books (report-books): the server's
// carlab_reports_total{result} counts what the lanes were answered, and the
// recording (the fuzz server records into a temporary folder) holds every
// accepted report once and nothing else.
//
// As in fuzz-scenarios.js: each lane's parameters are a pure function of the
// seed (reportPlan), its request bodies a pure function of the plan and a
// real report (garbageRequest), its verdict a pure function of what it saw
// (judge*), all tested without a server.
//
// Here: what every report lane shares (their names, the ledger of every POST
// /reports, posting a report, a raw HTTP exchange, the well-behaved reporting
// members and their part of each verdict). The plan is fuzz-report-plan.js,
// report-garbage fuzz-report-garbage.js, report-flood and report-claim
// fuzz-report-flood-claim.js, the books fuzz-report-books.js.

import net from 'node:net';
import { REPORT_LIMITS, Reporter } from '../../core/report.js';
import { STARVED_GAP_MS, goodMember, longestGap } from './fuzz-scenarios.js';
import { until } from '../shared/loop-stall.js';

/** The report lanes, as `--only` takes them (`reports` for the three, `scenario` for every scenario). */
export const REPORT_SCENARIO_NAMES = Object.freeze(['report-garbage', 'report-flood', 'report-claim']);

/** `--only reports`: the three report lanes. */
export const REPORTS_ALIAS = 'reports';

/**
 * The intake's limits the lanes aim at (REPORT_LIMITS unless a test says
 * otherwise).
 * @typedef {Pick<typeof REPORT_LIMITS, 'maxBytes' | 'maxStreams' | 'maxBuckets' | 'maxText' | 'minIntervalMs' | 'burst'>} ReportLaneLimits
 */

// ------------------------------------------------------------------ talking to /reports

/**
 * One POST /reports the lanes made, and its answer.
 * @typedef {object} ReportPost
 * @property {string} lane
 * @property {string} what who sent it and why ('good', 'flood', 'claim-other-session', a garbage case ...)
 * @property {string | null} session
 * @property {number | null} seq
 * @property {string | null} group
 * @property {number | null} clientId
 * @property {boolean | null} final
 * @property {number[]} expect
 * @property {boolean} mayAccept a 204 is among the statuses due (its session may be in the recording)
 * @property {'answered' | 'dropped' | 'timeout'} outcome
 * @property {number | null} status
 * @property {string | null} code the refusal's `code` (REFUSALS' key), 'accepted' for a 2xx
 * @property {string | null} retryAfter
 * @property {string | null} connection the answer's Connection header
 * @property {number} sentAt performance.now() when the request went out
 * @property {number} doneAt when its answer (or the failure) came
 */

/**
 * Every POST /reports of a run, for the books.
 */
export function createReportLedger() {
  /** @type {ReportPost[]} */
  const posts = [];
  return {
    posts,
    /** @param {ReportPost} p */
    add(p) { posts.push(p); return p; },
  };
}

/** @typedef {ReturnType<typeof createReportLedger>} ReportLedger */

/**
 * What a report says about itself, for the ledger.
 * @param {any} r
 */
export function idOf(r) {
  const ok = r && typeof r === 'object' && !Array.isArray(r);
  const pick = (/** @type {string} */ k, /** @type {string} */ type) => (ok && typeof r[k] === type ? r[k] : null);
  return { session: pick('session', 'string'), seq: pick('seq', 'number'), group: pick('group', 'string'), clientId: pick('clientId', 'number'), final: pick('final', 'boolean') };
}

/**
 * The refusal's `code` in an answer's JSON body (null: none).
 * @param {string} text
 */
export function codeIn(text) {
  try { const c = JSON.parse(text)?.code; return typeof c === 'string' ? c : null; } catch { return null; }
}

/**
 * POSTs a well-formed report with fetch (keep-alive, as the lab's clients
 * do) and books it.
 * @param {{ base: string, ledger: ReportLedger, lane: string, what: string, expect: number[], timeoutMs?: number }} p
 * @param {import('../../core/report.js').ClientReport} report
 * @returns {Promise<ReportPost>}
 */
export async function postReport(p, report) {
  const sentAt = performance.now();
  /** @type {ReportPost} */
  const post = {
    lane: p.lane, what: p.what, ...idOf(report), expect: p.expect, mayAccept: p.expect.includes(204),
    outcome: 'dropped', status: null, code: null, retryAfter: null, connection: null, sentAt, doneAt: sentAt,
  };
  try {
    const res = await fetch(`${p.base}/reports`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'user-agent': 'carlab-fuzz' }, body: JSON.stringify(report),
      signal: AbortSignal.timeout(p.timeoutMs ?? 5000),
    });
    const text = await res.text();
    Object.assign(post, {
      outcome: 'answered', status: res.status, code: res.ok ? 'accepted' : codeIn(text),
      retryAfter: res.headers.get('retry-after'), connection: res.headers.get('connection'),
    });
  } catch (err) {
    post.outcome = /** @type {Error} */ (err)?.name === 'TimeoutError' ? 'timeout' : 'dropped';
  }
  post.doneAt = performance.now();
  return p.ledger.add(post);
}

/**
 * One raw HTTP exchange on its own socket: writes the pieces, reads the
 * answer's status, headers and body (by its Content-Length). 'dropped': the
 * connection ended before a status line came.
 * @param {number} port @param {Buffer[]} pieces @param {number} timeoutMs
 * @returns {Promise<{ outcome: 'answered' | 'dropped' | 'timeout', status: number | null, headers: Record<string, string>, body: string }>}
 */
export function rawExchange(port, pieces, timeoutMs) {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    let buf = Buffer.alloc(0);
    /** @type {number | null} */
    let status = null;
    /** @type {Record<string, string>} */
    const headers = {};
    let bodyAt = -1;
    let settled = false;
    /** @param {'answered' | 'dropped' | 'timeout'} outcome */
    const finish = (outcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      sock.destroy();
      resolve({ outcome: status === null ? outcome : 'answered', status, headers, body: bodyAt < 0 ? '' : buf.subarray(bodyAt).toString('utf8') });
    };
    const timer = setTimeout(() => finish('timeout'), timeoutMs);
    sock.on('error', () => {}); // a refusal may close while we still write: the answer already came, or 'close' says dropped
    sock.on('connect', () => { for (const p of pieces) sock.write(p); });
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      if (bodyAt < 0) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const lines = buf.subarray(0, end).toString('latin1').split('\r\n');
        const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0]);
        if (!m) { finish('dropped'); return; }
        status = Number(m[1]);
        for (const line of lines.slice(1)) {
          const i = line.indexOf(':');
          if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
        }
        bodyAt = end + 4;
      }
      const length = Number(headers['content-length'] ?? (status === 204 || status === 304 ? 0 : NaN));
      if (Number.isFinite(length) && buf.length - bodyAt >= length) finish('answered');
    });
    sock.on('close', () => finish('dropped'));
  });
}

// ------------------------------------------------------------------ well-behaved members

/**
 * A well-behaved member of a report lane: a relay client exchanging
 * updates (goodMember) and its Reporter, whose reports go out one after the
 * other (a final one never overtakes a periodic one).
 * @param {{ url: string, base: string, group: string, name: string, reportMs: number, ledger: ReportLedger, lane: string, timeoutMs?: number }} p
 */
async function reportingMember(p) {
  const m = await goodMember({ url: p.url, group: p.group, cycleMs: 167, udp: false, name: p.name });
  /** @type {Promise<unknown>} */
  let chain = Promise.resolve();
  /** @type {ReportPost[]} */
  const posts = [];
  /** @param {import('../../core/report.js').ClientReport} report @param {string} what @param {number[]} expect */
  const post = (report, what = 'good', expect = [204]) => {
    const sent = chain.then(() => postReport({ base: p.base, ledger: p.ledger, lane: p.lane, what, expect, timeoutMs: p.timeoutMs }, report))
      .then((x) => { posts.push(x); return x; });
    chain = sent;
    return sent;
  };
  const reporter = new Reporter({ client: m.client, kind: 'sim', intervalMs: p.reportMs, send: (report) => post(report) });
  return { ...m, reporter, post, posts, idle: () => chain };
}

/** @typedef {Awaited<ReturnType<typeof reportingMember>>} ReportingMember */

/**
 * Members of one group, connected and meshed, their cycles started.
 * @param {{ url: string, base: string, group: string, n: number, reportMs: number, ledger: ReportLedger, lane: string, timeoutMs?: number }} p
 */
export async function reportingGroup(p) {
  /** @type {ReportingMember[]} */
  const members = [];
  for (let i = 0; i < p.n; i++) members.push(await reportingMember({ ...p, name: `${p.lane}-${i}` }));
  if (!(await until(() => members.every((m) => m.client.members.size >= p.n - 1), 10000))) throw new Error(`the group of ${p.n} did not form within 10 s`);
  for (const m of members) m.client.start();
  return members;
}

/**
 * What a lane's well-behaved members saw.
 * @typedef {{ id: number, closed: { code: number, reason: string } | null, gapMs: Record<string, number>,
 *   reports: { sent: number, accepted: number, refused: string[] } }} GoodReporterFacts
 */

/**
 * What a lane's well-behaved members saw, each.
 * @param {ReportingMember[]} members the well-behaved ones
 * @param {ReportingMember[]} all every member of the group (their updates count too)
 * @param {number} from @param {number} to the window updates must keep flowing in
 * @returns {GoodReporterFacts[]}
 */
export function goodFacts(members, all, from, to) {
  return members.map((m) => goodFactsOf(m, all, from, to));
}

/**
 * @param {ReportingMember} m @param {ReportingMember[]} all @param {number} from @param {number} to
 * @returns {GoodReporterFacts}
 */
function goodFactsOf(m, all, from, to) {
  // its own reports only: what a lane posts in its name on purpose (a replay, a move) is judged by the lane
  const own = m.posts.filter((x) => x.what === 'good');
  return {
    id: m.client.id,
    closed: m.client.closedWith,
    gapMs: Object.fromEntries(all.filter((o) => o !== m).map((o) => [String(o.client.id), Math.round(longestGap(m.arrivals.get(o.client.id) ?? [], from, to))])),
    reports: {
      sent: own.length,
      accepted: own.filter((x) => x.status === 204).length,
      refused: own.filter((x) => x.status !== 204).map((x) => `seq ${x.seq}${x.final ? ' (final)' : ''}: ${x.status ?? x.outcome}${x.code ? ` ${x.code}` : ''}`),
    },
  };
}

/**
 * The well-behaved members' part of every report lane's verdict.
 * @param {GoodReporterFacts[]} good
 * @returns {string[]}
 */
export function judgeGoodReporters(good) {
  const problems = [];
  for (const g of good) {
    if (g.closed) problems.push(`well-behaved member ${g.id} was closed: ${g.closed.code} "${g.closed.reason}"`);
    for (const [other, gap] of Object.entries(g.gapMs)) {
      if (gap > STARVED_GAP_MS) problems.push(`well-behaved member ${g.id} got nothing from ${other} for ${gap} ms (starved: over ${STARVED_GAP_MS} ms)`);
    }
    if (g.reports.refused.length) problems.push(`well-behaved member ${g.id}'s reports were not accepted: ${g.reports.refused.slice(0, 3).join('; ')}`);
    if (g.reports.accepted === 0) problems.push(`well-behaved member ${g.id} had no report accepted`);
  }
  return problems;
}

/**
 * Stops a lane's members: their final reports, then their clients.
 * @param {ReportingMember[]} members
 */
export async function closeMembers(members) {
  for (const m of members) m.reporter.finish();
  await Promise.all(members.map((m) => m.idle()));
  for (const m of members) { m.client.stop(); m.client.close(); }
}

/**
 * A lane's scenario result from its verdict.
 * @param {string} name @param {string[]} problems @param {string} summary @param {Record<string, unknown>} facts @param {string[]} [notes]
 */
export function result(name, problems, summary, facts, notes = []) {
  /** @type {import('./fuzz-scenarios.js').ScenarioResult} */
  const out = { name, ok: problems.length === 0, skipped: null, problems, notes, summary, facts };
  return out;
}

/**
 * How often each key comes.
 * @param {string[]} keys
 */
export function countBy(keys) {
  /** @type {Record<string, number>} */
  const out = {};
  for (const k of keys) out[k] = (out[k] ?? 0) + 1;
  return out;
}

/**
 * Counts as `key×n` words, by key.
 * @param {Record<string, number>} counts
 */
export const formatCounts = (counts) => Object.entries(counts).sort(([a], [b]) => a.localeCompare(b)).map(([k, n]) => `${k}×${n}`).join(' ') || '-';
