// The synthetic camera that tests tracking end to end: carlab's marker lying
// on a tiled table, filmed by the ideal camera (camera-model.js) moving on a
// known path, rendered by inverse-mapping every pixel through the
// table-plane homography. `carlab video` writes these frames to a .y4m for
// Chromium's fake camera; the AR page's `?source=synthetic` draws the very
// same frames on a canvas for browsers that cannot fake a camera (Firefox).
// Each frame also carries its index in a strip of grey cells (light enough
// that ARToolKit never sees them as black), so a page can tell exactly
// which frame it processed and compare with the true pose.
// Runs in the browser and in Node: no DOM, no Node built-ins.

import { IDEAL_CAMERA, projectPoint } from './camera-model.js';
import { DEFAULT_MARKER_SIZE_M, MARGIN, compileMarker } from './marker-pattern.js';
import { lookAt, mulVec, quatFromMat3, sub, transpose } from './pose-math.js';

/**
 * @typedef {import('./camera-model.js').Intrinsics} Intrinsics
 * @typedef {import('./pose-math.js').Vec3} Vec3
 * @typedef {import('./pose-math.js').Quat} Quat
 * @typedef {import('./pose-math.js').Mat3} Mat3
 */

/**
 * @typedef {object} VideoSpec
 * @property {number} fps
 * @property {number} frames frames in one loop
 * @property {number} markerSize marker side in metres
 * @property {Intrinsics} camera
 * @property {import('./marker-pattern.js').MarkerKind} [marker]
 */

/** The default video: 6 s at 10 fps, 640x480, the 16 cm car marker. */
export const DEFAULT_VIDEO = Object.freeze({
  fps: 10,
  frames: 60,
  markerSize: DEFAULT_MARKER_SIZE_M,
  camera: IDEAL_CAMERA,
});

/** Fraction of the loop in which the camera looks at the marker; the rest looks away. */
export const VISIBLE_FRACTION = 0.85;

/**
 * Camera pose of frame `i` in the marker frame (AR.js / three.js
 * convention: marker in the x-z plane, y out of the marker, z towards the
 * bottom edge of the printed marker; camera looking down its -z).
 * The camera circles in front of the marker, rising and falling, coming
 * closer and going back, turning about its viewing axis, and looks away
 * from the table for the last part of the loop.
 * @param {number} i frame index (wraps around)
 * @param {VideoSpec} spec
 * @returns {{ position: Vec3, rotation: Mat3, quaternion: Quat, away: boolean }}
 */
export function cameraPose(i, spec) {
  const n = spec.frames;
  const k = ((i % n) + n) % n;
  const visibleFrames = Math.round(n * VISIBLE_FRACTION);
  const away = k >= visibleFrames;
  const s = away ? 0 : k / visibleFrames;
  const tau = 2 * Math.PI;
  const size = spec.markerSize / DEFAULT_MARKER_SIZE_M; // paths scale with the marker
  const azimuth = 0.55 * Math.sin(tau * s);
  const elevation = ((65 + 15 * Math.sin(tau * 2 * s + 0.5)) * Math.PI) / 180;
  const distance = (0.48 + 0.08 * Math.sin(tau * 1.5 * s)) * size;
  /** @type {Vec3} */
  const position = [
    distance * Math.cos(elevation) * Math.sin(azimuth),
    distance * Math.sin(elevation),
    distance * Math.cos(elevation) * Math.cos(azimuth),
  ];
  /** @type {Vec3} */
  const target = away
    ? [0.9 * size, 0, -0.7 * size]
    : [0.025 * size * Math.sin(tau * 2 * s), 0, 0.02 * size * Math.cos(tau * s)];
  const roll = away ? 0.2 : 0.4 * Math.sin(tau * 1.5 * s);
  const rotation = lookAt(position, target, [0, 1, 0], roll);
  return { position, rotation, quaternion: quatFromMat3(rotation), away };
}

