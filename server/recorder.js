/**
 * The study recording (`carlab start --record DIR`, docs/study.md "The record
 * format"): every accepted client report appended to a segment file of
 * newline-delimited JSON, one segment per server process start, written as
 * reports arrive. A line is written whole with one write(2), at most
 * FLUSH_MS after its report came, so a `kill -9` loses at most that much
 * and leaves every earlier line readable; a torn last line is skipped by the
 * reader. A restart with the same DIR adds a segment: DIR is the study.
 *
 * @module server/recorder
 */

import { closeSync, mkdirSync, openSync, writeSync, existsSync, writeFileSync, renameSync } from 'node:fs';
import path from 'node:path';

/** Lines wait at most this long in memory before they are written (ms). */
export const FLUSH_MS = 250;

/** A segment's file name: reports-<start, UTC, sortable>-<node id>.ndjson */
export const SEGMENT_PATTERN = /^reports-\d{8}T\d{6}(?:\d{3})?Z-[0-9a-z]+\.ndjson$/;

/** The record format's version: the first line of each segment says it. */
export const RECORD_VERSION = 1;

/**
 * One line of a segment.
 *
 * @typedef {{ t: 'start', v: number, at: number, node: string, pid: number, version: string }} StartLine
 * @typedef {{ t: 'report', at: number, node: string, ua: string, r: import('../core/report.js').ClientReport }} ReportLine
 * @typedef {StartLine | ReportLine} RecordLine
 */

/**
 * @typedef {object} Recorder
 * @property {string} dir the study folder
 * @property {string} file this process's segment
 * @property {(record: Omit<ReportLine, 't'>) => void} append queue one report line (written within FLUSH_MS)
 * @property {(json: string) => void} appendText queue one line already serialised (a ReportLine's JSON, no newline)
 * @property {() => void} flush write what is queued now
 * @property {() => { lines: number, bytes: number, errors: number }} stats
 * @property {() => void} close flush and close the file
 */

/**
 * Opens DIR for recording (creating it and DIR/study.json when missing) and
 * starts this process's segment.
 *
 * @param {{ dir: string, node: string, version: string, now?: () => number,
 *   onError?: (err: Error) => void }} options
 * @returns {Recorder}
 */
export function openRecorder({ dir, node, version, now = Date.now, onError = () => {} }) {
  mkdirSync(dir, { recursive: true });
  writeStudyFile(dir, version, now());
  const startedAt = now();
  const file = path.join(dir, segmentName(startedAt, node));
  const fd = openSync(file, 'a', 0o600);
  /** @type {string[]} */
  let queued = [];
  /** @type {ReturnType<typeof setTimeout> | null} */
  let timer = null;
  const counts = { lines: 0, bytes: 0, errors: 0 };
  let closed = false;

  const flush = () => {
    if (timer) clearTimeout(timer);
    timer = null;
    if (queued.length === 0 || closed) return;
    const text = queued.join('');
    queued = [];
    try {
      const bytes = Buffer.from(text);
      let off = 0;
      while (off < bytes.length) off += writeSync(fd, bytes, off);
      counts.bytes += bytes.length;
    } catch (err) {
      counts.errors++;
      onError(/** @type {Error} */ (err));
    }
  };
  /** @param {string} json */
  const queueText = (json) => {
    if (closed) return;
    queued.push(`${json}\n`);
    counts.lines++;
    if (!timer) timer = setTimeout(flush, FLUSH_MS);
  };
  /** @param {RecordLine} line */
  const queue = (line) => queueText(JSON.stringify(line));
  queue({ t: 'start', v: RECORD_VERSION, at: startedAt, node, pid: process.pid, version });
  flush();
  return {
    dir,
    file,
    append: (record) => queue({ t: 'report', ...record }),
    appendText: (json) => queueText(json),
    flush,
    stats: () => ({ ...counts }),
    close() {
      flush();
      closed = true;
      try { closeSync(fd); } catch { /* already closed */ }
    },
  };
}

/**
 * reports-20261125T150312123Z-<node>.ndjson
 * @param {number} at epoch ms @param {string} node
 */
export function segmentName(at, node) {
  const stamp = new Date(at).toISOString().replace(/[-:.]/g, '');
  return `reports-${stamp}-${node.toLowerCase().replace(/[^0-9a-z]/g, '')}.ndjson`;
}

/**
 * DIR/study.json: when the study began, written once (atomically) and kept
 * by later starts, which add to the same study.
 * @param {string} dir @param {string} version @param {number} at
 */
function writeStudyFile(dir, version, at) {
  const file = path.join(dir, 'study.json');
  if (existsSync(file)) return;
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify({ study: 'carlab', format: RECORD_VERSION, createdAt: new Date(at).toISOString(), version }, null, 2)}\n`);
  renameSync(tmp, file);
}

/**
 * Reads one line of a segment: the record, or null for a line that is not
 * whole JSON (the torn last line of a killed server) or not a record.
 *
 * @param {string} line
 * @returns {RecordLine | null}
 */
export function parseRecordLine(line) {
  if (line.trim() === '') return null;
  try {
    const value = JSON.parse(line);
    if (value && (value.t === 'start' || (value.t === 'report' && value.r && typeof value.r === 'object'))) return value;
  } catch { /* torn */ }
  return null;
}
