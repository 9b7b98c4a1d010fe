// carlab's own fiducial markers, made here rather than downloaded: the
// pattern marker (a small car in a thick black square) and ARToolKit 3x3
// matrix ("barcode") markers. One description feeds the .patt file AR.js
// matches against, the printable SVG, and the synthetic video's renderer.
// Runs in the browser and in Node: no DOM, no Node built-ins.
//
// Geometry, in units of the marker side S (the outer edge of the black
// square, the size AR.js is given): the black border is (1 - PATTERN_RATIO)/2
// = 0.25 S wide on each side, the inner 0.5 S holds the pattern, and a white
// margin of MARGIN S surrounds the black square (ARToolKit needs light
// around it to find the border).

/** Inner pattern width / marker width; AR.js `patternRatio`. */
export const PATTERN_RATIO = 0.5;

/** White margin around the black square, in marker sides. */
export const MARGIN = 0.25;

/** Default real-world marker side in metres (fits an A4 or Letter page). */
export const DEFAULT_MARKER_SIZE_M = 0.16;

/** Samples per side of an ARToolKit pattern (.patt) template. */
export const PATT_SIZE = 16;

/**
 * The pattern inside the black square: a small car seen from the side,
 * 8x8 cells, `#` black.
 * Row 0 is the top of the printed marker. Its four 90-degree rotations
 * differ clearly (see marker-pattern.test.js), so ARToolKit finds the
 * marker's orientation without ambiguity.
 */
export const CAR_PATTERN = Object.freeze([
  '........',
  '...###..',
  '..#.#.#.',
  '.#######',
  '########',
  '.##..##.',
  '.##..##.',
  '........',
]);

/**
 * Marker kinds: `pattern` (the car) or `barcode-N`, N in 0..63.
 * @typedef {{ type: 'pattern' } | { type: 'barcode', value: number }} MarkerKind
 */

/**
 * Parses `pattern` / `barcode-5` (the `?marker=` parameter).
 * @param {string | null | undefined} text
 * @returns {MarkerKind}
 */
export function parseMarkerKind(text) {
  if (!text || text === 'pattern' || text === 'carlab') return { type: 'pattern' };
  const m = /^barcode-(\d{1,2})$/.exec(text);
  if (m && Number(m[1]) <= 63) return { type: 'barcode', value: Number(m[1]) };
  throw new Error(`unknown marker "${text}": use "pattern" or "barcode-N" with N in 0..63`);
}

/** @param {MarkerKind} kind */
export function markerKindName(kind) {
  return kind.type === 'pattern' ? 'pattern' : `barcode-${kind.value}`;
}

/**
 * The 3x3 cells of an ARToolKit AR_MATRIX_CODE_3x3 marker for `value`
 * (1 = black). Upright, the top-left and bottom-left corners are black and
 * the bottom-right corner white (ARToolKit reads the orientation from
 * them); the other six cells carry the 6-bit value, most significant bit
 * first, row by row.
 * @param {number} value 0..63
 * @returns {number[][]}
 */
export function barcodeCells(value) {
  if (!Number.isInteger(value) || value < 0 || value > 63) throw new RangeError(`barcode value ${value} not in 0..63`);
  const cells = [[1, 0, 0], [0, 0, 0], [1, 0, 0]];
  const dataCells = [[0, 1], [0, 2], [1, 0], [1, 1], [1, 2], [2, 1]];
  dataCells.forEach(([r, c], k) => { cells[r][c] = (value >> (5 - k)) & 1; });
  return cells;
}

/**
 * The inner pattern of a marker as rows of 0/1 (1 = black).
 * @param {MarkerKind} kind
 * @returns {number[][]}
 */
export function innerCells(kind) {
  if (kind.type === 'barcode') return barcodeCells(kind.value);
  return CAR_PATTERN.map((row) => [...row].map((ch) => (ch === '#' ? 1 : 0)));
}

/**
 * A compiled marker for fast point sampling.
 * @param {MarkerKind} [kind]
 */
export function compileMarker(kind = { type: 'pattern' }) {
  const cells = innerCells(kind);
  const n = cells.length;
  const flat = Uint8Array.from(cells.flat());
  const half = 0.5;
  const inner = PATTERN_RATIO / 2;
  return {
    kind,
    cells,
    /**
     * What the marker paper shows at (x, y), in marker sides from the
     * centre, x to the right, y down: 0 black, 1 white, -1 off the paper.
     * @param {number} x @param {number} y
     */
    sample(x, y) {
      const ax = Math.abs(x);
      const ay = Math.abs(y);
      if (ax > half + MARGIN || ay > half + MARGIN) return -1;
      if (ax > half || ay > half) return 1;
      if (ax >= inner || ay >= inner) return 0;
      const c = Math.min(n - 1, Math.floor(((x + inner) / PATTERN_RATIO) * n));
      const r = Math.min(n - 1, Math.floor(((y + inner) / PATTERN_RATIO) * n));
      return flat[r * n + c] ? 0 : 1;
    },
  };
}

/**
 * The 16x16 grey template of the inner pattern (0 black .. 255 white),
 * row 0 at the top, by area-averaging the cells over each sample.
 * @param {MarkerKind} [kind]
 * @returns {number[][]}
 */
