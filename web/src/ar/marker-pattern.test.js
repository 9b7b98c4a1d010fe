import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import {
  CAR_PATTERN, PATT_SIZE, barcodeCells, compileMarker, encodePatt, innerCells, markerKindName, markerSvg, parseMarkerKind,
  parsePatt, pattTemplate, rotateCCW,
} from './marker-pattern.js';

/**
 * Normalised correlation, as ARToolKit's mono template matching scores patterns.
 * @param {number[][]} a @param {number[][]} b
 */
function correlation(a, b) {
  const A = a.flat();
  const B = b.flat();
  const ma = A.reduce((/** @type {number} */ s, v) => s + v, 0) / A.length;
  const mb = B.reduce((/** @type {number} */ s, v) => s + v, 0) / B.length;
  let num = 0;
  let da = 0;
  let db = 0;
  for (let i = 0; i < A.length; i++) {
    num += (A[i] - ma) * (B[i] - mb);
    da += (A[i] - ma) ** 2;
    db += (B[i] - mb) ** 2;
  }
  return num / Math.sqrt(da * db);
}

/**
 * ARToolKit's reading of an AR_MATRIX_CODE_3x3 marker (arPattGetID.c,
 * get_matrix_code): the orientation from the corners, then the six other
 * cells row by row (1 = black).
 * @param {number[][]} cells
 */
function readBarcode(cells) {
  const size = 3;
  const data = cells.flat();
  const corner = [0, (size - 1) * size, size * size - 1, size - 1];
  const dirCode = corner.map((i) => data[i]);
  let dir = -1;
  for (let i = 0; i < 4; i++) {
    if (dirCode[i] === 1 && dirCode[(i + 1) % 4] === 1 && dirCode[(i + 2) % 4] === 0) { dir = i; break; }
  }
  if (dir < 0) return { dir, code: -1 };
  let code = 0;
  const at = (/** @type {number} */ j, /** @type {number} */ i) => data[j * size + i];
  const push = (/** @type {number} */ v) => { code = (code << 1) | v; };
  if (dir === 0) {
    for (let j = 0; j < size; j++) for (let i = 0; i < size; i++) {
      if ((i === 0 && j === 0) || (i === 0 && j === size - 1) || (i === size - 1 && j === size - 1)) continue;
      push(at(j, i));
    }
  } else if (dir === 1) {
    for (let i = 0; i < size; i++) for (let j = size - 1; j >= 0; j--) {
      if ((i === 0 && j === size - 1) || (i === size - 1 && j === size - 1) || (i === size - 1 && j === 0)) continue;
      push(at(j, i));
    }
  } else if (dir === 2) {
    for (let j = size - 1; j >= 0; j--) for (let i = size - 1; i >= 0; i--) {
      if ((i === size - 1 && j === size - 1) || (i === size - 1 && j === 0) || (i === 0 && j === 0)) continue;
      push(at(j, i));
    }
  } else {
    for (let i = size - 1; i >= 0; i--) for (let j = 0; j < size; j++) {
      if ((i === size - 1 && j === 0) || (i === 0 && j === 0) || (i === 0 && j === size - 1)) continue;
      push(at(j, i));
    }
  }
  return { dir, code };
}

