// A small `carlab sim` end to end: every carlab transport, groups of 5 and 25,
// in a file of its own (the heaviest test of the sim's; the runner gives a
// file 300 s).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { run } from './sim.js';
import { BASELINES, SIM_TRANSPORTS } from '../sim/sim.js';
import { resultsSchemaProblems } from '../report/schema.js';

const sink = () => {
  /** @type {string[]} */
  const chunks = [];
  const stream = new Writable({ write(c, _e, cb) { chunks.push(String(c)); cb(); } });
  return { stream, text: () => chunks.join('') };
};

const OURS = SIM_TRANSPORTS.filter((t) => !BASELINES.includes(t));

// 2 s per run (12 cycles) and 30 clients (one group of 25 and one of 5, or six of 5) are enough
// for every check here.
test('sim: 30 clients on every carlab transport, groups 5 and 25', { timeout: 300_000 }, async () => {
  const out = await mkdtemp(path.join(tmpdir(), 'carlab-sim-'));
  try {
    const stdout = sink();
    const stderr = sink();
    const code = await run(['--transport', OURS.join(','), '--clients', '30', '--group', '5,25',
      '--duration', '2', '--warmup', '1', '--no-progress', '--out', out], { stdout: stdout.stream, stderr: /** @type {any} */ (stderr.stream) });
    assert.equal(code, 0, stderr.text());
    const results = JSON.parse(await readFile(path.join(out, 'results.json'), 'utf8'));
    assert.deepEqual(resultsSchemaProblems(results), []);
    assert.equal(results.runs.length, OURS.length * 2);
    for (const r of results.runs) {
      const what = `${r.transport}/${r.group}`;
      assert.equal(r.connected, 30, what);
      assert.equal(r.reportsIntervalS, 0, `${what}: no client reports by default`);
      assert.equal(r.reports, undefined, what);
      assert.ok(r.rt.n > 0 && r.rt.mean > 0, `${what}: RT recorded`);
      assert.ok(r.rts && r.rts.mean >= 0, `${what}: RTS present`);
      assert.equal(r.updates.received + r.updates.lost, r.updates.expected, `${what}: sent = received + lost`);
      if (r.transport === 'relay' || r.transport === 'relay-faithful') {
        assert.equal(r.lossPct, 0, `${what}: a reliable transport loses nothing`);
        assert.equal(r.dups + r.reorders, 0, what);
      }
    }
    assert.match(stdout.text(), /### relay · group 25 · cycle 167 ms/);
    assert.match(await readFile(path.join(out, 'tables.md'), 'utf8'), /\| Size \|/);
  } finally {
    await rm(out, { recursive: true, force: true });
  }
});

