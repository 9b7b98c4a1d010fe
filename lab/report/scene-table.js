// The "Shared scene" section of tables.md and report.html: per run with an
// edit workload (sim --edits-per-minute), convergence time and disagreement
// (binding definitions: docs/architecture.md "The shared scene"), and the
// end-of-run check.

import { NONE, fmt, isObject, markdownTable, netName } from './format.js';
import { SOURCE_LEGEND, carRuns, modeCell, orderedRuns, showSources, sourceLabel } from './runs.js';

/** @typedef {import('./types.js').Run} Run */

/** Columns of the shared-scene table. */
export const SCENE_COLUMNS = Object.freeze([
  'Transport', 'Mode', 'Net', 'Size', 'Group', 'Edits/min', 'Edits', 'Conv. p50', 'Conv. p99', 'Conv. max', 'Unconverged',
  '% disagree', 'Join sync p99', 'Repairs', 'Agree at end',
]);

/** What the shared-scene columns mean. */
export const SCENE_LEGEND = 'Every client edits its group\'s shared scene Edits/min times a minute (adds, moves, turns, '
  + 'removes), until 3 s before the window ends. Conv.: convergence time (ms), from an edit until every member that was in '
  + 'the group then holds it; Unconverged: edits some member that stayed never got. % disagree: share of member-time a '
  + 'member\'s scene differed from the group\'s latest. Join sync: from a late joiner\'s join until it held every earlier '
  + 'edit (ms). Repairs: anti-entropy pushes started. Agree at end: members holding their group\'s scene at the end, of '
  + 'those that stayed. A study recording\'s rows (Edits/min –) measure the people\'s own edits on the server\'s clock as '
  + 'each phone estimated it (docs/architecture.md "The shared scene").';

/**
 * The table's columns for these runs: a Source column first when they come from more than
 * one source (several recorded groups, or a recording beside a sim run).
 * @param {Run[]} runs the table's runs (sceneRuns)
 * @returns {string[]}
 */
export function sceneColumns(runs) {
  return showSources(runs) ? ['Source', ...SCENE_COLUMNS] : [...SCENE_COLUMNS];
}

/**
 * One row of the table.
 * @param {Run} run
 * @param {boolean} [withSource] with the Source cell first (sceneColumns)
 * @returns {string[]}
 */
export function sceneRow(run, withSource = false) {
  const s = /** @type {any} */ (run).scene;
  return [
    ...(withSource ? [sourceLabel(run) ?? NONE] : []),
    String(run.transport), modeCell(run), netName(run) ?? NONE, fmt(run.clients), fmt(run.group), fmt(s.editsPerMinute), fmt(s.edits),
    fmt(s.convergenceMs?.p50), fmt(s.convergenceMs?.p99), fmt(s.convergenceMs?.max), fmt(s.unconverged), fmt(s.disagreementPct, 2),
    fmt(s.joinSyncMs?.p99), fmt(s.repairs), `${fmt(s.atEnd?.agreeing)} / ${fmt(s.atEnd?.members)}`,
  ];
}

/**
 * The runs of the table: those with a scene record, in table order.
 * @param {Run[]} runs
 * @returns {Run[]}
 */
export function sceneRuns(runs) {
  return orderedRuns(carRuns(runs).filter((run) => isObject(/** @type {any} */ (run).scene) && !run.error));
}

/**
 * The "Shared scene" section of tables.md: empty when no run edited.
 * @param {Run[]} runs
 * @returns {string}
 */
export function renderSceneTable(runs) {
  const rs = sceneRuns(runs);
  if (!rs.length) return '';
  const columns = sceneColumns(rs);
  const withSource = columns[0] === 'Source';
  const left = withSource ? 4 : 3;
  return ['## Shared scene', '', withSource ? `${SCENE_LEGEND} ${SOURCE_LEGEND}` : SCENE_LEGEND, '',
    markdownTable(columns, rs.map((run) => sceneRow(run, withSource)), columns.map((_, i) => (i < left ? 'left' : 'right'))), ''].join('\n');
}
