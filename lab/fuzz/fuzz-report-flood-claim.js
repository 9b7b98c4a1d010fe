// The report-flood and report-claim lanes (fuzz-reports.js says what they
// promise): the intake's per-session rules, one report a second (the final
// one once) and a (group, client id) held by its live session; each lane
// with well-behaved members beside it, and its verdict.

import { setTimeout as sleep } from 'node:timers/promises';
import { REPORT_LIMITS } from '../../core/report.js';
import { closeMembers, countBy, formatCounts, goodFacts, judgeGoodReporters, postReport, reportingGroup, result } from './fuzz-reports.js';

/** @typedef {import('./fuzz-reports.js').ReportLaneLimits} ReportLaneLimits */
/** @typedef {import('./fuzz-reports.js').ReportLedger} ReportLedger */
/** @typedef {import('./fuzz-reports.js').ReportPost} ReportPost */
/** @typedef {import('./fuzz-reports.js').GoodReporterFacts} GoodReporterFacts */
/** @typedef {import('./fuzz-report-plan.js').ReportPlan} ReportPlan */

/** The report flood refuses at least this many posts (its loop goes on until it has). */
export const FLOOD_MIN_REFUSED = 5;


// ------------------------------------------------------------------ report-flood

/**
 * What report-flood saw.
 * @typedef {object} ReportFloodFacts
 * @property {number} minIntervalMs
 * @property {number} burst reports the bucket lets through at once
 * @property {number} durationMs from the first report of the loop going out to the last answer
 * @property {number} posts reports the loop posted
 * @property {Record<string, number>} byStatus their answers (status, or how the request failed)
 * @property {{ sentAt: number, doneAt: number }[]} accepted the loop's accepted reports (ms from the loop's start)
 * @property {string[]} wrongRefusals refusals that were not 429 too_frequent with Retry-After (the first 5)
 * @property {number} wrongRefusalCount
 * @property {{ status: number | null, code: string | null }} final the session's final report, right after the loop
 * @property {{ status: number | null, code: string | null, retryAfter: string | null, spanMs?: number }} secondFinal another final
 *   at once; spanMs from the final going out to this one's answer
 * @property {GoodReporterFacts[]} good
 */

/**
 * The report-flood verdict (docs/security.md "Client reports": one report
 * per second per session, the final one once, 429 with Retry-After).
 * @param {ReportFloodFacts} f
 * @returns {string[]}
 */
export function judgeReportFlood(f) {
  const problems = [];
  const seconds = f.minIntervalMs / 1000;
  // a token bucket: `burst` at once, then one per minIntervalMs
  const most = Math.floor(f.durationMs / f.minIntervalMs) + f.burst;
  const n = f.accepted.length;
  if (n > most) problems.push(`the flooding session had ${n} reports accepted in ${f.durationMs} ms: more than one per ${seconds} s after a burst of ${f.burst} (at most ${most})`);
  // the limit lets one through a second: a tight loop is not shut out (a slack of 250 ms per report)
  const least = 1 + Math.floor(Math.max(0, f.durationMs - 250) / (f.minIntervalMs + 250));
  if (n < least) problems.push(`the flooding session had ${n} reports accepted in ${f.durationMs} ms: fewer than one per ${seconds} s (at least ${least})`);
  for (let i = f.burst; i < n; i++) {
    const since = f.accepted[i].doneAt - f.accepted[0].sentAt;
    const due = (i - f.burst + 1) * f.minIntervalMs;
    if (since < due - 1) problems.push(`the flooding session's report ${i + 1} was accepted ${Math.round(since)} ms after its first: before ${due} ms`);
  }
  if (f.wrongRefusalCount) problems.push(`${f.wrongRefusalCount} of the flood's refusals were not 429 too_frequent with Retry-After ${Math.ceil(seconds)}: ${f.wrongRefusals.join('; ')}`);
  if (f.posts - n - f.wrongRefusalCount === 0) problems.push('no report of the flood was refused 429');
  if (f.final.status !== 204) problems.push(`the flooding session's final report got ${f.final.status ?? 'no answer'}${f.final.code ? ` ${f.final.code}` : ''}, not 204 (a final report is let in once)`);
  // Within one interval of the final no token can have come back; a stalled machine that took
  // longer may rightly let the second one in.
  const tokenBack = (f.secondFinal.spanMs ?? 0) >= f.minIntervalMs && f.secondFinal.status === 204;
  if (!tokenBack && (f.secondFinal.status !== 429 || f.secondFinal.code !== 'too_frequent' || f.secondFinal.retryAfter === null)) {
    problems.push(`a second final report at once got ${f.secondFinal.status ?? 'no answer'}${f.secondFinal.code ? ` ${f.secondFinal.code}` : ''}, not 429 with Retry-After (the final one is let in once)`);
  }
  return [...problems, ...judgeGoodReporters(f.good)];
}

