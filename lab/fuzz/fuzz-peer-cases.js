// The PeerServer target of the fuzz run: messages on the PeerJS signaling
// WebSocket (and bad keys, ids and tokens in its query), and the oracle that
// says, from docs/security.md "Signaling", how each case's socket must end.

import { CloseCode } from '../../core/protocol.js';

/** @typedef {import('../shared/rng.js').Rng} Rng */
/** @typedef {import('./fuzz-world.js').FuzzWorld} FuzzWorld */
/** @typedef {import('./fuzz-world.js').PeerCase} PeerCase */

/** PeerJS message types a client sends (signaling/index.js PEERJS_CLIENT_TYPES). */
const PEER_TYPES = ['HEARTBEAT', 'OFFER', 'ANSWER', 'CANDIDATE', 'LEAVE'];

// ------------------------------------------------------------------ PeerServer

/**
 * A PeerServer case: its query, its frames and the first message due.
 * @param {Rng} r @param {number} index @param {FuzzWorld} w
 * @returns {PeerCase}
 */
export function peerCase(r, index, w) {
  /** @type {Record<string, string>} */
  const query = { key: w.peerKey, id: `fz-${w.seed}-${index}`, token: r.word(10) };
  const c = (/** @type {string} */ name, /** @type {PeerCase['frames']} */ frames, first = 'OPEN', q = query) => ({
    target: /** @type {const} */ ('peer'), name, query: q, frames, firstMessage: first,
  });
  const text = (/** @type {string} */ s) => ({ data: s, binary: false });
  const msg = (/** @type {object} */ o) => text(JSON.stringify(o));
  const dst = () => (r.chance(0.3) ? w.sentinel.id : `nobody-${r.word(6)}`);
  const kind = r.int(0, 13);
  switch (kind) {
    case 0: return c('peer-not-json', [text(r.ascii(r.int(0, 100)).replace(/^[[{"\d\-tfn]/, 'x'))]);
    case 1: return c('peer-binary', [{ data: r.bytes(r.int(0, 100)), binary: true }]);
    case 2: return c('peer-not-object', [text(r.pick(['null', '42', '"OFFER"', '[1,2]', 'true']))]);
    case 3: return c('peer-unknown-type', [msg({ type: r.pick(['EXPIRE', 'OPEN', 'ID-TAKEN', 'offer', r.word(6), 7]), dst: dst() })]);
    case 4: return c('peer-bad-dst', [msg({ type: r.pick(['OFFER', 'ANSWER', 'CANDIDATE']), dst: r.pick([7, null, { id: 1 }, ['a']]), payload: {} })]);
    case 5: return c('peer-oversized', [text(`{"type":"HEARTBEAT","x":"${'a'.repeat(w.maxPayload + r.int(0, 1000))}"}`)]);
    case 6: case 7: { // tolerated, then the probe (added by the runner)
      const frames = [];
      for (let i = r.int(1, 5); i > 0; i--) {
        frames.push(msg(r.pick([
          () => ({ type: 'HEARTBEAT' }),
          () => ({ type: r.pick(['OFFER', 'ANSWER', 'CANDIDATE']), dst: dst(), payload: { sdp: r.ascii(r.int(0, 60)), n: r.int(0, 9) } }),
          () => ({ type: 'LEAVE', dst: dst() }),
          () => ({ type: 'LEAVE' }),
        ])()));
      }
      return c('peer-tolerated', frames);
    }
    case 8: return c('peer-bad-key', [], 'ERROR', { ...query, key: r.chance(0.5) ? 'peerjs' : r.word(8) });
    case 9: {
      const q = { ...query };
      delete q[r.pick(['key', 'id', 'token'])];
      return c('peer-missing-param', [], 'ERROR', q);
    }
    case 10: return c('peer-id-taken', [], 'ID-TAKEN', { ...query, id: w.sentinel.id, token: r.word(12) });
    // Ids over 256 characters, and characters PeerJS ids never have (signaling/guard.js).
    case 12: return c('peer-long-id', [], 'ERROR', { ...query, id: `${query.id}-${r.word(r.int(257, 600))}` });
    case 13: return c('peer-bad-id', [], 'ERROR', { ...query, id: `${query.id}${r.pick(['/', '..', '  ', '%', '<', '\u00e9', '--'])}${r.word(3)}` });
    // Rare: it is many frames. Enough over the burst that the refill cannot save it.
    default: return r.chance(0.02)
      ? c('peer-flood', Array.from({ length: w.peerBurst + r.int(300, 500) }, () => msg({ type: 'HEARTBEAT' })))
      : c('peer-tolerated', [msg({ type: 'HEARTBEAT' })]);
  }
}

/**
 * What the PeerServer endpoint must do (docs/security.md, "Signaling").
 * @param {PeerCase} pc
 * @param {FuzzWorld} w
 * @returns {{ codes: number[], probe: boolean }}
 */
export function expectPeer(pc, w) {
  // Refusals come with their own close code since issue 18 (docs/security.md, "Signaling").
  if (pc.firstMessage === 'ID-TAKEN') return { codes: [CloseCode.ID_TAKEN], probe: false };
  if (pc.firstMessage === 'ERROR') {
    const q = pc.query;
    const missing = !q.key || !q.id || !q.token;
    return { codes: [missing ? CloseCode.PROTOCOL_VIOLATION : q.key !== w.peerKey ? CloseCode.FORBIDDEN : CloseCode.PROTOCOL_VIOLATION], probe: false };
  }
  let tokens = w.peerBurst;
  for (const f of pc.frames) {
    const size = typeof f.data === 'string' ? Buffer.byteLength(f.data) : f.data.length;
    if (size > w.maxPayload) return { codes: [CloseCode.TOO_BIG], probe: false };
    if (tokens < 1) return { codes: [CloseCode.RATE_LIMITED], probe: false };
    tokens--;
    if (f.binary) return { codes: [CloseCode.BAD_FRAME], probe: false };
    let m;
    try { m = JSON.parse(/** @type {string} */ (f.data)); } catch { return { codes: [CloseCode.BAD_FRAME], probe: false }; }
    if (m === null || typeof m !== 'object' || Array.isArray(m)) return { codes: [CloseCode.BAD_FRAME], probe: false };
    if (!PEER_TYPES.includes(m.type)) return { codes: [CloseCode.PROTOCOL_VIOLATION], probe: false };
    if (m.dst !== undefined && typeof m.dst !== 'string') return { codes: [CloseCode.PROTOCOL_VIOLATION], probe: false };
  }
  return { codes: [CloseCode.BAD_FRAME], probe: true }; // the probe is text that is not JSON
}
