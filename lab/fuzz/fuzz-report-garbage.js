// The report-garbage lane (fuzz-reports.js says what it promises): the bytes
// of each garbage case's body, made from a real report, and its request; the
// lane that sends them while well-behaved members report, and its verdict.

import { setTimeout as sleep } from 'node:timers/promises';
import { REPORT_LIMITS, RtHistogram, buildReport } from '../../core/report.js';
import { REFUSALS } from '../../server/report-intake.js';
import {
  closeMembers, codeIn, countBy, formatCounts, goodFacts, idOf, judgeGoodReporters, rawExchange, reportingGroup, result,
} from './fuzz-reports.js';

/** @typedef {import('./fuzz-reports.js').ReportLaneLimits} ReportLaneLimits */
/** @typedef {import('./fuzz-reports.js').ReportLedger} ReportLedger */
/** @typedef {import('./fuzz-reports.js').ReportPost} ReportPost */
/** @typedef {import('./fuzz-reports.js').GoodReporterFacts} GoodReporterFacts */
/** @typedef {import('./fuzz-report-plan.js').PlanValue} PlanValue */
/** @typedef {import('./fuzz-report-plan.js').GarbageBody} GarbageBody */
/** @typedef {import('./fuzz-report-plan.js').GarbageCase} GarbageCase */
/** @typedef {import('./fuzz-report-plan.js').ReportPlan} ReportPlan */


// ------------------------------------------------------------------ bodies

/**
 * A report with every optional part present (a stream, a freshness
 * histogram, an RT bucket, tracking), still valid: what the mutations bend.
 * @param {import('../../core/report.js').ClientReport} real
 * @returns {any}
 */
export function completeReport(real) {
  /** @type {any} */
  const r = structuredClone(real);
  const id = Object.keys(r.recv)[0] ?? Object.keys(r.sentTo)[0] ?? '1';
  r.recv[id] ??= { received: 0, duplicates: 0, reorders: 0, jitterMs: 0, acksSent: 0 };
  r.recv[id].fresh ??= { n: 0, spanMs: 0, frozenMs: 0, maxGapMs: 0, gaps: {} };
  if (Object.keys(r.recv[id].fresh.gaps).length === 0) r.recv[id].fresh.gaps = { 170: 1 };
  r.sentTo[id] ??= 0;
  r.acksFrom[id] ??= 0;
  if (!(id in r.ages)) r.ages[id] = 0;
  if (r.rt.n === 0) r.rt = { n: 1, sum: 5, sumSq: 25, min: 5, max: 5, buckets: { 5: 1 } };
  r.rtLastMs ??= 5;
  r.tracking ??= { frames: 120, visibleFrames: 90, processMsSum: 600, spanMs: 4000 };
  r.channel ??= {};
  r.setup ??= {};
  return r;
}

/** @param {any} r the report's first stream id (completeReport gives it one) */
const streamIdOf = (r) => Object.keys(r.recv)[0] ?? '1';

/**
 * The object at `path` ('a.b.*': '*' a stream id or bucket) and the last key.
 * @param {any} r @param {string} where
 * @returns {[any, string]}
 */
function slot(r, where) {
  const keys = where.split('.');
  let at = r;
  for (let i = 0; i < keys.length - 1; i++) {
    const k = keys[i] === '*' ? streamIdOf(r) : keys[i];
    at = at[k];
  }
  let last = keys[keys.length - 1];
  if (last === '*') last = Object.keys(at)[0] ?? streamIdOf(r);
  return [at, last];
}

