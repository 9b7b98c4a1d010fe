// Seeded randomness for the lab's reproducible runs: the same seed gives the
// same fuzz cases and the same churn, so a failure found once is found again.

/**
 * A seedable PRNG (mulberry32) with helpers.
 * @param {number} seed u32
 */
export function makeRng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (/** @type {number} */ lo, /** @type {number} */ hi) => lo + Math.floor(next() * (hi - lo + 1));
  return {
    next,
    int,
    /** @param {number} p */
    chance: (p) => next() < p,
    /** @template T @param {readonly T[]} list @returns {T} */
    pick: (list) => list[Math.floor(next() * list.length)],
    /** @param {number} n */
    bytes(n) {
      const b = new Uint8Array(n);
      for (let i = 0; i < n; i++) b[i] = Math.floor(next() * 256);
      return b;
    },
    /** @param {number} n printable ASCII */
    ascii(n) {
      let s = '';
      for (let i = 0; i < n; i++) s += String.fromCharCode(32 + Math.floor(next() * 95));
      return s;
    },
    /** @param {number} n letters and digits */
    word(n) {
      const abc = 'abcdefghijklmnopqrstuvwxyz0123456789';
      let s = '';
      for (let i = 0; i < n; i++) s += abc[Math.floor(next() * abc.length)];
      return s;
    },
  };
}

/** @typedef {ReturnType<typeof makeRng>} Rng */

/**
 * A u32 seed from a number or any string (FNV-1a).
 * @param {number | string} seed
 */
export function seedOf(seed) {
  const text = String(seed);
  if (/^\d+$/.test(text) && Number(text) <= 0xffffffff) return Number(text) >>> 0;
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}
