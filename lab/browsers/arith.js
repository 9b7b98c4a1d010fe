// The arithmetic of `carlab browsers` (docs/architecture.md "Measurements"): summaries
// with Dev, counter deltas and rates, memory per idle connection. Pure
// functions, unit tested in arith.test.js.

import { summarize } from '../../core/metrics.js';

/**
 * @typedef {import('../../core/metrics.js').Summary & { min: number | null }} Summary
 */

/**
 * Mean, Dev (population standard deviation), min, p50/p95/p99, max and n of
 * the finite numbers in `values` (nulls and NaN are skipped); null when none.
 * @param {Iterable<unknown>} values
 * @returns {Summary | null}
 */
export function summary(values) {
  const finite = [...values].filter((v) => typeof v === 'number' && Number.isFinite(v));
  if (finite.length === 0) return null;
  const s = summarize(/** @type {number[]} */ (finite));
  return { ...s, min: Math.min(.../** @type {number[]} */ (finite)) };
}

/**
 * Memory per idle connection, m1 = (m_max - m_0) / d_max: the browser's
 * memory with d_max idle connections open minus its memory with none,
 * divided by d_max. Null when there is no connection.
 * @param {{ m0: number | null, mMax: number | null, dMax: number }} o
 * @returns {number | null}
 */
export function memoryPerConnection({ m0, mMax, dMax }) {
  if (!(dMax > 0) || typeof m0 !== 'number' || typeof mMax !== 'number') return null;
  return (mMax - m0) / dMax;
}

/**
 * Least-squares slope of y over x (e.g. memory over connections), null
 * with fewer than two distinct x.
 * @param {{ x: number, y: number }[]} points
 * @returns {number | null}
 */
export function slope(points) {
  const ps = points.filter((p) => Number.isFinite(p.x) && Number.isFinite(p.y));
  if (ps.length < 2) return null;
  const mx = ps.reduce((s, p) => s + p.x, 0) / ps.length;
  const my = ps.reduce((s, p) => s + p.y, 0) / ps.length;
  let sxx = 0; let sxy = 0;
  for (const p of ps) { sxx += (p.x - mx) ** 2; sxy += (p.x - mx) * (p.y - my); }
  return sxx === 0 ? null : sxy / sxx;
}

/**
 * b - a for counters that may be missing (null when either is).
 * @param {number | null | undefined} a
 * @param {number | null | undefined} b
 * @returns {number | null}
 */
export function delta(a, b) {
  return typeof a === 'number' && typeof b === 'number' ? b - a : null;
}

/**
 * Per second: `count` over `ms` milliseconds (null when either is missing or ms <= 0).
 * @param {number | null | undefined} count
 * @param {number} ms
 * @returns {number | null}
 */
export function perSecond(count, ms) {
  return typeof count === 'number' && ms > 0 ? count / (ms / 1000) : null;
}

/**
 * Bytes over a window as kbit/s (1 kbit = 1000 bit).
 * @param {number | null | undefined} bytes
 * @param {number} ms
 * @returns {number | null}
 */
export function kbitPerSecond(bytes, ms) {
  const bps = perSecond(bytes, ms);
  return bps === null ? null : (bps * 8) / 1000;
}

/**
 * Field-by-field b - a of two flat counter objects (fields missing in
 * either come out null).
 * @param {Record<string, number | null> | null | undefined} a
 * @param {Record<string, number | null> | null | undefined} b
 * @returns {Record<string, number | null>}
 */
export function deltas(a, b) {
  /** @type {Record<string, number | null>} */
  const out = {};
  for (const k of new Set([...Object.keys(a ?? {}), ...Object.keys(b ?? {})])) out[k] = delta(a?.[k], b?.[k]);
  return out;
}

/**
 * Sums of numeric fields over objects; a field stays null if no object has it.
 * @param {(Record<string, number | null> | null | undefined)[]} objects
 * @returns {Record<string, number | null>}
 */
export function sumFields(objects) {
  /** @type {Record<string, number | null>} */
  const out = {};
  for (const o of objects) {
    for (const [k, v] of Object.entries(o ?? {})) {
      if (!(k in out)) out[k] = null;
      if (typeof v === 'number') out[k] = (out[k] ?? 0) + v;
    }
  }
  return out;
}

/**
 * Whether a cell should give up: its first `n` attempts all failed.
 * @param {{ error?: unknown }[]} reps
 * @param {number} n
 */
export function failedFromStart(reps, n) {
  return n > 0 && reps.length >= n && reps.slice(0, n).every((r) => r.error);
}

/**
 * Duration estimate in whole seconds as "1 h 02 min", "12 min 5 s" or "40 s".
 * @param {number} seconds
 */
export function formatDuration(seconds) {
  const s = Math.max(0, Math.round(seconds));
  if (s >= 3600) {
    const min = Math.round(s / 60);
    return `${Math.floor(min / 60)} h ${String(min % 60).padStart(2, '0')} min`;
  }
  if (s >= 60) return `${Math.floor(s / 60)} min${s % 60 ? ` ${s % 60} s` : ''}`;
  return `${s} s`;
}
