// Scenario lanes of `carlab fuzz` (issue 18): where a fuzz case is one socket
// and one verdict, a scenario is a few cooperating sockets whose promise only
// shows across them (docs/security.md "Rate limits" and "Signaling"):
//
//   fair-flood      5 members of one relay group: two flood UPDATEs at 75 %
//                   of the UPDATE limit, three send one per 167 ms and ACK
//                   everything; then one flooder bursts just over its bucket.
//                   No well-behaved member is closed or starved; the flooder
//                   within its limit stays; the one over it is closed 4005.
//   fair-flood-udp  the same on relay-udp, where an UPDATE over the limit is
//                   dropped (counted in metrics().budget), never closed.
//   peer-takeover   a same-token second claim of a PeerJS id closes the older
//                   socket with 4007 and leaves one live socket that messages
//                   to the id reach; another token gets ID-TAKEN.
//   slow-headers    sockets that never finish their request headers are cut
//                   off (408 or close) within the server's headers timeout,
//                   while other requests keep being answered.
//   slow-consumer   a member stops reading: the relay stops waiting for it
//                   (fuzz-slow-consumer.js).
//
// Each scenario's parameters are a pure function of the seed (scenarioPlan);
// its verdict a pure function of what it saw (judge*), so both are tested
// without a server. The lanes on the client-report intake (report-garbage,
// report-flood, report-claim) are fuzz-reports.js and its fuzz-report-*.js.

import { setTimeout as sleep } from 'node:timers/promises';
import net from 'node:net';
import WebSocket from 'ws';
import { CarClient } from '../../core/client.js';
import { CloseCode, HelloFlag, MsgType, decode, encode } from '../../core/protocol.js';
import { createRelayTransport } from '../../web/src/transport/relay.js';
import { createRelayUdpTransport, MAX_MESSAGE_BYTES } from '../../web/src/transport/relay-udp.js';
import { makeRng } from '../shared/rng.js';
import { startStallMeter, until } from '../shared/loop-stall.js';

/** The scenario names, as `--only` takes them (and `scenario` for all). */
export const SCENARIO_NAMES = Object.freeze(['fair-flood', 'fair-flood-udp', 'peer-takeover', 'slow-headers']);

/** How long the fair-flood lanes wait for the relay's verdict on the burst: its close (relay) or its drops (relay-udp). */
const VERDICT_WAIT_MS = 15_000;

/**
 * A well-behaved member is starved when a stream from another one stands still this long (30 cycles
 * of 167 ms): what unfair limits do to it, whatever the machine. How fresh it stays, under the 1 s
 * past which the HUD marks a neighbour stale (docs/architecture.md, Freshness), is a real-time bound:
 * the `fairness` gate's (lab/gates/gates.js), read from the report's `fairness` figures.
 */
export const STARVED_GAP_MS = 5000;

/**
 * The server's limits the scenarios aim at (read from the relay's and the
 * HTTP server's defaults by the caller, so a changed default moves them too).
 * @typedef {object} ScenarioLimits
 * @property {number} updatesPerSecond the relay's UPDATE rate per connection
 * @property {number} updateBurst the relay's UPDATE bucket
 * @property {number} headersTimeoutMs the HTTP server's headersTimeout
 * @property {number} checkIntervalMs how often Node checks it
 */

/**
 * Every scenario's parameters for one seed.
 * @param {number} seed
 * @param {ScenarioLimits} limits
 * @param {{ floodSeconds?: number }} [o] floodSeconds: how long the steady flood lasts (default 8)
 */
