import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, describe, test } from 'node:test';

import { decodeCameraPara, IDEAL_CAMERA } from '../web/src/ar/camera-model.js';
import { encodePatt } from '../web/src/ar/marker-pattern.js';
import { FILES, WEB_MARKERS_DIR, markerPixels, parseMarkersOptions, run } from './markers.js';

const dir = mkdtempSync(path.join(tmpdir(), 'carlab-markers-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function capture() {
  let text = '';
  return {
    stream: new Writable({ write(chunk, _e, cb) { text += chunk; cb(); } }),
    text: () => text,
  };
}

describe('carlab markers', () => {
  test('the committed web/public/markers is exactly what `carlab markers --out` makes', async () => {
    const out = path.join(dir, 'web');
    assert.equal(await run(['--out', out], { stdout: capture().stream }), 0);
    assert.deepEqual(readdirSync(out).sort(), readdirSync(WEB_MARKERS_DIR).sort());
    for (const name of readdirSync(out)) {
      assert.ok(readFileSync(path.join(out, name)).equals(readFileSync(path.join(WEB_MARKERS_DIR, name))),
        `${name} differs: run \`npx carlab markers --out web/public/markers\``);
    }
  });

  test('writes the .patt, the marker image and the ideal camera', async () => {
    const out = path.join(dir, 'all');
    const stdout = capture();
    assert.equal(await run(['--out', out, '--barcode', '5', '--barcode', '63', '--png', '--size', '0.1'], { stdout: stdout.stream }), 0);
    assert.deepEqual(readdirSync(out).sort(), [
      'barcode-5.png', 'barcode-5.svg', 'barcode-63.png', 'barcode-63.svg', FILES.camera, FILES.png, FILES.svg, FILES.patt,
    ].sort());
    assert.equal(readFileSync(path.join(out, FILES.patt), 'utf8'), encodePatt());
    const cam = decodeCameraPara(new Uint8Array(readFileSync(path.join(out, FILES.camera))));
    assert.equal(cam.width, IDEAL_CAMERA.width);
    assert.equal(cam.fx, IDEAL_CAMERA.fx);
    assert.match(readFileSync(path.join(out, FILES.svg), 'utf8'), /width="150mm"/); // 100 mm + 2 x 25 mm margin
    const png = readFileSync(path.join(out, FILES.png));
    assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    assert.match(stdout.text(), /wrote 8 files/);
  });

  test('marker pixels: white margin, black border', () => {
    const px = markerPixels({ type: 'pattern' }, 150);
    assert.equal(px[0], 255);
    assert.equal(px[30 * 150 + 75], 0); // inside the top border
  });

  test('usage errors exit 2 with the help', async () => {
    for (const argv of [[], ['--out', dir, '--size', 'big'], ['--out', dir, '--barcode', '64'], ['--out', dir, '--nope']]) {
      assert.equal(parseMarkersOptions(argv).kind, 'error', argv.join(' '));
    }
    const err = capture();
    assert.equal(await run(['--out', dir, '--barcode', 'x'], { stderr: err.stream }), 2);
    assert.match(err.text(), /^carlab markers: --barcode: must be an integer 0\.\.63, got 'x'\n\nUsage: carlab markers/);
    const out = capture();
    assert.equal(await run(['--help'], { stdout: out.stream }), 0);
    assert.match(out.text(), /^Usage: carlab markers --out DIR/);
  });
});
