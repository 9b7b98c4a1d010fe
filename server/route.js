/**
 * Where `carlab start --cluster N`'s primary sends a connection: the pure
 * parts. A WebSocket upgrade whose URL names a group (`/relay?g=<group>`) goes
 * to the worker that rendezvous (highest-random-weight) hashing picks for that
 * group among the live workers, so every member of a group lands on one
 * process and its updates never cross NATS; everything else is spread
 * round-robin. The I/O around it (reading the head, handing the socket over)
 * is in server/cluster.js; the worker's side in server/cluster-worker.js.
 *
 * @module server/route
 */

import { groupOfRequestUrl } from '../relay/index.js';

/**
 * Bounds on what the primary reads of a request before it hands the socket on.
 * A client slower or larger than this is not refused: it is handed on
 * round-robin with what was read, and the worker's own HTTP limits
 * (headersTimeout, the 16 KiB header bound) answer it. So a slowloris holds a
 * worker's socket, as without a primary, never the primary.
 */
/**
 * @typedef {object} HeadLimits
 * @property {number} maxBytes read at most this much (plus the rest of one read) for a head
 * @property {number} timeoutMs wait at most this long for a whole head
 * @property {number} maxPending heads being read at once
 */

/** @type {Readonly<HeadLimits>} */
export const HEAD_LIMITS = Object.freeze({
  /** Node's default --max-http-header-size: a head the worker would refuse anyway. */
  maxBytes: 16 * 1024,
  /** A real client sends its request in the first flight after the TCP handshake. */
  timeoutMs: 2000,
  /** Heads being read at once; past it, new connections go on unread (round-robin). */
  maxPending: 1024,
});

/** The IPC message that comes with a handed-over socket (`worker.send(message, socket)`). */
export const ROUTED_CONNECTION = 'carlab:routed-connection';

/** The worker's answer (`{ cmd, id }`, the id of the ROUTED_CONNECTION message): it took the connection, the primary may close its copy. */
export const ROUTED_TAKEN = 'carlab:routed-taken';

/**
 * What the primary learned from the bytes it read: nothing yet (`complete`
 * false), or the request head's end, whether it asks for a WebSocket upgrade,
 * and the group its URL names (only for upgrades: plain HTTP is spread).
 * @typedef {{ complete: false } | { complete: true, upgrade: boolean, group: string | null }} RequestHead
 */

const HEAD_END = Buffer.from('\r\n\r\n', 'latin1');

/**
 * Reads a request's first line and headers from the bytes received so far.
 * Only what routing needs is parsed; the worker's HTTP parser still checks it all.
 * @param {Buffer} bytes everything the client sent so far
 * @returns {RequestHead}
 */
export function parseRequestHead(bytes) {
  const end = bytes.indexOf(HEAD_END);
  if (end === -1) return { complete: false };
  // latin1 as Node's HTTP parser reads a head: one char per byte, nothing invalid.
  const lines = bytes.toString('latin1', 0, end).split('\r\n');
  const target = lines[0].split(' ')[1];
  const upgrade = lines.slice(1).some(isWebSocketUpgradeHeader);
  return { complete: true, upgrade, group: upgrade ? groupOfRequestUrl(target) : null };
}

/**
 * Whether a header line is `Upgrade: websocket` (names and tokens case-insensitive).
 * @param {string} line
 */
function isWebSocketUpgradeHeader(line) {
  const colon = line.indexOf(':');
  if (colon <= 0 || line.slice(0, colon).trim().toLowerCase() !== 'upgrade') return false;
  return line.slice(colon + 1).split(',').some((token) => token.trim().toLowerCase() === 'websocket');
}

/**
 * MurmurHash3's 32-bit finaliser: every input bit flips about half the output bits.
 * @param {number} h
 * @returns {number} unsigned 32-bit
 */
function fmix32(h) {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * A 32-bit hash of a string: FNV-1a over its UTF-16 code units, then fmix32
 * (FNV alone leaves short, similar strings correlated). Not cryptographic:
 * a group name is chosen by users, and the worst a chosen name can do is pick
 * its own worker.
 * @param {string} text
 * @returns {number} unsigned 32-bit
 */
export function hash32(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return fmix32(h);
}

/**
 * The weight of `group` on the worker keyed `key`: one hash of the group, mixed
 * with the key's own. Every (group, worker) pair gets an independent-looking
 * weight, so removing a worker moves only the groups it won.
 * @param {number} groupHash hash32 of the group
 * @param {string} key a worker's stable key
 * @returns {number}
 */
function weight(groupHash, key) {
  return fmix32(groupHash ^ hash32(key));
}

/**
 * Rendezvous (highest-random-weight) hashing: the key among `keys` with the
 * highest weight for `group`. Keys are stable per worker slot, so a worker
 * that dies gives away only its own groups (each to the key that was second
 * for it), and one that comes back in the same slot wins them back. Ties (one
 * in 2^32) go to the smaller key.
 * @template {string} K
 * @param {string} group
 * @param {readonly K[]} keys the live workers' keys
 * @returns {K | null} null when there is no key
 */
export function pickRendezvous(group, keys) {
  const groupHash = hash32(group);
  /** @type {K | null} */
  let best = null;
  let bestWeight = -1;
  for (const key of keys) {
    const w = weight(groupHash, key);
    if (w > bestWeight || (w === bestWeight && best !== null && key < best)) {
      best = key;
      bestWeight = w;
    }
  }
  return best;
}
