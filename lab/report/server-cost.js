// The "Server cost" section of tables.md and report.html: per run, what one
// delivered update (one UPDATE reaching one neighbour) cost the server process:
// CPU µs in user and system time, frames read and written; and beside a floor
// measured in the same results at the same shape, the ratio to it.

import { NONE, fmt, markdownTable, netName } from './format.js';
import { carRuns, modeCell, orderedRuns } from './runs.js';

/** @typedef {import('./types.js').Run} Run */

/** The floors a run is compared with, by the mode whose frames they send. */
export const FLOOR_OF = Object.freeze({ relay: 'ws-floor-batched', 'relay-faithful': 'ws-floor' });

/** Columns of the server cost table. */
export const COST_COLUMNS = Object.freeze([
  'Transport', 'Mode', 'Net', 'Size', 'Group', 'µs/update', 'user', 'system', 'Frames in/update', 'Frames out/update', '× floor',
]);

/** What the server cost columns mean. */
export const COST_LEGEND = 'Per update delivered to a neighbour, over the measured window: µs/update, the server '
  + 'process\'s CPU (user and system time, which add up to it); Frames in/update and Frames out/update, the WebSocket '
  + '(and data channel) frames it read and wrote. × floor: µs/update over that of the floor sending the same frames '
  + '(relay: ws-floor-batched, one BATCH per socket per turn and one ACKED_ALL per update; relay-faithful: ws-floor, a frame '
  + 'per message) at the same size, group, cycle and net in these results.';

/**
 * The runs of the section: a measured server cost.
 * @param {Run[]} runs
 * @returns {Run[]}
 */
export function costRuns(runs) {
  return orderedRuns(carRuns(runs).filter((run) => !run.error && run.serverCost));
}

/**
 * The floor run measured at the same shape as `run`, or null.
 * @param {Run} run @param {Run[]} runs
 * @returns {Run | null}
 */
export function floorRunOf(run, runs) {
  const floor = /** @type {Record<string, string>} */ (FLOOR_OF)[String(run.transport)];
  if (!floor) return null;
  return runs.find((r) => r.transport === floor && r.clients === run.clients && r.group === run.group
    && r.cycleMs === run.cycleMs && netName(r) === netName(run) && typeof r.serverCost?.usPerUpdate === 'number') ?? null;
}

/**
 * One row of the table.
 * @param {Run} run @param {Run[]} runs every run of the results (where its floor is looked for)
 * @returns {string[]}
 */
export function costRow(run, runs) {
  const c = run.serverCost;
  const floor = floorRunOf(run, runs);
  const us = c?.usPerUpdate ?? null;
  const floorUs = floor?.serverCost?.usPerUpdate ?? null;
  return [
    String(run.transport), modeCell(run), netName(run) ?? NONE, fmt(run.clients), fmt(run.group),
    fmt(us, 2), fmt(c?.userUsPerUpdate, 2), fmt(c?.systemUsPerUpdate, 2), fmt(c?.framesInPerUpdate, 3), fmt(c?.framesOutPerUpdate, 3),
    us !== null && floorUs ? `${fmt(us / floorUs, 2)}x` : NONE,
  ];
}

/**
 * The "Server cost" section: empty when no run measured one.
 * @param {Run[]} runs
 * @returns {string}
 */
export function renderServerCostTable(runs) {
  const rs = costRuns(runs);
  if (!rs.length) return '';
  return ['## Server cost per delivered update', '', COST_LEGEND, '',
    markdownTable(COST_COLUMNS, rs.map((run) => costRow(run, rs)), COST_COLUMNS.map((_, i) => (i < 3 ? 'left' : 'right'))), ''].join('\n');
}
