// The fuzz run's test cases and what each must lead to. Pure functions of
// (seed, index): the same seed gives the same cases in the same order, so a
// failure found by `carlab fuzz --seed S` is found again by the same command.
//
// Four targets, each with the outcome docs/protocol.md (relay) or
// docs/security.md (PeerServer, handshakes) documents:
//   relay   WebSocket frames to /relay: the relay closes the socket with a
//           4000..4008 or 1009 code, or (tolerated input) keeps it open: then
//           a final probe frame (version byte 2) must get 4001;
//   peer    messages on the PeerServer WebSocket: 4000, 4005, 4008, 1009, or
//           PeerServer's own ERROR / ID-TAKEN message and a close without code (1005);
//   raw     raw TCP: broken upgrade requests (HTTP 400/403/404/405/431), broken
//           WebSocket framing after a good handshake (1002/1007/1009), aborts;
//   http    HTTP requests under /peerjs and traversal attempts: any status
//           below 500, a complete answer, nothing from outside the web root.
//
// Each target's cases and oracle live in their own module (fuzz-relay-cases.js,
// fuzz-peer-cases.js, fuzz-raw-cases.js for raw and http), the world and the
// case shapes in fuzz-world.js; here: which target case `index` goes to.

import { makeRng } from '../shared/rng.js';
import { expectRelay, relayCase } from './fuzz-relay-cases.js';
import { expectPeer, peerCase } from './fuzz-peer-cases.js';
import { httpCase, rawCase } from './fuzz-raw-cases.js';

/** @typedef {import('./fuzz-world.js').FuzzWorld} FuzzWorld */
/** @typedef {import('./fuzz-world.js').FuzzCase} FuzzCase */

// ------------------------------------------------------------------ random

/**
 * The PRNG of case `index` of run `seed`: independent of the cases before it,
 * so cases can run in any order and concurrently.
 * @param {number} seed @param {number} index
 */
export function caseRng(seed, index) {
  let h = (seed ^ Math.imul(index + 1, 0x9e3779b1)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b) >>> 0;
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35) >>> 0;
  return makeRng((h ^ (h >>> 16)) >>> 0);
}

/** Case mix: relay frames most, then PeerServer, handshakes and framing, HTTP. */
const MIX = /** @type {const} */ ([['relay', 0.62], ['peer', 0.16], ['raw', 0.12], ['http', 0.10]]);

/**
 * Case `index` of run `seed`.
 * @param {FuzzWorld} w
 * @param {number} index
 * @returns {FuzzCase}
 */
export function generateCase(w, index) {
  const r = caseRng(w.seed, index);
  let x = r.next();
  for (const [target, weight] of MIX) {
    x -= weight;
    if (x < 0 || target === 'http') {
      switch (target) {
        case 'relay': return relayCase(r, index, w);
        case 'peer': return peerCase(r, index, w);
        case 'raw': return rawCase(r, index, w);
        default: return httpCase(r, index, w);
      }
    }
  }
  throw new Error('unreachable');
}

/**
 * Units a case sends, counted as the run's "frames": WebSocket frames
 * (including the relay probe), handshakes and HTTP requests.
 * @param {FuzzCase} c
 * @param {FuzzWorld} w
 */
export function unitsOf(c, w) {
  switch (c.target) {
    case 'relay': return c.frames.length + (expectRelay(c.frames, w).probe ? 1 : 0);
    case 'peer': return Math.max(1, c.frames.length) + (expectPeer(c, w).probe ? 1 : 0); // no frames: the query is the input
    case 'raw': return 1 + (c.afterUpgrade ? 1 : 0);
    default: return 1;
  }
}

/**
 * A digest of the cases [0, n): equal digests mean the same cases.
 * @param {FuzzWorld} w @param {number} n
 */
export async function casesDigest(w, n) {
  const { createHash } = await import('node:crypto');
  const h = createHash('sha256');
  for (let i = 0; i < n; i++) {
    const c = generateCase(w, i);
    h.update(`${i}:${c.target}:${c.name}:`);
    if (c.target === 'relay') for (const f of c.frames) h.update('text' in f ? f.text : f.bytes);
    else if (c.target === 'peer') { h.update(JSON.stringify(c.query)); for (const f of c.frames) h.update(f.data); }
    else h.update(c.request);
  }
  return h.digest('hex');
}
