// Churn: while stable members of a few groups run their action cycle, other
// clients join and leave those groups every few hundred ms (cleanly or by
// dropping the connection). Measures the longest gap between two sends of
// every stable member (its cycle must never stall longer than its ACK
// timeout allows), the stable members' streams, and whether the relay
// returns to baseline (clients, groups, pending updates, heap after GC) once
// everyone has left. The relay runs in its own process (--expose-gc).

import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';
import { CarClient } from '../../core/client.js';
import { startStallMeter } from '../shared/loop-stall.js';
import { HelloFlag, MsgType, encode } from '../../core/protocol.js';
import { aggregateStreams } from '../../core/metrics.js';
import { HORIZON_MAX_MS } from '../../core/cycle.js';
import { createRelayTransport } from '../../web/src/transport/relay.js';
import { makeRng } from '../shared/rng.js';
import { startServerChild } from '../target/server-process.js';

/**
 * @typedef {object} ChurnOptions
 * @property {number} [durationS] churn this long (default 10)
 * @property {number} [groups] default 3
 * @property {number} [stablePerGroup] default 3
 * @property {number} [cycleMs] default 100
 * @property {number} [ackTimeoutMs] clients' ACK timeout, default 2000
 * @property {[number, number]} [everyMs] a join or leave every [min, max] ms (default [100, 400])
 * @property {number} [maxChurners] at most this many churners at once (default 12)
 * @property {number} [silentFraction] joins that are silent members: they never ACK and leave
 *   after 0.1..2.5 s, so the stable members wait on them until they leave or time out (default 0.25)
 * @property {number} [seed] default 1
 * @property {number} [steps] churn exactly this many joins and leaves instead of for durationS: with
 *   a seed, the same joins and leaves on a busy machine as on an idle one (the tests)
 */


/** @param {number} g */
const groupName = (g) => `churn-${g}`;

/**
 * The longest time a stable member went without sending, up to the end of
 * the churn: from the start to its first send, then between two sends
 * (Infinity if it never sent).
 * @param {number[]} sendTimes performance.now() of every send
 * @param {number} startedAt when the stable members started
 * @param {number} churnEndedAt sends after this do not count
 */
export function longestSendGap(sendTimes, startedAt, churnEndedAt) {
  const t = sendTimes.filter((x) => x <= churnEndedAt);
  let max = t.length ? t[0] - startedAt : Infinity;
  for (let i = 1; i < t.length; i++) max = Math.max(max, t[i] - t[i - 1]);
  return max;
}

/**
 * Warms the relay up (first joins compile code, allocate pools) before the baseline.
 * @param {(g: number, name: string) => CarClient} client
 * @param {number} groupCount
 */
async function warmUp(client, groupCount) {
  const warm = [];
  for (let i = 0; i < 6; i++) { const c = client(i % groupCount, `warm${i}`); await c.connect(); c.start(); warm.push(c); }
  await sleep(500);
  for (const c of warm) c.close();
}

/**
 * The stable members, connected and meshed (or 10 s passed), not started;
 * each one's send times are recorded.
 * @param {(g: number, name: string) => CarClient} client
 * @param {number} groupCount
 * @param {number} stablePerGroup
 */
async function connectStable(client, groupCount, stablePerGroup) {
  /** @type {CarClient[]} */
  const stable = [];
  /** Send times per stable client. @type {Map<CarClient, number[]>} */
  const sends = new Map();
  for (let g = 0; g < groupCount; g++) {
    for (let i = 0; i < stablePerGroup; i++) {
      const c = client(g, `stable${g}.${i}`);
      /** @type {number[]} */
      const times = [];
      sends.set(c, times);
      const send = c.transport.sendUpdate.bind(c.transport);
      c.transport.sendUpdate = (u) => { times.push(performance.now()); send(u); };
      await c.connect();
      stable.push(c);
    }
  }
  const meshEnd = Date.now() + 10000;
  while (stable.some((c) => c.members.size < stablePerGroup - 1) && Date.now() < meshEnd) await sleep(20);
  return { stable, sends };
}

/**
 * The churn: joins and leaves, clean (close) or abrupt (the socket just
 * dies), one every [minMs, maxMs] until durationS passed.
 * @param {Required<Pick<ChurnOptions, 'durationS' | 'groups' | 'cycleMs' | 'everyMs' | 'maxChurners' | 'silentFraction'>> & { steps: number | null }} o
 * @param {{ server: import('../target/server-process.js').ServerChild, url: string, rng: import('../shared/rng.js').Rng,
 *   client: (g: number, name: string, cycle?: number) => CarClient }} run
 */