/** @param {object} target @param {string} key @param {unknown} value an own, enumerable property even for "__proto__" */
function own(target, key, value) {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/**
 * A stream record (as recv holds them) for stream-map padding.
 * @param {number} i
 */
const streamRecord = (i) => ({ received: i, duplicates: 0, reorders: 0, jitterMs: 1, acksSent: i });

/**
 * The body text of a mutated report: the object, and what `{ raw }` markers stand for.
 * @param {GarbageBody} body @param {any} report completeReport()'s
 * @param {ReportLaneLimits} limits
 * @returns {string}
 */
function mutatedText(body, report, limits) {
  const r = structuredClone(report);
  /** @type {string[]} */
  const raws = [];
  /** @param {PlanValue} v */
  const valueOf = (v) => {
    if (v && typeof v === 'object' && 'raw' in v) { raws.push(v.raw); return `@@raw${raws.length - 1}@@`; }
    if (v && typeof v === 'object' && 'obj' in v) return structuredClone(v.obj);
    return v;
  };
  switch (body.kind) {
    case 'set': {
      const [at, key] = slot(r, body.path);
      const v = body.value;
      // '+k' on rt.n: the buckets no longer add up
      if (v && typeof v === 'object' && 'raw' in v && v.raw.startsWith('+')) at[key] += Number(v.raw.slice(1));
      else at[key] = valueOf(v);
      break;
    }
    case 'delete': delete r[body.path]; break;
    case 'wrap': return JSON.stringify([r]);
    case 'streams': {
      const m = /** @type {Record<string, unknown>} */ ({});
      for (let i = 1; i <= body.n; i++) m[String(1000 + i)] = body.map === 'recv' ? streamRecord(i) : i;
      r[body.map] = m;
      break;
    }
    case 'buckets': {
      const b = /** @type {Record<string, number>} */ ({});
      for (let i = 1; i <= body.n; i++) b[String(i / 10)] = 1;
      if (body.where === 'rt') r.rt = { n: body.n, sum: body.n, sumSq: body.n, min: 0.1, max: body.n / 10, buckets: b };
      else r.recv[streamIdOf(r)].fresh.gaps = b;
      break;
    }
    case 'proto': {
      if (body.where === '') {
        const outer = {};
        own(outer, '__proto__', r);
        return JSON.stringify(outer);
      }
      if (body.where === '+') { own(r, '__proto__', { polluted: true, kind: 'app' }); break; }
      // a map keyed by client id (or bucket): "__proto__" is neither
      const [at] = slot(r, `${body.where}.x`);
      own(at, '__proto__', body.where === 'recv' ? streamRecord(1) : 1);
      break;
    }
    case 'proto-field': {
      const value = r[body.field];
      delete r[body.field];
      own(r, '__proto__', { [body.field]: value });
      break;
    }
    case 'deep': {
      const base = (() => {
        if (body.where === '') return '@@raw0@@';
        const [at, key] = slot(r, body.where);
        at[key] = '@@raw0@@';
        return JSON.stringify(r);
      })();
      const perLevel = body.open.length + 1;
      const room = limits.maxBytes - Buffer.byteLength(base) + '"@@raw0@@"'.length - 8;
      const depth = Math.max(1, Math.min(body.depth, Math.floor(room / perLevel)));
      const inner = body.open === '[' ? '' : '1';
      const deep = `${body.open.repeat(depth)}${inner}${(body.open === '[' ? ']' : '}').repeat(depth)}`;
      return body.where === '' ? deep : base.replace('"@@raw0@@"', () => deep);
    }
    default:
      return JSON.stringify(r);
  }
  let text = JSON.stringify(r);
  raws.forEach((t, i) => { text = text.replace(`"@@raw${i}@@"`, () => t); });
  return text;
}

/**
 * The bytes of a garbage case's body, from a real report.
 * @param {GarbageCase} c
 * @param {import('../../core/report.js').ClientReport} real a report a well-behaved member built
 * @param {ReportLaneLimits} [limits]
 * @returns {Buffer}
 */
export function garbageBody(c, real, limits = REPORT_LIMITS) {
  const report = completeReport({ ...real, session: c.session, seq: 1, final: false, clientId: 0 });
  const b = c.body;
  switch (b.kind) {
    case 'none': return Buffer.alloc(0);
    case 'text': return Buffer.from(b.text);
    case 'report': return Buffer.from(JSON.stringify(report));
    case 'bad-utf8': return Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(JSON.stringify(report))]);
    case 'cut': {
      const text = JSON.stringify(report);
      return Buffer.from(text.slice(0, Math.min(text.length - 1, Math.max(1, Math.floor(b.frac * text.length)))));
    }
    case 'padded': {
      const text = JSON.stringify(report);
      return Buffer.from(text + ' '.repeat(Math.max(0, b.size - Buffer.byteLength(text))));
    }
    default: return Buffer.from(mutatedText(b, report, limits));
  }
}

