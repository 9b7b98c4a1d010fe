// `carlab sim --playout`: every receiver draws its neighbours in each mode from the
// same arrivals and measures the drawing against the scripted truth (lab/sim/sim-worker.js).
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

test('sim --playout: drawn error per mode on the same frames, in results.json and tables.md', { timeout: 120_000 }, async () => {
  const out = await mkdtemp(path.join(tmpdir(), 'carlab-sim-'));
  try {
    const stderr = sink();
    const code = await run(['--transport', 'relay,relay-udp', '--clients', '10', '--group', '5', '--playout', 'ease,interpolate,predict',
      '--render-fps', '30', '--duration', '4', '--warmup', '1', '--no-progress', '--out', out], { stdout: sink().stream, stderr: /** @type {any} */ (stderr.stream) });
    assert.equal(code, 0, stderr.text());
    const results = JSON.parse(await readFile(path.join(out, 'results.json'), 'utf8'));
    for (const r of results.runs) {
      assert.equal(r.drawn.renderFps, 30);
      assert.deepEqual(Object.keys(r.drawn.modes), ['ease', 'interpolate', 'predict']);
      const frames = Object.values(r.drawn.modes).map((/** @type {any} */ d) => d.frames);
      assert.ok(frames[0] > 0 && frames.every((f) => f === frames[0]), `${r.transport}: every mode drew the same frames (${frames})`);
      for (const [mode, d] of Object.entries(r.drawn.modes)) {
        assert.equal(d.streams, 40, `${r.transport} ${mode}: 10 receivers x 4 neighbours`);
        // 4 s at 30 fps is at most 120 frames a stream; the first frames wait for a stream's first update
        assert.ok(d.frames <= 40 * 121 && d.frames > 40 * 60, `${r.transport} ${mode}: ${d.frames} frames`);
        assert.ok(d.positionCm.p95 > 0 && d.positionCm.p95 < 100, `${r.transport} ${mode}: p95 ${d.positionCm.p95} cm`);
        const shares = Object.values(d.shares).reduce((a, b) => a + b, 0);
        assert.ok(Math.abs(shares - 1) < 1e-9, `${r.transport} ${mode}: the state shares cover the time`);
      }
      assert.ok(r.drawn.timeline.length >= 3, `${r.transport}: a bucket per second`);
    }
    const tables = await readFile(path.join(out, 'tables.md'), 'utf8');
    assert.match(tables, /## Drawn error \(--playout\)/);
    assert.equal(tables.match(/^\| relay(-udp)? +\| +10 \|.*\| (ease|interpolate|predict) /gm)?.length, 6, 'a row per transport and mode');
  } finally {
    await rm(out, { recursive: true, force: true });
  }
});

test('sim --playout: bad modes and --render-fps alone are usage errors', async () => {
  for (const [args, message] of /** @type {const} */ ([
    [['--playout', 'ease,smooth'], /--playout takes a comma-separated list of newest, ease, interpolate, predict; got "ease,smooth"/],
    [['--render-fps', '30'], /--render-fps needs --playout/],
    [['--playout', 'predict', '--render-fps', '0'], /--render-fps: "0" is not an integer 1\.\.240/],
  ])) {
    const stderr = sink();
    const code = await run([...args], { stdout: sink().stream, stderr: /** @type {any} */ (stderr.stream) });
    assert.equal(code, 2, args.join(' '));
    assert.match(stderr.text(), message);
  }
});
