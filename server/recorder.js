/**
 * The study recording (`carlab start --record DIR`, docs/study.md "The record
 * format"): every accepted client report appended to a segment file of
 * newline-delimited JSON, one segment per server process start, written as
 * reports arrive. A line is written whole with one write(2) as its report
 * is accepted, before the server answers it: a `kill -9` loses no report the
 * server answered (the kernel holds what was written) and leaves every line
 * readable; a torn last line (a machine crash) is skipped by the reader. It
 * used to batch for 250 ms, and a server starved past that lost answered
 * reports; one write(2) per line costs 3 µs (2 KB lines, measured), less
 * than joining a batch did. A restart with the same DIR adds a segment: DIR
 * is the study.
 *
 * @module server/recorder
 */

import { closeSync, mkdirSync, openSync, writeSync, existsSync, writeFileSync, renameSync } from 'node:fs';
import path from 'node:path';

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
 * @property {(record: Omit<ReportLine, 't'>) => void} append writes one report line
 * @property {(json: string) => void} appendText writes one line already serialised (a ReportLine's JSON, no newline)
 * @property {() => { lines: number, bytes: number, errors: number }} stats
 * @property {() => void} close closes the file (nothing is written after)
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
  const counts = { lines: 0, bytes: 0, errors: 0 };
  let closed = false;

  /** @param {string} json one line, written whole now */
  const writeLine = (json) => {
    if (closed) return;
    try {
      const bytes = Buffer.from(`${json}\n`);
      let off = 0;
      while (off < bytes.length) off += writeSync(fd, bytes, off);
      counts.lines++;
      counts.bytes += bytes.length;
    } catch (err) {
      counts.errors++;
      onError(/** @type {Error} */ (err));
    }
  };
  /** @param {RecordLine} line */
  const write = (line) => writeLine(JSON.stringify(line));
  write({ t: 'start', v: RECORD_VERSION, at: startedAt, node, pid: process.pid, version });
  return {
    dir,
    file,
    append: (record) => write({ t: 'report', ...record }),
    appendText: writeLine,
    stats: () => ({ ...counts }),
    close() {
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
