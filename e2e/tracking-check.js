// How the browser tests check AR tracking on the synthetic camera video, shared
// by every browser's tests (e2e/ar.spec.js: Chromium, Firefox; e2e/webkit.spec.js):
// the video and its true poses, and every processed frame compared with the
// true pose of the frame it was (each frame carries its index in a strip of
// grey cells, which the page reads back in probe mode).
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { writeVideo } from '../lab/commands/video.js';
import { DEFAULT_MARKER_SIZE_M, parseMarkerKind } from '../web/src/ar/marker-pattern.js';
import { lookAt, quatAngle, quatFromMat3 } from '../web/src/ar/pose-math.js';
import { DEFAULT_VIDEO, truePoses } from '../web/src/ar/synthetic.js';

/** One loop of the synthetic video (ms). */
export const LOOP_MS = (1000 * DEFAULT_VIDEO.frames) / DEFAULT_VIDEO.fps;
/** Frames of the first 2 s are not judged: AR.js settles its thresholds. */
export const WARMUP_MS = 2000;

/**
 * The limits every browser's tracking must meet on the synthetic video (README "Test it").
 */
export const TRACKING_LIMITS = Object.freeze({
  /** the marker found in at least this share of the frames that show it whole */
  detectionRate: 0.95,
  /** the camera position within this fraction of its distance to the marker */
  positionError: 0.05,
});

/**
 * Renders a synthetic camera video and reads back its true poses.
 * @param {string} marker 'pattern' | 'barcode-N'
 * @param {number} [seconds]
 * @param {number} [fps] frames a second (the camera's rate; tracking follows it)
 */
export function makeVideo(marker = 'pattern', seconds = LOOP_MS / 1000, fps = DEFAULT_VIDEO.fps) {
  const dir = mkdtempSync(path.join(tmpdir(), 'carlab-e2e-'));
  const file = path.join(dir, `${marker}.y4m`);
  const poses = path.join(dir, `${marker}.poses.json`);
  writeVideo({
    out: file, poses, fps, frames: Math.round(seconds * fps),
    width: 640, height: 480, marker: parseMarkerKind(marker), size: DEFAULT_MARKER_SIZE_M,
  });
  return { dir, file, truth: JSON.parse(readFileSync(poses, 'utf8')) };
}

/**
 * The true poses of the video the app draws itself (ar.html?source=synthetic:
 * DEFAULT_VIDEO, the same frames as makeVideo('pattern')), without writing a file.
 */
export function syntheticTruth() {
  return { poses: truePoses(DEFAULT_VIDEO) };
}

/**
 * Compares every processed frame with the true pose of the frame it was.
 * @param {any[]} frames window.carlab.frames
 * @param {any} truth the pose file
 */
export function analyseTracking(frames, truth) {
  const start = frames[0].t;
  const measured = frames.filter((f) => f.t - start >= WARMUP_MS);
  const warmup = frames.length - measured.length;
  let visibleFrames = 0;
  let detected = 0;
  let noMarkerFrames = 0;
  let falseDetections = 0;
  let unreadable = 0;
  const positionErrors = [];
  const angleErrors = [];
  /** @type {{ frame: number, t: number, error: number, position: number[], truth: number[] }[]} */
  const judged = [];
  for (const f of measured) {
    if (f.frame < 0) { unreadable++; continue; }
    const t = truth.poses[f.frame];
    if (t.visible === 'none') {
      noMarkerFrames++;
      if (f.visible) falseDetections++;
    }
    if (t.visible !== 'full') continue;
    visibleFrames++;
    if (!f.visible) continue;
    detected++;
    const d = Math.hypot(...t.position.map((/** @type {number} */ v, /** @type {number} */ i) => v - f.position[i]));
    positionErrors.push(d / Math.hypot(...t.position));
    judged.push({ frame: f.frame, t: Math.round(f.t - start), error: d / Math.hypot(...t.position), position: f.position, truth: t.position });
    angleErrors.push((quatAngle(t.quaternion, f.quaternion) * 180) / Math.PI);
  }
  const sorted = [...positionErrors].sort((a, b) => a - b);
  return {
    processed: frames.length,
    warmup,
    unreadable,
    visibleFrames,
    detected,
    detectionRate: visibleFrames ? detected / visibleFrames : 0,
    noMarkerFrames,
    falseDetections,
    positionError: {
      mean: sorted.reduce((a, b) => a + b, 0) / (sorted.length || 1),
      p50: sorted[Math.floor(sorted.length * 0.5)] ?? null,
      p95: sorted[Math.floor(sorted.length * 0.95)] ?? null,
      max: sorted.at(-1) ?? null,
    },
    angleErrorDegMax: angleErrors.length ? Math.max(...angleErrors) : null,
    /** the three frames farthest from the truth (frame index, ms since the first frame, poses): what a failure shows */
    worst: judged.sort((a, b) => b.error - a.error).slice(0, 3),
  };
}

/**
 * A fixed pose (camera at `position` looking at the marker centre) for a camera-less member.
 * @param {[number, number, number]} position
 */
export function lookingAtMarker(position) {
  return [...position, ...quatFromMat3(lookAt(position, [0, 0, 0], [0, 1, 0]))].map((v) => v.toFixed(5)).join(',');
}

/** Element-wise equal within eps. */
export const close = (/** @type {number[]} */ a, /** @type {number[]} */ b, eps = 1e-5) => a.every((v, i) => Math.abs(v - b[i]) < eps);
