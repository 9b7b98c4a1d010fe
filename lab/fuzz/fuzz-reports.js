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

import net from 'node:net';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { REPORT_LIMITS, Reporter, RtHistogram, buildReport, reportProblem } from '../../core/report.js';
import { REFUSALS } from '../../server/report-intake.js';
import { SEGMENT_PATTERN, parseRecordLine } from '../../server/recorder.js';
import { makeRng } from '../shared/rng.js';
import { MAX_GAP_MS, goodMember, longestGap } from './fuzz-scenarios.js';
import { until } from '../shared/loop-stall.js';

/** The report lanes, as `--only` takes them (`reports` for the three, `scenario` for every scenario). */
export const REPORT_SCENARIO_NAMES = Object.freeze(['report-garbage', 'report-flood', 'report-claim']);

/** `--only reports`: the three report lanes. */
export const REPORTS_ALIAS = 'reports';

/** The report flood refuses at least this many posts (its loop goes on until it has). */
export const FLOOD_MIN_REFUSED = 5;

/** @param {number} ms */
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * The intake's limits the lanes aim at (REPORT_LIMITS unless a test says
 * otherwise).
 * @typedef {Pick<typeof REPORT_LIMITS, 'maxBytes' | 'maxStreams' | 'maxBuckets' | 'maxText' | 'minIntervalMs' | 'burst'>} ReportLaneLimits
 */

// ------------------------------------------------------------------ the plan

/**
 * A JSON value as the plan holds it: `{ raw }` is put into the body as that
 * text (what JSON.stringify cannot write: 1e999, deep nesting), anything
 * else as JSON.
 * @typedef {null | boolean | number | string | { raw: string } | { obj: Record<string, unknown> } | unknown[]} PlanValue
 */

/**
 * What a garbage case's body is made of.
 * @typedef {{ kind: 'text', text: string }
 *   | { kind: 'bad-utf8' }
 *   | { kind: 'cut', frac: number }
 *   | { kind: 'padded', size: number }
 *   | { kind: 'report' }
 *   | { kind: 'none' }
 *   | { kind: 'wrap' }
 *   | { kind: 'set', path: string, value: PlanValue }
 *   | { kind: 'delete', path: string }
 *   | { kind: 'streams', map: 'sentTo' | 'acksFrom' | 'recv' | 'ages', n: number }
 *   | { kind: 'buckets', where: 'rt' | 'gaps', n: number }
 *   | { kind: 'proto', where: string }
 *   | { kind: 'proto-field', field: string }
 *   | { kind: 'deep', where: string, depth: number, open: '[' | '{"a":' }} GarbageBody
 */

/**
 * One bad (or boundary) request of report-garbage.
 * @typedef {object} GarbageCase
 * @property {string} name the kind of garbage
 * @property {string} variant what exactly (shown when it fails)
 * @property {number[]} expect the statuses the documents allow
 * @property {boolean} borderline the documents name no status for it (any answer
 *   in `expect` is fine; it is reported as a note)
 * @property {string} session its own page session (32 hex digits)
 * @property {string | null} type Content-Type, null for none
 * @property {'length' | 'chunked' | 'declared-only'} framing Content-Length and the body; chunked
 *   without Content-Length; a Content-Length over the limit and no body
 * @property {number} chunkBytes chunk size (chunked)
 * @property {number} declared the Content-Length of 'declared-only'
 * @property {GarbageBody} body
 */

/** Content types the intake takes (application/json, and text/plain for sendBeacon). */
const GOOD_TYPES = ['application/json', 'application/json; charset=utf-8', 'text/plain', 'text/plain;charset=UTF-8', 'Application/JSON'];

/** Content types it refuses (415); null: no Content-Type at all. */
const BAD_TYPES = ['text/html', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonp',
  'application/json-patch+json', 'text/json', 'application/xml', 'application/octet-stream', '', null];

