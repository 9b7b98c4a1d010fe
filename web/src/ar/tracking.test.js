import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { Matrix4, Quaternion, Vector3 } from 'three';

import { PATTERN_RATIO } from './marker-pattern.js';
import { CODE_CELL, drawFrameCode, frameCodeOrigin } from './synthetic.js';
import {
  cameraParameters, cameraPoseInMarker, contextOptions, countFrame, createFrameStep, createLatest, createStats,
  forgetPreviousPoses, framesPerSecond, markerOptions, posePredictedAt, processingSize, scheduleFrames, shapeChanged, SELF_PREDICT_MAX_MS,
} from './tracking.js';
import { idealCamera } from './camera-model.js';

/** @typedef {import('./tracking.js').FrameLoop} FrameLoop */
/** @typedef {import('./tracking.js').FrameInfo} FrameInfo */

const close = (/** @type {number} */ a, /** @type {number} */ b, eps = 1e-9) => assert.ok(Math.abs(a - b) < eps, `${a} != ${b}`);

/**
 * A marker-to-camera (model-view) matrix in marker sides for a camera at
 * `position` (marker sides) with orientation `quaternion`, as AR.js sets it.
 * @param {number[]} position @param {Quaternion} quaternion
 */
function modelViewFor(position, quaternion) {
  const cameraInMarker = new Matrix4().compose(new Vector3(...position), quaternion, new Vector3(1, 1, 1));
  return cameraInMarker.invert();
}

describe('pose extraction', () => {
  test('inverts the model-view matrix and scales the translation to metres', () => {
    const q = new Quaternion().setFromAxisAngle(new Vector3(1, 0.2, 0).normalize(), -0.8);
    const pose = cameraPoseInMarker(modelViewFor([0.5, 2, 1.5], q), 0.16);
    close(pose[0], 0.5 * 0.16);
    close(pose[1], 2 * 0.16);
    close(pose[2], 1.5 * 0.16);
    // same rotation (up to the quaternion's sign)
    const sign = Math.sign(pose[6] * q.w) || 1;
    close(pose[3], sign * q.x);
    close(pose[4], sign * q.y);
    close(pose[5], sign * q.z);
    close(pose[6], sign * q.w);
  });

  test('the identity model-view is a camera at the marker centre', () => {
    assert.deepEqual(cameraPoseInMarker(new Matrix4(), 0.2).map((v) => Math.abs(v)), [0, 0, 0, 0, 0, 0, 1]);
  });

  test('a reused scratch gives fresh arrays and leaves the input alone', () => {
    const m = modelViewFor([0, 3, 0], new Quaternion());
    const before = [...m.elements];
    const a = cameraPoseInMarker(m, 1);
    const b = cameraPoseInMarker(modelViewFor([1, 0, 0], new Quaternion()), 1);
    assert.notEqual(a, b);
    close(a[1], 3);
    close(b[0], 1);
    assert.deepEqual(m.elements, before);
  });
});