/**
 * Runs report-flood: three members of one group exchange updates; two
 * report every plan.reportMs, the third posts its reports in a tight loop
 * (one after the other, as fast as they are answered) for plan.flood.seconds,
 * then its final report, and another one.
 * @param {{ wsBase: string, port: number, plan: ReportPlan, ledger: ReportLedger, limits?: ReportLaneLimits, timeoutMs?: number }} p
 * @returns {Promise<import('./fuzz-scenarios.js').ScenarioResult>}
 */
export async function runReportFlood(p) {
  const lane = 'report-flood';
  const limits = p.limits ?? REPORT_LIMITS;
  const base = `http://127.0.0.1:${p.port}`;
  const members = await reportingGroup({
    url: `${p.wsBase}/relay`, base, group: p.plan.flood.group, n: 3, reportMs: p.plan.reportMs, ledger: p.ledger, lane, timeoutMs: p.timeoutMs,
  });
  const [flooder, ...good] = members;
  try {
    for (const m of good) m.reporter.start();
    const from = performance.now() + 1000;
    await sleep(200);
    /** @type {ReportPost[]} */
    const loop = [];
    const start = performance.now();
    const end = start + p.plan.flood.seconds * 1000;
    // The loop's length is the plan's; on a starved machine it goes on (10 s more at most) until
    // FLOOD_MIN_REFUSED posts were refused, so that the limit is always put to the test.
    const refused = () => loop.filter((x) => x.status === 429).length;
    while (performance.now() < end || (refused() < FLOOD_MIN_REFUSED && performance.now() < end + 10_000)) {
      loop.push(await flooder.post(flooder.reporter.next(false), 'flood', [204, 429]));
    }
    const final = await flooder.post(flooder.reporter.next(true), 'flood final', [204]);
    const secondFinal = await flooder.post(flooder.reporter.next(true), 'flood second final', [429, 204]);
    flooder.reporter.finished = true;
    await sleep(Math.max(0, from + 1500 - performance.now())); // the good members' updates over a window of 1.5 s at least
    const to = performance.now();
    await closeMembers(good);
    const wrong = loop.filter((x) => x.status !== 204 && !(x.status === 429 && x.code === 'too_frequent' && x.retryAfter === String(Math.ceil(limits.minIntervalMs / 1000))));
    const last = loop[loop.length - 1];
    /** @type {ReportFloodFacts} */
    const facts = {
      minIntervalMs: limits.minIntervalMs,
      burst: limits.burst,
      durationMs: last ? Math.round(last.doneAt - start) : 0,
      posts: loop.length,
      byStatus: countBy(loop.map((x) => String(x.status ?? x.outcome))),
      accepted: loop.filter((x) => x.status === 204).map((x) => ({ sentAt: Math.round(x.sentAt - start), doneAt: Math.round(x.doneAt - start) })),
      wrongRefusals: wrong.slice(0, 5).map((x) => `seq ${x.seq}: ${x.status ?? x.outcome} ${x.code ?? ''} Retry-After ${x.retryAfter}`.trim()),
      wrongRefusalCount: wrong.length,
      final: { status: final.status, code: final.code },
      secondFinal: { status: secondFinal.status, code: secondFinal.code, retryAfter: secondFinal.retryAfter, spanMs: Math.round(secondFinal.doneAt - final.sentAt) },
      good: goodFacts(good, members, from, to),
    };
    const summary = `one session posted ${facts.posts} reports in ${facts.durationMs} ms: ${formatCounts(facts.byStatus)}, accepted at ${facts.accepted.map((a) => a.doneAt).join('/')} ms; `
      + `its final ${final.status ?? final.outcome}, a second final ${secondFinal.status ?? secondFinal.outcome}; `
      + `${good.length} well-behaved members ${facts.good.reduce((s, g) => s + g.reports.accepted, 0)}/${facts.good.reduce((s, g) => s + g.reports.sent, 0)} reports accepted, `
      + `longest gap ${Math.max(0, ...facts.good.flatMap((g) => Object.values(g.gapMs)))} ms`;
    return result(lane, judgeReportFlood(facts), summary, facts);
  } finally {
    for (const m of members) { m.reporter.finished = true; m.client.stop(); m.client.close(); }
  }
}

// ------------------------------------------------------------------ report-claim

/**
 * One step of report-claim: what was posted, what was due, what came.
 * @typedef {{ what: string, expect: number, expectCode: string, status: number | null, code: string | null }} ClaimStep
 */

/**
 * What report-claim saw.
 * @typedef {{ steps: ClaimStep[], good: GoodReporterFacts[] }} ClaimFacts
 */

/**
 * The report-claim verdict (docs/security.md "Client reports": a live
 * session holds its (group, client id); another session naming it, a session
 * moving to another group or an old report number gets 409).
 * @param {ClaimFacts} f
 * @returns {string[]}
 */