/** Counts a report holds ('*': one of its stream ids). */
const COUNT_PATHS = ['uptimeMs', 'cycleMs', 'rtWarmupN', 'updates.sent', 'updates.completed', 'updates.ackTimeouts', 'updates.skippedCycles',
  'updates.lateAcks', 'rt.n', 'rt.sum', 'rt.sumSq', 'rt.buckets.*', 'sentTo.*', 'acksFrom.*', 'recv.*.received', 'recv.*.duplicates',
  'recv.*.reorders', 'recv.*.jitterMs', 'recv.*.acksSent', 'recv.*.fresh.n', 'recv.*.fresh.gaps.*', 'connection.reconnects',
  'connection.outageMs', 'tracking.frames', 'tracking.spanMs', 'ages.*', 'rtLastMs'];

/** Fields every report has (a report without one is not a report). */
const REQUIRED = ['v', 'session', 'seq', 'final', 'kind', 'uptimeMs', 'group', 'name', 'clientId', 'transport', 'cycleMs', 'cycleMode', 'rt',
  'rtLastMs', 'rtWarmupN', 'updates', 'sentTo', 'acksFrom', 'recv', 'ages', 'channel', 'setup', 'connection', 'tracking', 'effectiveType'];

/** The transport-level kinds (one of each in every plan). */
const TRANSPORT_KINDS = ['not-json', 'truncated-json', 'empty-body', 'bad-utf8', 'too-large-declared', 'too-large-sent', 'too-large-chunked',
  'at-limit', 'wrong-type'];

/** The wrong-shape kinds: a real report mutated (one of each, then seeded extras). */
const SHAPE_KINDS = ['not-object', 'wrong-version', 'bad-session', 'bad-seq', 'bad-final', 'unknown-kind', 'negative-count', 'nan-string',
  'group-too-long', 'bad-client-id', 'too-many-streams', 'huge-histogram', 'buckets-not-adding', 'tracking-inconsistent', 'missing-field',
  'proto-keys', 'deep-nesting'];

/** Kinds no document gives a status for: any answer in `expect` is fine, none is not. */
const BORDERLINE_KINDS = ['deep-free-form', 'proto-top-level'];

/** Every garbage kind. */
export const GARBAGE_KINDS = Object.freeze([...TRANSPORT_KINDS, ...SHAPE_KINDS, ...BORDERLINE_KINDS]);

/** @param {import('../shared/rng.js').Rng} r */
const hex32 = (r) => Array.from({ length: 32 }, () => '0123456789abcdef'[r.int(0, 15)]).join('');

/** @param {string} text @returns {{ raw: string }} */
const raw = (text) => ({ raw: text });

/**
 * One garbage case of `kind`, its choices drawn from `r`.
 * @param {string} kind @param {import('../shared/rng.js').Rng} r @param {ReportLaneLimits} limits
 * @returns {GarbageCase}
 */