export function scenarioPlan(seed, limits, o = {}) {
  const r = makeRng((seed ^ 0x15508018) >>> 0);
  const seconds = o.floodSeconds ?? 8;
  const flood = (/** @type {string} */ group, /** @type {number} */ over) => ({
    group, seconds, cycleMs: 167, rate: 0.75 * limits.updatesPerSecond, burster: r.int(0, 1), burst: limits.updateBurst + over,
  });
  return {
    // "just over": one UPDATE past a full bucket is enough on a WebSocket; on
    // the unreliable channel a few frames may be lost, so it goes well over.
    flood: flood(`fuzz-fair-${seed}`, r.int(1, 50)),
    floodUdp: flood(`fuzz-fair-udp-${seed}`, r.int(Math.ceil(limits.updateBurst / 4), Math.ceil(limits.updateBurst / 2))),
    takeover: { id: `fuzz-takeover-${seed}-${r.word(6)}`, token: `tk-${r.word(12)}`, otherToken: `tk-${r.word(12)}`, caller: `fuzz-caller-${seed}-${r.word(6)}` },
    slow: {
      sockets: Array.from({ length: r.int(3, 6) }, () => ({
        path: r.pick(['/', '/relay', '/peerjs/peerjs/id', '/healthz', '/ar.html']),
        // 0: the request line and one header, then silence; else one more header every dripMs
        dripMs: r.chance(0.5) ? r.int(200, 900) : 0,
      })),
      // Node checks the timeout every checkIntervalMs: a socket can outlive it by that much.
      boundMs: limits.headersTimeoutMs + limits.checkIntervalMs + 1500,
    },
  };
}

/** @typedef {ReturnType<typeof scenarioPlan>} ScenarioPlan */

/**
 * One scenario's verdict: `problems` empty when every promise held.
 * `notes`: what it saw that no document promises either way, reported, not judged.
 * @typedef {{ name: string, ok: boolean, skipped: string | null, problems: string[], notes: string[], summary: string, facts: Record<string, unknown> }} ScenarioResult
 */

/**
 * @param {string} name @param {string[]} problems @param {string} summary @param {Record<string, unknown>} facts
 * @returns {ScenarioResult}
 */
function result(name, problems, summary, facts) {
  return { name, ok: problems.length === 0, skipped: null, problems, notes: [], summary, facts };
}

// ------------------------------------------------------------------ fair flood

/**
 * The longest time without an arrival in [from, to], the gaps running into
 * and out of the window included (so no arrival at all is the whole window).
 * @param {readonly number[]} times ascending
 * @param {number} from @param {number} to
 */
export function longestGap(times, from, to) {
  let prev = from;
  let worst = 0;
  for (const t of times) {
    if (t < from) continue;
    if (t > to) break;
    worst = Math.max(worst, t - prev);
    prev = t;
  }
  return Math.max(worst, to - prev);
}

/**
 * What a fair-flood run saw.
 * @typedef {object} FloodFacts
 * @property {boolean} udp relay-udp (drop over the limit) or relay (close 4005)
 * @property {number} updatesPerSecond the UPDATE limit
 * @property {{ id: number, closed: { code: number, reason: string } | null, gapMs: Record<string, number>, fromFloods: number }[]} good
 *   each well-behaved member: how it ended, its longest gap per other well-behaved member, updates it got from the flooders
 * @property {{ id: number, role: 'steady' | 'burster', sent: number, closed: { code: number, reason: string } | null }[]} floods
 * @property {number} udpDropped relay-udp UPDATEs the relay dropped over their sender's rate during the run
 * @property {number} clientStallMs the longest stall of the event loop running the members during the run (read beside a gap)
 */

/**
 * The fair-flood verdict (docs/security.md "Rate limits").
 * @param {FloodFacts} f
 * @returns {string[]}
 */
