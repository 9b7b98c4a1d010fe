// carlab sim --late-join, in a file of its own: sim.test.js's sweeps already fill most of a
// file's 3 minutes on a starved machine.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { run } from './sim.js';

const sink = () => {
  /** @type {string[]} */
  const chunks = [];
  const stream = new Writable({ write(c, _e, cb) { chunks.push(String(c)); cb(); } });
  return { stream, text: () => chunks.join('') };
};

test('sim --late-join: the last member of each group joins late and catches up with the edits made before it', { timeout: 120_000 }, async () => {
  const out = await mkdtemp(path.join(tmpdir(), 'carlab-sim-'));
  try {
    const stderr = sink();
    const code = await run(['--transport', 'relay', '--clients', '10', '--group', '5', '--edits-per-minute', '120', '--late-join', '3',
      '--duration', '6', '--warmup', '0', '--no-progress', '--out', out], { stdout: sink().stream, stderr: /** @type {any} */ (stderr.stream) });
    assert.equal(code, 0, stderr.text());
    const [r] = JSON.parse(await readFile(path.join(out, 'results.json'), 'utf8')).runs;
    assert.equal(r.connected, 10);
    assert.equal(r.scene.joinSyncMs.n, 2, 'one late joiner per group, each held what was edited before it');
    assert.deepEqual(r.scene.atEnd, { groups: 2, members: 10, agreeing: 10, disagreeing: 0 });
  } finally {
    await rm(out, { recursive: true, force: true });
  }
  /** @param {string[]} argv */
  const usage = async (argv) => {
    const err = sink();
    assert.equal(await run(argv, { stdout: sink().stream, stderr: /** @type {any} */ (err.stream) }), 2, argv.join(' '));
    return err.text();
  };
  assert.match(await usage(['--late-join', '30', '--duration', '10']), /--late-join: 30 s is not inside the 10 s window/);
  assert.match(await usage(['--late-join', '2', '--group', '1']), /--group must be 2 or more/);
});
