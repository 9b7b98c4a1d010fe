import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { projectPoint } from './camera-model.js';
import { compileMarker } from './marker-pattern.js';
import {
  CODE_CELL, DEFAULT_VIDEO, cameraPose, drawFrameCode, frameCodeBits, frameCodeOrigin, imageToPlane, markerVisibility, readFrameCode,
  renderFrame, syntheticTruthAt, toArCamera, truePoses,
} from './synthetic.js';

const spec = DEFAULT_VIDEO;

describe('the synthetic path', () => {
  const poses = truePoses(spec);

  test('shows the whole marker in most frames and no marker at all in the rest', () => {
    const full = poses.filter((p) => p.visible === 'full').length;
    const none = poses.filter((p) => p.visible === 'none').length;
    assert.equal(full + none, spec.frames, 'no half-visible frames');
    assert.ok(full >= 0.8 * spec.frames, `${full} full frames`);
    assert.ok(none >= 5, `${none} frames without the marker`);
  });

  test('moves: distance, viewing angle and turn all vary', () => {
    const visible = poses.filter((p) => p.visible === 'full');
    const dist = visible.map((p) => Math.hypot(...p.position));
    const tilt = visible.map((p) => Math.acos(p.position[1] / Math.hypot(...p.position)) * (180 / Math.PI));
    assert.ok(Math.max(...dist) - Math.min(...dist) > 0.1, 'distance varies by > 10 cm');
    assert.ok(Math.max(...tilt) > 30 && Math.min(...tilt) < 15, 'viewed from 10..40 degrees off the normal');
  });

  test('keeps the marker paper clear of the frame-code strip', () => {
    const { x: x0, y: y0 } = frameCodeOrigin(spec.camera.height);
    const marker = compileMarker();
    for (const p of poses.filter((q) => q.visible === 'full')) {
      const h = imageToPlane(cameraPose(p.i, spec), spec.camera);
      for (let v = y0 - 2; v < y0 + CODE_CELL + 2; v++) {
        for (let u = x0 - 2; u < x0 + 18 * CODE_CELL + 2; u++) {
          const w = h[6] * u + h[7] * v + h[8];
          const x = (h[0] * u + h[1] * v + h[2]) / w;
          const z = (h[3] * u + h[4] * v + h[5]) / w;
          assert.ok(w <= 0 || marker.sample(x / spec.markerSize, z / spec.markerSize) < 0, `frame ${p.i}: paper at (${u}, ${v})`);
        }
      }
    }
  });

  test('pose records are unit quaternions and project the corners recorded', () => {
    for (const p of poses) {
      assert.ok(Math.abs(Math.hypot(...p.quaternion) - 1) < 1e-9);
      const { corners } = markerVisibility(cameraPose(p.i, spec), spec);
      assert.deepEqual(p.corners, corners);
    }
  });
});

describe('the frame code', () => {
  test('round-trips every index and rejects garbage', () => {
    const width = 20 * CODE_CELL;
    const height = 2 * CODE_CELL;
    const rgba = new Uint8ClampedArray(width * height * 4);
    for (let index = 0; index < 4096; index++) {
      drawFrameCode(rgba, width, height, index);
      assert.equal(readFrameCode(rgba.subarray(0), width, CODE_CELL / 2), index);
    }
    assert.equal(readFrameCode(new Uint8ClampedArray(width * height * 4).fill(200), width, CODE_CELL / 2), -1);
    assert.equal(frameCodeBits(0).length, 18);
  });
});

describe('renderFrame', () => {
  test('draws the marker where the camera model projects it', () => {
    const i = 12;
    const rgba = renderFrame(i, spec);
    const { width } = spec.camera;
    const pose = cameraPose(i, spec);
    const luma = (/** @type {number[]} */ [u, v]) => {
      const o = (Math.round(v) * width + Math.round(u)) * 4;
      return (rgba[o] + rgba[o + 1] + rgba[o + 2]) / 3;
    };
    const at = (/** @type {number} */ x, /** @type {number} */ z) => /** @type {[number, number]} */ (projectPoint(spec.camera, toArCamera(pose, [x, 0, z])));
    const s = spec.markerSize;
    assert.ok(luma(at(-0.4 * s, 0)) < 40, 'black border');
    assert.ok(luma(at(0.6 * s, 0.6 * s)) > 230, 'white margin');
    assert.ok(luma(at(1.2 * s, 0)) > 150 && luma(at(1.2 * s, 0)) < 225, 'table');
    // just inside and just outside the black square's corner
    assert.ok(luma(at(-0.49 * s, -0.49 * s)) < 40);
    assert.ok(luma(at(-0.52 * s, -0.52 * s)) > 230);
    const { y } = frameCodeOrigin(spec.camera.height);
    assert.equal(readFrameCode(rgba.subarray(y * width * 4), width, CODE_CELL / 2), i);
  });
});

describe('the truth between frames (syntheticTruthAt)', () => {
  test('at a frame it is the frame\'s true pose; between frames the path goes on; away and the wrap have none', () => {
    const poses = truePoses(DEFAULT_VIDEO);
    const frameMs = 1000 / DEFAULT_VIDEO.fps;
    const whole = poses.findIndex((p) => p.visible === 'full');
    const at = /** @type {number[]} */ (syntheticTruthAt(whole * frameMs));
    assert.deepEqual(at, [...poses[whole].position, ...poses[whole].quaternion]);
    const mid = /** @type {number[]} */ (syntheticTruthAt((whole + 0.5) * frameMs));
    const next = poses[whole + 1].position;
    assert.ok(mid.slice(0, 3).every((v, i) => Math.min(poses[whole].position[i], next[i]) - 1e-9 <= v && v <= Math.max(poses[whole].position[i], next[i]) + 1e-9),
      'half a frame on: between the two frames');
    const away = poses.findIndex((p) => p.visible !== 'full' && p.i > whole);
    assert.equal(syntheticTruthAt(away * frameMs), null);
    assert.equal(syntheticTruthAt((DEFAULT_VIDEO.frames - 0.5) * frameMs), null, 'the last frame wraps');
    assert.deepEqual(syntheticTruthAt((DEFAULT_VIDEO.frames + whole) * frameMs), at, 'the loop repeats');
  });
});