describe('marker and context options', () => {
  test('pattern markers load carlab.patt from the assets, in marker sides', () => {
    assert.deepEqual(markerOptions({ type: 'pattern' }, '/m/'),
      { type: 'pattern', patternUrl: '/m/carlab.patt', size: 1, changeMatrixMode: 'modelViewMatrix' });
  });

  test('barcode markers give their value, in marker sides', () => {
    assert.deepEqual(markerOptions({ type: 'barcode', value: 5 }, '/m/'),
      { type: 'barcode', barcodeValue: 5, size: 1, changeMatrixMode: 'modelViewMatrix' });
  });

  test('the context detects matrix codes only for barcode markers', () => {
    const pattern = contextOptions({ type: 'pattern' }, 480, 640, 'x');
    assert.equal(pattern.detectionMode, 'mono');
    assert.equal(contextOptions({ type: 'barcode', value: 1 }, 640, 480, 'x').detectionMode, 'mono_and_matrix');
    assert.equal(pattern.canvasWidth, 480);
    assert.equal(pattern.canvasHeight, 640);
    assert.equal(pattern.patternRatio, PATTERN_RATIO);
    assert.equal(pattern.matrixCodeType, '3x3');
    assert.equal(pattern.cameraParametersUrl, 'x');
  });

  test('640x480 uses camera_para.dat, other shapes the same ideal camera as bytes', () => {
    assert.equal(cameraParameters(idealCamera(640, 480), '/m/'), '/m/camera_para.dat');
    const bytes = cameraParameters(idealCamera(480, 640), '/m/');
    assert.ok(bytes instanceof Uint8Array && bytes.length > 0);
  });

  test('the processing size keeps the shape, 640 on the long side, even numbers', () => {
    const size = (/** @type {number} */ w, /** @type {number} */ h) => processingSize(/** @type {HTMLVideoElement} */ ({ videoWidth: w, videoHeight: h }));
    assert.deepEqual(size(1280, 720), { width: 640, height: 360 });
    assert.deepEqual(size(720, 1280), { width: 360, height: 640 });
    assert.deepEqual(size(1920, 1081), { width: 640, height: 360 });
    assert.deepEqual(size(320, 240), { width: 640, height: 480 });
  });

  test('a new tracker is needed only when the picture really changed shape', () => {
    assert.equal(shapeChanged({ width: 480, height: 640 }, { width: 640, height: 480 }), true);
    assert.equal(shapeChanged({ width: 640, height: 360 }, { width: 640, height: 480 }), true);
    assert.equal(shapeChanged({ width: 640, height: 480 }, { width: 640, height: 480 }), false);
    assert.equal(shapeChanged({ width: 0, height: 0 }, { width: 640, height: 480 }), false, 'no picture yet');
  });
});

describe('frame bookkeeping', () => {
  test('counts frames, detections and the last second for fps', () => {
    const stats = createStats(0);
    countFrame(stats, 0, 10, false);
    assert.equal(stats.processMs, 10);
    countFrame(stats, 100, 120, true);
    close(stats.processMs, 0.9 * 10 + 0.1 * 20);
    assert.equal(stats.processed, 2);
    assert.equal(stats.detected, 1);
    assert.equal(stats.lastSeenAt, 120);
    for (let t = 200; t <= 1200; t += 100) countFrame(stats, t, t, false);
    // frames older than a second before the newest are dropped
    assert.deepEqual(stats.recent, [200, 300, 400, 500, 600, 700, 800, 900, 1000, 1100, 1200]);
    close(framesPerSecond(stats), 10);
  });

  test('fps is 0 with fewer than two frames', () => {
    const stats = createStats(0);
    assert.equal(framesPerSecond(stats), 0);
    countFrame(stats, 0, 5, false);
    assert.equal(framesPerSecond(stats), 0);
  });
});

/**
 * A frame loop with a fake AR.js context: `update` says whether it took the
 * frame; `throws` makes it fail; `picture` is the processed picture (RGBA,
 * 20 code cells wide) that getImageData reads from, at rows `codeY`...
 * @param {{ taken?: boolean, throws?: boolean, picture?: Uint8ClampedArray, codeY?: number }} [fake]
 */
function fakeLoop(fake = {}) {
  /** @param {Uint8ClampedArray} rgba @param {number} width */
  function band(rgba, width) {
    return (/** @type {number} */ x, /** @type {number} */ y, /** @type {number} */ w, /** @type {number} */ h) => {
      assert.equal(x, 0);
      assert.equal(w, width);
      return { data: rgba.slice(y * width * 4, (y + h) * width * 4) };
    };
  }
  const calls = { update: 0 };
  const context = {
    update: () => {
      calls.update++;
      if (fake.throws) throw new Error('bad frame');
      return fake.taken ?? true;
    },
    arController: fake.picture ? { ctx: { getImageData: band(fake.picture, 20 * CODE_CELL) } } : null,
  };
  /** @type {FrameLoop} */
  const loop = {
    tracker: /** @type {any} */ ({ context, codeY: fake.codeY ?? 0 }),
    running: true,
    rebuilding: false,
    stats: createStats(0),
    latest: createLatest(),
  };
  return { loop, calls };
}

