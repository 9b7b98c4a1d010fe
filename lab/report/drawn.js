// The drawn error of a run (--playout): each mode's tallies merged over the
// load generators (or browser pages) into results.json's `drawn` field, and
// its rows in tables.md (docs/architecture.md, "Drawn error").

import { DrawnErrorTally, JUMP_EXCESS_CM } from '../../core/drawn-error.js';
import { DrawnTimeline } from '../../core/playout-probe.js';
import { NONE, fmt, markdownTable, netName } from './format.js';

/** @typedef {ReturnType<import('../../core/playout-probe.js').DrawnErrorLab['toJSON']>} DrawnLabJson */
/** @typedef {ReturnType<DrawnErrorTally['summary']>} DrawnSummary */

/**
 * results.json's `drawn`: per mode the summary (position cm, angle degrees, jumps per minute of
 * stream-time, time shares by state), and the timeline of the mean error per second of the
 * measured window with the updates found missing in it. Null without --playout.
 * @param {(DrawnLabJson | null | undefined)[]} parts one per generator or page
 * @param {{ renderFps: number }} how
 * @returns {{ renderFps: number, modes: Record<string, DrawnSummary>, timeline: ReturnType<typeof DrawnTimeline.merged> } | null}
 */
export function drawnRecord(parts, how) {
  const present = parts.filter((p) => p != null);
  if (present.length === 0) return null;
  const modes = [...new Set(present.flatMap((p) => Object.keys(p.modes)))];
  return {
    renderFps: how.renderFps,
    modes: Object.fromEntries(modes.map((m) => [m, DrawnErrorTally.merged(present.map((p) => p.modes[m])).summary()])),
    timeline: DrawnTimeline.merged(present.map((p) => p.timeline)),
  };
}

const share = (/** @type {number | null | undefined} */ v) => (v == null ? NONE : `${fmt(v * 100, 1)} %`);

/** Columns of the drawn-error table. */
export const DRAWN_COLUMNS = Object.freeze([
  'Transport', 'Clients', 'Group', 'Cycle', 'Net', 'Mode', 'Streams',
  'Error p50 cm', 'p95 cm', 'p99 cm', 'max cm', 'Angle p95 °', 'Jumps/min', 'Jump p95 cm', 'Extrapolating', 'Holding',
]);

/**
 * The drawn-error rows of the runs that measured it, one per (run, mode).
 * @param {any[]} runs results.json's runs
 * @returns {string[][]}
 */
export function drawnRows(runs) {
  // `drawn`: the run's clients (--playout); `arDrawn`: its two AR pages on the synthetic camera (bench --ar-pair)
  const parts = runs.flatMap((r) => [['drawn', ''], ['arDrawn', ' (AR pair)']].filter(([k]) => r[k]).map(([k, tag]) => ({ r, record: r[k], tag })));
  return parts.flatMap(({ r, record, tag }) => Object.entries(/** @type {Record<string, DrawnSummary>} */ (record.modes)).map(([mode, d]) => [
    String(r.transport), fmt(r.clients), fmt(r.group), fmt(r.cycleMs), netName(r) ?? 'none', `${mode}${tag}`, fmt(d.streams),
    fmt(d.positionCm.p50, 1), fmt(d.positionCm.p95, 1), fmt(d.positionCm.p99, 1), fmt(d.positionCm.max, 1), fmt(d.angleDeg.p95, 1),
    fmt(d.jumpsPerMinute, 2), fmt(d.jumpCm.p95, 1), share(d.shares.extrapolating), share(d.shares.holding),
  ]));
}

/** What the drawn-error table shows. */
export const DRAWN_LEGEND = 'How far each receiver draws a neighbour from where it really is, at every rendered frame, in each playout mode '
  + 'from the same arrivals (docs/architecture.md "Drawn error"). Jumps: frames whose drawn step exceeds the true '
  + `step by more than ${JUMP_EXCESS_CM} cm in a 60 fps frame (proportionally more in a longer one), per minute of stream. Extrapolating, holding: shares of the time drawn ahead of the newest pose, or held still.`;

/**
 * tables.md's section on the drawn error, or '' when no run measured it.
 * @param {any[]} runs
 */
export function renderDrawnTable(runs) {
  const rows = drawnRows(runs);
  if (rows.length === 0) return '';
  return [
    '## Drawn error (--playout)',
    '',
    DRAWN_LEGEND,
    '',
    markdownTable(DRAWN_COLUMNS, rows, DRAWN_COLUMNS.map((_, i) => (i === 0 || i === 4 || i === 5 ? 'left' : 'right'))),
    '',
  ].join('\n');
}