async function churn(o, { server, url, rng, client }) {
  // by count (o.steps) or by time: only the count makes the same churn on a slow machine
  let step = 0;
  const more = () => (o.steps ? step++ < o.steps : performance.now() < end);
  const [minMs, maxMs] = o.everyMs;
  /** @type {CarClient[]} */
  const churners = [];
  /** @type {Set<WebSocket>} */
  const silent = new Set();
  const counts = { joins: 0, silentJoins: 0, cleanLeaves: 0, abruptLeaves: 0, joinFailures: 0 };
  /** A member that joins and never ACKs, then leaves on its own. @param {number} g */
  const joinSilent = (g) => {
    const ws = new WebSocket(url);
    silent.add(ws);
    ws.on('error', () => {});
    ws.on('open', () => ws.send(encode({ type: MsgType.HELLO, flags: g === 0 ? 0 : HelloFlag.BATCHED, clientId: 0, group: groupName(g), name: 'silent', token: '' })));
    // drawn now, not when the timer fires: the draws stay in the seed's order
    const clean = rng.chance(0.5);
    setTimeout(() => { silent.delete(ws); if (clean) ws.close(1000); else ws.terminate(); }, rng.int(100, 2500));
  };
  let n = 0;
  /** Most clients the relay held at once during the churn (sampled after every step). */
  let peakClients = 0;
  const end = performance.now() + o.durationS * 1000;
  while (more()) {
    await sleep(rng.int(minMs, maxMs));
    peakClients = Math.max(peakClients, (await server.metrics()).relay.clients);
    const join = churners.length === 0 || (churners.length < o.maxChurners && rng.chance(0.55));
    if (join && rng.chance(o.silentFraction)) {
      joinSilent(rng.int(0, o.groups - 1));
      counts.silentJoins++;
    } else if (join) {
      const c = client(rng.int(0, o.groups - 1), `churn${n++}`, rng.pick([o.cycleMs, 167, 698]));
      c.connect().then(() => { if (churners.includes(c)) c.start(); }, () => { counts.joinFailures++; });
      churners.push(c);
      counts.joins++;
    } else {
      const c = churners.splice(rng.int(0, churners.length - 1), 1)[0];
      if (rng.chance(0.3)) {
        c.stop();
        /** @type {{ ws?: WebSocket }} */ (/** @type {unknown} */ (c.transport)).ws?.terminate?.(); // no close frame: the TCP connection just ends
        counts.abruptLeaves++;
      } else {
        c.close();
        counts.cleanLeaves++;
      }
    }
  }
  return { counts, peakClients, churners, silent };
}

/**
 * Stops the stable members, lets the last updates land and sums their
 * stable-to-stable streams.
 * @param {CarClient[]} stable
 */
async function settleStable(stable) {
  for (const c of stable) c.stop();
  // until every last update is a delivery horizon old (docs/architecture.md "Loss"), bounded
  const settle = Date.now() + HORIZON_MAX_MS + 1000;
  while (!stable.every((c) => c.cycle.settled()) && Date.now() < settle) await sleep(20);
  const stats = stable.map((c) => c.stats());
  const stableIds = new Set(stable.map((c) => `${c.options.group}\u0000${c.id}`));
  /** @param {Record<string, any>} map @param {string} group */
  const toStable = (map, group) => Object.fromEntries(Object.entries(map).filter(([rid]) => stableIds.has(`${group}\u0000${rid}`)));
  for (const s of stats) {
    s.sentTo = toStable(s.sentTo, s.group);
    if (s.sentSeqs) s.sentSeqs = toStable(s.sentSeqs, s.group);
  }
  return { stats, streams: aggregateStreams(stats) };
}

/** The relay's gauges with nobody connected. */
const EMPTY_RELAY = Object.freeze({ clients: 0, joined: 0, groups: 0, pending: 0, queued: 0, blocked: 0 });

/**
 * The server's metrics once its gauges are back to `baseline`, read every 100 ms: the relay
 * handles the last closes a moment after they are sent (500 ms was too short once on a starved
 * machine: 9 clients still counted). After `timeoutMs` as they are, so a real leak still shows.
 * @param {{ metrics: () => Promise<any> }} server
 * @param {Record<string, number>} baseline
 * @param {number} [timeoutMs]
 */
async function metricsBackTo(server, baseline, timeoutMs = 10_000) {
  const end = performance.now() + timeoutMs;
  for (;;) {
    const m = await server.metrics();
    const now = /** @type {Record<string, number>} */ (pickGauges(m.relay));
    if (Object.keys(baseline).every((k) => now[k] === baseline[k]) || performance.now() > end) return m;
    await sleep(100);
  }
}

/**
 * Runs the churn and returns its report.
 * @param {ChurnOptions} [o]
 */