export function pattTemplate(kind = { type: 'pattern' }) {
  const cells = innerCells(kind);
  const n = cells.length;
  const sub = 8; // supersampling per template sample and axis
  const out = [];
  for (let r = 0; r < PATT_SIZE; r++) {
    const row = [];
    for (let c = 0; c < PATT_SIZE; c++) {
      let white = 0;
      for (let sy = 0; sy < sub; sy++) {
        for (let sx = 0; sx < sub; sx++) {
          const y = (r + (sy + 0.5) / sub) / PATT_SIZE;
          const x = (c + (sx + 0.5) / sub) / PATT_SIZE;
          white += cells[Math.floor(y * n)][Math.floor(x * n)] ? 0 : 1;
        }
      }
      row.push(Math.round((255 * white) / (sub * sub)));
    }
    out.push(row);
  }
  return out;
}

/**
 * Rotates a square grid counter-clockwise by 90 degrees:
 * out[r][c] = in[c][n-1-r].
 * @param {number[][]} grid
 */
export function rotateCCW(grid) {
  const n = grid.length;
  return grid.map((_, r) => grid.map((__, c) => grid[c][n - 1 - r]));
}

/**
 * ARToolKit pattern file text, as AR.js's marker trainer writes it: four
 * orientations (upright, then turned 90, 180, 270 degrees counter-clockwise),
 * each as B, G and R blocks of 16 lines of 16 values, a blank line between
 * orientations.
 * @param {MarkerKind} [kind] default the car pattern
 * @returns {string}
 */
export function encodePatt(kind = { type: 'pattern' }) {
  let grid = pattTemplate(kind);
  const blocks = [];
  for (let h = 0; h < 4; h++) {
    const lines = [];
    for (let channel = 0; channel < 3; channel++) {
      for (const row of grid) lines.push(row.map((v) => String(v).padStart(3)).join(' '));
    }
    blocks.push(lines.join('\n'));
    grid = rotateCCW(grid);
  }
  return `${blocks.join('\n\n')}\n`;
}

/**
 * Parses .patt text into its four orientations of B, G, R 16x16 grids.
 * @param {string} text
 * @returns {number[][][][]} [orientation][channel][row][col]
 */
export function parsePatt(text) {
  const values = text.trim().split(/\s+/).map(Number);
  const per = PATT_SIZE * PATT_SIZE;
  if (values.length !== 4 * 3 * per || values.some((v) => !Number.isInteger(v) || v < 0 || v > 255)) {
    throw new Error(`.patt: expected ${4 * 3 * per} values 0..255, got ${values.length}`);
  }
  const out = [];
  for (let h = 0; h < 4; h++) {
    const channels = [];
    for (let ch = 0; ch < 3; ch++) {
      const base = (h * 3 + ch) * per;
      channels.push(Array.from({ length: PATT_SIZE }, (_, r) => values.slice(base + r * PATT_SIZE, base + (r + 1) * PATT_SIZE)));
    }
    out.push(channels);
  }
  return out;
}

/**
 * Printable SVG of the whole marker (white margin, black square, pattern).
 * @param {{ kind?: MarkerKind, sizeMm?: number, label?: string }} [opts]
 *   sizeMm: the black square's side on paper; label: small caption below
 * @returns {string}
 */
export function markerSvg({ kind = { type: 'pattern' }, sizeMm = DEFAULT_MARKER_SIZE_M * 1000, label = '' } = {}) {
  const cells = innerCells(kind);
  const n = cells.length;
  const unit = 1000; // viewBox units per marker side
  const margin = MARGIN * unit;
  const full = unit + 2 * margin;
  const inner = PATTERN_RATIO * unit;
  const cell = inner / n;
  const x0 = margin + (unit - inner) / 2;
  /** @type {string[]} */
  const rects = [];
  cells.forEach((row, r) => row.forEach((black, c) => {
    if (black) rects.push(`<rect x="${x0 + c * cell}" y="${x0 + r * cell}" width="${cell}" height="${cell}"/>`);
  }));
  const sideMm = (sizeMm * full) / unit;
  const caption = label
    ? `<text x="${full / 2}" y="${full - margin / 3}" font-family="sans-serif" font-size="${margin / 4}" text-anchor="middle" fill="#555">${escapeXml(label)}</text>`
    : '';
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${round(sideMm)}mm" height="${round(sideMm)}mm" viewBox="0 0 ${full} ${full}" shape-rendering="crispEdges">`,
    `<rect width="${full}" height="${full}" fill="#fff"/>`,
    `<path fill="#000" fill-rule="evenodd" d="M${margin} ${margin}h${unit}v${unit}h${-unit}z M${x0} ${x0}v${inner}h${inner}v${-inner}z"/>`,
    `<g fill="#000">${rects.join('')}</g>`,
    caption,
    '</svg>',
    '',
  ].join('\n');
}

/** @param {number} v */
function round(v) {
  return Math.round(v * 1000) / 1000;
}

/** @param {string} s */
function escapeXml(s) {
  return s.replace(/[<>&"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}
