// `--edits-per-minute N` of \`carlab sim\` and \`carlab bench\`: its help, its
// check, and the end-of-run scene check it adds to the run's conditions.
import { SCENE_SETTLE_S } from './edits.js';

/** Most edits a minute a client may be asked for: one per cycle of 167 ms is 360. */
export const EDITS_PER_MINUTE_MAX = 360;

/** The flag's lines of a command's help. */
export const EDITS_FLAG_HELP = `  --edits-per-minute N every client edits the group's shared scene N times a minute (adds, moves,
                       turns and removes objects of the palette; members edit the same objects and
                       different ones), stopping ${SCENE_SETTLE_S} s before the window ends. Runs record
                       scene { edits, convergenceMs, disagreementPct, joinSyncMs, atEnd }; a member
                       whose scene differs from its group's at the end fails the run (exit 1)`;

/**
 * --edits-per-minute: checked, and the end-of-run scene check added to the run's conditions.
 * @param {Record<string, any>} o the command's options (changed in place)
 * @param {readonly string[]} [sceneless] transports that carry no scene (the sim's baselines)
 * @returns {string | null} what is wrong
 */
export function validateEdits(o, sceneless = []) {
  const raw = o.values['edits-per-minute'];
  if (raw === undefined) return null;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0 || n > EDITS_PER_MINUTE_MAX) return `--edits-per-minute: "${raw}" is not a number 0..${EDITS_PER_MINUTE_MAX}`;
  o.editsPerMinute = n;
  if (n === 0) return null;
  const without = o.transports.filter((/** @type {string} */ t) => sceneless.includes(t));
  if (without.length) return `--edits-per-minute: the baselines (${without.join(', ')}) carry no shared scene`;
  if (o.updates > 0) return '--edits-per-minute needs a window of --duration seconds, not --updates';
  if (o.durationS <= SCENE_SETTLE_S + 1) return `--edits-per-minute needs --duration over ${SCENE_SETTLE_S + 1} s (edits stop ${SCENE_SETTLE_S} s before the end)`;
  o.failIf = [...o.failIf, { path: 'scene.atEnd.disagreeing', op: '>', value: 0, text: 'every member holds its group\'s scene at the end' }];
  return null;
}
