// Recovery from network events (--net-events), from every member's probe
// record (core/recovery.js) and the events as played (lab/net/event-player.js).
// The binding definitions are in docs/architecture.md "Recovery": per event,
// the time from the network being back until a moving member's updates reach
// every neighbour again and every neighbour's reach it; the updates lost while
// the event changed the network counted apart from those lost outside; and
// the members who fell out of their group.

import { countStream, summarize } from '../../core/metrics.js';
import { intersect, SeqSet } from '../../core/seqset.js';

/**
 * A client's stats as the recovery figures read them.
 * @typedef {{ id: number, name: string, group: string, recovery?: import('../../core/recovery.js').RecoveryRecord,
 *   sentSeqs?: Record<string, number[]>, cutoffSeq?: number, cutoffTo?: Record<string, number>, recv: Record<string, any>,
 *   setup?: { counters?: Record<string, number> } | null }} RecoveryClient
 */

/**
 * When the first update `sender` sent at or after the network was back reached `receiver`: ms after back, or null.
 * @param {RecoveryClient} sender @param {RecoveryClient} receiver @param {number} index
 */
export function firstFreshArrival(sender, receiver, index) {
  const from = sender.recovery?.backSeq[index];
  if (from === null || from === undefined) return null;
  const list = receiver.recovery?.arrivals[index]?.[String(sender.id)] ?? [];
  for (const [seq, ms] of list) if (seq >= from) return ms;
  return null;
}

/**
 * One moving member's recovery from one event: out (its updates reach every
 * neighbour), in (every neighbour's reach it), and the later of the two; null
 * where some neighbour never got there.
 * @param {RecoveryClient} member @param {RecoveryClient[]} neighbours @param {number} index
 */
export function memberRecovery(member, neighbours, index) {
  /** @type {number | null} */
  let outMs = 0;
  /** @type {number | null} */
  let inMs = 0;
  for (const n of neighbours) {
    const out = firstFreshArrival(member, n, index);
    const into = firstFreshArrival(n, member, index);
    outMs = out === null || outMs === null ? null : Math.max(outMs, out);
    inMs = into === null || inMs === null ? null : Math.max(inMs, into);
  }
  return { outMs, inMs, ms: outMs === null || inMs === null ? null : Math.max(outMs, inMs) };
}

/**
 * The seqs of a sender's updates sent while events changed the network: [began, back) per event.
 * @param {RecoveryClient} sender @param {number[]} indices the events
 * @returns {SeqSet}
 */
export function eventSeqs(sender, indices) {
  // events never overlap, so their ranges come sorted and disjoint
  const set = new SeqSet();
  for (const i of indices) {
    const from = sender.recovery?.beganSeq[i];
    if (from === null || from === undefined) continue;
    const to = sender.recovery?.backSeq[i];
    const last = to === null || to === undefined ? Number.MAX_SAFE_INTEGER : to - 1;
    if (last >= from) set.flat.push(from, last);
  }
  return new SeqSet(set.flat);
}

/**
 * The sender's record with its seqs to `rid` limited to those in `keep` (or outside it).
 * @param {RecoveryClient} sender @param {string} rid @param {SeqSet} keep @param {boolean} inside
 */
function restricted(sender, rid, keep, inside) {
  const sent = new SeqSet(sender.sentSeqs?.[rid] ?? []);
  const chosen = inside ? intersect(sent, keep) : without(sent, keep);
  return { ...sender, sentSeqs: { ...sender.sentSeqs, [rid]: chosen.flat } };
}

/**
 * x less y.
 * @param {SeqSet} x @param {SeqSet} y
 */
function without(x, y) {
  const out = new SeqSet();
  for (let i = 0; i < x.flat.length; i += 2) {
    for (let q = x.flat[i]; q <= x.flat[i + 1]; q++) if (!y.has(q)) out.add(q);
  }
  return out;
}

/**
 * Loss counted apart: updates sent while an event changed the network of
 * their sender or their receiver (during), and every other (outside).
 * @param {RecoveryClient[]} clients @param {Set<string>} moving names of the clients whose links change
 * @param {number[]} indices the events that happened
 * @param {(index: number) => boolean} [only] count `during` for these events alone
 */
export function lossAround(clients, moving, indices, only = () => true) {
  /** @type {Map<string, RecoveryClient>} */
  const byKey = new Map(clients.map((c) => [`${c.group}\u0000${c.id}`, c]));
  const during = { expected: 0, lost: 0 };
  const outside = { expected: 0, lost: 0 };
  for (const sender of clients) {
    if (!sender.sentSeqs || sender.cutoffSeq === undefined) continue;
    for (const rid of Object.keys(sender.sentSeqs)) {
      const receiver = byKey.get(`${sender.group}\u0000${rid}`);
      const stream = receiver?.recv[String(sender.id)];
      const touched = moving.has(sender.name) || (receiver !== undefined && moving.has(receiver.name));
      const inEvents = touched ? eventSeqs(sender, indices.filter(only)) : new SeqSet();
      const allEvents = touched ? eventSeqs(sender, indices) : new SeqSet();
      const a = countStream(/** @type {any} */ (restricted(sender, rid, inEvents, true)), rid, stream);
      const b = countStream(/** @type {any} */ (restricted(sender, rid, allEvents, false)), rid, stream);
      during.expected += a.expected; during.lost += a.lost;
      outside.expected += b.expected; outside.lost += b.lost;
    }
  }
  const pct = (/** @type {{ expected: number, lost: number }} */ t) => ({ ...t, lossPct: t.expected ? (100 * t.lost) / t.expected : 0 });
  return { during: pct(during), outside: pct(outside) };
}