export function judgeFairFlood(f) {
  const problems = [];
  for (const g of f.good) {
    if (g.closed) problems.push(`well-behaved member ${g.id} was closed: ${g.closed.code} "${g.closed.reason}"`);
    for (const [other, gap] of Object.entries(g.gapMs)) {
      if (gap > STARVED_GAP_MS) problems.push(`well-behaved member ${g.id} got nothing from ${other} for ${Math.round(gap)} ms (starved: over ${STARVED_GAP_MS} ms)`);
    }
    if (g.fromFloods === 0) problems.push(`well-behaved member ${g.id} got none of the floods' updates (they are within limits: forwarded)`);
  }
  for (const fl of f.floods) {
    if (fl.role === 'steady' && fl.closed) {
      problems.push(`the flooder at 75 % of its limit (${fl.id}) was closed: ${fl.closed.code} "${fl.closed.reason}"`);
    }
    if (fl.role !== 'burster') continue;
    if (f.udp && fl.closed) problems.push(`the relay-udp flooder over its limit (${fl.id}) was closed (${fl.closed.code}); it should lose UPDATEs, not its connection`);
    if (!f.udp && (fl.closed?.code !== CloseCode.RATE_LIMITED || !fl.closed.reason.includes(`over ${f.updatesPerSecond} UPDATEs/s`))) {
      problems.push(`the flooder over its limit (${fl.id}) ended ${fl.closed ? `${fl.closed.code} "${fl.closed.reason}"` : 'open'}, not 4005 "over ${f.updatesPerSecond} UPDATEs/s"`);
    }
  }
  if (f.udp && f.udpDropped === 0) problems.push('relay-udp: no UPDATE over the limit was dropped (metrics().budget.udpDroppedUpdates did not move)');
  return problems;
}

/**
 * The `fairness` gate's figures (lab/gates/gates.js): the longest any well-behaved member went
 * without an update from another one, per lane family; null where the lanes did not run.
 * @param {readonly ScenarioResult[]} scenarios
 * @returns {{ floodGapMs: number | null, floodUdpGapMs: number | null, reportLanesGapMs: number | null }}
 */
export function fairnessFigures(scenarios) {
  /** @param {string[]} names */
  const longest = (names) => {
    const ran = scenarios.filter((sc) => names.includes(sc.name) && !sc.skipped && Array.isArray(sc.facts?.good));
    if (ran.length === 0) return null;
    const good = ran.flatMap((sc) => /** @type {{ gapMs: Record<string, number> }[]} */ (sc.facts.good));
    return Math.max(0, ...good.flatMap((g) => Object.values(g.gapMs)));
  };
  return { floodGapMs: longest(['fair-flood']), floodUdpGapMs: longest(['fair-flood-udp']), reportLanesGapMs: longest(['report-garbage', 'report-flood', 'report-claim']) };
}

/**
 * A well-behaved member: the product's client (one UPDATE per cycle,
 * pipelined, an ACK for every UPDATE), its arrivals recorded per sender.
 * (The report lanes, lab/fuzz/fuzz-reports.js, use it too.)
 * @param {{ url: string, group: string, cycleMs: number, udp: boolean, RTCPeerConnection?: any, name?: string, ackTimeoutMs?: number }} p
 */
export async function goodMember(p) {
  /** @type {Map<number, number[]>} */
  const arrivals = new Map();
  const client = new CarClient({
    transport: p.udp
      ? createRelayUdpTransport({ url: p.url, RTCPeerConnection: p.RTCPeerConnection, WebSocket })
      : createRelayTransport({ url: p.url, batched: true, WebSocket }),
    group: p.group, name: p.name ?? 'fair', cycleMs: p.cycleMs, cycleMode: 'pipelined', ackTimeoutMs: p.ackTimeoutMs ?? 5000,
    pose: () => [0, 0, 0, 0, 0, 0, 1],
    onEvent: (event, detail) => {
      if (event !== 'pose') return;
      const list = arrivals.get(detail.id) ?? [];
      list.push(performance.now());
      arrivals.set(detail.id, list);
    },
  });
  await client.connect();
  return { client, arrivals };
}

/** @param {number} sender @param {number} seq */
const updateOf = (sender, seq) => ({ type: MsgType.UPDATE, sender, seq, sendTime: performance.now(), pose: /** @type {import('../../core/protocol.js').Pose} */ ([0, 0, 0, 0, 0, 0, 1]), object: null });

/**
 * Frames carrying `n` UPDATEs, each at most `perFrame`.
 * @param {number} sender @param {number} firstSeq @param {number} n @param {number} perFrame
 */
export function updateFrames(sender, firstSeq, n, perFrame) {
  const frames = [];
  for (let done = 0; done < n; done += perFrame) {
    const messages = Array.from({ length: Math.min(perFrame, n - done) }, (_, i) => updateOf(sender, firstSeq + done + i));
    frames.push(encode(messages.length === 1 ? messages[0] : { type: MsgType.BATCH, messages }));
  }
  return frames;
}

