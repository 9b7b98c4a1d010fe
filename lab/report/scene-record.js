// The shared scene's part of a run record (results.json `scene`): the
// members' scene logs of a run turned into the measures of
// core/scene-metrics.js, groups as the clients named them. `carlab sim` and
// `carlab bench` both use it (docs/architecture.md "The shared scene").
import { summarizeScene } from '../../core/scene-metrics.js';
import { SCENE_SETTLE_S } from '../shared/edits.js';

/**
 * The scene measures of a run (core/scene-metrics.js), groups as the clients named them.
 * @param {any[]} stats every client's stats, each with its sceneMember (lab/sim/sim-worker.js, lab/pages/src/peer.js)
 * @param {number} editsPerMinute
 */
export function sceneRecord(stats, editsPerMinute) {
  /** @type {Map<string, import('../../core/scene-metrics.js').SceneMember[]>} */
  const groups = new Map();
  for (const s of stats) {
    if (!s.sceneMember) continue;
    const list = groups.get(s.group) ?? [];
    list.push(s.sceneMember);
    groups.set(s.group, list);
  }
  const summary = summarizeScene([...groups.values()]);
  const repairs = stats.reduce((n, s) => n + (s.scene?.repairs ?? 0), 0);
  const repairRecords = stats.reduce((n, s) => n + (s.scene?.repairRecordsSent ?? 0), 0);
  return { editsPerMinute, settleS: SCENE_SETTLE_S, ...summary, repairs, repairRecords };
}

