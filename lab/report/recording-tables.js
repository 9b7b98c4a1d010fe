// The "Recordings" section of tables.md: per recording (lab/report/recording.js),
// a table per (transport, group) with a row per browser family and one for the
// whole group, then its devices (page sessions); the rows, columns and legends
// report.html shows too.

import { NONE, fmt, isObject, markdownTable, num } from './format.js';
import { isFamilyRun, mdData, runsOf } from './runs.js';

/** @typedef {import('./types.js').Results} Results */
/** @typedef {import('./types.js').Run} Run */
/** @typedef {import('./types.js').RecordingInfo} RecordingInfo */

/**
 * The recordings of a results object: its `recording` (every recording run
 * is its), or a combined report's `recordings` and any other recording its
 * runs name.
 *
 * @param {Results} results
 * @returns {RecordingInfo[]}
 */
export function recordingsOf(results) {
  /** @type {RecordingInfo[]} */
  const list = [];
  if (!Array.isArray(results?.recordings) && isObject(results?.recording)) return [/** @type {RecordingInfo} */ (results.recording)];
  if (Array.isArray(results?.recordings)) list.push(...results.recordings.filter(isObject).map((r) => /** @type {RecordingInfo} */ (r)));
  for (const run of runsOf(results)) {
    if (run.source !== 'recording') continue;
    const name = String(run.sourceName ?? '');
    if (!list.some((r) => String(r.name ?? '') === name)) list.push({ name });
  }
  return list;
}

/**
 * The runs of one recording, per (transport, group name) in results order:
 * each browser family's runs, then the group's run over every family.
 *
 * @param {Run[]} runs
 * @param {RecordingInfo | null} recording null: every recording run (results of one recording)
 * @returns {{ transport: string, groupName: string, runs: Run[] }[]}
 */
export function recordingGroups(runs, recording) {
  /** @type {Map<string, { transport: string, groupName: string, runs: Run[] }>} */
  const groups = new Map();
  for (const run of runs) {
    if (run.source !== 'recording' || (recording && String(run.sourceName ?? '') !== String(recording.name ?? ''))) continue;
    const transport = String(run.transport ?? '?');
    const groupName = String(run.groupName ?? '');
    const key = JSON.stringify([transport, groupName]);
    let entry = groups.get(key);
    if (!entry) groups.set(key, (entry = { transport, groupName, runs: [] }));
    entry.runs.push(run);
  }
  for (const entry of groups.values()) entry.runs.sort((a, b) => Number(!isFamilyRun(a)) - Number(!isFamilyRun(b)));
  return [...groups.values()];
}

/**
 * The title of one recording group's table, e.g.
 * `relay · group "lab1" · 4 clients · cycle 167 ms pipelined`.
 *
 * @param {{ transport: string, groupName: string, runs: Run[] }} entry
 * @returns {string}
 */
export function recordingGroupTitle({ transport, groupName, runs }) {
  const all = runs.find((run) => !isFamilyRun(run)) ?? runs[0];
  const mode = typeof all?.cycleMode === 'string' ? ` ${all.cycleMode}` : '';
  return `${transport} · group "${groupName}" · ${fmt(all?.group)} clients · cycle ${fmt(all?.cycleMs)} ms${mode}`;
}

/** Columns of a recording's per-family table: the papers' layout, freshness and tracking. */
export const RECORDING_COLUMNS = Object.freeze([
  'Browser', 'Size', 'Sessions', 'RT', 'Dev', 'p95', 'CPU', 'RTS', '% loss', 'Jitter (ms)',
  'Fresh/stream/s', 'Freeze p99', '% frozen', 'Tracking fps', 'Marker seen %', 'Drawn behind', '% held', 'Jumps/min',
]);

/** What the recording tables say. */
export const RECORDING_LEGEND = 'Real phones, from the client reports `carlab start --record` kept: each page session\'s newest report. '
  + 'One row per browser family (from the user agent), then the whole group ("all"). Size: clients (distinct ids) of the family; '
  + 'RT, Dev, p95 (ms): updates its phones sent, on the sender\'s clock, from the merged histograms (percentiles to 0.1 ms below '
  + '100 ms, 1 ms below 1 s); % loss, jitter and freshness: streams into its phones, from any sender. CPU and RTS are not in client '
  + 'reports. Tracking: AR.js frames per second and the share of frames that saw the marker. Drawn behind (ms): how far behind '
  + 'their present the phones drew their neighbours (the playout\'s delay, or time held past its limit); % held: the share of that '
  + 'time drawn still; jumps/min: frames whose drawing moved well beyond what the neighbour\'s updates said (no truth on real phones).';

/**
 * One row of a recording's per-family table.
 *
 * @param {Run} run
 * @returns {string[]}
 */
export function recordingRow(run) {
  const f = run.freshness ?? null;
  const t = run.tracking ?? null;
  return [
    isFamilyRun(run) ? String(run.family) : 'all', fmt(run.clients), fmt(run.sessions),
    fmt(run.rt?.mean), fmt(run.rt?.dev), fmt(run.rt?.p95), fmt(run.cpu?.server, 1), fmt(run.rts?.mean, 1), fmt(run.lossPct, 2), fmt(run.jitterMs, 2),
    fmt(f?.updatesPerStreamPerS, 2), fmt(f?.freezeMs?.p99), fmt(f?.frozenPct, 2), fmt(t?.fps, 1), fmt(t?.visiblePct, 1),
    fmt(run.playout?.behindMs), fmt(run.playout?.holdingPct, 1), fmt(run.playout?.jumpsPerMinute, 2),
  ];
}

