// A set of sequence numbers kept as sorted, disjoint, non-adjacent ranges: the
// seqs a sender addressed to one receiver, the seqs a receiver got, the seqs
// the relay marked superseded (docs/architecture.md "Loss"). Updates arrive
// nearly in order, so a stream's set is one range plus one per gap: small
// enough to travel in a report, and exact.

/** Most ranges a set keeps; past it the oldest two merge (the count below them becomes approximate). */
export const SEQSET_MAX_RANGES = 4096;

/**
 * Sorted disjoint ranges [from, to] of integer seqs, `flat` = [from0, to0, from1, to1, ...].
 */
export class SeqSet {
  /** @param {number[]} [flat] ranges as a flat array (SeqSet.toJSON), trusted to be sorted and disjoint */
  constructor(flat = []) {
    /** @type {number[]} */
    this.flat = flat.slice();
    /** Seqs in the set (kept, not recounted). */
    this.size = 0;
    for (let i = 0; i < this.flat.length; i += 2) this.size += this.flat[i + 1] - this.flat[i] + 1;
  }

  /**
   * Index (even) of the first range whose end is >= seq, or flat.length if none.
   * @param {number} seq
   */
  rangeAtOrAfter(seq) {
    const flat = this.flat;
    let lo = 0;
    let hi = flat.length / 2;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (flat[2 * mid + 1] < seq) lo = mid + 1;
      else hi = mid;
    }
    return 2 * lo;
  }

  /** @param {number} seq */
  has(seq) {
    const i = this.rangeAtOrAfter(seq);
    return i < this.flat.length && this.flat[i] <= seq;
  }

  /**
   * Adds one seq; false if it was there already.
   * @param {number} seq
   */
  add(seq) {
    const flat = this.flat;
    const n = flat.length;
    // The common case: the next seq of an in-order stream.
    if (n > 0 && flat[n - 1] === seq - 1) { flat[n - 1] = seq; this.size++; return true; }
    if (n === 0 || flat[n - 1] < seq - 1) { flat.push(seq, seq); this.size++; this.bound(); return true; }
    const i = this.rangeAtOrAfter(seq);
    if (i < n && flat[i] <= seq) return false;
    const joinsPrev = i > 0 && flat[i - 1] === seq - 1;
    const joinsNext = i < n && flat[i] === seq + 1;
    if (joinsPrev && joinsNext) flat.splice(i - 1, 2);
    else if (joinsPrev) flat[i - 1] = seq;
    else if (joinsNext) flat[i] = seq;
    else flat.splice(i, 0, seq, seq);
    this.size++;
    this.bound();
    return true;
  }

  /**
   * Removes one seq; false if it was not there.
   * @param {number} seq
   */
  delete(seq) {
    const flat = this.flat;
    const i = this.rangeAtOrAfter(seq);
    if (i >= flat.length || flat[i] > seq) return false;
    const from = flat[i];
    const to = flat[i + 1];
    if (from === to) flat.splice(i, 2);
    else if (seq === from) flat[i] = seq + 1;
    else if (seq === to) flat[i + 1] = seq - 1;
    else flat.splice(i, 2, from, seq - 1, seq + 1, to);
    this.size--;
    return true;
  }

  /**
   * Adds every seq of [from, to] (ranges of another set, a superseded mark).
   * @param {number} from @param {number} to
   */
  addRange(from, to) {
    for (let s = from; s <= to; s++) this.add(s);
  }

  /** Keeps at most SEQSET_MAX_RANGES ranges: a stream this broken is counted to within its oldest gaps. */
  bound() {
    while (this.flat.length > 2 * SEQSET_MAX_RANGES) {
      this.size += this.flat[2] - this.flat[1] - 1;
      this.flat.splice(1, 2);
    }
  }

  /**
   * How many seqs of the set are <= `upTo`.
   * @param {number} upTo
   */
  countUpTo(upTo) {
    let n = 0;
    const flat = this.flat;
    for (let i = 0; i < flat.length && flat[i] <= upTo; i += 2) n += Math.min(flat[i + 1], upTo) - flat[i] + 1;
    return n;
  }

  /**
   * How many seqs are in both sets and <= `upTo`.
   * @param {SeqSet} other
   * @param {number} [upTo]
   */
  countCommon(other, upTo = Infinity) {
    return intersect(this, other, upTo).size;
  }

  /**
   * How many seqs are in this set, in `within`, not in `except`, and <= `upTo`.
   * @param {SeqSet} within @param {SeqSet} except @param {number} upTo
   */
  countCommonExcept(within, except, upTo) {
    if (this.size === 0) return 0;
    const both = intersect(this, within, upTo);
    return both.size - both.countCommon(except, upTo);
  }

  /** The ranges as a flat array [from0, to0, ...]: what reports carry. */
  toJSON() {
    return this.flat.slice();
  }
}

/**
 * The seqs in both sets, <= upTo.
 * @param {SeqSet} x @param {SeqSet} y @param {number} [upTo]
 */
export function intersect(x, y, upTo = Infinity) {
  const a = x.flat;
  const b = y.flat;
  const out = new SeqSet();
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const from = Math.max(a[i], b[j]);
    const to = Math.min(a[i + 1], b[j + 1], upTo);
    if (from > upTo) break;
    if (from <= to) { out.flat.push(from, to); out.size += to - from + 1; }
    if (a[i + 1] < b[j + 1]) i += 2;
    else j += 2;
  }
  return out;
}

/**
 * Flat ranges cut to at most `maxRanges` by closing the oldest gaps (a report's size bound).
 * @param {number[]} flat @param {number} maxRanges
 */
export function compactRanges(flat, maxRanges) {
  if (flat.length <= 2 * maxRanges) return flat;
  const cut = flat.length - 2 * maxRanges;
  return [flat[0], ...flat.slice(cut + 1)];
}

/**
 * Whether a value is a flat range array a report may carry: even length, integers, sorted, disjoint.
 * @param {unknown} v
 * @param {number} [maxRanges]
 * @returns {v is number[]}
 */
export function isSeqRanges(v, maxRanges = SEQSET_MAX_RANGES) {
  if (!Array.isArray(v) || v.length % 2 !== 0 || v.length > 2 * maxRanges) return false;
  let prev = -Infinity;
  for (let i = 0; i < v.length; i += 2) {
    const from = v[i];
    const to = v[i + 1];
    if (!Number.isInteger(from) || !Number.isInteger(to) || from < 0 || to < from || from <= prev + 1) return false;
    prev = to;
  }
  return true;
}