export async function runChurn(o = {}) {
  const options = {
    durationS: o.durationS ?? 10,
    groups: o.groups ?? 3,
    cycleMs: o.cycleMs ?? 100,
    everyMs: o.everyMs ?? /** @type {[number, number]} */ ([100, 400]),
    maxChurners: o.maxChurners ?? 12,
    silentFraction: o.silentFraction ?? 0.25,
    steps: o.steps ?? null,
  };
  const { durationS, cycleMs } = options;
  const stablePerGroup = o.stablePerGroup ?? 3;
  const ackTimeoutMs = o.ackTimeoutMs ?? 2000;
  const rng = makeRng(o.seed ?? 1);
  // the poses draw from their own stream: the churn's joins and leaves follow from the seed alone
  const poseRng = makeRng((o.seed ?? 1) + 0x9e3779b9);
  const server = await startServerChild({}, { execArgv: ['--expose-gc'] });
  const url = `${server.url.replace(/^http/, 'ws').replace(/\/$/, '')}/relay`;
  /** @param {number} g @param {string} name @param {number} [cycle] */
  const client = (g, name, cycle = cycleMs) => new CarClient({
    // one group in relay-faithful, the others in relay: both ACK schemes churn
    transport: createRelayTransport({ url, batched: g !== 0, WebSocket }),
    group: groupName(g), name, cycleMs: cycle, ackTimeoutMs,
    pose: () => [poseRng.next(), 0, 0, 0, 0, 0, 1],
  });
  try {
    await warmUp(client, options.groups);
    const before = await metricsBackTo(server, EMPTY_RELAY); // the warm-up's members gone
    const baseline = await server.heap();
    const { stable, sends } = await connectStable(client, options.groups, stablePerGroup);
    const startedAt = performance.now();
    // This process runs every member: a stall of its loop delays their sends whatever the relay does.
    const stallMeter = startStallMeter();
    for (const c of stable) c.start();
    const { counts, peakClients, churners, silent } = await churn(options, { server, url, rng, client });
    const churnEndedAt = performance.now();
    const loopStallMs = stallMeter.stop();
    const during = await server.metrics();

    // Everyone else leaves; then the stable members stop and their streams are checked.
    for (const c of churners) c.close();
    churners.length = 0;
    for (const ws of silent) ws.terminate();
    silent.clear();
    await sleep(300);
    const { stats, streams } = await settleStable(stable);
    const gaps = stable.map((c) => longestSendGap(sends.get(c) ?? [], startedAt, churnEndedAt));
    for (const c of stable) c.close();
    const after = await metricsBackTo(server, pickGauges(before.relay));
    const heap = await server.heap();
    return {
      durationS,
      counts,
      ackTimeoutMs,
      cycleMs,
      maxGapMs: Math.max(...gaps),
      gapsMs: gaps,
      loopStallMs,
      stable: {
        clients: stable.length,
        updatesSent: stats.reduce((a, s) => a + s.updatesSent, 0),
        ackTimeouts: stats.reduce((a, s) => a + s.ackTimeouts, 0),
        lossPct: streams.lossPct, lost: streams.lost, dups: streams.duplicates, reorders: streams.reorders,
        closed: stable.filter((c) => c.closedWith && c.closedWith.code !== 1000).length,
      },
      relay: {
        during: { clients: during.relay.clients, peakClients, groups: during.relay.groups, pending: during.relay.pending },
        before: pickGauges(before.relay),
        after: pickGauges(after.relay),
        closedByCode: after.relay.closedByCode,
        ackTimeouts: after.relay.ackTimeouts,
      },
      heapUsedBytes: { baseline: baseline.heapUsed, after: heap.heapUsed },
      rssBytes: { baseline: baseline.rss, after: heap.rss },
      serverFaults: server.faults.length,
    };
  } finally {
    await server.close();
  }
}

/** Heap growth after GC past which the relay is taken to keep what churners left (bytes). */
export const HEAP_GROWTH_BOUND = 2 * 1024 * 1024;

/**
 * What broke, from a churn report: the run's promises, timing aside.
 * @param {Awaited<ReturnType<typeof runChurn>>} r a report of runChurn
 * @returns {string[]}
 */
export function churnProblems(r) {
  const problems = [];
  const s = r.stable;
  if (s.lost || s.dups || s.reorders) problems.push(`stable members' streams: ${s.lost} lost, ${s.dups} duplicated, ${s.reorders} reordered`);
  if (s.closed) problems.push(`${s.closed} stable member(s) closed`);
  if (!Number.isFinite(r.maxGapMs)) problems.push('a stable member never sent during the churn');
  if (JSON.stringify(r.relay.after) !== JSON.stringify(r.relay.before)) problems.push(`the relay kept state: ${JSON.stringify(r.relay.after)} against ${JSON.stringify(r.relay.before)}`);
  const growth = r.heapUsedBytes.after - r.heapUsedBytes.baseline;
  if (growth >= HEAP_GROWTH_BOUND) problems.push(`the server's heap after GC grew by ${(growth / 1024).toFixed(0)} KiB`);
  if (r.serverFaults) problems.push(`the server reported ${r.serverFaults} fault(s)`);
  return problems;
}

/** @param {any} r relay metrics */
function pickGauges(r) {
  return { clients: r.clients, joined: r.joined, groups: r.groups, pending: r.pending, queued: r.queued, blocked: r.blocked };
}
