// `carlab bench` run in-process from a browser test, its output caught: what
// the namespace tests (turn.spec.js, p2p-lossy.spec.js) share.
import { expect } from '@playwright/test';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { run } from '../lab/commands/bench.js';
import { resultsSchemaProblems } from '../lab/report/schema.js';

/** A stream that keeps what is written to it. */
export const sink = () => {
  /** @type {string[]} */
  const chunks = [];
  return { stream: new Writable({ write(c, _e, cb) { chunks.push(String(c)); cb(); } }), text: () => chunks.join('') };
};

/**
 * `carlab bench --net PROFILE` with Chromium p2p peers, one per page; its one run, schema-checked.
 * @param {string} profile
 * @param {{ clients?: number, group?: number, durationS?: number }} [shape] default 4 peers in groups of 2 for 6 s
 */
export async function benchNet(profile, { clients = 4, group = 2, durationS = 6 } = {}) {
  const out = await mkdtemp(path.join(tmpdir(), 'carlab-net-'));
  try {
    const stdout = sink();
    const stderr = sink();
    const code = await run(['--net', profile, '--transport', 'p2p', '--clients', String(clients), '--group', String(group),
      '--duration', String(durationS), '--warmup', '1', '--peers-per-page', '1', '--no-progress', '--out', out],
    { stdout: stdout.stream, stderr: /** @type {any} */ (stderr.stream) });
    expect(code, stderr.text()).toBe(0);
    const results = JSON.parse(await readFile(path.join(out, 'results.json'), 'utf8'));
    expect(resultsSchemaProblems(results)).toEqual([]);
    expect(results.runs.map((/** @type {any} */ r) => r.net.profile)).toEqual([profile]);
    return results.runs[0];
  } finally {
    await rm(out, { recursive: true, force: true });
  }
}