function garbageCase(kind, r, limits) {
  const session = hex32(r);
  /** @type {GarbageCase} */
  const c = {
    name: kind, variant: '', expect: [422], borderline: false, session, type: r.pick(GOOD_TYPES), framing: 'length', chunkBytes: 0, declared: 0, body: { kind: 'report' },
  };
  /** @param {string} variant @param {GarbageBody} body @param {number[]} [expect] */
  const as = (variant, body, expect) => Object.assign(c, { variant, body }, expect ? { expect } : {});
  const maxDepth = Math.floor((limits.maxBytes - 8192) / 2); // room for the report around it (capped again when built)
  switch (kind) {
    case 'not-json': {
      const text = r.pick(['undefined', '{v:1}', "{'v':1}", '{"v":1,}', '[1,2', 'NaN', '<report/>', `#${r.ascii(r.int(1, 200))}`, '{"v":1}{"v":1}', '0x10']);
      return as(JSON.stringify(text.slice(0, 40)), { kind: 'text', text }, [400]);
    }
    case 'truncated-json': {
      const frac = r.int(1, 999) / 1000;
      return as(`cut at ${frac}`, { kind: 'cut', frac }, [400]);
    }
    case 'empty-body': return as('no bytes', { kind: 'text', text: '' }, [400]);
    case 'bad-utf8': return as('0xff 0xfe before the report', { kind: 'bad-utf8' }, [400]);
    case 'too-large-declared': {
      c.framing = 'declared-only';
      c.declared = limits.maxBytes + r.int(1, 1_000_000);
      return as(`Content-Length ${c.declared}, no body`, { kind: 'none' }, [413]);
    }
    case 'too-large-sent': {
      const size = limits.maxBytes + r.int(1, 4096);
      return as(`${size} bytes with Content-Length`, { kind: 'padded', size }, [413]);
    }
    case 'too-large-chunked': {
      const size = limits.maxBytes + r.int(1, limits.maxBytes);
      c.framing = 'chunked';
      c.chunkBytes = r.int(512, 16384);
      return as(`${size} bytes in chunks of ${c.chunkBytes}`, { kind: 'padded', size }, [413]);
    }
    case 'at-limit': {
      c.framing = r.pick(/** @type {const} */ (['length', 'chunked']));
      c.chunkBytes = r.int(512, 16384);
      return as(`exactly ${limits.maxBytes} bytes (${c.framing})`, { kind: 'padded', size: limits.maxBytes }, [204]);
    }
    case 'wrong-type': {
      c.type = r.pick(BAD_TYPES);
      return as(c.type === null ? 'no Content-Type' : `Content-Type ${JSON.stringify(c.type)}`, { kind: 'report' }, [415]);
    }
    case 'not-object': {
      if (r.chance(0.2)) return as('[report]', { kind: 'wrap' });
      const text = r.pick(['[]', 'null', '"report"', '42', 'true', '{}', '-0', '""']);
      return as(text, { kind: 'text', text });
    }
    case 'wrong-version': return setCase(as, 'v', r.pick([2, 0, '1', null, true, raw('1.5')]));
    case 'bad-session': {
      const h = hex32(r);
      return setCase(as, 'session', r.pick(['', h.slice(1), `${h}0`, h.toUpperCase().replace(/^[0-9]/, 'A'), 'g'.repeat(32), 1234, null, `${h}\n`, `${h.slice(0, 31)}\u00e9`]));
    }
    case 'bad-seq': return setCase(as, 'seq', r.pick([0, -1, 1.5, '1', null, raw('1e999'), raw('-0')]));
    case 'bad-final': return setCase(as, 'final', r.pick(['true', 1, 0, null]));
    case 'unknown-kind': return setCase(as, 'kind', r.pick(['phone', '', 'APP', 'sim ', null, 3, 'constructor', '__proto__', 'toString']));
    case 'negative-count': return setCase(as, r.pick(COUNT_PATHS), r.pick([-1, -0.001, -1e9, raw('-1e999')]));
    case 'nan-string': {
      const where = r.pick(COUNT_PATHS.filter((p) => p !== 'rtLastMs' && p !== 'ages.*')); // null is a value there
      return setCase(as, where, r.pick(['NaN', 'Infinity', '12', '', true, null, { obj: {} }, [], raw('1e999')]));
    }
    case 'group-too-long': {
      const over = r.int(1, 200);
      const which = r.int(0, 7);
      if (which === 0) return setCase(as, 'group', 'g'.repeat(limits.maxText + over));
      if (which === 1) return setCase(as, 'group', '');
      if (which === 2) return setCase(as, 'group', '\u{1F697}'.repeat(limits.maxText / 2 + 1)); // 66 UTF-16 units
      if (which === 3) return setCase(as, 'name', 'n'.repeat(limits.maxText + over));
      if (which === 4) return setCase(as, 'group', 12);
      if (which === 5) return setCase(as, 'transport', 't'.repeat(41));
      if (which === 6) return setCase(as, 'cycleMode', 'm'.repeat(21));
      return setCase(as, 'effectiveType', 'e'.repeat(21));
    }
    case 'bad-client-id': return setCase(as, 'clientId', r.pick([-1, 2 ** 32, 1.5, '7', null, raw('1e999')]));
    case 'too-many-streams': {
      const map = r.pick(/** @type {const} */ (['sentTo', 'acksFrom', 'recv', 'ages']));
      const n = limits.maxStreams + r.int(1, 40);
      return as(`${map} with ${n} entries`, { kind: 'streams', map, n });
    }
    case 'huge-histogram': {
      const where = r.pick(/** @type {const} */ (['rt', 'gaps']));
      const n = limits.maxBuckets + r.int(1, 200);
      return as(`${where === 'rt' ? 'rt.buckets' : 'recv.*.fresh.gaps'} with ${n} buckets`, { kind: 'buckets', where, n });
    }
    case 'buckets-not-adding': {
      const which = r.int(0, 3);
      if (which === 0) return setCase(as, 'rt.n', { raw: `+${r.int(1, 5)}` }); // rt.n plus that (see applyGarbage)
      if (which === 1) return setCase(as, 'rt.buckets.*', 0.5);
      if (which === 2) return setCase(as, 'rt.buckets.abc', 1);
      return setCase(as, 'recv.*.fresh.gaps.*', 1.5);
    }
    case 'tracking-inconsistent': {
      if (r.chance(0.25)) return setCase(as, 'tracking', []);
      const frames = r.int(0, 1000);
      return setCase(as, 'tracking', { obj: { frames, visibleFrames: frames + r.int(1, 50), processMsSum: 0, spanMs: 1000 } });
    }
    case 'missing-field': {
      const field = r.pick(REQUIRED);
      return as(`without ${field}`, { kind: 'delete', path: field });
    }
    case 'proto-keys': {
      const which = r.int(0, 2);
      if (which === 0) {
        const where = r.pick(['sentTo', 'acksFrom', 'ages', 'recv', 'rt.buckets', 'recv.*.fresh.gaps']);
        return as(`an own "__proto__" key in ${where}`, { kind: 'proto', where });
      }
      if (which === 1) return as('the whole report under "__proto__"', { kind: 'proto', where: '' });
      const field = r.pick(['v', 'session', 'kind', 'group', 'rt', 'final']);
      return as(`${field} only under "__proto__"`, { kind: 'proto-field', field });
    }
    case 'deep-nesting': {
      const where = r.pick(['', 'updates.sent', 'rt', 'recv.*', 'session', 'rt.buckets', 'sentTo']);
      const open = r.pick(/** @type {const} */ (['[', '{"a":']));
      const depth = r.int(1000, maxDepth);
      return as(`${where || 'the whole body'} nested ${depth} deep in ${open === '[' ? 'arrays' : 'objects'}`, { kind: 'deep', where, depth, open });
    }
    case 'deep-free-form': {
      // channel and setup are free-form objects: is a deep one refused, taken, or the end of the request?
      const where = r.pick(['channel', 'setup']);
      const depth = r.int(Math.min(12000, maxDepth), maxDepth);
      c.borderline = true;
      return as(`${where}.x nested ${depth} deep in arrays`, { kind: 'deep', where: `${where}.x`, depth, open: '[' }, [204, 422]);
    }
    case 'proto-top-level':
      c.borderline = true;
      return as('an extra own "__proto__" key at the top', { kind: 'proto', where: '+' }, [204, 422]);
    default:
      throw new Error(`unknown garbage kind ${kind}`);
  }
}

