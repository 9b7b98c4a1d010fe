// The shared scene's two measurements, from every member's scene log
// (core/client.js sceneLog); definitions in docs/architecture.md
// "Measurements": convergence time per edit and disagreement per member-time.
// Also the end-of-run check that every member holds the group's scene.
import { recordHash, wins } from './scene.js';
import { summarize } from './metrics.js';

/** @typedef {import('./client.js').SceneLogEntry} SceneLogEntry */
/** @typedef {import('./scene-report.js').SceneMark} SceneMark */

/**
 * One member as the measurements see it.
 * @typedef {object} SceneMember
 * @property {number} from ms since 1970: it joined (its scene log starts)
 * @property {number} to ms since 1970: its measured time ended (it left, or the run did)
 * @property {(SceneLogEntry | SceneMark)[]} log every change of what it held, in order: the client
 *   core's entries (with the record), or a study report's marks (the record's hash instead)
 * @property {number} [digest] its scene digest at the end, where it stayed to the end
 * @property {boolean} [stayed] it was still in the group when the run ended (default: its `to` is
 *   the latest of the group's; runners whose members stop one after another say it themselves)
 */

/**
 * @typedef {object} SceneMeasures
 * @property {number} edits local edits made in the group(s)
 * @property {number} converged edits every member present then came to hold (or a newer one)
 * @property {number} unconverged edits some member present then and to the end never held
 * @property {number} lostWithMember edits of a member that left before any member that stayed held them
 *   (they never left its phone, or died with its relay): not counted in the measures
 * @property {number[]} convergenceMs per converged edit: until the last such member held it
 * @property {number} memberMs member-time measured
 * @property {number} disagreeMs member-time a member's scene differed from the group's latest
 * @property {number[]} joinSyncMs per member that joined after an edit: until it held every edit made before
 */

/**
 * A log entry as the measures read it: what it held and its place in the
 * last-writer-wins order (version, writer, hash).
 * @param {SceneLogEntry | SceneMark} e
 * @returns {SceneMark}
 */
export function markOf(e) {
  if (!('record' in e)) return e;
  const r = e.record;
  return { at: e.at, local: e.local, id: r.id, version: r.version, writer: r.writer, hash: recordHash(r) };
}

/**
 * When a member first held an edit's record or one that wins over it (null: never).
 * @param {SceneMark[]} marks the member's marks for the edit's object
 * @param {SceneMark} edit
 */
function heldAt(marks, edit) {
  for (const m of marks) {
    if (m.hash === edit.hash && m.version === edit.version && m.writer === edit.writer) return m.at;
    if (wins(m, m.hash, edit, edit.hash)) return m.at;
  }
  return null;
}

/**
 * Every member's log as marks, once.
 * @param {SceneMember[]} members
 */
const marksOfMembers = (members) => members.map((m) => m.log.map(markOf));

/**
 * Which members were still there when the run ended.
 * @param {SceneMember[]} members
 * @returns {boolean[]}
 */
function stayedToTheEnd(members) {
  const runEnd = Math.max(...members.map((m) => m.to));
  return members.map((m) => m.stayed ?? m.to >= runEnd);
}

/**
 * Length of the union of intervals.
 * @param {[number, number][]} intervals
 */
function unionMs(intervals) {
  const sorted = intervals.filter(([a, b]) => b > a).sort((x, y) => x[0] - y[0]);
  let total = 0;
  let end = -Infinity;
  for (const [a, b] of sorted) {
    if (b <= end) continue;
    total += b - Math.max(a, end);
    end = b;
  }
  return total;
}

/**
 * Measures one group from its members' scene logs.
 * @param {SceneMember[]} members
 * @returns {SceneMeasures}
 */