describe('the frame step', () => {
  const element = /** @type {HTMLVideoElement} */ ({});

  test('a visible marker updates the latest pose and the frame report', () => {
    const { loop } = fakeLoop();
    /** @type {FrameInfo[]} */
    const frames = [];
    const markerRoot = { visible: true, matrix: modelViewFor([0, 5, 0], new Quaternion()) };
    createFrameStep(loop, element, { markerRoot, markerSize: 0.1, onFrame: (f) => frames.push(f) })();
    assert.equal(loop.stats.processed, 1);
    assert.equal(loop.stats.detected, 1);
    assert.ok(loop.latest.pose);
    close(loop.latest.pose[1], 0.5);
    assert.equal(loop.latest.at, frames[0].t);
    assert.equal(frames.length, 1);
    assert.equal(frames[0].visible, true);
    assert.equal(frames[0].frame, -1);
    assert.deepEqual(frames[0].position, loop.latest.pose.slice(0, 3));
    assert.deepEqual(frames[0].quaternion, loop.latest.pose.slice(3));
  });

  test('every processed frame leaves ARToolKit no previous pose to refine: the next pose comes from its frame alone', () => {
    const { loop } = fakeLoop();
    const seen = { inPrevious: true, inCurrent: true };
    const code = { inPrevious: false, inCurrent: true };
    /** @type {any} */ (loop.tracker.context).arController = { patternMarkers: { 0: seen }, barcodeMarkers: { 5: code } };
    createFrameStep(loop, element, { markerRoot: { visible: true, matrix: modelViewFor([0, 5, 0], new Quaternion()) }, markerSize: 0.1 })();
    assert.deepEqual([seen.inCurrent, code.inCurrent], [false, false]);
    assert.equal(loop.stats.detected, 1, 'the frame itself still counts as detected');
    forgetPreviousPoses(null);
    forgetPreviousPoses({});
  });

  test('no marker: counted, reported, the last pose kept', () => {
    const { loop } = fakeLoop();
    loop.latest.pose = [1, 2, 3, 0, 0, 0, 1];
    /** @type {FrameInfo[]} */
    const frames = [];
    createFrameStep(loop, element, { markerRoot: { visible: false, matrix: new Matrix4() }, markerSize: 1, onFrame: (f) => frames.push(f) })();
    assert.equal(loop.stats.processed, 1);
    assert.equal(loop.stats.detected, 0);
    assert.deepEqual(loop.latest.pose, [1, 2, 3, 0, 0, 0, 1]);
    assert.deepEqual(frames.map((f) => [f.visible, f.position, f.quaternion]), [[false, null, null]]);
  });

  test('a frame AR.js skipped is not counted or reported', () => {
    const { loop } = fakeLoop({ taken: false });
    let reported = 0;
    createFrameStep(loop, element, { markerRoot: { visible: true, matrix: new Matrix4() }, markerSize: 1, onFrame: () => reported++ })();
    assert.equal(loop.stats.processed, 0);
    assert.equal(reported, 0);
  });

  test('frames are skipped while the tracker is being rebuilt', () => {
    const { loop, calls } = fakeLoop();
    loop.rebuilding = true;
    createFrameStep(loop, element, { markerRoot: { visible: false, matrix: new Matrix4() }, markerSize: 1 })();
    assert.equal(calls.update, 0);
  });

  test('a frame that throws is counted and logged once, and tracking goes on', (t) => {
    const { loop } = fakeLoop({ throws: true });
    const logged = t.mock.method(console, 'error', () => {});
    const step = createFrameStep(loop, element, { markerRoot: { visible: false, matrix: new Matrix4() }, markerSize: 1 });
    step();
    step();
    assert.equal(loop.stats.errors, 2);
    assert.equal(logged.mock.callCount(), 1);
  });

  test('probe mode reads the synthetic frame code from the processed picture', () => {
    const width = 20 * CODE_CELL;
    const height = 6 * CODE_CELL;
    const picture = new Uint8ClampedArray(width * height * 4);
    drawFrameCode(picture, width, height, 1234);
    const { loop } = fakeLoop({ picture, codeY: frameCodeOrigin(height).y });
    /** @type {FrameInfo[]} */
    const frames = [];
    createFrameStep(loop, element, { markerRoot: { visible: false, matrix: new Matrix4() }, markerSize: 1, probe: true, onFrame: (f) => frames.push(f) })();
    assert.equal(frames[0].frame, 1234);
  });
});

