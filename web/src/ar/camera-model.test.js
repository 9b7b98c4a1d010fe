import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import {
  CAMERA_PARA_BYTES, IDEAL_CAMERA, coverScale, decodeCameraPara, encodeCameraPara, idealCamera, projectionMatrixGL, projectPoint,
} from './camera-model.js';

describe('camera_para.dat', () => {
  test('is 176 big-endian bytes: xsize, ysize, mat[3][4], dist_factor[9]', () => {
    const bytes = encodeCameraPara(IDEAL_CAMERA);
    assert.equal(bytes.length, CAMERA_PARA_BYTES);
    const view = new DataView(bytes.buffer);
    assert.equal(view.getInt32(0, false), 640);
    assert.equal(view.getInt32(4, false), 480);
    // mat row 0: fx 0 cx 0
    assert.equal(view.getFloat64(8, false), 560);
    assert.equal(view.getFloat64(16, false), 0);
    assert.equal(view.getFloat64(24, false), 319.5);
    // mat row 2: 0 0 1 0
    assert.equal(view.getFloat64(8 + 8 * 10, false), 1);
    // dist_factor: k1 k2 p1 p2 = 0, fx fy cx cy, s = 1
    const dist = Array.from({ length: 9 }, (_, i) => view.getFloat64(104 + 8 * i, false));
    assert.deepEqual(dist, [0, 0, 0, 0, 560, 560, 319.5, 239.5, 1]);
  });

  test('round-trips through decodeCameraPara', () => {
    const cam = idealCamera(480, 640);
    const back = decodeCameraPara(encodeCameraPara(cam));
    for (const key of /** @type {const} */ (['width', 'height', 'fx', 'fy', 'cx', 'cy'])) assert.equal(back[key], cam[key], key);
    assert.throws(() => decodeCameraPara(new Uint8Array(136)), /176 bytes/);
  });

  test('the ideal camera has square pixels, f = 0.875 x the long side, the centre as principal point', () => {
    assert.deepEqual(idealCamera(640, 480), { width: 640, height: 480, fx: 560, fy: 560, cx: 319.5, cy: 239.5 });
    assert.equal(idealCamera(480, 640).fx, 560);
    assert.equal(idealCamera(1280, 720).fx, 1120);
  });
});

describe('projection', () => {
  test('the GL projection puts a point on the pixel the camera model sees it at', () => {
    const cam = IDEAL_CAMERA;
    const m = projectionMatrixGL(cam); // column-major
    for (const p of [[0.1, -0.05, 0.5], [-0.2, 0.1, 1.3], [0, 0, 2]]) {
      const [u, v] = /** @type {[number, number]} */ (projectPoint(cam, /** @type {[number, number, number]} */ (p)));
      // GL camera point: (x, -y, -z)
      const g = [p[0], -p[1], -p[2], 1];
      const clip = [0, 1, 2, 3].map((r) => m[r] * g[0] + m[4 + r] * g[1] + m[8 + r] * g[2] + m[12 + r] * g[3]);
      const ndcX = clip[0] / clip[3];
      const ndcY = clip[1] / clip[3];
      assert.ok(Math.abs(ndcX - (2 * (u + 0.5) / cam.width - 1)) < 1e-9);
      assert.ok(Math.abs(ndcY - (1 - 2 * (v + 0.5) / cam.height)) < 1e-9);
      assert.ok(clip[2] / clip[3] > -1 && clip[2] / clip[3] < 1, 'inside the depth range');
    }
    assert.equal(projectPoint(cam, [0, 0, -1]), null);
  });

  test('coverScale stretches the cropped axis', () => {
    // 4:3 video in a portrait phone: the width is cropped
    const portrait = coverScale(640, 480, 412, 839);
    assert.equal(portrait.scaleY, 1);
    assert.ok(Math.abs(portrait.scaleX - (839 * 4 / 3) / 412) < 1e-9);
    assert.deepEqual(coverScale(640, 480, 320, 240), { scaleX: 1, scaleY: 1 });
  });
});