/**
 * @param {(variant: string, body: GarbageBody, expect?: number[]) => GarbageCase} as
 * @param {string} where @param {PlanValue} value
 */
function setCase(as, where, value) {
  return as(`${where} = ${describeValue(value)}`, { kind: 'set', path: where, value });
}

/** @param {PlanValue} v */
function describeValue(v) {
  if (v && typeof v === 'object' && 'raw' in v) return v.raw;
  if (v && typeof v === 'object' && 'obj' in v) return JSON.stringify(v.obj);
  const text = JSON.stringify(v);
  return text.length > 24 ? `${text.slice(0, 20)}...(${text.length})` : text;
}

/**
 * Every report lane's parameters for one seed.
 * @param {number} seed
 * @param {ReportLaneLimits} [limits]
 * @param {{ extraGarbage?: number, garbageSeconds?: number, floodSeconds?: number }} [o] extraGarbage: seeded wrong-shape
 *   cases beyond one of each kind (default 12); garbageSeconds: how long the garbage is spread over (default 2.5);
 *   floodSeconds: the report flood's tight loop (default 2)
 */
export function reportPlan(seed, limits = REPORT_LIMITS, o = {}) {
  const r = makeRng((seed ^ 0x5e907e75) >>> 0);
  const cases = GARBAGE_KINDS.map((kind) => garbageCase(kind, r, limits));
  for (let i = 0; i < (o.extraGarbage ?? 12); i++) cases.push(garbageCase(r.pick(SHAPE_KINDS), r, limits));
  return {
    /** the well-behaved members' report period: over the minimum interval with room for a late delivery */
    reportMs: limits.minIntervalMs + 250,
    garbage: { group: `fuzz-report-garbage-${seed}`, seconds: o.garbageSeconds ?? 2.5, cases },
    flood: { group: `fuzz-report-flood-${seed}`, seconds: o.floodSeconds ?? 2 },
    claim: {
      group: `fuzz-report-claim-${seed}`, otherGroup: `fuzz-report-claim-${seed}-${r.word(6)}`, claimer: hex32(r),
      /** which of the two members the claimer names (the other one tries to move its session) */
      victim: r.int(0, 1),
    },
  };
}

