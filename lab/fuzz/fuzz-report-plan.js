// The report lanes' plan (fuzz-reports.js says what each lane does): every
// lane's parameters as a pure function of the seed, above all the garbage
// cases of report-garbage: one of each transport-level kind (not JSON, too
// large, the wrong content type ...) and of each wrong-shape kind (a real
// report mutated per field), then seeded extras.

import { REPORT_LIMITS } from '../../core/report.js';
import { makeRng } from '../shared/rng.js';

/** @typedef {import('./fuzz-reports.js').ReportLaneLimits} ReportLaneLimits */

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