/**
 * UPDATEs per data-channel message: as many as fit MAX_MESSAGE_BYTES (one
 * packet, as the relay-udp client sends them).
 */
function updatesPerDatagram() {
  let n = 1;
  while (updateFrames(1, 1e6, n + 1, n + 1)[0].length <= MAX_MESSAGE_BYTES) n++;
  return n;
}

/**
 * A flooder on the WebSocket (mode relay): HELLO, then UPDATEs as told; it
 * never ACKs (what it is sent is not its concern).
 * @param {string} url @param {string} group
 */
async function wsFlooder(url, group) {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  ws.on('error', () => {});
  let id = 0;
  let seq = 0;
  /** @type {{ code: number, reason: string } | null} */
  let closed = null;
  ws.on('close', (code, reason) => { closed = { code, reason: String(reason) }; });
  ws.on('message', (data) => {
    const m = decode(/** @type {Buffer} */ (data));
    if (m instanceof Error) return;
    for (const x of m.type === MsgType.BATCH ? m.messages : [m]) if (x.type === MsgType.WELCOME) id = x.clientId;
  });
  await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('close', () => reject(new Error('flooder: no connection'))); });
  ws.send(encode({ type: MsgType.HELLO, flags: HelloFlag.BATCHED, clientId: 0, group, name: 'flood', token: '' }));
  if (!(await until(() => id !== 0 || closed !== null, 5000)) || id === 0) throw new Error('flooder: no WELCOME');
  return {
    get id() { return id; },
    get closed() { return closed; },
    get sent() { return seq; },
    /** @param {number} n */
    send(n) {
      // 200 per frame: a frame is refused whole, so a burst crosses the bucket within one of them.
      for (const f of updateFrames(id, seq + 1, n, 200)) if (ws.readyState === WebSocket.OPEN) ws.send(f);
      seq += n;
    },
    close() { ws.close(1000); },
  };
}

/**
 * A flooder on relay-udp: a client whose cycle never runs; its UPDATEs go
 * straight onto its data channel, as many per message as fit one packet.
 * @param {string} url @param {string} group @param {any} RTCPeerConnection
 */
async function udpFlooder(url, group, RTCPeerConnection) {
  const client = new CarClient({
    transport: createRelayUdpTransport({ url, RTCPeerConnection, WebSocket }), group, name: 'flood', pose: () => [0, 0, 0, 0, 0, 0, 1],
  });
  await client.connect();
  const perDatagram = updatesPerDatagram();
  let seq = 0;
  return {
    get id() { return client.id; },
    get closed() { return client.closedWith; },
    get sent() { return seq; },
    /** @param {number} n */
    send(n) {
      const channel = /** @type {{ send(b: Uint8Array): void, readyState: string } | null} */ (/** @type {any} */ (client.transport).channel);
      for (const f of updateFrames(client.id, seq + 1, n, perDatagram)) if (channel?.readyState === 'open') channel.send(f);
      seq += n;
    },
    close() { client.close(); },
  };
}

/**
 * Sends `rate` UPDATEs per second from each flooder in 20 ms ticks, until
 * stopped; a flooder marked `paused` sends nothing more.
 * @param {{ send(n: number): void }[]} floods @param {number} rate @param {Set<number>} paused indexes
 */
function paceFloods(floods, rate, paused) {
  let owed = 0;
  const timer = setInterval(() => {
    owed += rate / 50;
    const n = Math.floor(owed);
    owed -= n;
    if (n > 0) floods.forEach((f, i) => { if (!paused.has(i)) f.send(n); });
  }, 20);
  return () => clearInterval(timer);
}

/**
 * Runs fair-flood (relay) or fair-flood-udp (relay-udp) against a server.
 * @param {object} p
 * @param {string} p.wsBase ws://host:port
 * @param {ScenarioPlan['flood']} p.plan
 * @param {ScenarioLimits} p.limits
 * @param {boolean} p.udp
 * @param {any} [p.RTCPeerConnection] for relay-udp (node-datachannel's polyfill)
 * @param {() => Promise<any>} p.metrics the server's metrics (relay.budget)
 * @returns {Promise<ScenarioResult>}
 */
