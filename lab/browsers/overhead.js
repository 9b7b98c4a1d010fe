// Experiment 2, setup overhead: bytes and packets each way until the channel
// opens, per end, split into signaling (the peer's WebSocket to PeerServer:
// opening the peer, then setting up the connection) and peer-to-peer
// (getStats: Chromium's transport/candidate-pair counters, Firefox's sums over
// candidate pairs; and the wire: every UDP packet incl. STUN and headers).
// Uses setup's repetitions without obfuscation when setup ran them.

import { summary } from './arith.js';
import { obfuscationFor, pairFields } from './context.js';
import { repetitionCache, repetitionSeconds, runRepetitions } from './setup.js';

/**
 * Per rep, the totals of one end: signaling (open + setup) plus
 * peer-to-peer on the wire when measured, else getStats.
 * @param {any} b one end's bytes from sideBytes()
 */
export function totalsOf(b) {
  const p2p = b?.wire ?? b?.p2p ?? null;
  const add = (/** @type {string} */ k) => {
    const parts = [b?.signalingOpen?.[k], b?.signalingSetup?.[k], p2p?.[k]];
    return parts.every((v) => typeof v === 'number') ? parts.reduce((s, v) => s + v, 0) : null;
  };
  return { sent: add('sent'), received: add('received'), packetsSent: add('packetsSent'), packetsReceived: add('packetsReceived') };
}

/**
 * Summaries of every numeric leaf two levels deep ({part: {field: n}}) over reps.
 * @param {any[]} objects
 * @returns {Record<string, Record<string, import('./arith.js').Summary | null>>}
 */
export function summarizeParts(objects) {
  /** @type {Record<string, Record<string, number[]>>} */
  const acc = {};
  for (const o of objects) {
    for (const [part, fields] of Object.entries(o ?? {})) {
      if (!fields || typeof fields !== 'object') continue;
      acc[part] ??= {};
      for (const [k, v] of Object.entries(fields)) {
        acc[part][k] ??= [];
        if (typeof v === 'number') acc[part][k].push(v);
      }
    }
  }
  return Object.fromEntries(Object.entries(acc).map(([part, fields]) => [part,
    Object.fromEntries(Object.entries(fields).map(([k, vs]) => [k, summary(vs)]))]));
}

/**
 * One end's overhead: its browser and, per part of sideBytes() plus `total`, the
 * summaries of its counters over the repetitions (a part no repetition had is absent).
 * @typedef {{ browser: string } & Partial<Record<'signalingOpen' | 'signalingSetup' | 'p2p' | 'wire' | 'total',
 *   Record<string, import('./arith.js').Summary | null>>>} OverheadEnd
 */

/**
 * The overhead record of one pair.
 * @param {import('./context.js').Pair} pair
 * @param {boolean} hide
 * @param {any[]} reps setup repetitions
 * @param {boolean} shared whether they were setup's
 */
export function overheadRecord(pair, hide, reps, shared) {
  const ok = reps.filter((r) => !r.error && r.bytes);
  /** @param {'initiator' | 'receiver'} role @returns {OverheadEnd} */
  const end = (role) => {
    const parts = ok.map((r) => ({ ...r.bytes[role], total: totalsOf(r.bytes[role]) }));
    return { browser: pair[role], ...summarizeParts(parts) };
  };
  const wire = ok.some((r) => r.bytes.initiator.wire);
  return {
    ...pairFields('overhead', pair, hide),
    transport: 'p2p',
    repetitions: reps.length,
    completed: ok.length,
    sharedWithSetup: shared,
    totalIncludes: wire ? 'signaling + wire' : 'signaling + getStats',
    initiator: end('initiator'),
    receiver: end('receiver'),
  };
}

/** @type {import('./context.js').Experiment} */
export const overheadExperiment = {
  name: 'overhead',
  title: 'Setup overhead',
  metric: { label: 'peer setup p50', unit: ' ms' },
  cells(o, planned) {
    const setupRuns = planned.has('setup') ? obfuscationFor(o, 'setup') : [];
    return obfuscationFor(o, 'overhead').flatMap((hide) => o.pairs.map((pair) => {
      const shared = setupRuns.includes(hide);
      return {
        label: `overhead ${pair.label}${hide ? ', obfuscation on' : ''}${shared ? ' (setup repetitions)' : ''}`,
        seconds: shared ? 0.2 : repetitionSeconds(pair, hide, o.repeat),
        fields: { ...pairFields('overhead', pair, hide), transport: 'p2p' },
        async run(ctx, p) {
          const cached = repetitionCache(ctx).get(`${pair.label}|${hide}`);
          if (!cached && ctx.shouldStop()) return []; // interrupted before setup ran this pair
          const got = cached ?? await runRepetitions(ctx, pair, hide, o, p);
          return [{ ...overheadRecord(pair, hide, got.reps, Boolean(cached)), durationS: cached ? 0 : got.durationS }];
        },
      };
    }));
  },
};
