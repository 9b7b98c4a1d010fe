// Network profiles: the readable file lab/net/profiles.json plus the
// user's own (--net-file), parsed and checked into one normalized shape the
// shaping code and the results share.

import { readFile } from 'node:fs/promises';

/** The built-in profiles file. */
export const DEFAULT_PROFILES_FILE = new URL('./profiles.json', import.meta.url);

/** The profile that shapes nothing (the 0 % point inside the same topology). */
export const UNSHAPED = 'none';

/** Default queue of the rate limiter, ms. */
export const DEFAULT_QUEUE_MS = 200;

/** A profile file or value that cannot be used: exit code 2. */
export class ProfileError extends Error {
  /** @param {string} message */
  constructor(message) {
    super(message);
    this.name = 'ProfileError';
    this.code = 'ERR_CARLAB_NET_PROFILE';
  }
}

/**
 * One direction of a link. null = not shaped.
 * @typedef {object} LinkShape
 * @property {number} lossPct % of IP packets dropped (0 = none)
 * @property {number | null} rateKbit capacity per peer in kbit/s
 * @property {number | null} delayMs one-way delay (netem)
 * @property {number | null} jitterMs +/- spread of the delay (netem)
 * @property {number} queueMs how long the rate limiter may queue
 */

/**
 * @typedef {object} NetProfile
 * @property {string} name
 * @property {string} description
 * @property {LinkShape} up peer -> network
 * @property {LinkShape} down network -> peer
 * @property {BlockKind | null} [block] a firewall applied after calibration: drop every
 *   packet between client namespaces (phones on networks that cannot reach each other
 *   directly), only the UDP between them, every UDP packet (a network that blocks UDP), or every UDP packet of the first client
 *   namespace only (one phone on such a network, the others on one Wi-Fi) (docs/turn.md)
 * @property {boolean} [turn] run coturn beside the server and hand out TURN credentials
 */

const FIELDS = ['description', 'loss', 'rate', 'delay', 'jitter', 'queue', 'block', 'turn'];
/**
 * What a profile's firewall drops (lab/net/commands.js, blockRuleset).
 * @typedef {'clients' | 'client-udp' | 'udp' | 'one-client-udp'} BlockKind
 */
const BLOCKS = ['clients', 'client-udp', 'udp', 'one-client-udp'];

/**
 * Parses a rate: "256kbit", "21mbit", "1gbit", "500bit" or a number of kbit/s.
 * @param {unknown} value
 * @param {string} where for error messages
 * @returns {number} kbit/s
 */
export function parseRate(value, where) {
  if (typeof value === 'number' && value > 0) return value;
  const m = /^\s*(\d+(?:\.\d+)?)\s*(bit|kbit|mbit|gbit)\s*$/i.exec(String(value));
  const scale = { bit: 0.001, kbit: 1, mbit: 1000, gbit: 1e6 };
  if (!m || Number(m[1]) <= 0) throw new ProfileError(`${where}: rate "${value}" is not like "256kbit", "21mbit" or "1gbit"`);
  return Number(m[1]) * scale[/** @type {keyof typeof scale} */ (m[2].toLowerCase())];
}

/**
 * Parses a duration: "40ms", "1.5s" or a number of ms.
 * @param {unknown} value
 * @param {string} where
 * @returns {number} ms
 */
export function parseMs(value, where) {
  if (typeof value === 'number' && value >= 0) return value;
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s)\s*$/.exec(String(value));
  if (!m) throw new ProfileError(`${where}: "${value}" is not a duration like "40ms" or "1s"`);
  return Number(m[1]) * (m[2] === 's' ? 1000 : 1);
}

/**
 * Parses a loss percentage (0 <= loss < 100).
 * @param {unknown} value
 * @param {string} where
 */
export function parseLoss(value, where) {
  const n = typeof value === 'number' ? value : Number(String(value).replace(/%\s*$/, ''));
  if (!Number.isFinite(n) || n < 0 || n >= 100) throw new ProfileError(`${where}: loss "${value}" is not a percentage 0 <= loss < 100`);
  return n;
}

/**
 * A field that is one value for both directions or { up, down }.
 * @template T
 * @param {unknown} value
 * @param {(v: unknown, where: string) => T} parse
 * @param {string} where
 * @returns {{ up: T | null, down: T | null }}
 */
function perDirection(value, parse, where) {
  if (value === undefined || value === null) return { up: null, down: null };
  if (typeof value === 'object') {
    const extra = Object.keys(value).filter((k) => k !== 'up' && k !== 'down');
    if (extra.length) throw new ProfileError(`${where}: unknown direction "${extra[0]}" (use "up" and "down")`);
    const v = /** @type {{ up?: unknown, down?: unknown }} */ (value);
    return {
      up: v.up === undefined ? null : parse(v.up, `${where}.up`),
      down: v.down === undefined ? null : parse(v.down, `${where}.down`),
    };
  }
  const both = parse(value, where);
  return { up: both, down: both };
}

/**
 * Checks and normalizes one profile as written in a file.
 * @param {string} name
 * @param {unknown} spec
 * @returns {NetProfile}
 */
