/**
 * `carlab video`: render the fake-camera video that tests tracking: the
 * project's marker on a table, filmed by the ideal camera of camera_para.dat
 * moving on a known path (web/src/ar/synthetic.js), as a looping YUV4MPEG2
 * file for Chromium's `--use-file-for-fake-video-capture`, plus the true
 * camera pose of every frame in a side JSON file.
 *
 * @module lab/commands/video
 */

import { closeSync, mkdirSync, openSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';

import { idealCamera } from '../../web/src/ar/camera-model.js';
import { DEFAULT_MARKER_SIZE_M, markerKindName, parseMarkerKind } from '../../web/src/ar/marker-pattern.js';
import { CODE_CELL, DEFAULT_VIDEO, frameCodeOrigin, renderFrame, truePoses, VISIBLE_FRACTION } from '../../web/src/ar/synthetic.js';

const FLAGS = /** @type {const} */ ({
  out: { type: 'string', short: 'o' },
  poses: { type: 'string' },
  seconds: { type: 'string' },
  fps: { type: 'string' },
  width: { type: 'string' },
  height: { type: 'string' },
  marker: { type: 'string' },
  size: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
});

/** @returns {string} */
export function videoHelp() {
  return [
    'Usage: carlab video --out FILE.y4m [options]',
    '',
    'Render the fake-camera video for headless browsers: the marker moving and turning',
    'on a known path, as a looping .y4m (Chromium: --use-file-for-fake-video-capture=FILE),',
    'and the true camera pose of every frame in a side JSON file.',
    '',
    'Options:',
    '  -o, --out FILE.y4m   the video to write (required)',
    '      --poses FILE     the true poses (default: FILE.y4m with .poses.json)',
    `      --seconds S      length of one loop (default ${DEFAULT_VIDEO.frames / DEFAULT_VIDEO.fps})`,
    `      --fps N          frames per second (default ${DEFAULT_VIDEO.fps})`,
    `      --width W        image width (default ${DEFAULT_VIDEO.camera.width})`,
    `      --height H       image height (default ${DEFAULT_VIDEO.camera.height}); the camera is`,
    '                       the ideal one of camera_para.dat for that size',
    '      --marker KIND    pattern (default) or barcode-N, N in 0..63',
    `      --size M         marker side in metres (default ${DEFAULT_MARKER_SIZE_M})`,
    '  -h, --help           show this help',
    '',
    `The last ${Math.round((1 - VISIBLE_FRACTION) * 100)} % of each loop looks away from the marker. Every frame shows`,
    'its index in a strip of grey cells at the bottom left (see web/src/ar/synthetic.js).',
    '',
  ].join('\n');
}

/**
 * @typedef {object} VideoOptions
 * @property {string} out
 * @property {string} poses
 * @property {number} fps
 * @property {number} frames
 * @property {number} width
 * @property {number} height
 * @property {import('../../web/src/ar/marker-pattern.js').MarkerKind} marker
 * @property {number} size
 */

/**
 * Parses `carlab video` arguments.
 *
 * @param {string[]} argv
 * @returns {{ kind: 'help' } | { kind: 'options', options: VideoOptions } | { kind: 'error', message: string }}
 */
export function parseVideoOptions(argv) {
  /** @type {Record<string, any>} */
  let values;
  try {
    ({ values } = parseArgs({ args: argv, options: FLAGS, strict: true, allowPositionals: false }));
  } catch (err) {
    return { kind: 'error', message: String(/** @type {Error} */ (err)?.message ?? err).split('\n')[0] };
  }
  if (values.help) return { kind: 'help' };
  if (!values.out) return { kind: 'error', message: '--out is required' };
  /**
   * @param {string} name @param {number} dflt @param {number} min @param {number} max @param {boolean} [integer]
   * @returns {number}
   */
  const num = (name, dflt, min, max, integer = false) => {
    const raw = /** @type {string | undefined} */ (values[name]);
    if (raw === undefined) return dflt;
    const v = Number(raw);
    if (raw.trim() === '' || !Number.isFinite(v) || v < min || v > max || (integer && !Number.isInteger(v))) {
      throw new RangeError(`--${name}: must be ${integer ? 'an integer' : 'a number'} in ${min}..${max}, got '${raw}'`);
    }
    return v;
  };
  try {
    const fps = num('fps', DEFAULT_VIDEO.fps, 1, 60, true);
    const seconds = num('seconds', DEFAULT_VIDEO.frames / DEFAULT_VIDEO.fps, 0.5, 120);
    const width = num('width', DEFAULT_VIDEO.camera.width, 64, 1920, true);
    const height = num('height', DEFAULT_VIDEO.camera.height, 64, 1080, true);
    if (width % 2 || height % 2) throw new RangeError('--width and --height must be even (4:2:0 video)');
    const size = num('size', DEFAULT_MARKER_SIZE_M, 0.01, 5);
    const marker = parseMarkerKind(values.marker);
    const out = path.resolve(values.out);
    const poses = path.resolve(values.poses ?? `${out.replace(/\.y4m$/i, '')}.poses.json`);
    const frames = Math.max(2, Math.round(seconds * fps));
    return { kind: 'options', options: { out, poses, fps, frames, width, height, marker, size } };
  } catch (err) {
    return { kind: 'error', message: /** @type {Error} */ (err).message };
  }
}

/**
 * The stream header of a YUV4MPEG2 file, 4:2:0, progressive, square pixels.
 *
 * @param {number} width @param {number} height @param {number} fps
 * @returns {string}
 */
export function y4mHeader(width, height, fps) {
  return `YUV4MPEG2 W${width} H${height} F${fps}:1 Ip A1:1 C420jpeg\n`;
}

/**
 * Converts RGBA to planar I420 (BT.601, limited range: Y 16..235), the
 * chroma of each 2x2 block averaged.
 *
 * @param {Uint8Array | Uint8ClampedArray} rgba
 * @param {number} width
 * @param {number} height
 * @param {Uint8Array} [out] width * height * 3 / 2 bytes
 * @returns {Uint8Array}
 */
export function rgbaToI420(rgba, width, height, out) {
  const ySize = width * height;
  const cw = width / 2;
  const yuv = out ?? new Uint8Array((ySize * 3) / 2);
  for (let i = 0, o = 0; i < ySize; i++, o += 4) {
    yuv[i] = Math.round(16 + (65.481 * rgba[o] + 128.553 * rgba[o + 1] + 24.966 * rgba[o + 2]) / 255);
  }
  for (let cy = 0; cy < height / 2; cy++) {
    for (let cx = 0; cx < cw; cx++) {
      let r = 0;
      let g = 0;
      let b = 0;
      for (const [dx, dy] of [[0, 0], [1, 0], [0, 1], [1, 1]]) {
        const o = ((2 * cy + dy) * width + 2 * cx + dx) * 4;
        r += rgba[o]; g += rgba[o + 1]; b += rgba[o + 2];
      }
      r /= 4; g /= 4; b /= 4;
      yuv[ySize + cy * cw + cx] = Math.round(128 + (-37.797 * r - 74.203 * g + 112 * b) / 255);
      yuv[ySize + ySize / 4 + cy * cw + cx] = Math.round(128 + (112 * r - 93.786 * g - 18.214 * b) / 255);
    }
  }
  return yuv;
}

/**
 * Renders the video and its pose file.
 *
 * @param {VideoOptions} options
 * @returns {{ spec: import('../../web/src/ar/synthetic.js').VideoSpec, bytes: number }}
 */
export function writeVideo(options) {
  const spec = {
    fps: options.fps,
    frames: options.frames,
    markerSize: options.size,
    camera: idealCamera(options.width, options.height),
    marker: options.marker,
  };
  mkdirSync(path.dirname(options.out), { recursive: true });
  mkdirSync(path.dirname(options.poses), { recursive: true });
  const fd = openSync(options.out, 'w');
  let bytes = 0;
  try {
    bytes += writeSync(fd, y4mHeader(spec.camera.width, spec.camera.height, spec.fps));
    const rgba = new Uint8ClampedArray(spec.camera.width * spec.camera.height * 4);
    const yuv = new Uint8Array((spec.camera.width * spec.camera.height * 3) / 2);
    for (let i = 0; i < spec.frames; i++) {
      renderFrame(i, spec, rgba);
      rgbaToI420(rgba, spec.camera.width, spec.camera.height, yuv);
      bytes += writeSync(fd, 'FRAME\n');
      bytes += writeSync(fd, yuv);
    }
  } finally {
    closeSync(fd);
  }
  const code = frameCodeOrigin(spec.camera.height);
  const doc = {
    about: 'True camera poses of a carlab synthetic video (carlab video). Poses are the camera in the marker frame '
      + '(AR.js/three.js: marker in the x-z plane, +y out of the marker, +z towards the bottom edge of the printed marker; '
      + 'the camera looks down its -z, +y up), metres and unit quaternions [x, y, z, w]. corners: pixel positions of the '
      + 'black square\'s corners (top-left, top-right, bottom-right, bottom-left), pixel centres at integers. '
      + "visible: 'full' | 'partial' | 'none'.",
    video: path.basename(options.out),
    fps: spec.fps,
    frames: spec.frames,
    marker: markerKindName(spec.marker),
    markerSize: spec.markerSize,
    camera: spec.camera,
    frameCode: { x: code.x, y: code.y, cell: CODE_CELL, cells: 18 },
    poses: truePoses(spec),
  };
  writeFileSync(options.poses, `${JSON.stringify(doc, null, 1)}\n`);
  return { spec, bytes };
}

/**
 * Run `carlab video`.
 *
 * @param {string[]} argv
 * @param {import('../../scripts/carlab.js').CommandIo} [io]
 * @returns {Promise<number>}
 */
export async function run(argv, { stdout = process.stdout, stderr = process.stderr } = {}) {
  const parsed = parseVideoOptions(argv);
  if (parsed.kind === 'help') {
    stdout.write(videoHelp());
    return 0;
  }
  if (parsed.kind === 'error') {
    stderr.write(`carlab video: ${parsed.message}\n\n${videoHelp()}`);
    return 2;
  }
  const { options } = parsed;
  const t0 = performance.now();
  try {
    const { spec, bytes } = writeVideo(options);
    const secs = ((performance.now() - t0) / 1000).toFixed(1);
    stdout.write(`carlab video: ${spec.frames} frames ${spec.camera.width}x${spec.camera.height} @ ${spec.fps} fps `
      + `(${(bytes / 1e6).toFixed(1)} MB) in ${secs} s\n  video: ${options.out}\n  poses: ${options.poses}\n`);
    return 0;
  } catch (err) {
    stderr.write(`carlab video: ${/** @type {Error} */ (err)?.message ?? err}\n`);
    return 1;
  }
}
