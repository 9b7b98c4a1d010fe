// The tables.md sections of runs spread over several processes or machines:
// "Scale-out" (relays joined through NATS, a relay killed mid-run) and "Fleet"
// (`carlab bench --agents`: one row per agent).

import { NONE, fmt, isObject, markdownTable, netName } from './format.js';
import { mdData, modeCell, orderedRuns } from './runs.js';

/** @typedef {import('./types.js').Run} Run */

/** Columns of the scale-out table. */
export const SCALE_OUT_COLUMNS = Object.freeze([
  'Transport', 'Mode', 'Net', 'Size', 'Nodes', 'Cross-node updates', 'NATS', 'Clients moved', 'Reconnect p50', 'Reconnect p99', 'Reconnect max', 'Lost updates',
]);

/** What the scale-out columns mean. */
export const SCALE_OUT_LEGEND = 'Runs on several relay processes joined through NATS. Nodes: relay processes; cross-node updates: '
  + 'updates forwarded to a member on another node; NATS: server version. A failover run kills a relay mid-run: clients moved '
  + 'to another node, their reconnect time (ms) and the updates lost meanwhile.';

/**
 * One row of the scale-out table.
 * @param {Run} run
 * @returns {string[]}
 */
export function scaleOutRow(run) {
  const c = run.cluster ?? null;
  const f = run.failover ?? null;
  return [
    String(run.transport), modeCell(run), netName(run) ?? NONE, fmt(run.clients),
    fmt(c?.nodes), fmt(c?.crossNodeUpdates), typeof c?.natsVersion === 'string' ? c.natsVersion : NONE,
    fmt(f?.clientsMoved), fmt(f?.reconnectMs?.p50), fmt(f?.reconnectMs?.p99), fmt(f?.reconnectMs?.max), fmt(f?.lostUpdates),
  ];
}

/**
 * The "Scale-out" section: empty when no run has `cluster` or `failover`.
 * @param {Run[]} runs
 * @returns {string}
 */
export function renderScaleOutTable(runs) {
  const rs = orderedRuns(runs.filter((run) => isObject(run.cluster) || isObject(run.failover)));
  if (!rs.length) return '';
  return ['## Scale-out', '', SCALE_OUT_LEGEND, '',
    markdownTable(SCALE_OUT_COLUMNS, rs.map(scaleOutRow), SCALE_OUT_COLUMNS.map((_, i) => (i < 3 || i === 6 ? 'left' : 'right'))), ''].join('\n');
}

/** Columns of the fleet table (`carlab bench --agents`). */
export const FLEET_COLUMNS = Object.freeze([
  'Transport', 'Size', 'Group', 'Agent', 'Host', 'Peers', 'Browser CPU %', 'RSS max (MB)', 'Agent CPU %', 'Setup (ms)', 'Start skew (ms)', 'Lost',
]);

/** What the fleet columns mean. */
export const FLEET_LEGEND = 'One row per agent of a fleet run (docs/fleet.md). Browser CPU %: its browsers\' process trees over the '
  + 'measured window (100 = one core); Agent CPU %: the agent process itself; Setup: launching browsers and opening pages, on '
  + 'the agent\'s clock; Start skew: when it started its peers after the first agent did, estimated on the bench\'s clock '
  + '(send and reply times and the agent\'s own duration: no clocks compared).';

/**
 * The fleet table, or null when no run ran on agents.
 * @param {Run[]} runs
 * @returns {string | null}
 */
export function renderFleetTable(runs) {
  const rows = runs.flatMap((run) => (/** @type {any} */ (run).fleet?.agents ?? []).map((/** @type {any} */ a) => [
    String(run.transport), fmt(run.clients), fmt(run.group), mdData(a.name), mdData(a.host), fmt(a.peers), fmt(a.cpuPct, 1),
    fmt(a.rssMaxMb), fmt(a.agentCpuPct, 1), fmt(a.setupMs), fmt(a.startSkewMs, 1), a.lost ? 'lost' : NONE,
  ]));
  if (rows.length === 0) return null;
  return ['## Fleet', '', FLEET_LEGEND, '', markdownTable(FLEET_COLUMNS, rows, FLEET_COLUMNS.map((_, i) => (i === 0 || i === 3 || i === 4 ? 'left' : 'right'))), ''].join('\n');
}