export function normalizeProfile(name, spec) {
  if (!/^[a-z0-9][a-z0-9._-]{0,39}$/i.test(name)) throw new ProfileError(`profile name "${name}": use letters, digits, ".", "_" or "-" (at most 40)`);
  if (!spec || typeof spec !== 'object' || Array.isArray(spec)) throw new ProfileError(`profile "${name}" is not an object`);
  const s = /** @type {Record<string, unknown>} */ (spec);
  const unknown = Object.keys(s).filter((k) => !FIELDS.includes(k));
  if (unknown.length) throw new ProfileError(`profile "${name}": unknown field "${unknown[0]}" (fields: ${FIELDS.join(', ')})`);
  const at = `profile "${name}"`;
  const loss = perDirection(s.loss, parseLoss, `${at} loss`);
  const rate = perDirection(s.rate, parseRate, `${at} rate`);
  const delay = perDirection(s.delay, parseMs, `${at} delay`);
  const jitter = perDirection(s.jitter, parseMs, `${at} jitter`);
  const queue = perDirection(s.queue, parseMs, `${at} queue`);
  /** @param {'up' | 'down'} d @returns {LinkShape} */
  const side = (d) => {
    if (jitter[d] && !delay[d]) throw new ProfileError(`${at}: jitter ${d} needs a delay ${d} (netem spreads the delay)`);
    return {
      lossPct: loss[d] ?? 0,
      rateKbit: rate[d],
      delayMs: delay[d] || null,
      jitterMs: jitter[d] || null,
      queueMs: queue[d] ?? DEFAULT_QUEUE_MS,
    };
  };
  if (s.block !== undefined && !BLOCKS.includes(/** @type {string} */ (s.block))) throw new ProfileError(`${at} block: "${s.block}" is not one of ${BLOCKS.join(', ')}`);
  if (s.turn !== undefined && typeof s.turn !== 'boolean') throw new ProfileError(`${at} turn: true or false`);
  /** @type {NetProfile} */
  const profile = { name, description: typeof s.description === 'string' ? s.description : '', up: side('up'), down: side('down') };
  if (s.block !== undefined) profile.block = /** @type {BlockKind} */ (s.block);
  if (s.turn) profile.turn = true;
  return profile;
}

/**
 * Parses a profiles file's text: `{ "profiles": { name: spec, ... } }`.
 * @param {string} text
 * @param {string} source for error messages
 * @returns {Map<string, NetProfile>}
 */
export function parseProfiles(text, source) {
  let doc;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new ProfileError(`${source}: not JSON (${/** @type {Error} */ (err).message})`);
  }
  if (!doc || typeof doc.profiles !== 'object' || doc.profiles === null || Array.isArray(doc.profiles)) {
    throw new ProfileError(`${source}: needs { "profiles": { "name": { "loss": 2 }, ... } }`);
  }
  const out = new Map();
  for (const [name, spec] of Object.entries(doc.profiles)) {
    try {
      out.set(name, normalizeProfile(name, spec));
    } catch (err) {
      throw err instanceof ProfileError ? new ProfileError(`${source}: ${err.message}`) : err;
    }
  }
  return out;
}

/**
 * The built-in profiles, overlaid by the user's file (same name: the user's wins).
 * @param {string | null} [userFile] path of a --net-file
 * @returns {Promise<Map<string, NetProfile>>}
 */
export async function loadProfiles(userFile = null) {
  const builtIn = parseProfiles(await readFile(DEFAULT_PROFILES_FILE, 'utf8'), 'lab/net/profiles.json');
  if (!userFile) return builtIn;
  let text;
  try {
    text = await readFile(userFile, 'utf8');
  } catch (err) {
    throw new ProfileError(`--net-file: cannot read ${userFile} (${/** @type {any} */ (err).code ?? err})`);
  }
  for (const [name, p] of parseProfiles(text, userFile)) builtIn.set(name, p);
  return builtIn;
}

/**
 * Picks the named profiles out of the loaded ones.
 * @param {string} list "lossy-1,3g"
 * @param {Map<string, NetProfile>} profiles
 * @returns {NetProfile[]}
 */
export function selectProfiles(list, profiles) {
  const names = String(list).split(',').map((s) => s.trim()).filter(Boolean);
  if (names.length === 0) throw new ProfileError('--net: empty list');
  return names.map((n) => {
    const p = profiles.get(n);
    if (!p) throw new ProfileError(`--net: unknown profile "${n}" (one of ${[...profiles.keys()].join(', ')}; add your own with --net-file)`);
    return p;
  });
}

/** @param {NetProfile} p */
export const needsNetem = (p) => [p.up, p.down].some((s) => s.delayMs !== null || s.jitterMs !== null);
/** @param {NetProfile} p */
export const needsRate = (p) => [p.up, p.down].some((s) => s.rateKbit !== null);
/** @param {NetProfile} p */
export const needsLoss = (p) => [p.up, p.down].some((s) => s.lossPct > 0) || Boolean(p.block);

/**
 * A short human summary: "loss 2 %/2 %, rate 256/256 kbit/s".
 * @param {NetProfile} p
 */
export function describeProfile(p) {
  /** @param {number | null} u @param {number | null} d @param {string} unit */
  const pair = (u, d, unit) => (u === d ? `${u}${unit}` : `${u ?? '–'}${unit} up/${d ?? '–'}${unit} down`);
  const parts = [];
  if (needsLoss(p)) parts.push(`loss ${pair(p.up.lossPct, p.down.lossPct, ' %')}`);
  if (needsRate(p)) parts.push(`rate ${pair(p.up.rateKbit, p.down.rateKbit, ' kbit/s')} per peer`);
  if (p.up.delayMs !== null || p.down.delayMs !== null) parts.push(`delay ${pair(p.up.delayMs, p.down.delayMs, ' ms')}`);
  if (p.up.jitterMs !== null || p.down.jitterMs !== null) parts.push(`jitter ${pair(p.up.jitterMs, p.down.jitterMs, ' ms')}`);
  if (p.block === 'clients') parts.push('all traffic between clients dropped');
  if (p.block === 'client-udp') parts.push('UDP between clients dropped');
  if (p.block === 'udp') parts.push('all UDP dropped');
  if (p.block === 'one-client-udp') parts.push('all UDP of the first client dropped');
  if (p.turn) parts.push('TURN');
  return parts.length ? parts.join(', ') : 'unshaped';
}