export async function runFairFlood(p) {
  const name = p.udp ? 'fair-flood-udp' : 'fair-flood';
  const url = `${p.wsBase}/relay`;
  /** @type {Awaited<ReturnType<typeof goodMember>>[]} */
  const good = [];
  /** @type {Awaited<ReturnType<typeof wsFlooder>>[]} */
  const floods = [];
  try {
    for (let i = 0; i < 3; i++) good.push(await goodMember({ url, group: p.plan.group, cycleMs: p.plan.cycleMs, udp: p.udp, RTCPeerConnection: p.RTCPeerConnection }));
    for (let i = 0; i < 2; i++) floods.push(p.udp ? await udpFlooder(url, p.plan.group, p.RTCPeerConnection) : await wsFlooder(url, p.plan.group));
    if (!(await until(() => good.every((g) => g.client.members.size >= 4), 10000))) throw new Error('the group of 5 did not form within 10 s');
    const budgetBefore = (await p.metrics()).relay?.budget ?? {};
    for (const g of good) g.client.start();
    const paused = new Set();
    const stopPacing = paceFloods(floods, p.plan.rate, paused);
    const from = performance.now() + 1000; // the first cycles of three clients starting: not yet "keeps receiving"
    const stallMeter = startStallMeter({ afterMs: 1000 });
    await sleep(p.plan.seconds * 1000);
    paused.add(p.plan.burster);
    const bursting = floods[p.plan.burster];
    bursting.send(p.plan.burst);
    // The verdict on the burst arrives (on relay-udp: the excess is counted dropped); the others must
    // keep receiving meanwhile. Waited for, not slept: a starved machine once took past 1.5 s.
    const dropped = async () => ((await p.metrics()).relay?.budget?.udpDroppedUpdates ?? 0) > (budgetBefore.udpDroppedUpdates ?? 0);
    await sleep(1500);
    await until(async () => (p.udp ? dropped() : bursting.closed !== null), VERDICT_WAIT_MS, 100);
    stopPacing();
    const to = performance.now();
    const clientStallMs = stallMeter.stop();
    const budgetAfter = (await p.metrics()).relay?.budget ?? {};
    /** @type {FloodFacts} */
    const facts = {
      udp: p.udp,
      updatesPerSecond: p.limits.updatesPerSecond,
      good: good.map((g) => ({
        id: g.client.id,
        closed: g.client.closedWith,
        gapMs: Object.fromEntries(good.filter((o) => o !== g).map((o) => [String(o.client.id), Math.round(longestGap(g.arrivals.get(o.client.id) ?? [], from, to))])),
        fromFloods: floods.reduce((s, fl) => s + (g.arrivals.get(fl.id)?.length ?? 0), 0),
      })),
      floods: floods.map((fl, i) => ({ id: fl.id, role: i === p.plan.burster ? 'burster' : 'steady', sent: fl.sent, closed: fl.closed })),
      udpDropped: (budgetAfter.udpDroppedUpdates ?? 0) - (budgetBefore.udpDroppedUpdates ?? 0),
      clientStallMs,
    };
    const budget = Object.fromEntries(Object.keys(budgetAfter).map((k) => [k, budgetAfter[k] - (budgetBefore[k] ?? 0)]));
    const worstGap = Math.max(0, ...facts.good.flatMap((g) => Object.values(g.gapMs)));
    const burster = facts.floods[p.plan.burster];
    const summary = `3 well-behaved ${facts.good.filter((g) => !g.closed).length} open, longest gap ${worstGap} ms (this process's longest stall ${facts.clientStallMs} ms); `
      + `flooders sent ${facts.floods.map((f) => f.sent).join(' + ')} UPDATEs, the one over its limit ${burster.closed ? `closed ${burster.closed.code}` : 'open'}`
      + `${p.udp ? `, ${facts.udpDropped} dropped` : ''}; whole relay's budget counters meanwhile ${JSON.stringify(budget)}`;
    return result(name, judgeFairFlood(facts), summary, { ...facts, budget });
  } finally {
    for (const g of good) { g.client.stop(); g.client.close(); }
    for (const fl of floods) fl.close();
  }
}