describe('frame scheduling', () => {
  test('with requestVideoFrameCallback: one step per video frame until stopped', () => {
    /** @type {(() => void)[]} */
    const pending = [];
    const element = { currentTime: 0, requestVideoFrameCallback: (/** @type {() => void} */ cb) => pending.push(cb) };
    const loop = { running: true };
    let steps = 0;
    scheduleFrames(/** @type {any} */ (element), loop, () => steps++, () => assert.fail('no animation frames'));
    assert.equal(steps, 0);
    /** @type {() => void} */ (pending.shift())();
    /** @type {() => void} */ (pending.shift())();
    assert.equal(steps, 2);
    loop.running = false;
    /** @type {() => void} */ (pending.shift())();
    assert.equal(steps, 2);
    assert.equal(pending.length, 0, 'no more callbacks once stopped');
  });

  test('without it: steps on animation frames only when the video time moved', () => {
    /** @type {(() => void)[]} */
    const pending = [];
    const element = { currentTime: 0 };
    const loop = { running: true };
    let steps = 0;
    scheduleFrames(element, loop, () => steps++, (cb) => { pending.push(cb); });
    /** @type {() => void} */ (pending.shift())();
    assert.equal(steps, 1, 'the first frame');
    /** @type {() => void} */ (pending.shift())();
    assert.equal(steps, 1, 'same video time');
    element.currentTime = 0.04;
    /** @type {() => void} */ (pending.shift())();
    assert.equal(steps, 2);
    loop.running = false;
    /** @type {() => void} */ (pending.shift())();
    assert.equal(pending.length, 0);
  });
});

describe('the pose a phone sends (posePredictedAt)', () => {
  test('the newest tracked pose carried on along the last motion for the time since its frame, at most 200 ms', () => {
    const latest = createLatest();
    assert.equal(posePredictedAt(latest, 0), null, 'nothing tracked yet');
    Object.assign(latest, { pose: [0.1, 0, 0, 0, 0, 0, 1], at: 1060, capturedAt: 1000, previous: { pose: [0, 0, 0, 0, 0, 0, 1], capturedAt: 900 } });
    close(/** @type {number[]} */ (posePredictedAt(latest, 1150))[0], 0.25); // 1 m/s, 150 ms on
    close(/** @type {number[]} */ (posePredictedAt(latest, 5000))[0], 0.1 + SELF_PREDICT_MAX_MS / 1000);
    close(/** @type {number[]} */ (posePredictedAt(latest, 990))[0], 0.1); // never before its own frame
    latest.previous = { pose: [0, 0, 0, 0, 0, 0, 1], capturedAt: 500 };
    assert.deepEqual(posePredictedAt(latest, 1150), [0.1, 0, 0, 0, 0, 0, 1], 'frames 0.5 s apart say nothing of the motion');
  });

  test('a tracked frame keeps the one before it and when each was captured', () => {
    const { loop } = fakeLoop();
    const step = createFrameStep(loop, /** @type {HTMLVideoElement} */ ({}), { markerRoot: { visible: true, matrix: modelViewFor([0, 5, 0], new Quaternion()) }, markerSize: 0.1 });
    step(1000);
    assert.equal(loop.latest.previous, null);
    assert.equal(loop.latest.capturedAt, 1000);
    step(1100);
    assert.equal(/** @type {any} */ (loop.latest).previous?.capturedAt, 1000);
    assert.equal(loop.latest.capturedAt, 1100);
  });
});