/**
 * The request of a garbage case as the bytes to write (head, then body
 * pieces): HTTP/1.1, keep-alive (so a `Connection: close` in the answer is
 * the server's), chunked or with a Content-Length.
 * @param {GarbageCase} c @param {Buffer} body @param {string} host
 * @returns {Buffer[]}
 */
export function garbageRequest(c, body, host) {
  const head = [`POST /reports HTTP/1.1`, `Host: ${host}`, 'User-Agent: carlab-fuzz', 'Connection: keep-alive'];
  if (c.type !== null) head.push(`Content-Type: ${c.type}`);
  if (c.framing === 'declared-only') return [Buffer.from(`${[...head, `Content-Length: ${c.declared}`].join('\r\n')}\r\n\r\n`)];
  if (c.framing === 'length') return [Buffer.from(`${[...head, `Content-Length: ${body.length}`].join('\r\n')}\r\n\r\n`), body];
  const pieces = [Buffer.from(`${[...head, 'Transfer-Encoding: chunked'].join('\r\n')}\r\n\r\n`)];
  for (let at = 0; at < body.length; at += c.chunkBytes) {
    const chunk = body.subarray(at, at + c.chunkBytes);
    pieces.push(Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]));
  }
  pieces.push(Buffer.from('0\r\n\r\n'));
  return pieces;
}


/**
 * Sends one garbage case and books it.
 * @param {{ port: number, ledger: ReportLedger, lane: string, limits: ReportLaneLimits, timeoutMs: number }} p
 * @param {GarbageCase} c @param {import('../../core/report.js').ClientReport} real
 */
async function sendGarbage(p, c, real) {
  const body = garbageBody(c, real, p.limits);
  let parsed = null;
  try { if (body.length <= p.limits.maxBytes) parsed = JSON.parse(body.toString('utf8')); } catch { /* it is garbage */ }
  const sentAt = performance.now();
  const a = await rawExchange(p.port, garbageRequest(c, body, `127.0.0.1:${p.port}`), p.timeoutMs);
  return p.ledger.add({
    lane: p.lane, what: `${c.name}: ${c.variant}`, ...idOf(parsed), expect: c.expect, mayAccept: c.expect.includes(204),
    outcome: a.outcome, status: a.status, code: a.status === null ? null : a.status < 300 ? 'accepted' : codeIn(a.body),
    retryAfter: a.headers['retry-after'] ?? null, connection: a.headers.connection ?? null, sentAt, doneAt: performance.now(),
  });
}

// ------------------------------------------------------------------ report-garbage

/**
 * What report-garbage saw.
 * @typedef {object} GarbageFacts
 * @property {{ what: string, expect: number[], borderline: boolean, outcome: string, status: number | null, code: string | null,
 *   connection: string | null }[]} cases
 * @property {GoodReporterFacts[]} good
 */

/**
 * The report-garbage verdict (docs/security.md "Client reports").
 * @param {GarbageFacts} f
 * @returns {string[]}
 */