// ------------------------------------------------------------------ PeerServer id takeover

/**
 * What a peer-takeover run saw.
 * @typedef {object} TakeoverFacts
 * @property {string | null} olderFirst the first socket's first message type
 * @property {{ code: number, reason: string } | null} olderClosed how the first socket ended
 * @property {string | null} newerFirst the same-token second claim's first message type
 * @property {boolean} newerOpen it is still open at the end
 * @property {number[]} offersToNewer OFFERs to the id that reached the newer socket (their n)
 * @property {number} offersToOlder OFFERs that reached the older socket after the takeover
 * @property {string | null} thiefFirst the other-token claim's first message type
 * @property {{ code: number, reason: string } | null} thiefClosed how it ended
 * @property {number[]} liveForId live sockets for the id after each claim: peersConnected minus the count
 *   before and minus the caller's socket (1 expected each time)
 */

/**
 * The peer-takeover verdict (docs/security.md "Signaling").
 * @param {TakeoverFacts} f
 * @returns {string[]}
 */
export function judgeTakeover(f) {
  const problems = [];
  if (f.olderFirst !== 'OPEN') problems.push(`the first claim got ${f.olderFirst}, not OPEN`);
  // The newer socket hears OPEN too (docs/security.md), so a PeerJS client reports 'open'.
  if (f.newerFirst !== 'OPEN') problems.push(`the same-token second claim got ${f.newerFirst ?? 'no message'}, not OPEN`);
  if (f.olderClosed?.code !== CloseCode.ID_TAKEN || f.olderClosed.reason !== 'id claimed again by a newer connection') {
    problems.push(`the older socket ended ${f.olderClosed ? `${f.olderClosed.code} "${f.olderClosed.reason}"` : 'still open'}, not 4007 "id claimed again by a newer connection"`);
  }
  if (!f.newerOpen) problems.push('the newer socket did not stay open');
  if (f.offersToNewer.join() !== '1,2') problems.push(`messages to the id reached the newer socket: [${f.offersToNewer}] of [1,2]`);
  if (f.offersToOlder) problems.push(`${f.offersToOlder} message(s) to the id reached the older socket after the takeover`);
  if (f.thiefFirst !== 'ID-TAKEN' || f.thiefClosed?.code !== CloseCode.ID_TAKEN) {
    problems.push(`another token's claim got ${f.thiefFirst} and ended ${f.thiefClosed?.code ?? 'open'}, not ID-TAKEN and 4007`);
  }
  if (f.liveForId.some((d) => d !== 1)) problems.push(`live sockets for the id (from peersConnected): ${f.liveForId.join(', ')}, not 1 each time`);
  return problems;
}

/**
 * A PeerServer socket with its messages and close recorded.
 * @param {string} base ws://host:port @param {Record<string, string>} query
 */
function peerSocket(base, query) {
  const ws = new WebSocket(`${base}/peerjs/peerjs?${new URLSearchParams(query)}`, { perMessageDeflate: false });
  ws.on('error', () => {});
  /** @type {any[]} */
  const messages = [];
  /** @type {{ ws: WebSocket, messages: any[], closed: { code: number, reason: string } | null }} */
  const s = { ws, messages, closed: null };
  ws.on('message', (d) => { try { messages.push(JSON.parse(String(d))); } catch { messages.push({ type: '(not JSON)' }); } });
  ws.on('close', (code, reason) => { s.closed = { code, reason: String(reason) }; });
  return s;
}

/** @param {{ messages: any[], closed: unknown }} s @param {number} [ms] */
const firstType = async (s, ms = 5000) => {
  await until(() => s.messages.length > 0 || s.closed !== null, ms);
  return s.messages[0]?.type ?? null;
};