/**
 * Where a marker-frame point appears in the ARToolKit camera frame.
 * @param {{ position: Vec3, rotation: Mat3 }} pose camera pose in the marker frame
 * @param {Vec3} p
 * @returns {Vec3}
 */
export function toArCamera(pose, p) {
  const gl = mulVec(transpose(pose.rotation), sub(p, pose.position));
  return [gl[0], -gl[1], -gl[2]];
}

/**
 * Pixel positions of the black square's corners (top-left, top-right,
 * bottom-right, bottom-left of the printed marker), and how much of the
 * marker is in the picture: 'full' (whole black square at least 4 px
 * inside), 'none' (no part of the paper), else 'partial'.
 * @param {{ position: Vec3, rotation: Mat3 }} pose
 * @param {VideoSpec} spec
 */
export function markerVisibility(pose, spec) {
  const cam = spec.camera;
  const h = spec.markerSize / 2;
  const outer = h + MARGIN * spec.markerSize;
  /** @param {number} e */
  const square = (e) => /** @type {Vec3[]} */ ([[-e, 0, -e], [e, 0, -e], [e, 0, e], [-e, 0, e]]);
  const corners = square(h).map((p) => projectPoint(cam, toArCamera(pose, p)));
  const paper = square(outer).map((p) => projectPoint(cam, toArCamera(pose, p)));
  const inside = (/** @type {[number, number] | null} */ c, /** @type {number} */ m) => c !== null
    && c[0] >= m && c[1] >= m && c[0] <= cam.width - 1 - m && c[1] <= cam.height - 1 - m;
  let visible = 'partial';
  if (corners.every((c) => inside(c, 4))) visible = 'full';
  else if (paper.every((c) => c !== null)) {
    const xs = paper.map((c) => c[0]);
    const ys = paper.map((c) => c[1]);
    if (Math.max(...xs) < -0.5 || Math.min(...xs) > cam.width - 0.5
      || Math.max(...ys) < -0.5 || Math.min(...ys) > cam.height - 0.5) visible = 'none';
  } else if (paper.every((c) => c === null)) visible = 'none';
  return { visible, corners };
}

/** Frames whose marker is in the picture whole, per spec (computed once). @type {WeakMap<VideoSpec, boolean[]>} */
const wholeFrames = new WeakMap();

/**
 * Where the phone filming the video really is `ms` after the video's first frame: the camera
 * path at that instant (between frames: the path goes on, as a phone does between camera frames),
 * as a pose [x, y, z, qx, qy, qz, qw] in the marker frame; null while the frame shown then does
 * not have the marker in it whole (the camera looking away, the loop's wrap), where nothing
 * the phone sends can be judged.
 * @param {number} ms
 * @param {VideoSpec} [spec]
 * @returns {[number, number, number, number, number, number, number] | null}
 */
export function syntheticTruthAt(ms, spec = DEFAULT_VIDEO) {
  let whole = wholeFrames.get(spec);
  if (!whole) wholeFrames.set(spec, whole = truePoses(spec).map((f) => f.visible === 'full'));
  const f = (ms / 1000) * spec.fps;
  const k = ((Math.floor(f) % spec.frames) + spec.frames) % spec.frames;
  // the last frame of the loop: the path jumps back to frame 0 within it
  if (!whole[k] || k === spec.frames - 1) return null;
  const { position, quaternion } = cameraPose(f, spec);
  return [position[0], position[1], position[2], quaternion[0], quaternion[1], quaternion[2], quaternion[3]];
}

/**
 * The true pose record of every frame, as written beside the video.
 * @param {VideoSpec} spec
 */
export function truePoses(spec) {
  const frames = [];
  for (let i = 0; i < spec.frames; i++) {
    const pose = cameraPose(i, spec);
    const { visible, corners } = markerVisibility(pose, spec);
    frames.push({
      i,
      t: i / spec.fps,
      visible,
      position: pose.position,
      quaternion: pose.quaternion,
      corners,
    });
  }
  return frames;
}

// --- frame index code -----------------------------------------------------

