import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { SEGMENT_PATTERN, openRecorder, parseRecordLine, segmentName } from './recorder.js';

/** @param {string} file */
const linesOf = (file) => readFileSync(file, 'utf8').split('\n').map(parseRecordLine).filter((l) => l !== null);

test('a recorder writes a start line, then every report as it comes, before the caller answers it, whole lines only', (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'carlab-rec-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const rec = openRecorder({ dir, node: 'abc123', version: '0.1.0' });
  assert.match(path.basename(rec.file), SEGMENT_PATTERN);
  rec.append({ at: 1, node: 'abc123', ua: 'UA', r: /** @type {any} */ ({ session: 's1', seq: 1 }) });
  const lines = linesOf(rec.file);
  assert.deepEqual(lines.map((l) => l.t), ['start', 'report']);
  assert.equal(lines[0].t === 'start' && lines[0].node, 'abc123');
  rec.close();
  const study = JSON.parse(readFileSync(path.join(dir, 'study.json'), 'utf8'));
  assert.equal(study.format, 1);
});

test('a second start adds a segment to the same study and keeps study.json', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'carlab-rec-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  let clock = Date.UTC(2026, 10, 25, 15, 0, 0);
  const first = openRecorder({ dir, node: 'n1', version: '1', now: () => clock });
  first.close();
  const created = readFileSync(path.join(dir, 'study.json'), 'utf8');
  clock += 60_000;
  const second = openRecorder({ dir, node: 'n1', version: '2', now: () => clock });
  second.close();
  assert.equal(readFileSync(path.join(dir, 'study.json'), 'utf8'), created);
  assert.equal(readdirSync(dir).filter((f) => SEGMENT_PATTERN.test(f)).length, 2);
  assert.equal(segmentName(Date.UTC(2026, 10, 25, 15, 3, 12, 123), 'AB-12'), 'reports-20261125T150312123Z-ab12.ndjson');
});

test('a torn last line (a killed server) is skipped; every line before it reads', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'carlab-rec-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const rec = openRecorder({ dir, node: 'n1', version: '1' });
  for (let i = 1; i <= 3; i++) rec.append({ at: i, node: 'n1', ua: '', r: /** @type {any} */ ({ session: 's', seq: i }) });
  rec.close();
  appendFileSync(rec.file, '{"t":"report","at":4,"node":"n1","ua":"","r":{"sess');
  const lines = linesOf(rec.file);
  assert.equal(lines.length, 4);
  assert.equal(parseRecordLine('{"t":"report","r":{"sess'), null);
  assert.equal(parseRecordLine('{"t":"other"}'), null);
  assert.equal(parseRecordLine(''), null);
});