describe('.patt', () => {
  const text = encodePatt();
  const lines = text.split('\n');

  test('has four orientations of B, G, R blocks of 16 lines of 16 values, a blank line between them', () => {
    assert.ok(text.endsWith('\n') && !text.endsWith('\n\n'));
    const blocks = text.trimEnd().split('\n\n');
    assert.equal(blocks.length, 4);
    for (const block of blocks) {
      const rows = block.split('\n');
      assert.equal(rows.length, 3 * PATT_SIZE);
      for (const row of rows) assert.match(row, /^( {0,2}\d{1,3})( {1,3}\d{1,3}){15}$/);
      for (const row of rows) assert.equal(row.length, 16 * 4 - 1); // values padded to 3, one space apart
    }
    assert.equal(lines.length, 4 * 48 + 3 + 1);
  });

  test('orientation 0 is the pattern upright and each next one is turned 90 degrees counter-clockwise (AR.js trainer convention)', () => {
    const patt = parsePatt(text);
    const upright = pattTemplate();
    let expected = upright;
    for (let h = 0; h < 4; h++) {
      for (let ch = 0; ch < 3; ch++) assert.deepEqual(patt[h][ch], expected, `orientation ${h} channel ${ch}`);
      expected = rotateCCW(expected);
    }
    // rotateCCW: the top row becomes the left column, read bottom-up
    assert.deepEqual(rotateCCW([[1, 2], [3, 4]]), [[2, 4], [1, 3]]);
    // the car: white margin, roof at the top, wheels at the bottom
    assert.deepEqual(upright[0], Array(16).fill(255));
    assert.equal(upright[2][7], 0); // roof
    assert.equal(upright[10][0], 255);
    assert.equal(upright[10][2], 0); // rear wheel
  });

  test('the four orientations differ clearly (no ambiguous orientation)', () => {
    const upright = pattTemplate();
    let r = upright;
    for (let k = 1; k < 4; k++) {
      r = rotateCCW(r);
      assert.ok(correlation(upright, r) < 0.5, `rotation ${k}: ${correlation(upright, r)}`);
    }
  });

  test('parsePatt rejects wrong value counts', () => {
    assert.throws(() => parsePatt('1 2 3'), /expected 3072 values/);
  });
});

describe('markers', () => {
  test('the car pattern is 8x8', () => {
    assert.equal(CAR_PATTERN.length, 8);
    for (const row of CAR_PATTERN) assert.match(row, /^[.#]{8}$/);
  });

  test('barcodes read back as their value in every orientation, as ARToolKit reads them', () => {
    for (let value = 0; value < 64; value++) {
      let cells = barcodeCells(value);
      assert.deepEqual(readBarcode(cells), { dir: 0, code: value });
      for (let k = 0; k < 3; k++) {
        cells = rotateCCW(cells);
        assert.equal(readBarcode(cells).code, value, `value ${value} rotated ${k + 1}`);
      }
    }
    assert.deepEqual(barcodeCells(5), [[1, 0, 0], [0, 1, 0], [1, 1, 0]]);
    assert.throws(() => barcodeCells(64), RangeError);
  });

  test('parseMarkerKind', () => {
    assert.deepEqual(parseMarkerKind(null), { type: 'pattern' });
    assert.deepEqual(parseMarkerKind('pattern'), { type: 'pattern' });
    assert.deepEqual(parseMarkerKind('barcode-5'), { type: 'barcode', value: 5 });
    assert.equal(markerKindName(parseMarkerKind('barcode-63')), 'barcode-63');
    assert.throws(() => parseMarkerKind('barcode-64'), /unknown marker/);
    assert.throws(() => parseMarkerKind('hiro'), /unknown marker/);
  });

  test('sample: margin white, border black, pattern inside, nothing beyond the paper', () => {
    const m = compileMarker();
    assert.equal(m.sample(0.7, 0), 1); // white margin
    assert.equal(m.sample(0.8, 0), -1); // off the paper
    assert.equal(m.sample(-0.4, 0.3), 0); // border
    assert.equal(m.sample(-0.24, -0.24), 1); // pattern's white top-left cell
    const cells = innerCells({ type: 'pattern' });
    // cell (row 4, col 0) is black: x = -0.25 + 0.5/16, y = -0.25 + 4.5 * 0.5/8
    assert.equal(cells[4][0], 1);
    assert.equal(m.sample(-0.25 + 0.5 / 16, -0.25 + 4.5 * (0.5 / 8)), 0);
  });

  test('markerSvg draws the true size and every black cell', () => {
    const svg = markerSvg({ sizeMm: 160, label: 'x <y>' });
    assert.match(svg, /width="240mm" height="240mm"/); // 160 mm square + 2 x 40 mm margin
    const black = innerCells({ type: 'pattern' }).flat().filter(Boolean).length;
    assert.equal((svg.match(/<rect x=/g) ?? []).length, black);
    assert.match(svg, /x &#60;y&#62;/);
  });
});