/**
 * Runs peer-takeover. Run it while no other case touches the PeerServer:
 * it counts live sockets through peersConnected.
 * @param {{ wsBase: string, peerKey: string, plan: ScenarioPlan['takeover'], metrics: () => Promise<any> }} p
 * @returns {Promise<ScenarioResult>}
 */
export async function runPeerTakeover(p) {
  const { id, token, otherToken, caller } = p.plan;
  const live = async () => (await p.metrics()).signaling?.peersConnected ?? NaN;
  const base = await live();
  const older = peerSocket(p.wsBase, { key: p.peerKey, id, token });
  const callerSock = peerSocket(p.wsBase, { key: p.peerKey, id: caller, token });
  /** @type {ReturnType<typeof peerSocket>[]} */
  const all = [older, callerSock];
  try {
    const olderFirst = await firstType(older);
    await firstType(callerSock);
    const liveForId = [await live() - base - 1];
    const newer = peerSocket(p.wsBase, { key: p.peerKey, id, token });
    all.push(newer);
    const newerFirst = await firstType(newer, 1000); // an OPEN comes at once or not at all
    await until(() => older.closed !== null, 2000);
    liveForId.push(await live() - base - 1);
    const offer = (/** @type {number} */ n) => callerSock.ws.send(JSON.stringify({ type: 'OFFER', dst: id, payload: { n } }));
    const offers = (/** @type {{ messages: any[] }} */ s) => s.messages.filter((m) => m.type === 'OFFER' && m.src === caller).map((m) => m.payload?.n);
    offer(1);
    await until(() => offers(newer).length >= 1, 2000);
    const thief = peerSocket(p.wsBase, { key: p.peerKey, id, token: otherToken });
    all.push(thief);
    const thiefFirst = await firstType(thief);
    await until(() => thief.closed !== null, 2000);
    liveForId.push(await live() - base - 1);
    offer(2);
    await until(() => offers(newer).length >= 2, 2000);
    /** @type {TakeoverFacts} */
    const facts = {
      olderFirst, olderClosed: older.closed, newerFirst, newerOpen: newer.closed === null && newer.ws.readyState === WebSocket.OPEN,
      offersToNewer: offers(newer), offersToOlder: offers(older).length, thiefFirst, thiefClosed: thief.closed, liveForId,
    };
    const summary = `older ${older.closed ? `closed ${older.closed.code}` : 'open'}, newer ${facts.newerOpen ? 'open' : 'closed'} `
      + `with ${facts.offersToNewer.length}/2 offers, other token ${thiefFirst} ${thief.closed?.code ?? 'open'}, live sockets for the id ${liveForId.join('/')}`;
    return { ...result('peer-takeover', judgeTakeover(facts), summary, facts), notes: [] };
  } finally {
    for (const s of all) s.ws.close(1000);
    await until(() => all.every((s) => s.closed !== null), 2000);
  }
}

// ------------------------------------------------------------------ slow headers

/**
 * What a slow-headers run saw.
 * @typedef {object} SlowFacts
 * @property {number} boundMs headersTimeout + check interval + slack
 * @property {{ path: string, dripMs: number, outcome: string, ms: number }[]} sockets each slow socket: '408', 'closed' or what else came, and when
 * @property {{ ok: number, failed: string[] }} others plain requests sent meanwhile
 */

/**
 * The slow-headers verdict (docs/security.md, HTTP timeouts).
 * @param {SlowFacts} f
 * @returns {string[]}
 */
export function judgeSlowHeaders(f) {
  const problems = [];
  for (const s of f.sockets) {
    if (s.outcome !== '408' && s.outcome !== 'closed') problems.push(`a slow-headers socket on ${s.path} ended ${s.outcome}, not 408 or closed`);
    else if (s.ms > f.boundMs) problems.push(`a slow-headers socket on ${s.path} was cut off after ${s.ms} ms (bound ${f.boundMs} ms)`);
  }
  if (f.others.failed.length) problems.push(`other requests failed while slow sockets were open: ${f.others.failed.slice(0, 3).join('; ')}`);
  if (f.others.ok === 0) problems.push('no other request was answered while slow sockets were open');
  return problems;
}

