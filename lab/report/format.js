// The values and text shapes every results table shares: numbers or a dash,
// fixed decimals, markdown tables that also read in a terminal. The lowest part
// of the report room: every table (runs, browsers, networks) builds on it.

import { TRANSPORTS } from '../../core/transports.js';

/** Shown for a missing value. */
export const NONE = '–';

/**
 * The value when it is a finite number, else null.
 *
 * @param {unknown} value
 * @returns {number | null}
 */
export function num(value) {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

/**
 * A number with fixed decimals, or {@link NONE} for anything else.
 * Never prints a negative zero.
 *
 * @param {unknown} value
 * @param {number} [digits]
 * @returns {string}
 */
export function fmt(value, digits = 0) {
  const n = num(value);
  if (n === null) return NONE;
  const text = n.toFixed(digits);
  return /^-0(\.0*)?$/.test(text) ? text.slice(1) : text;
}

/**
 * The network profile a run ran under (--net), null without.
 * @param {{ net?: unknown } | null | undefined} run a run record
 * @returns {string | null}
 */
export function netName(run) {
  const net = run?.net;
  if (typeof net === 'string') return net; // a failed point keeps the name only
  return isObject(net) && typeof net.profile === 'string' ? net.profile : null;
}

/**
 * A markdown table with cells padded so it also reads well in a terminal.
 *
 * @param {readonly string[]} header
 * @param {string[][]} rows
 * @param {('left' | 'right')[]} align
 * @returns {string}
 */
export function markdownTable(header, rows, align) {
  const cells = [header, ...rows].map((row) => row.map(mdCell));
  const widths = header.map((_, i) => Math.max(3, ...cells.map((row) => [...(row[i] ?? '')].length)));
  const pad = (/** @type {string} */ text, /** @type {number} */ i) => {
    const gap = ' '.repeat(widths[i] - [...text].length);
    return align[i] === 'right' ? gap + text : text + gap;
  };
  const line = (/** @type {string[]} */ row) => `| ${header.map((_, i) => pad(row[i] ?? '', i)).join(' | ')} |`;
  const rule = `| ${widths.map((width, i) => (align[i] === 'right' ? `${'-'.repeat(width - 1)}:` : '-'.repeat(width))).join(' | ')} |`;
  return [line(cells[0]), rule, ...cells.slice(1).map(line)].join('\n');
}

/**
 * Text made safe for one markdown table cell.
 *
 * @param {unknown} value
 * @returns {string}
 */
function mdCell(value) {
  return mdText(value).replace(/\|/g, '\\|');
}

/**
 * Text on one line.
 *
 * @param {unknown} value
 * @returns {string}
 */
export function mdText(value) {
  return String(value ?? '').replace(/[\r\n]+/g, ' ');
}

/**
 * Orders transports as core/transports.js lists them, unknown ones after by name.
 *
 * @param {string} a
 * @param {string} b
 * @returns {number}
 */
export function compareTransports(a, b) {
  const ia = TRANSPORTS.indexOf(a);
  const ib = TRANSPORTS.indexOf(b);
  if (ia !== ib) return (ia === -1 ? Infinity : ia) - (ib === -1 ? Infinity : ib) || 0;
  return String(a).localeCompare(String(b));
}

/**
 * Whether a value is a plain object (not null, not an array).
 * @param {unknown} value
 * @returns {value is Record<string, unknown>}
 */
export function isObject(value) {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
