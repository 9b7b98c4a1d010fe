/**
 * The shared scene of the live study (docs/study.md "The dashboard"): per
 * group, the members' scene logs as their reports bring them (core/
 * scene-report.js), measured over a recent window with the lab's own
 * measures (core/scene-metrics.js: convergence time per edit, disagreement
 * per member-time). `carlab report` measures a whole recording the same way
 * (lab/report/recording-scene.js).
 *
 * Live, a group is measured up to its horizon: the oldest newest report of
 * the members still in, so that every mark before it is known. An edit not
 * yet held by every such member at the horizon is pending (it may still
 * arrive), not lost. Memory is bounded per member (the newest marks within
 * the window) and a group is measured again only after one of its members
 * reported something new.
 *
 * @module server/live-scene
 */

import { measureSceneGroup } from '../core/scene-metrics.js';
import { addScenePart } from '../core/scene-report.js';
import { summarize } from '../core/metrics.js';

/** The dashboard's scene figures cover this much time (ms). */
export const SCENE_WINDOW_MS = 5 * 60_000;
/** Marks kept per member (the newest): a phone that edits without pause for five minutes stays under it. */
export const SCENE_MARKS_PER_MEMBER = 5000;
/**
 * A group is measured again at most this often (ms): its members report every few seconds, and a
 * sim of thousands of editing clients beside an open dashboard must not measure every group every tick.
 */
export const SCENE_REMEASURE_MS = 2000;

/**
 * A group's scene on the dashboard.
 * @typedef {object} SceneView
 * @property {number} objects live objects, as its newest-reporting member holds them
 * @property {number} members members that reported their scene (still in)
 * @property {number} inStep of them, those whose neighbours' digests equalled theirs at their newest report
 * @property {number} edits edits measured in the window (up to the horizon)
 * @property {number} pending of them, not yet held by every member at the horizon
 * @property {{ p50: number | null, p99: number | null, max: number | null, n: number }} convergenceMs
 * @property {number | null} disagreementPct share of member-time a member lacked an edit, null before any
 * @property {number} membersIncomplete members left out: a report of theirs never arrived (a gap in the log)
 * @property {number} windowMs
 */

/**
 * @typedef {object} MemberScene
 * @property {number} t0 its join, server clock
 * @property {number} next index of the next mark expected
 * @property {boolean} complete no report missing so far
 * @property {import('../core/scene-report.js').SceneMark[]} marks newest last
 * @property {number} keptFrom server time from which its marks are all here (older ones dropped over the cap)
 * @property {number} lastAt server time of its newest report
 * @property {boolean} left its final report came
 * @property {number} objects
 * @property {boolean} inStep
 */

/**
 * Creates the live scene.
 * @param {{ windowMs?: number, marksPerMember?: number, remeasureMs?: number, now?: () => number }} [options]
 */
export function createLiveScene({
  windowMs = SCENE_WINDOW_MS, marksPerMember = SCENE_MARKS_PER_MEMBER, remeasureMs = SCENE_REMEASURE_MS, now = Date.now,
} = {}) {
  /** @type {Map<string, Map<string, MemberScene>>} group -> member key -> its scene */
  const groups = new Map();
  /** @type {Map<string, { view: SceneView | null, at: number, dirty: boolean }>} group -> its view, measured at `at` */
  const views = new Map();

  /** @param {string} group */
  const changed = (group) => {
    const v = views.get(group);
    if (v) v.dirty = true;
  };

  /**
   * Takes in a report's scene part.
   * @param {string} group @param {string} key the member's key
   * @param {import('../core/scene-report.js').SceneReport} part
   * @param {number} at server time of the report @param {boolean} final
   */
  function add(group, key, part, at, final) {
    let members = groups.get(group);
    if (!members) groups.set(group, (members = new Map()));
    let m = members.get(key);
    if (!m) {
      m = { t0: part.t0, next: 0, complete: true, marks: [], keptFrom: 0, lastAt: at, left: false, objects: 0, inStep: true };
      members.set(key, m);
    }
    addScenePart(m, part);
    if (part.total > m.next && final) m.complete = false;
    const cut = at - windowMs;
    let drop = 0;
    while (drop < m.marks.length && m.marks[drop].at < cut) drop++;
    const over = Math.max(0, m.marks.length - drop - marksPerMember);
    // over the cap: what it held before the oldest mark kept is no longer known
    if (over) m.keptFrom = m.marks[drop + over].at;
    if (drop + over) m.marks.splice(0, drop + over);
    Object.assign(m, { lastAt: Math.max(m.lastAt, at), left: final, objects: part.objects, inStep: part.inStep });
    changed(group);
  }

  /** A member is gone from the study (forgotten, or moved to another group). @param {string} group @param {string} key */
  function forget(group, key) {
    const members = groups.get(group);
    if (!members?.delete(key)) return;
    if (members.size === 0) {
      groups.delete(group);
      views.delete(group);
    } else changed(group);
  }

  /**
   * The group's view: measured again when a member reported since, at most every remeasureMs.
   * @param {string} group @returns {SceneView | null} null when no member reported its scene
   */
  function view(group) {
    const t = now();
    const v = views.get(group);
    if (v && (!v.dirty || t - v.at < remeasureMs)) return v.view;
    const fresh = { view: measure(groups.get(group)), at: t, dirty: false };
    views.set(group, fresh);
    return fresh.view;
  }

  /** @param {Map<string, MemberScene> | undefined} members */
  function measure(members) {
    if (!members?.size) return null;
    const all = [...members.values()];
    const usable = all.filter((m) => m.complete);
    const inGroup = usable.filter((m) => !m.left);
    if (!inGroup.length) return null;
    const horizon = Math.min(...inGroup.map((m) => m.lastAt));
    const from = Math.max(horizon - windowMs, ...usable.map((m) => m.keptFrom));
    const scene = usable.filter((m) => m.lastAt >= from).map((m) => ({
      from: Math.max(m.t0, from),
      to: m.left ? Math.min(m.lastAt, horizon) : horizon,
      log: m.marks.filter((mark) => mark.at >= from && mark.at <= horizon),
      stayed: !m.left,
    }));
    const g = measureSceneGroup(scene);
    const newest = inGroup.reduce((a, b) => (b.lastAt > a.lastAt ? b : a));
    const s = summarize(g.convergenceMs);
    return {
      objects: newest.objects,
      members: inGroup.length,
      inStep: inGroup.filter((m) => m.inStep).length,
      edits: g.edits,
      pending: g.unconverged,
      convergenceMs: { p50: s.p50, p99: s.p99, max: s.max, n: s.n },
      disagreementPct: g.memberMs > 0 ? (100 * g.disagreeMs) / g.memberMs : null,
      membersIncomplete: all.length - usable.length,
      windowMs,
    };
  }

  return { add, forget, view };
}