/** Frame-code strip: 2 sync cells, 12 index bits, 4 check bits, cells of CODE_CELL px. */
export const CODE_CELL = 8;
const CODE_BITS = 18;
/** Grey levels of a 1 and a 0 cell: both far above ARToolKit's black threshold (100). */
const CODE_HI = 240;
const CODE_LO = 135;

/** @param {number} index */
function codeCheck(index) {
  return ((index ^ (index >> 4) ^ (index >> 8)) & 15) ^ 0b1010;
}

/**
 * The cells (1/0) that encode a frame index.
 * @param {number} index 0..4095
 */
export function frameCodeBits(index) {
  const bits = [1, 0];
  for (let b = 11; b >= 0; b--) bits.push((index >> b) & 1);
  const check = codeCheck(index);
  for (let b = 3; b >= 0; b--) bits.push((check >> b) & 1);
  return bits;
}

/** Top-left pixel of the frame-code strip for an image height. @param {number} height */
export function frameCodeOrigin(height) {
  return { x: CODE_CELL, y: height - 2 * CODE_CELL };
}

/**
 * Reads the frame index from RGBA pixels of the strip's row band
 * (`rgba` holds rows y0 .. y0 + rows - 1 of an image `width` wide).
 * @param {Uint8ClampedArray | Uint8Array} rgba
 * @param {number} width
 * @param {number} yInBand row of the cells' centres inside the band
 * @returns {number} the index, or -1 if no valid code is there
 */
export function readFrameCode(rgba, width, yInBand) {
  const bits = [];
  for (let k = 0; k < CODE_BITS; k++) {
    const x = CODE_CELL + k * CODE_CELL + CODE_CELL / 2;
    const o = (yInBand * width + x) * 4;
    const luma = (rgba[o] + rgba[o + 1] + rgba[o + 2]) / 3;
    bits.push(luma > (CODE_HI + CODE_LO) / 2 ? 1 : 0);
  }
  if (bits[0] !== 1 || bits[1] !== 0) return -1;
  let index = 0;
  for (let b = 2; b < 14; b++) index = (index << 1) | bits[b];
  let check = 0;
  for (let b = 14; b < 18; b++) check = (check << 1) | bits[b];
  return check === codeCheck(index) ? index : -1;
}

// --- rendering -------------------------------------------------------------

/** Colours (sRGB) of the scene. */
const INK = [22, 22, 26];
const PAPER = [246, 245, 240];
const TILE_A = [216, 198, 172];
const TILE_B = [201, 183, 158];
const WALL = [226, 230, 236];
/** Table tiles, metres per tile at the default marker size. */
const TILE_M = 0.08;
const TABLE_HALF_M = 1.2;

/**
 * The homography from image points (u, v, 1) to table-plane points
 * (x, z, 1) of the marker frame, up to scale; the third component of the
 * result is positive when the plane is in front of the camera.
 * @param {{ position: Vec3, rotation: Mat3 }} pose
 * @param {Intrinsics} cam
 * @returns {number[]} 9 numbers, row-major
 */
export function imageToPlane(pose, cam) {
  // plane point (a, 0, b) -> AR camera: a*m0 + b*m2 + t
  const m0 = toArCamera(pose, [1, 0, 0]);
  const m2 = toArCamera(pose, [0, 0, 1]);
  const t = toArCamera(pose, [0, 0, 0]);
  const c0 = sub(m0, t);
  const c2 = sub(m2, t);
  // H = K [c0 c2 t]
  const K = [[cam.fx, 0, cam.cx], [0, cam.fy, cam.cy], [0, 0, 1]];
  const cols = [c0, c2, t].map((c) => mulVec(K, c));
  const H = [
    [cols[0][0], cols[1][0], cols[2][0]],
    [cols[0][1], cols[1][1], cols[2][1]],
    [cols[0][2], cols[1][2], cols[2][2]],
  ];
  // inverse by adjugate / determinant: keeps the sign convention exact
  const [[a, b, c], [d, e, f], [g, h, i]] = H;
  const A = e * i - f * h;
  const B = -(d * i - f * g);
  const C = d * h - e * g;
  const det = a * A + b * B + c * C;
  return [
    A / det, -(b * i - c * h) / det, (b * f - c * e) / det,
    B / det, (a * i - c * g) / det, -(a * f - c * d) / det,
    C / det, -(a * h - b * g) / det, (a * e - b * d) / det,
  ];
}

