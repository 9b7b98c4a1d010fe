// The books of the report lanes (report-books): after the lanes, the
// server's carlab_reports_total{result} must count what the lanes were
// answered, and its recording must hold every accepted report once and
// nothing else.

import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { reportProblem } from '../../core/report.js';
import { SEGMENT_PATTERN, parseRecordLine } from '../../server/recorder.js';
import { countBy, formatCounts, result } from './fuzz-reports.js';

/** @typedef {import('./fuzz-reports.js').ReportLedger} ReportLedger */

// ------------------------------------------------------------------ the books

/**
 * carlab_reports_total by result from a Prometheus text exposition; null
 * when the family is not in it at all.
 * @param {string} text
 * @returns {Record<string, number> | null}
 */
export function reportCountsIn(text) {
  if (!/^# TYPE carlab_reports_total counter$/m.test(text)) return null;
  /** @type {Record<string, number>} */
  const out = {};
  for (const m of text.matchAll(/^carlab_reports_total\{([^}]*)\} (\S+)$/gm)) {
    const result = /(?:^|,)result="([^"]*)"/.exec(m[1])?.[1];
    if (result !== undefined) out[result] = (out[result] ?? 0) + Number(m[2]);
  }
  return out;
}

/**
 * GET /metrics (the text exposition) and its report counts.
 * @param {number} port
 */
export async function fetchReportCounts(port) {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { accept: 'text/plain' }, signal: AbortSignal.timeout(5000) });
  return reportCountsIn(await res.text());
}

/**
 * The reports a recording holds (every segment of `dir`).
 * @param {string} dir
 * @returns {Promise<{ segments: number, unreadable: number, reports: { session: unknown, seq: unknown, group: unknown, clientId: unknown,
 *   final: unknown, problem: string | null }[] }>}
 */
export async function readRecordedReports(dir) {
  const files = (await readdir(dir)).filter((f) => SEGMENT_PATTERN.test(f));
  let unreadable = 0;
  /** @type {{ session: unknown, seq: unknown, group: unknown, clientId: unknown, final: unknown, problem: string | null }[]} */
  const reports = [];
  for (const f of files) {
    for (const line of (await readFile(path.join(dir, f), 'utf8')).split('\n')) {
      if (line.trim() === '') continue;
      const rec = parseRecordLine(line);
      if (!rec) { unreadable++; continue; }
      if (rec.t !== 'report') continue;
      const r = /** @type {any} */ (rec.r);
      reports.push({ session: r.session, seq: r.seq, group: r.group, clientId: r.clientId, final: r.final, problem: reportProblem(r) });
    }
  }
  return { segments: files.length, unreadable, reports };
}

/**
 * What the books compare.
 * @typedef {object} BooksFacts
 * @property {Record<string, number> | null} metrics carlab_reports_total by result (null: not read)
 * @property {Record<string, number>} answered the lanes' answers by result ('accepted', or the refusal's code)
 * @property {number} unanswered posts without an answer (the server may or may not have counted them)
 * @property {{ segments: number, unreadable: number, reports: { session: unknown, seq: unknown, group: unknown, clientId: unknown, final: unknown, problem: string | null }[] } | null} recorded
 * @property {{ session: string | null, seq: number | null, group: string | null, clientId: number | null, final: boolean | null, what: string }[]} accepted
 *   the posts answered 204
 * @property {string[]} goodSessions sessions with a post due to be accepted
 * @property {Record<string, string>} refusedOnly sessions whose every post was due to be refused -> what sent them
 */

/**
 * The books' facts from the ledger, the metrics and the recording.
 * @param {ReportLedger} ledger
 * @param {Record<string, number> | null} metrics
 * @param {BooksFacts['recorded']} recorded
 * @returns {BooksFacts}
 */
export function booksFacts(ledger, metrics, recorded) {
  const answered = countBy(ledger.posts.filter((x) => x.status !== null).map((x) => (x.status !== null && x.status < 300 ? 'accepted' : x.code ?? `status ${x.status}`)));
  const good = new Set(ledger.posts.filter((x) => x.mayAccept && x.session).map((x) => /** @type {string} */ (x.session)));
  /** @type {Record<string, string>} */
  const refusedOnly = {};
  for (const x of ledger.posts) if (x.session && !good.has(x.session)) refusedOnly[x.session] ??= `${x.lane} ${x.what}`;
  return {
    metrics,
    answered,
    unanswered: ledger.posts.filter((x) => x.status === null).length,
    recorded,
    accepted: ledger.posts.filter((x) => x.status !== null && x.status < 300)
      .map((x) => ({ session: x.session, seq: x.seq, group: x.group, clientId: x.clientId, final: x.final, what: `${x.lane} ${x.what}` })),
    goodSessions: [...good],
    refusedOnly,
  };
}