/** @typedef {ReturnType<typeof reportPlan>} ReportPlan */

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
function idOf(r) {
  const ok = r && typeof r === 'object' && !Array.isArray(r);
  const pick = (/** @type {string} */ k, /** @type {string} */ type) => (ok && typeof r[k] === type ? r[k] : null);
  return { session: pick('session', 'string'), seq: pick('seq', 'number'), group: pick('group', 'string'), clientId: pick('clientId', 'number'), final: pick('final', 'boolean') };
}

/** @param {string} text */
function codeIn(text) {
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
async function reportingGroup(p) {
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
 * @param {ReportingMember[]} members the well-behaved ones
 * @param {ReportingMember[]} all every member of the group (their updates count too)
 * @param {number} from @param {number} to the window updates must keep flowing in
 * @returns {GoodReporterFacts[]}
 */
function goodFacts(members, all, from, to) {
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
      if (gap > MAX_GAP_MS) problems.push(`well-behaved member ${g.id} got nothing from ${other} for ${gap} ms`);
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
async function closeMembers(members) {
  for (const m of members) m.reporter.finish();
  await Promise.all(members.map((m) => m.idle()));
  for (const m of members) { m.client.stop(); m.client.close(); }
}

/** @param {string} name @param {string[]} problems @param {string} summary @param {Record<string, unknown>} facts @param {string[]} [notes] */
function result(name, problems, summary, facts, notes = []) {
  /** @type {import('./fuzz-scenarios.js').ScenarioResult} */
  const out = { name, ok: problems.length === 0, skipped: null, problems, notes, summary, facts };
  return out;
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

/** @param {string[]} keys */
function countBy(keys) {
  /** @type {Record<string, number>} */
  const out = {};
  for (const k of keys) out[k] = (out[k] ?? 0) + 1;
  return out;
}

/** @param {Record<string, number>} counts */
const formatCounts = (counts) => Object.entries(counts).sort(([a], [b]) => a.localeCompare(b)).map(([k, n]) => `${k}×${n}`).join(' ') || '-';

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
 * @property {{ status: number | null, code: string | null, retryAfter: string | null }} secondFinal another final at once
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
  if (f.secondFinal.status !== 429 || f.secondFinal.code !== 'too_frequent' || f.secondFinal.retryAfter === null) {
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
    const secondFinal = await flooder.post(flooder.reporter.next(true), 'flood second final', [429]);
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
      secondFinal: { status: secondFinal.status, code: secondFinal.code, retryAfter: secondFinal.retryAfter },
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