export function judgeReportGarbage(f) {
  const problems = [];
  for (const c of f.cases) {
    const due = c.expect.join(' or ');
    if (c.status === null) {
      problems.push(`${c.what}: ${c.outcome === 'timeout' ? 'no answer within the time' : 'the connection was dropped'} where ${due} was due`);
      continue;
    }
    if (!c.expect.includes(c.status)) {
      problems.push(`${c.what}: answered ${c.status}${c.code ? ` (${c.code})` : ''}, not ${due}`);
      continue;
    }
    if (c.status === 413 && !/\bclose\b/i.test(c.connection ?? '')) problems.push(`${c.what}: 413 without Connection: close`);
    if (c.status >= 400 && (c.code === null || REFUSALS[/** @type {keyof typeof REFUSALS} */ (c.code)] !== c.status)) {
      problems.push(`${c.what}: answered ${c.status} naming ${c.code === null ? 'no reason' : `the reason ${c.code}`}`);
    }
  }
  return [...problems, ...judgeGoodReporters(f.good)];
}

/**
 * Runs report-garbage: two well-behaved members exchange updates and
 * report every plan.reportMs; meanwhile the garbage cases go out, spread
 * over plan.garbage.seconds.
 * @param {{ wsBase: string, port: number, plan: ReportPlan, ledger: ReportLedger, limits?: ReportLaneLimits, timeoutMs?: number }} p
 * @returns {Promise<import('./fuzz-scenarios.js').ScenarioResult>}
 */
export async function runReportGarbage(p) {
  const lane = 'report-garbage';
  const limits = p.limits ?? REPORT_LIMITS;
  const base = `http://127.0.0.1:${p.port}`;
  const members = await reportingGroup({
    url: `${p.wsBase}/relay`, base, group: p.plan.garbage.group, n: 2, reportMs: p.plan.reportMs, ledger: p.ledger, lane, timeoutMs: p.timeoutMs,
  });
  try {
    for (const m of members) m.reporter.start();
    const from = performance.now() + 1000;
    await sleep(500); // a few updates and RTs: the real report the garbage is made of
    const rt = new RtHistogram();
    for (const v of members[0].client.rt) rt.add(v);
    // (its session, seq and client id are each case's own: garbageBody)
    const real = buildReport(members[0].client, { session: '0'.repeat(32), seq: 1, final: false, kind: 'sim', uptimeMs: 500, rt });
    const cases = p.plan.garbage.cases;
    const spacing = Math.max(0, (p.plan.garbage.seconds * 1000 - 500) / cases.length);
    /** @type {ReportPost[]} */
    const sent = [];
    for (const c of cases) {
      const started = performance.now();
      sent.push(await sendGarbage({ port: p.port, ledger: p.ledger, lane, limits, timeoutMs: p.timeoutMs ?? 5000 }, c, real));
      await sleep(Math.max(0, spacing - (performance.now() - started)));
    }
    const to = performance.now();
    await closeMembers(members);
    /** @type {GarbageFacts} */
    const facts = {
      cases: cases.map((c, i) => ({ what: sent[i].what, expect: c.expect, borderline: c.borderline, outcome: sent[i].outcome, status: sent[i].status, code: sent[i].code, connection: sent[i].connection })),
      good: goodFacts(members, members, from, to),
    };
    const byStatus = countBy(facts.cases.map((c) => String(c.status ?? c.outcome)));
    const notes = facts.cases.filter((c) => c.borderline).map((c) => `${c.what}: ${c.status ?? c.outcome}${c.code ? ` ${c.code}` : ''} (no document names a status; ${c.expect.join(' or ')} taken)`);
    const summary = `${cases.length} bad bodies answered ${formatCounts(byStatus)}; `
      + `${facts.good.length} well-behaved members ${facts.good.reduce((s, g) => s + g.reports.accepted, 0)}/${facts.good.reduce((s, g) => s + g.reports.sent, 0)} reports accepted, `
      + `longest gap ${Math.max(0, ...facts.good.flatMap((g) => Object.values(g.gapMs)))} ms`;
    return result(lane, judgeReportGarbage(facts), summary, facts, notes);
  } finally {
    for (const m of members) { m.reporter.finished = true; m.client.stop(); m.client.close(); }
  }
}