/**
 * The books' verdict: the server counted what it answered, and recorded
 * every accepted report once and nothing it refused.
 * @param {BooksFacts} f
 * @returns {string[]}
 */
export function judgeReportBooks(f) {
  const problems = [];
  if (f.metrics === null) problems.push('/metrics has no carlab_reports_total');
  else {
    const keys = [...new Set([...Object.keys(f.metrics), ...Object.keys(f.answered)])].sort();
    const off = keys.filter((k) => (f.metrics?.[k] ?? 0) !== (f.answered[k] ?? 0));
    const over = off.reduce((s, k) => s + Math.max(0, (f.metrics?.[k] ?? 0) - (f.answered[k] ?? 0)), 0);
    const under = off.some((k) => (f.metrics?.[k] ?? 0) < (f.answered[k] ?? 0));
    // a post without an answer may have been counted (or not): only that much slack
    if (off.length && (under || over > f.unanswered)) {
      problems.push(`carlab_reports_total does not match the answers: ${off.map((k) => `${k} counted ${f.metrics?.[k] ?? 0}, answered ${f.answered[k] ?? 0}`).join('; ')}`);
    }
  }
  if (f.recorded === null) return [...problems, 'the recording could not be read'];
  if (f.recorded.segments === 0) problems.push('the server wrote no recording segment');
  if (f.recorded.unreadable) problems.push(`${f.recorded.unreadable} unreadable line(s) in the recording after a clean stop`);
  const key = (/** @type {{ session: unknown, seq: unknown }} */ x) => `${x.session}#${x.seq}`;
  const accepted = new Map(f.accepted.map((a) => [key(a), a]));
  const good = new Set(f.goodSessions);
  const seen = new Set();
  for (const r of f.recorded.reports) {
    const k = key(r);
    const from = typeof r.session === 'string' ? f.refusedOnly[r.session] : undefined;
    if (seen.has(k)) problems.push(`report ${k} is recorded twice`);
    seen.add(k);
    if (r.problem) problems.push(`a recorded report is not one (${r.problem}): ${k}`);
    if (typeof r.session !== 'string' || !good.has(r.session)) {
      problems.push(`a report of a session that only sent refusable reports is recorded: ${k}${from ? ` (${from})` : ''}`);
      continue;
    }
    const a = accepted.get(k);
    if (!a) { problems.push(`report ${k} is recorded but was not answered 204`); continue; }
    if (a.group !== r.group || a.clientId !== r.clientId || a.final !== r.final) {
      problems.push(`report ${k} is recorded as group ${JSON.stringify(r.group)}, client ${r.clientId}, final ${r.final}; it was accepted as ${JSON.stringify(a.group)}, ${a.clientId}, ${a.final}`);
    }
  }
  const missing = f.accepted.filter((a) => !seen.has(key(a)));
  if (missing.length) problems.push(`${missing.length} accepted report(s) are not in the recording: ${missing.slice(0, 3).map((a) => `${key(a)} (${a.what})`).join(', ')}`);
  return problems;
}

/**
 * The books as a scenario result.
 * @param {ReportLedger} ledger @param {Record<string, number> | null} metrics @param {BooksFacts['recorded']} recorded
 * @returns {import('./fuzz-scenarios.js').ScenarioResult}
 */
export function reportBooks(ledger, metrics, recorded) {
  const f = booksFacts(ledger, metrics, recorded);
  const summary = `${ledger.posts.length} POST /reports, carlab_reports_total ${f.metrics ? formatCounts(f.metrics) : 'missing'}; `
    + `${f.recorded ? `${f.recorded.reports.length} recorded in ${f.recorded.segments} segment(s)` : 'no recording'}, ${f.accepted.length} accepted`;
  return result('report-books', judgeReportBooks(f), summary, { ...f, goodSessions: f.goodSessions.length, refusedOnly: Object.keys(f.refusedOnly).length });
}