export function measureSceneGroup(members) {
  const logs = marksOfMembers(members);
  const byObject = logs.map((log) => {
    /** @type {Map<number, SceneMark[]>} */
    const map = new Map();
    for (const e of log) {
      const list = map.get(e.id) ?? [];
      list.push(e);
      map.set(e.id, list);
    }
    return map;
  });
  const stayed = stayedToTheEnd(members);
  const all = logs.flatMap((log, k) => log.filter((e) => e.local).map((e) => ({ ...e, author: k })));
  // An edit whose author left before any member that stayed held it (or a newer one) died with it.
  const edits = all.filter((e) => stayed[e.author] || members.some((m, k) => stayed[k] && heldAt(byObject[k].get(e.id) ?? [], e) !== null));
  /** @type {SceneMeasures} */
  const out = { edits: edits.length, converged: 0, unconverged: 0, lostWithMember: all.length - edits.length, convergenceMs: [], memberMs: 0, disagreeMs: 0, joinSyncMs: [] };
  /** @type {[number, number][][]} per member: when it lacked an edit */
  const lacking = members.map(() => []);
  for (const edit of edits) {
    let last = edit.at;
    let complete = true;
    members.forEach((m, k) => {
      if (m.to < edit.at) return;
      const at = heldAt(byObject[k].get(edit.id) ?? [], edit);
      const from = Math.max(edit.at, m.from);
      lacking[k].push([from, Math.min(at ?? m.to, m.to)]);
      if (m.from > edit.at) return; // a late joiner: counted in joinSyncMs
      if (at === null) { if (stayed[k]) complete = false; return; }
      last = Math.max(last, at);
    });
    if (complete) { out.converged++; out.convergenceMs.push(last - edit.at); } else out.unconverged++;
  }
  members.forEach((m, k) => {
    out.memberMs += Math.max(0, m.to - m.from);
    out.disagreeMs += unionMs(lacking[k]);
    const before = edits.filter((e) => e.at < m.from);
    if (before.length === 0) return;
    const times = before.map((e) => heldAt(byObject[k].get(e.id) ?? [], e));
    if (times.every((t) => t !== null)) out.joinSyncMs.push(Math.max(0, ...times.map((t) => /** @type {number} */ (t) - m.from)));
  });
  return out;
}

/**
 * The group's scene as the last writer of each object left it: what every member should hold.
 * @param {SceneMark[][]} logs the members' marks
 * @returns {Map<number, SceneMark>}
 */
export function groupScene(logs) {
  /** @type {Map<number, SceneMark>} */
  const winners = new Map();
  for (const log of logs) {
    for (const e of log) {
      const cur = winners.get(e.id);
      if (!cur || wins(e, e.hash, cur, cur.hash)) winners.set(e.id, e);
    }
  }
  return winners;
}

/**
 * The end-of-run check: every member that stayed to the end holds the group's scene: the merge of
 * everything the members that stayed ever held (so every edit that reached one of them).
 * @param {SceneMember[]} members
 * @returns {{ members: number, agreeing: number }} agreeing: members whose final holdings equal the group's
 */
export function checkSceneAtEnd(members) {
  const flags = stayedToTheEnd(members);
  const stayed = marksOfMembers(members.filter((_, k) => flags[k]));
  // What reached the members that stayed: an edit that died with a member that left is no part of it.
  const group = groupScene(stayed);
  let agreeing = 0;
  for (const log of stayed) {
    /** @type {Map<number, SceneMark>} */
    const held = new Map();
    for (const e of log) held.set(e.id, e);
    const same = [...group].every(([id, r]) => {
      const mine = held.get(id);
      return mine ? mine.hash === r.hash : r.version === 0;
    });
    if (same) agreeing++;
  }
  return { members: stayed.length, agreeing };
}

/**
 * The measures of several groups together, summarized the way RT is (core/metrics.js summarize).
 * @param {SceneMember[][]} groups
 */
export function summarizeScene(groups) {
  const all = groups.map(measureSceneGroup);
  const ends = groups.map(checkSceneAtEnd);
  const convergenceMs = all.flatMap((g) => g.convergenceMs);
  const memberMs = all.reduce((s, g) => s + g.memberMs, 0);
  const disagreeMs = all.reduce((s, g) => s + g.disagreeMs, 0);
  return {
    edits: all.reduce((s, g) => s + g.edits, 0),
    converged: all.reduce((s, g) => s + g.converged, 0),
    unconverged: all.reduce((s, g) => s + g.unconverged, 0),
    lostWithMember: all.reduce((s, g) => s + g.lostWithMember, 0),
    convergenceMs: summarize(convergenceMs),
    disagreementPct: memberMs > 0 ? (100 * disagreeMs) / memberMs : 0,
    joinSyncMs: summarize(all.flatMap((g) => g.joinSyncMs)),
    atEnd: atEndOf(groups.length, ends),
  };
}

/**
 * Members holding their group's scene at the end, over all groups.
 * @param {number} groups @param {{ members: number, agreeing: number }[]} ends one per group (checkSceneAtEnd)
 */
function atEndOf(groups, ends) {
  const members = ends.reduce((s, e) => s + e.members, 0);
  const agreeing = ends.reduce((s, e) => s + e.agreeing, 0);
  return { groups, members, agreeing, disagreeing: members - agreeing };
}