export function judgeReportClaim(f) {
  const problems = [];
  for (const s of f.steps) {
    if (s.status !== s.expect || s.code !== s.expectCode) {
      problems.push(`${s.what}: got ${s.status ?? 'no answer'}${s.code ? ` ${s.code}` : ''}, not ${s.expect} ${s.expectCode}`);
    }
  }
  return [...problems, ...judgeGoodReporters(f.good)];
}

/**
 * Runs report-claim: two members of a group report by hand; a third session
 * names one's client id, the other moves its session to another group, old
 * report numbers are replayed; their own next reports must still be taken,
 * and once the named member left (final) its id is free.
 * @param {{ wsBase: string, port: number, plan: ReportPlan, ledger: ReportLedger, limits?: ReportLaneLimits, timeoutMs?: number }} p
 * @returns {Promise<import('./fuzz-scenarios.js').ScenarioResult>}
 */
export async function runReportClaim(p) {
  const lane = 'report-claim';
  const limits = p.limits ?? REPORT_LIMITS;
  const base = `http://127.0.0.1:${p.port}`;
  const members = await reportingGroup({
    url: `${p.wsBase}/relay`, base, group: p.plan.claim.group, n: 2, reportMs: 0, ledger: p.ledger, lane, timeoutMs: p.timeoutMs,
  });
  const victim = members[p.plan.claim.victim];
  const mover = members[1 - p.plan.claim.victim];
  /** @type {Promise<unknown>} */
  let claimerChain = Promise.resolve();
  /** @type {ClaimStep[]} */
  const steps = [];
  /**
   * @param {string} what @param {number} expect @param {string} expectCode
   * @param {() => Promise<ReportPost>} go
   */
  const step = async (what, expect, expectCode, go) => {
    const x = await go();
    steps.push({ what, expect, expectCode, status: x.status, code: x.code });
    return x;
  };
  /** @param {import('../../core/report.js').ClientReport} report @param {string} what @param {number[]} expect */
  const asClaimer = (report, what, expect) => {
    const sent = claimerChain.then(() => postReport({ base, ledger: p.ledger, lane, what, expect, timeoutMs: p.timeoutMs }, report));
    claimerChain = sent;
    return sent;
  };
  try {
    const from = performance.now() + 1000;
    await sleep(300);
    const v1 = victim.reporter.next(false);
    const first = await step('the member\'s first report', 204, 'accepted', () => victim.post(v1));
    await step('the other member\'s first report', 204, 'accepted', () => mover.post(mover.reporter.next(false)));
    const claim = (/** @type {number} */ seq) => ({ ...v1, session: p.plan.claim.claimer, seq, name: 'claimer', uptimeMs: 10 });
    await step('another session naming the member\'s client id', 409, 'claimed', () => asClaimer(claim(1), 'claim-other-session', [409]));
    const moved = { ...mover.reporter.next(false), group: p.plan.claim.otherGroup };
    await step('a session moving to another group', 409, 'claimed', () => mover.post(moved, 'claim-switch-group', [409]));
    await step('the member\'s newest report again', 409, 'stale', () => victim.post(v1, 'claim-replay-newest', [409]));
    await sleep(Math.max(0, first.doneAt + limits.minIntervalMs + 150 - performance.now()));
    await step('the member\'s own next report', 204, 'accepted', () => victim.post(victim.reporter.next(false)));
    await step('the moving member\'s next report in its own group', 204, 'accepted', () => mover.post(mover.reporter.next(false)));
    await step('an older report of the member again', 409, 'stale', () => victim.post(v1, 'claim-replay-old', [409]));
    await step('the other session naming the id again while the member is live', 409, 'claimed', () => asClaimer(claim(2), 'claim-other-session', [409]));
    const to = performance.now();
    await step('the member\'s final report', 204, 'accepted', () => victim.post(victim.reporter.next(true)));
    victim.reporter.finished = true;
    await step('the other session naming the id once the member left', 204, 'accepted', () => asClaimer(claim(3), 'claim-after-final', [204]));
    await step('the other member\'s final report', 204, 'accepted', () => mover.post(mover.reporter.next(true)));
    mover.reporter.finished = true;
    await step('the other session\'s final report', 204, 'accepted', () => asClaimer({ ...claim(4), final: true }, 'claim-after-final', [204]));
    /** @type {ClaimFacts} */
    const facts = { steps, good: goodFacts(members, members, from, to) };
    const summary = steps.map((s) => `${s.status ?? 'none'}${s.status === s.expect ? '' : `≠${s.expect}`}`).join(' ')
      + ` (claim, move, replays, own reports, after leaving); longest gap ${Math.max(0, ...facts.good.flatMap((g) => Object.values(g.gapMs)))} ms`;
    return result(lane, judgeReportClaim(facts), summary, facts);
  } finally {
    for (const m of members) { m.reporter.finished = true; m.client.stop(); m.client.close(); }
  }
}

