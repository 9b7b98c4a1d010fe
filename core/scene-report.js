// The shared scene's part of a study report (docs/study.md "What a report
// holds"): the member's scene log on the server's clock, a chunk per report
// (each repeating the previous one's new marks: core/report.js Reporter), so that `carlab report` and the dashboard can measure convergence time and
// disagreement (docs/architecture.md "The shared scene") over phones whose
// own clocks differ. One mark per change of what the member held: when, which
// object, its version and writer, the record's hash, and whether it was the
// member's own edit. The pose itself stays on the phone.
import { recordHash } from './scene.js';

/** Marks one report carries at most (each ~40 bytes of JSON: 800 keep a report far under REPORT_LIMITS.maxBytes). */
export const SCENE_REPORT_MAX_MARKS = 800;

/** Numbers per mark in `log`: ms since t0, object id, version, writer, record hash, own edit (1) or not (0). */
export const MARK_FIELDS = 6;

/**
 * @typedef {object} SceneReport
 * @property {number} t0 server clock (ms since 1970) the marks' times count from: the member's join
 * @property {number} clockErrorMs how far the phone's estimate of the server clock may be off
 * @property {number} objects live objects the member holds
 * @property {number} digest its scene digest (docs/protocol.md §15)
 * @property {boolean} inStep every neighbour's digest lately equalled ours (the HUD's "in sync")
 * @property {number} from index in the member's log of this chunk's first mark
 * @property {number} total marks the member's log held when the report was taken
 * @property {number[]} log MARK_FIELDS numbers per mark
 */

/**
 * One mark: a change of what a member held, on the server's clock.
 * @typedef {object} SceneMark
 * @property {number} at ms since 1970, server clock
 * @property {boolean} local the member's own edit
 * @property {number} id
 * @property {number} version
 * @property {number} writer
 * @property {number} hash recordHash of the record held
 */

/**
 * The scene part of a report: the marks of the member's log from `from` on
 * (at most `max`), null before the member joined or without a server clock.
 * @param {import('./client.js').CarClient} client
 * @param {number} from
 * @param {number} [max]
 * @returns {SceneReport | null}
 */
export function sceneReport(client, from, max = SCENE_REPORT_MAX_MARKS) {
  const clock = client.transport.serverClock;
  if (!clock || client.joinedEpoch === null) return null;
  const t0 = Math.round(client.joinedEpoch + clock.offsetMs);
  const entries = client.sceneLog;
  const start = Math.min(from, entries.length);
  const end = Math.min(entries.length, start + max);
  const log = [];
  for (let i = start; i < end; i++) {
    const { at, local, record: r } = entries[i];
    log.push(Math.round(at + clock.offsetMs) - t0, r.id, r.version, r.writer, recordHash(r), local ? 1 : 0);
  }
  const s = client.scene.summary();
  return {
    t0, clockErrorMs: Math.round(clock.errorMs), objects: s.objects, digest: s.digest, inStep: s.inStep,
    from: start, total: entries.length, log,
  };
}

/**
 * The marks of one report's chunk, times on the server clock.
 * @param {SceneReport} s
 * @returns {SceneMark[]}
 */
export function marksOfReport(s) {
  const out = [];
  for (let i = 0; i + MARK_FIELDS <= s.log.length; i += MARK_FIELDS) {
    const l = s.log;
    out.push({ at: s.t0 + l[i], id: l[i + 1], version: l[i + 2], writer: l[i + 3], hash: l[i + 4], local: l[i + 5] === 1 });
  }
  return out;
}

/** @param {unknown} v @param {number} max */
const isWhole = (v, max) => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= max;

/**
 * What is wrong with a report's scene part, or null (absent counts as fine: older pages).
 * @param {any} s
 * @returns {string | null}
 */
export function sceneReportProblem(s) {
  if (s === undefined || s === null) return null;
  if (typeof s !== 'object' || Array.isArray(s)) return 'scene must be an object or null';
  if (!isWhole(s.t0, 8.64e15) || !isWhole(s.clockErrorMs, 3.6e6)) return 'scene.t0 and scene.clockErrorMs must be whole ms';
  if (!isWhole(s.objects, 0xffff) || !isWhole(s.digest, 0xffffffff)) return 'scene.objects and scene.digest must be whole numbers';
  if (typeof s.inStep !== 'boolean') return 'scene.inStep must be true or false';
  if (!Array.isArray(s.log) || s.log.length % MARK_FIELDS !== 0 || s.log.length > SCENE_REPORT_MAX_MARKS * MARK_FIELDS) {
    return `scene.log must hold whole marks of ${MARK_FIELDS} numbers, at most ${SCENE_REPORT_MAX_MARKS}`;
  }
  if (!isWhole(s.from, 1e9) || !isWhole(s.total, 1e9) || s.from + s.log.length / MARK_FIELDS > s.total) return 'scene.from and scene.total must count the marks';
  for (let i = 0; i < s.log.length; i += MARK_FIELDS) {
    const l = s.log;
    const dt = l[i];
    if (typeof dt !== 'number' || !Number.isInteger(dt) || Math.abs(dt) > 8.64e10) return 'a scene mark\'s time must be whole ms';
    if (!isWhole(l[i + 1], 0xffffffff) || !isWhole(l[i + 2], 0xffffffff) || !isWhole(l[i + 3], 0xffffffff)
      || !isWhole(l[i + 4], 0xffffffff) || (l[i + 5] !== 0 && l[i + 5] !== 1)) return 'a scene mark is id, version, writer, hash (u32) and 0 or 1';
  }
  return null;
}

/**
 * A member's scene log as its reports' chunks arrive: each mark once, by its index.
 * @typedef {object} SceneLog
 * @property {SceneMark[]} marks
 * @property {number} next index of the next mark expected
 * @property {boolean} complete no chunk was missing so far
 */

/**
 * Adds one chunk to a member's log: what it holds past `next` is appended (a chunk
 * sent again after a failed delivery, or repeated by the next report, overlaps);
 * a chunk that starts past `next` leaves a gap.
 * @param {SceneLog} log
 * @param {SceneReport} part
 */
export function addScenePart(log, part) {
  const count = part.log.length / MARK_FIELDS;
  if (part.from + count <= log.next) return;
  if (part.from > log.next) log.complete = false;
  log.marks.push(...marksOfReport(part).slice(Math.max(0, log.next - part.from)));
  log.next = part.from + count;
}

/**
 * A member's scene log put back together from all its reports' chunks.
 * Complete when no index up to the newest `total` is missing (two reports
 * in a row refused or lost leave a gap).
 * @param {SceneReport[]} parts in any order
 * @returns {{ marks: SceneMark[], complete: boolean, total: number }}
 */
export function assembleSceneLog(parts) {
  /** @type {SceneLog} */
  const log = { marks: [], next: 0, complete: true };
  let total = 0;
  for (const part of parts.slice().sort((a, b) => a.from - b.from || b.log.length - a.log.length)) {
    total = Math.max(total, part.total);
    addScenePart(log, part);
  }
  return { marks: log.marks, complete: log.complete && log.next >= total, total };
}