/**
 * Renders frame `i` into `out` (RGBA, width x height of spec.camera),
 * 2x2 samples per pixel.
 * @param {number} i
 * @param {VideoSpec} spec
 * @param {Uint8ClampedArray | Uint8Array} [out]
 * @returns {Uint8ClampedArray | Uint8Array}
 */
export function renderFrame(i, spec, out) {
  const { width, height } = spec.camera;
  const rgba = out ?? new Uint8ClampedArray(width * height * 4);
  const pose = cameraPose(i, spec);
  const [h0, h1, h2, h3, h4, h5, h6, h7, h8] = imageToPlane(pose, spec.camera);
  const marker = compileMarker(spec.marker);
  const size = spec.markerSize;
  const inv = 1 / size;
  const tile = TILE_M * (size / DEFAULT_MARKER_SIZE_M);
  const invTile = 1 / tile;
  const tableHalf = TABLE_HALF_M * (size / DEFAULT_MARKER_SIZE_M);
  const palette = [INK, PAPER, TILE_A, TILE_B, WALL];
  const acc = new Uint16Array(width * 3);
  for (let v = 0; v < height; v++) {
    acc.fill(0);
    for (let sv = 0; sv < 2; sv++) {
      const vv = v + (sv ? 0.25 : -0.25);
      const wRow = h7 * vv + h8;
      const xRow = h1 * vv + h2;
      const zRow = h4 * vv + h5;
      for (let su = 0; su < 2; su++) {
        const du = su ? 0.25 : -0.25;
        for (let u = 0, a = 0; u < width; u++, a += 3) {
          const uu = u + du;
          const w = h6 * uu + wRow;
          let material = 4;
          if (w > 0) {
            const x = (h0 * uu + xRow) / w;
            const z = (h3 * uu + zRow) / w;
            const m = marker.sample(x * inv, z * inv);
            if (m >= 0) material = m;
            else if (x > -tableHalf && x < tableHalf && z > -tableHalf && z < tableHalf) {
              material = (Math.floor(x * invTile) + Math.floor(z * invTile)) & 1 ? 2 : 3;
            }
          }
          const c = palette[material];
          acc[a] += c[0]; acc[a + 1] += c[1]; acc[a + 2] += c[2];
        }
      }
    }
    for (let u = 0, a = 0, o = v * width * 4; u < width; u++, a += 3, o += 4) {
      rgba[o] = (acc[a] + 2) >> 2;
      rgba[o + 1] = (acc[a + 1] + 2) >> 2;
      rgba[o + 2] = (acc[a + 2] + 2) >> 2;
      rgba[o + 3] = 255;
    }
  }
  drawFrameCode(rgba, width, height, ((i % spec.frames) + spec.frames) % spec.frames);
  return rgba;
}

/**
 * Paints the frame-code strip.
 * @param {Uint8ClampedArray | Uint8Array} rgba @param {number} width @param {number} height @param {number} index
 */
export function drawFrameCode(rgba, width, height, index) {
  const { x: x0, y: y0 } = frameCodeOrigin(height);
  frameCodeBits(index).forEach((bit, k) => {
    const level = bit ? CODE_HI : CODE_LO;
    for (let y = y0; y < y0 + CODE_CELL; y++) {
      for (let x = x0 + k * CODE_CELL; x < x0 + (k + 1) * CODE_CELL; x++) {
        const o = (y * width + x) * 4;
        rgba[o] = level; rgba[o + 1] = level; rgba[o + 2] = level; rgba[o + 3] = 255;
      }
    }
  });
}
