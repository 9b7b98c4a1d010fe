// relay-udp's signaling: the JSON payloads of the SIGNAL messages exchanged
// with the relay (client id 0) over the WebSocket (docs/protocol.md §13).

import { MsgType } from '../../../../core/protocol.js';

/**
 * What the client signals: its offer and its ICE candidates, each tagged with
 * the attempt it belongs to so the relay can drop those of an older one.
 * @typedef {{ type: 'offer', sdp: string | undefined, attempt: number }
 *   | { type: 'candidate', candidate: string, mid: string, attempt: number }} OutgoingSignal
 */

/**
 * What a SIGNAL from the relay asks of the current attempt.
 * - ignore: not for us, unreadable, or nothing we act on
 * - stale: for no attempt or another one than the current (counted)
 * @typedef {{ kind: 'ignore' } | { kind: 'stale' } | { kind: 'answer', sdp: string }
 *   | { kind: 'candidate', candidate: string, mid: string }} IncomingSignal
 */

/**
 * The SIGNAL message carrying `payload` to the relay.
 * @param {number} myId our client id
 * @param {OutgoingSignal} payload
 * @returns {import('../../../../core/protocol.js').SignalMsg}
 */
export function signalToRelay(myId, payload) {
  return { type: MsgType.SIGNAL, from: myId, to: 0, payload: JSON.stringify(payload) };
}

/**
 * Reads a SIGNAL the relay sent.
 * @param {import('../../../../core/protocol.js').SignalMsg} m
 * @param {number} myId our client id
 * @param {number | null} attempt the current attempt, null when none is under way
 * @returns {IncomingSignal}
 */
export function readRelaySignal(m, myId, attempt) {
  if (m.from !== 0 || m.to !== myId) return { kind: 'ignore' };
  /** @type {unknown} */
  let p;
  try {
    p = JSON.parse(m.payload);
  } catch {
    return { kind: 'ignore' };
  }
  if (attempt === null || !p || typeof p !== 'object' || !('attempt' in p) || p.attempt !== attempt) return { kind: 'stale' };
  const q = /** @type {{ type?: unknown, sdp?: unknown, candidate?: unknown, mid?: unknown }} */ (p);
  if (q.type === 'answer' && typeof q.sdp === 'string') return { kind: 'answer', sdp: q.sdp };
  if (q.type === 'candidate' && typeof q.candidate === 'string' && q.candidate) {
    return { kind: 'candidate', candidate: q.candidate, mid: typeof q.mid === 'string' ? q.mid : '0' };
  }
  return { kind: 'ignore' };
}