/** Columns of the devices table. */
export const DEVICE_COLUMNS = Object.freeze([
  'Session', 'Name', 'Family', 'Browser', 'OS', 'Device', 'Network', 'Transport', 'Group', 'Id', 'Reports', 'First seen', 'Last seen',
]);

/** What the devices table says. */
export const DEVICE_LEGEND = 'One row per page session (the first 8 hex digits of its id): the name as typed, what its user agent '
  + 'says, navigator.connection.effectiveType, its transport and group, the client id the server gave (0: never joined), its reports '
  + 'and when the server first and last heard from it (UTC).';

/**
 * An ISO time as `YYYY-MM-DD HH:MM:SS`, or {@link NONE}.
 *
 * @param {unknown} value
 * @returns {string}
 */
export function timeText(value) {
  return typeof value === 'string' && value ? value.replace('T', ' ').replace(/(\.\d+)?Z$/, '') : NONE;
}

/**
 * One row of the devices table.
 *
 * @param {import('./recording-results.js').DeviceRow} d
 * @returns {string[]}
 */
export function deviceRow(d) {
  const text = (/** @type {unknown} */ v) => (typeof v === 'string' && v ? v : NONE);
  const joined = (/** @type {unknown} */ a, /** @type {unknown} */ b) => [a, b].filter((v) => typeof v === 'string' && v).join(' ') || NONE;
  return [
    text(d?.session), String(d?.name ?? ''), text(d?.family), joined(d?.browser, d?.browserVersion), joined(d?.os, d?.osVersion), text(d?.device),
    text(d?.effectiveType), text(d?.transport), text(d?.group), fmt(d?.clientId), fmt(d?.reports), timeText(d?.firstSeen), timeText(d?.lastSeen),
  ];
}

/**
 * One line about a recording: sessions, segments, time span and what the reader skipped.
 *
 * @param {RecordingInfo} recording
 * @returns {string}
 */
export function recordingSummary(recording) {
  const c = recording.counts ?? {};
  const segments = Array.isArray(recording.segments) ? recording.segments.length : null;
  const parts = [`${fmt(recording.sessions)} sessions${segments !== null ? ` in ${segments} segment${segments === 1 ? '' : 's'}` : ''}`];
  if (recording.firstAt || recording.lastAt) parts.push(`${timeText(recording.firstAt)} to ${timeText(recording.lastAt)} UTC`);
  if (num(c.lines) !== null) parts.push(`${fmt(c.lines)} lines, ${fmt(c.reports)} reports`);
  const skipped = [
    num(c.tornLines) ? `${fmt(c.tornLines)} torn line${c.tornLines === 1 ? '' : 's'}` : '',
    num(c.invalid) ? `${fmt(c.invalid)} invalid report${c.invalid === 1 ? '' : 's'}` : '',
    num(c.other) ? `${fmt(c.other)} other line${c.other === 1 ? '' : 's'}` : '',
  ].filter(Boolean);
  if (skipped.length) parts.push(`skipped ${skipped.join(', ')}`);
  if (num(c.idCollisions)) parts.push(`${fmt(c.idCollisions)} sessions shared a client id with another at the same time (their streams are matched to one of them)`);
  return parts.join('; ');
}

/**
 * The "Recordings" section of tables.md: per recording, a table per
 * (transport, group) with a row per browser family and one for the group,
 * then the devices; empty when the results hold no recording.
 *
 * @param {Results} results
 * @returns {string}
 */
export function renderRecordingTables(results) {
  const recordings = recordingsOf(results);
  if (!recordings.length) return '';
  const runs = runsOf(results);
  const several = recordings.length > 1;
  const devices = Array.isArray(results.devices) ? results.devices.filter(isObject) : [];
  const out = ['## Recordings', '', RECORDING_LEGEND, ''];
  for (const recording of recordings) {
    const name = String(recording.name ?? '');
    const of = several ? ` · recording ${mdData(name)}` : '';
    out.push(`_Recording ${mdData(name)}: ${mdData(recordingSummary(recording))}._`, '');
    for (const entry of recordingGroups(runs, several ? recording : null)) {
      out.push(`### ${mdData(recordingGroupTitle(entry))}${of}`, '');
      out.push(markdownTable(RECORDING_COLUMNS, entry.runs.map((run) => recordingRow(run).map(mdData)), RECORDING_COLUMNS.map((_, i) => (i === 0 ? 'left' : 'right'))), '');
    }
    const mine = devices.filter((d) => !several || String(d.sourceName ?? '') === name);
    if (mine.length) {
      out.push(`### Devices${of}`, '', DEVICE_LEGEND, '');
      out.push(markdownTable(DEVICE_COLUMNS, mine.map((d) => deviceRow(d).map(mdData)), DEVICE_COLUMNS.map((_, i) => (i >= 9 && i <= 10 ? 'right' : 'left'))), '');
    }
  }
  return out.join('\n');
}
