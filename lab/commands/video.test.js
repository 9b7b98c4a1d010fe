import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, describe, test } from 'node:test';

import { parseVideoOptions, rgbaToI420, run, writeVideo, y4mHeader } from './video.js';

const dir = mkdtempSync(path.join(tmpdir(), 'carlab-video-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function capture() {
  let text = '';
  return {
    stream: new Writable({ write(chunk, _e, cb) { text += chunk; cb(); } }),
    text: () => text,
  };
}

describe('carlab video options', () => {
  test('defaults: 640x480, 10 fps, 6 s, pose file beside the video', () => {
    const parsed = parseVideoOptions(['--out', path.join(dir, 'a.y4m')]);
    assert.equal(parsed.kind, 'options');
    if (parsed.kind !== 'options') return;
    assert.equal(parsed.options.width, 640);
    assert.equal(parsed.options.height, 480);
    assert.equal(parsed.options.fps, 10);
    assert.equal(parsed.options.frames, 60);
    assert.equal(parsed.options.poses, path.join(dir, 'a.poses.json'));
  });

  test('bad input is a usage error', () => {
    for (const argv of [[], ['--out'], ['--out', 'x.y4m', '--fps', '0'], ['--out', 'x.y4m', '--width', '641'],
      ['--out', 'x.y4m', '--marker', 'hiro'], ['--out', 'x.y4m', '--bogus'], ['--out', 'x.y4m', 'extra']]) {
      assert.equal(parseVideoOptions(argv).kind, 'error', argv.join(' '));
    }
    assert.equal(parseVideoOptions(['-h']).kind, 'help');
  });

  test('run: --help exits 0, a bad flag exits 2 with the message and the help', async () => {
    const out = capture();
    assert.equal(await run(['--help'], { stdout: out.stream }), 0);
    assert.match(out.text(), /^Usage: carlab video --out FILE\.y4m/);
    const err = capture();
    assert.equal(await run(['--out', 'x.y4m', '--fps', 'many'], { stderr: err.stream }), 2);
    assert.match(err.text(), /^carlab video: --fps: must be an integer in 1\.\.60, got 'many'\n\nUsage: carlab video/);
  });
});

describe('y4m', () => {
  test('header and BT.601 limited-range colours', () => {
    assert.equal(y4mHeader(640, 480, 10), 'YUV4MPEG2 W640 H480 F10:1 Ip A1:1 C420jpeg\n');
    const rgba = new Uint8Array(2 * 2 * 4);
    rgba.fill(255);
    assert.deepEqual([...rgbaToI420(rgba, 2, 2)], [235, 235, 235, 235, 128, 128]);
    rgba.fill(0);
    for (let i = 3; i < rgba.length; i += 4) rgba[i] = 255;
    assert.deepEqual([...rgbaToI420(rgba, 2, 2)], [16, 16, 16, 16, 128, 128]);
    const red = new Uint8Array([255, 0, 0, 255, 255, 0, 0, 255, 255, 0, 0, 255, 255, 0, 0, 255]);
    const [y, , , , u, v] = rgbaToI420(red, 2, 2);
    assert.deepEqual([y, u, v], [81, 90, 240]);
  });

  test('writeVideo writes every frame and the true pose of each', async () => {
    const out = path.join(dir, 'small.y4m');
    const err = capture();
    const stdout = capture();
    const code = await run(['--out', out, '--width', '160', '--height', '120', '--fps', '5', '--seconds', '2'], { stdout: stdout.stream, stderr: err.stream });
    assert.equal(code, 0, err.text());
    const bytes = readFileSync(out);
    const header = y4mHeader(160, 120, 5);
    assert.equal(bytes.subarray(0, header.length).toString('latin1'), header);
    const frameBytes = 'FRAME\n'.length + (160 * 120 * 3) / 2;
    assert.equal(statSync(out).size, header.length + 10 * frameBytes);
    assert.equal(bytes.subarray(header.length, header.length + 6).toString('latin1'), 'FRAME\n');
    const doc = JSON.parse(readFileSync(path.join(dir, 'small.poses.json'), 'utf8'));
    assert.equal(doc.frames, 10);
    assert.equal(doc.poses.length, 10);
    assert.deepEqual(doc.camera, { width: 160, height: 120, fx: 140, fy: 140, cx: 79.5, cy: 59.5 });
    assert.equal(doc.marker, 'pattern');
    for (const p of doc.poses) {
      assert.equal(p.position.length, 3);
      assert.equal(p.quaternion.length, 4);
      assert.ok(['full', 'partial', 'none'].includes(p.visible));
    }
    assert.match(stdout.text(), /10 frames 160x120 @ 5 fps/);
  });

  test('the video is deterministic', () => {
    const a = path.join(dir, 'det-a.y4m');
    const b = path.join(dir, 'det-b.y4m');
    const opts = { fps: 4, frames: 3, width: 128, height: 96, marker: /** @type {const} */ ({ type: 'pattern' }), size: 0.16 };
    writeVideo({ ...opts, out: a, poses: `${a}.json` });
    writeVideo({ ...opts, out: b, poses: `${b}.json` });
    assert.ok(readFileSync(a).equals(readFileSync(b)));
  });
});
