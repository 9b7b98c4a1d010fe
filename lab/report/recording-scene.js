// The shared scene of a study recording's groups: the members' scene logs,
// put back together from their reports' scene parts (core/scene-report.js),
// measured as `carlab sim` and `carlab bench` measure theirs
// (core/scene-metrics.js; definitions in docs/architecture.md "The shared
// scene"). Times are on the server's clock as each phone estimated it at its
// join, good to within its clockErrorMs.
import { summarizeScene } from '../../core/scene-metrics.js';
import { assembleSceneLog } from '../../core/scene-report.js';
import { summarize } from '../../core/metrics.js';

/** @typedef {import('./recording-results.js').SessionClient} SessionClient */

/**
 * One member as the measures see it, or null when its log has a gap (a
 * report that never arrived): a gap would read as edits it never held.
 * @param {SessionClient} c
 * @returns {import('../../core/scene-metrics.js').SceneMember | null}
 */
function sceneMemberOf(c) {
  const parts = c.session.sceneParts;
  const log = assembleSceneLog(parts);
  if (!log.complete) return null;
  const first = parts.reduce((a, b) => (b.from < a.from ? b : a));
  return { from: first.t0, to: Math.max(c.session.lastAt, first.t0), log: log.marks };
}

/**
 * The `scene` record of a recorded group's run, over every instance of the
 * group (core/scene-metrics.js summarizeScene), or null when no member
 * reported its scene (pages from before the shared scene) or nobody edited.
 * @param {SessionClient[]} population the group's clients, whatever their transport
 */
export function recordingScene(population) {
  const reporting = population.filter((c) => c.id > 0 && c.session.sceneParts.length > 0);
  if (!reporting.length) return null;
  /** @type {Map<string, import('../../core/scene-metrics.js').SceneMember[]>} */
  const groups = new Map();
  let incomplete = 0;
  for (const c of reporting) {
    const member = sceneMemberOf(c);
    if (!member) {
      incomplete++;
      continue;
    }
    const list = groups.get(c.group) ?? [];
    list.push(member);
    groups.set(c.group, list);
  }
  const summary = summarizeScene([...groups.values()]);
  if (summary.edits === 0 && incomplete === 0) return null; // nobody edited: nothing to measure
  const errors = reporting.map((c) => Math.max(...c.session.sceneParts.map((p) => p.clockErrorMs)));
  return {
    source: 'recording',
    members: reporting.length - incomplete,
    membersIncomplete: incomplete,
    clockErrorMs: summarize(errors),
    ...summary,
  };
}
