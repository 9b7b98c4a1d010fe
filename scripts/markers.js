/**
 * `carlab markers`: generate the project's marker assets (nothing is
 * downloaded): the car pattern marker as a printable image and as the
 * ARToolKit .patt template AR.js matches, the camera-parameter file of the
 * ideal 640x480 camera, and optionally 3x3 barcode markers.
 *
 * The web app serves the output of `carlab markers --out web/public/markers`
 * (committed; a unit test checks it is reproduced byte for byte).
 *
 * @module scripts/markers
 */

import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { IDEAL_CAMERA, encodeCameraPara } from '../web/src/ar/camera-model.js';
import {
  DEFAULT_MARKER_SIZE_M, MARGIN, compileMarker, encodePatt, markerSvg, parseMarkerKind,
} from '../web/src/ar/marker-pattern.js';
import { encodePng } from './png.js';

/** Where the web app finds its marker assets (Vite's public dir). */
export const WEB_MARKERS_DIR = fileURLToPath(new URL('../web/public/markers/', import.meta.url));

/** File names of the default output. */
export const FILES = Object.freeze({
  patt: 'carlab.patt',
  svg: 'carlab-marker.svg',
  png: 'carlab-marker.png',
  camera: 'camera_para.dat',
});

const FLAGS = /** @type {const} */ ({
  out: { type: 'string', short: 'o' },
  size: { type: 'string' },
  barcode: { type: 'string', multiple: true },
  png: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
});

/** @returns {string} */
export function markersHelp() {
  return [
    'Usage: carlab markers --out DIR [options]',
    '',
    'Generate carlab\'s marker assets:',
    `  ${FILES.patt.padEnd(20)} the pattern AR.js matches (ARToolKit .patt, 16x16, 4 orientations)`,
    `  ${FILES.svg.padEnd(20)} the marker to print (true size) or show on a screen`,
    `  ${FILES.camera.padEnd(20)} camera parameters of an ideal ${IDEAL_CAMERA.width}x${IDEAL_CAMERA.height} camera (f = ${IDEAL_CAMERA.fx} px, no distortion)`,
    '',
    'Options:',
    '  -o, --out DIR        folder to write into (created if missing); the web app',
    '                       serves web/public/markers',
    `      --size M         printed side of the black square in metres (default ${DEFAULT_MARKER_SIZE_M})`,
    '      --barcode N      also write barcode-N.svg, a 3x3 matrix marker (N in 0..63;',
    '                       repeatable); use it with ar.html?marker=barcode-N',
    `      --png            also write PNG images (${FILES.png}, barcode-N.png)`,
    '  -h, --help           show this help',
    '',
  ].join('\n');
}

/**
 * @typedef {object} MarkersOptions
 * @property {string} out
 * @property {number} size
 * @property {number[]} barcodes
 * @property {boolean} png
 */

/**
 * @param {string[]} argv
 * @returns {{ kind: 'help' } | { kind: 'options', options: MarkersOptions } | { kind: 'error', message: string }}
 */
export function parseMarkersOptions(argv) {
  /** @type {Record<string, any>} */
  let values;
  try {
    ({ values } = parseArgs({ args: argv, options: FLAGS, strict: true, allowPositionals: false }));
  } catch (err) {
    return { kind: 'error', message: String(/** @type {Error} */ (err)?.message ?? err).split('\n')[0] };
  }
  if (values.help) return { kind: 'help' };
  if (!values.out) return { kind: 'error', message: '--out is required' };
  let size = DEFAULT_MARKER_SIZE_M;
  if (values.size !== undefined) {
    size = Number(values.size);
    if (values.size.trim() === '' || !Number.isFinite(size) || size < 0.01 || size > 5) {
      return { kind: 'error', message: `--size: must be metres in 0.01..5, got '${values.size}'` };
    }
  }
  const barcodes = [];
  for (const raw of values.barcode ?? []) {
    const n = Number(raw);
    if (!/^\d{1,2}$/.test(raw) || n > 63) return { kind: 'error', message: `--barcode: must be an integer 0..63, got '${raw}'` };
    barcodes.push(n);
  }
  return { kind: 'options', options: { out: path.resolve(values.out), size, barcodes, png: Boolean(values.png) } };
}

/**
 * Renders a marker (with its white margin) as greyscale pixels.
 *
 * @param {import('../web/src/ar/marker-pattern.js').MarkerKind} kind
 * @param {number} pixels side of the image
 * @returns {Uint8Array}
 */
export function markerPixels(kind, pixels) {
  const marker = compileMarker(kind);
  const half = 0.5 + MARGIN;
  const out = new Uint8Array(pixels * pixels);
  for (let y = 0; y < pixels; y++) {
    for (let x = 0; x < pixels; x++) {
      const v = marker.sample(((x + 0.5) / pixels) * 2 * half - half, ((y + 0.5) / pixels) * 2 * half - half);
      out[y * pixels + x] = v === 0 ? 0 : 255;
    }
  }
  return out;
}

/**
 * Writes the assets; returns the files written.
 *
 * @param {MarkersOptions} options
 * @returns {string[]} absolute paths
 */
export function writeMarkers(options) {
  mkdirSync(options.out, { recursive: true });
  const sizeMm = options.size * 1000;
  /** @type {[string, string | Uint8Array][]} */
  const files = [
    [FILES.patt, encodePatt({ type: 'pattern' })],
    [FILES.svg, markerSvg({ kind: { type: 'pattern' }, sizeMm, label: `carlab marker · ${round1(sizeMm / 10)} cm` })],
    [FILES.camera, encodeCameraPara(IDEAL_CAMERA)],
  ];
  if (options.png) files.push([FILES.png, encodePng(markerPixels({ type: 'pattern' }, 960), 960, 960, 1)]);
  for (const value of options.barcodes) {
    const kind = parseMarkerKind(`barcode-${value}`);
    files.push([`barcode-${value}.svg`, markerSvg({ kind, sizeMm, label: `carlab barcode ${value} · ${round1(sizeMm / 10)} cm` })]);
    if (options.png) files.push([`barcode-${value}.png`, encodePng(markerPixels(kind, 960), 960, 960, 1)]);
  }
  return files.map(([name, data]) => {
    const file = path.join(options.out, name);
    writeFileSync(file, data);
    return file;
  });
}

/** @param {number} v */
function round1(v) {
  return Math.round(v * 10) / 10;
}

/**
 * Run `carlab markers`.
 *
 * @param {string[]} argv
 * @param {import('./carlab.js').CommandIo} [io]
 * @returns {Promise<number>}
 */
export async function run(argv, { stdout = process.stdout, stderr = process.stderr } = {}) {
  const parsed = parseMarkersOptions(argv);
  if (parsed.kind === 'help') {
    stdout.write(markersHelp());
    return 0;
  }
  if (parsed.kind === 'error') {
    stderr.write(`carlab markers: ${parsed.message}\n\n${markersHelp()}`);
    return 2;
  }
  try {
    const files = writeMarkers(parsed.options);
    stdout.write(`carlab markers: wrote ${files.length} files\n${files.map((f) => `  ${f}\n`).join('')}`);
    return 0;
  } catch (err) {
    stderr.write(`carlab markers: ${/** @type {Error} */ (err)?.message ?? err}\n`);
    return 1;
  }
}
