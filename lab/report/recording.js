/**
 * A study recording (`carlab start --record DIR`, server/recorder.js) as read:
 * every segment of DIR, each page session's newest report (a report is
 * cumulative for its session, so the newest holds everything it measured),
 * and what was skipped. recording-results.js turns it into a results object.
 *
 * @module lab/recording
 */

import { createReadStream, readdirSync, readFileSync, statSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';

import { reportProblem } from '../../core/report.js';
import { SEGMENT_PATTERN, parseRecordLine } from '../../server/recorder.js';

/** Problems (torn lines, invalid reports) a reading keeps, with where they were; the counts cover all. */
export const MAX_PROBLEMS = 20;

/**
 * One page session of a recording: its newest report line (highest seq),
 * with the server-clock times it was first and last heard of.
 *
 * @typedef {object} RecordedSession
 * @property {number} at server clock (epoch ms) of the newest report
 * @property {string} node server node that took the newest report
 * @property {string} ua the User-Agent it came with
 * @property {import('../../core/report.js').ClientReport} r the newest report
 * @property {number} firstAt server clock of its first report line
 * @property {number} lastAt server clock of its last report line
 * @property {number} startAt when the session began, server clock: its first report's `at` less its uptime
 * @property {number} reports valid report lines of the session
 * @property {string} segment the segment file of the newest report
 * @property {{ at: number, seq: number, horizonMs: number }[]} cutoffs every report's loss cutoff (cutoffSeq),
 *   delivery horizon and server time, in
 *   the order read: a receiver's report is counted against the sender's cutoff of that time
 * @property {import('../../core/scene-report.js').SceneReport[]} sceneParts the scene parts of all its
 *   reports (each carries the marks since the one before: core/scene-report.js assembleSceneLog)
 */

/**
 * One segment file as read.
 *
 * @typedef {object} SegmentSummary
 * @property {string} file name inside the recording folder
 * @property {string | null} node server node (from its start line)
 * @property {number | null} pid
 * @property {string | null} version carlab version of the server
 * @property {string | null} startedAt ISO time of its start line
 * @property {number} lines non-empty lines
 * @property {number} reports valid report lines
 * @property {number} tornLines lines that are not whole JSON (a killed server's last line)
 * @property {number} invalid report lines whose report reportProblem() refuses (skipped)
 * @property {number} other whole JSON lines that are not records (skipped)
 */

/**
 * @typedef {object} RecordingCounts
 * @property {number} lines non-empty lines over every segment
 * @property {number} reports valid report lines
 * @property {number} tornLines lines that are not whole JSON: skipped
 * @property {number} invalid report lines with an invalid report: skipped
 * @property {number} other whole JSON lines that are not records: skipped
 * @property {number} superseded valid reports replaced by a newer report of their session
 */

/**
 * A recording as read.
 *
 * @typedef {object} Recording
 * @property {string} dir
 * @property {Record<string, unknown> | null} study DIR/study.json, null when missing or unreadable
 * @property {SegmentSummary[]} segments in file-name (start time) order
 * @property {RecordedSession[]} sessions one per page session, in order of their first report
 * @property {RecordingCounts} counts
 * @property {{ file: string, line: number, problem: string }[]} problems the first MAX_PROBLEMS skipped lines
 */

/**
 * Whether DIR is a study recording: a folder with a report segment
 * (reports-*.ndjson) or a carlab study.json.
 *
 * @param {string} dir
 * @returns {boolean}
 */
export function isRecordingDir(dir) {
  try {
    if (!statSync(dir).isDirectory()) return false;
    if (readdirSync(dir).some((name) => SEGMENT_PATTERN.test(name))) return true;
    return JSON.parse(readFileSync(path.join(dir, 'study.json'), 'utf8'))?.study === 'carlab';
  } catch {
    return false;
  }
}

/**
 * Reads every segment of a recording. A line that is not whole JSON (the
 * torn last line of a killed server), a line that is not a record and a
 * report that reportProblem() refuses are skipped and counted, never fatal.
 * Of each session only the report with the highest seq is kept (on a tie,
 * the later line), and the scene parts of all its reports.
 *
 * @param {string} dir
 * @returns {Promise<Recording>}
 */
export async function readRecording(dir) {
  const names = (await readdir(dir)).filter((name) => SEGMENT_PATTERN.test(name)).sort();
  /** @type {Record<string, unknown> | null} */
  let study = null;
  try {
    const parsed = JSON.parse(await readFile(path.join(dir, 'study.json'), 'utf8'));
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) study = parsed;
  } catch { /* no study.json: the segments are the study */ }
  /** @type {RecordingCounts} */
  const counts = { lines: 0, reports: 0, tornLines: 0, invalid: 0, other: 0, superseded: 0 };
  /** @type {Recording['problems']} */
  const problems = [];
  /** @type {Map<string, RecordedSession>} */
  const sessions = new Map();
  /** @type {SegmentSummary[]} */
  const segments = [];
  for (const file of names) {
    /** @type {SegmentSummary} */
    const seg = { file, node: null, pid: null, version: null, startedAt: null, lines: 0, reports: 0, tornLines: 0, invalid: 0, other: 0 };
    segments.push(seg);
    const note = (/** @type {number} */ line, /** @type {string} */ problem) => {
      if (problems.length < MAX_PROBLEMS) problems.push({ file, line, problem });
    };
    const lines = createInterface({ input: createReadStream(path.join(dir, file)), crlfDelay: Infinity });
    let number = 0;
    for await (const text of lines) {
      number++;
      if (text.trim() === '') continue;
      seg.lines++;
      const record = parseRecordLine(text);
      if (!record) {
        if (isJson(text)) {
          seg.other++;
          note(number, 'not a record');
        } else {
          seg.tornLines++;
          note(number, 'not whole JSON (torn)');
        }
        continue;
      }
      if (record.t === 'start') {
        if (seg.node === null) {
          seg.node = typeof record.node === 'string' ? record.node : null;
          seg.pid = typeof record.pid === 'number' ? record.pid : null;
          seg.version = typeof record.version === 'string' ? record.version : null;
          seg.startedAt = typeof record.at === 'number' && Number.isFinite(record.at) ? new Date(record.at).toISOString() : null;
        }
        continue;
      }
      const problem = typeof record.at !== 'number' || !Number.isFinite(record.at) ? 'at must be a number' : reportProblem(record.r);
      if (problem) {
        seg.invalid++;
        note(number, `invalid report: ${problem}`);
        continue;
      }
      seg.reports++;
      const r = record.r;
      const known = sessions.get(r.session);
      if (!known) {
        sessions.set(r.session, {
          at: record.at, node: String(record.node ?? ''), ua: String(record.ua ?? ''), r,
          firstAt: record.at, lastAt: record.at, startAt: record.at - r.uptimeMs, reports: 1, segment: file,
          sceneParts: r.scene ? [r.scene] : [],
          cutoffs: r.cutoffSeq !== undefined ? [{ at: record.at, seq: r.cutoffSeq, horizonMs: r.horizonMs ?? 0 }] : [],
        });
        continue;
      }
      known.reports++;
      if (r.cutoffSeq !== undefined) known.cutoffs.push({ at: record.at, seq: r.cutoffSeq, horizonMs: r.horizonMs ?? 0 });
      if (r.scene) known.sceneParts.push(r.scene);
      counts.superseded++;
      if (record.at < known.firstAt) {
        known.firstAt = record.at;
        known.startAt = Math.min(known.startAt, record.at - r.uptimeMs);
      }
      known.lastAt = Math.max(known.lastAt, record.at);
      if (r.seq >= known.r.seq) Object.assign(known, { at: record.at, node: String(record.node ?? ''), ua: String(record.ua ?? ''), r, segment: file });
    }
    for (const k of /** @type {const} */ (['lines', 'reports', 'tornLines', 'invalid', 'other'])) counts[k] += seg[k];
  }
  return {
    dir,
    study,
    segments,
    sessions: [...sessions.values()].sort((a, b) => a.firstAt - b.firstAt || a.r.session.localeCompare(b.r.session)),
    counts,
    problems,
  };
}

/** @param {string} text */
function isJson(text) {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