/**
 * The distinct members its neighbours saw leave while an event was under way or after it began.
 * @param {RecoveryClient[]} clients @param {number} index
 */
function fellOut(clients, index) {
  const gone = new Set();
  for (const c of clients) for (const [id, event] of c.recovery?.left ?? []) if (event === index) gone.add(`${c.group}\u0000${id}`);
  return gone.size;
}

/**
 * p50, p99 and max of what was measured, with the count.
 * @param {number[]} values
 */
function spread(values) {
  const s = summarize(values);
  return { p50: s.p50, p99: s.p99, max: s.max, n: s.n };
}

/**
 * The run record's `netEvents` (what was played, on which links, for whom) and `recovery`.
 * @param {object} input
 * @param {number} input.movingPerGroup
 * @param {number[]} input.links the links the events changed
 * @param {import('../net/event-player.js').PlayedEvent[]} input.played
 * @param {string[]} input.movingNames the clients behind those links, by name
 * @param {RecoveryClient[]} input.stats every client's stats
 */
export function netEventsFields({ movingPerGroup, links, played, movingNames, stats }) {
  const moving = new Set(movingNames);
  return {
    netEvents: { links, movingPerGroup, movingClients: moving.size, events: played },
    recovery: recoveryRecord({ events: played, clients: stats, moving }),
  };
}

/**
 * The run record's `recovery`.
 * @param {object} input
 * @param {import('../net/event-player.js').PlayedEvent[]} input.events
 * @param {RecoveryClient[]} input.clients
 * @param {Set<string>} input.moving names of the clients behind the links that change
 */
export function recoveryRecord({ events, clients, moving }) {
  /** @type {Map<string, RecoveryClient[]>} */
  const groups = new Map();
  for (const c of clients) groups.set(c.group, [...(groups.get(c.group) ?? []), c]);
  const happened = events.filter((e) => e.backMs !== null).map((e) => e.index);
  const perEvent = events.map((e) => {
    if (e.backMs === null) return { index: e.index, kind: e.kind, text: e.text, happened: false };
    const rows = clients.filter((c) => moving.has(c.name)).map((m) => memberRecovery(m, (groups.get(m.group) ?? []).filter((n) => n !== m), e.index));
    const done = rows.filter((r) => r.ms !== null);
    const loss = lossAround(clients, moving, happened, (i) => i === e.index).during;
    return {
      index: e.index, kind: e.kind, text: e.text, happened: true,
      members: rows.length,
      recovered: done.length,
      recoveryMs: spread(done.map((r) => /** @type {number} */ (r.ms))),
      outMs: spread(rows.flatMap((r) => (r.outMs === null ? [] : [r.outMs]))),
      inMs: spread(rows.flatMap((r) => (r.inMs === null ? [] : [r.inMs]))),
      fellOut: fellOut(clients, e.index),
      lostDuring: loss,
    };
  });
  const loss = lossAround(clients, moving, happened);
  return { moving: moving.size, events: perEvent, lossDuring: loss.during, lossOutside: loss.outside, ...p2pLinksBack(clients) };
}

/**
 * How the p2p links came back over the run, summed over every member's transport counters
 * (web/src/transport/p2p-mesh.js): redials scheduled after a link failed, links moved onto the
 * relay fallback and back onto a channel, and ICE restarts; nothing for other transports.
 * @param {RecoveryClient[]} clients
 * @returns {{ linksBack?: { redials: number, fallbacks: number, recoveries: number, iceRestarts: number,
 *   iceDisconnects: number, iceFailures: number, iceRestartsStarted: number, networkMoves: number, silentLinks: number,
 *   restartsNewPair: number, restartsSameChannel: number } }}
 */
export function p2pLinksBack(clients) {
  const counters = clients.map((c) => c.setup?.counters).filter((k) => k && typeof k.connectAttempts === 'number');
  if (!counters.length) return {};
  const sum = (/** @type {string} */ key) => counters.reduce((t, k) => t + (/** @type {Record<string, number>} */ (k)[key] ?? 0), 0);
  return {
    linksBack: {
      redials: sum('retries'), fallbacks: sum('fallbacks'), recoveries: sum('recoveries'), iceRestarts: sum('iceRestarts'),
      iceDisconnects: sum('iceDisconnects'), iceFailures: sum('iceFailures'), iceRestartsStarted: sum('iceRestartsStarted'),
      networkMoves: sum('networkMoves'), silentLinks: sum('silentLinks'),
      restartsNewPair: sum('restartsNewPair'), restartsSameChannel: sum('restartsSameChannel'),
    },
  };
}