/**
 * One slow socket: the request line and a header, then never the blank line.
 * Resolves '408' (the answer Node sends), 'closed' (no answer) or what came
 * instead, with the time from connecting; gives up after `giveUpMs`.
 * @param {number} port @param {{ path: string, dripMs: number }} s @param {number} giveUpMs
 * @returns {Promise<{ outcome: string, ms: number }>}
 */
function slowSocket(port, s, giveUpMs) {
  return new Promise((resolve) => {
    const started = performance.now();
    const sock = net.connect(port, '127.0.0.1');
    let answer = '';
    /** @type {NodeJS.Timeout | undefined} */
    let drip;
    let n = 0;
    const finish = (/** @type {string} */ outcome) => {
      clearInterval(drip);
      clearTimeout(timer);
      sock.destroy();
      resolve({ outcome, ms: Math.round(performance.now() - started) });
    };
    const timer = setTimeout(() => finish('still open'), giveUpMs);
    sock.on('error', () => {});
    sock.on('connect', () => {
      sock.write(`GET ${s.path} HTTP/1.1\r\nHost: 127.0.0.1\r\n`);
      if (s.dripMs > 0) drip = setInterval(() => sock.write(`X-Slow-${++n}: ${n}\r\n`), s.dripMs);
    });
    sock.on('data', (d) => { answer += d.toString('latin1'); });
    sock.on('close', () => {
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(answer);
      finish(m ? m[1] : 'closed');
    });
  });
}

/**
 * Runs slow-headers: the slow sockets, and meanwhile a plain GET /healthz
 * every 500 ms, each of which must be answered 200 within 2 s.
 * @param {{ port: number, plan: ScenarioPlan['slow'] }} p
 * @returns {Promise<ScenarioResult>}
 */
export async function runSlowHeaders(p) {
  const slow = Promise.all(p.plan.sockets.map((s) => slowSocket(p.port, s, p.plan.boundMs + 5000)));
  let done = false;
  /** @type {SlowFacts['others']} */
  const others = { ok: 0, failed: [] };
  const probes = (async () => {
    while (!done) {
      try {
        const res = await fetch(`http://127.0.0.1:${p.port}/healthz`, { signal: AbortSignal.timeout(2000) });
        await res.arrayBuffer();
        if (res.status === 200) others.ok++;
        else others.failed.push(`GET /healthz: ${res.status}`);
      } catch (err) {
        others.failed.push(`GET /healthz: ${/** @type {Error} */ (err).message}`);
      }
      await sleep(500);
    }
  })();
  const ends = await slow;
  done = true;
  await probes;
  /** @type {SlowFacts} */
  const facts = { boundMs: p.plan.boundMs, sockets: p.plan.sockets.map((s, i) => ({ ...s, ...ends[i] })), others };
  const outcomes = facts.sockets.map((s) => s.outcome).join(' ');
  const summary = `${facts.sockets.length} sockets ended ${outcomes} after ${Math.min(...facts.sockets.map((s) => s.ms))}..${Math.max(...facts.sockets.map((s) => s.ms))} ms `
    + `(bound ${facts.boundMs} ms); ${others.ok} other requests answered meanwhile, ${others.failed.length} failed`;
  return result('slow-headers', judgeSlowHeaders(facts), summary, facts);
}

/**
 * A scenario that could not run here (relay-udp without node-datachannel):
 * reported, not a problem.
 * @param {string} name @param {string} why
 * @returns {ScenarioResult}
 */
export function skippedScenario(name, why) {
  return { name, ok: true, skipped: why, problems: [], notes: [], summary: `skipped: ${why}`, facts: {} };
}

/**
 * A scenario whose driver threw: a problem (the promise could not be checked).
 * @param {string} name @param {unknown} err
 * @returns {ScenarioResult}
 */
export function failedScenario(name, err) {
  const message = /** @type {Error | undefined} */ (err)?.message ?? String(err);
  return { name, ok: false, skipped: null, problems: [`driver error: ${message}`], notes: [], summary: `driver error: ${message}`, facts: {} };
}
