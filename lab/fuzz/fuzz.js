// The fuzz run behind `carlab fuzz` and its test: a real carlab server in a
// child process (relay + PeerServer, plain HTTP on loopback), well-behaved
// clients exchanging updates through it (relay mode, reliable) and two
// well-behaved PeerJS peers, while lanes of seeded cases (fuzz-cases.js)
// throw malformed, truncated, oversized and random frames, broken handshakes
// and odd HTTP requests at it. Every case's outcome is checked against what
// the documents promise; the server must not crash, must not report an
// unhandled rejection and must stay within a memory bound; the good clients'
// streams must have no gap, duplicate or reorder. The report lanes
// (fuzz-reports.js) do the same to POST /reports; the server records the
// reports it accepts into a temporary folder, which the books then read.

import net from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { CarClient } from '../../core/client.js';
import { aggregateStreams } from '../../core/metrics.js';
import { createRelayTransport } from '../../web/src/transport/relay.js';
import { RELAY_DEFAULTS } from '../../relay/index.js';
import { SIGNALING_DEFAULTS } from '../../signaling/index.js';
import { HTTP_TIMEOUTS } from '../../server/server.js';
import { PROBE, expectPeer, expectRelay, generateCase, makeWorld, unitsOf } from './fuzz-cases.js';
import { seedOf } from '../shared/rng.js';
import { SCENARIO_NAMES, failedScenario, runFairFlood, runPeerTakeover, runSlowHeaders, scenarioPlan, skippedScenario } from './fuzz-scenarios.js';
import {
  REPORTS_ALIAS, REPORT_SCENARIO_NAMES, createReportLedger, fetchReportCounts, readRecordedReports, reportBooks, reportPlan,
  runReportClaim, runReportFlood, runReportGarbage,
} from './fuzz-reports.js';
import { startServerChild } from '../target/server-process.js';

/**
 * @typedef {object} FuzzOptions
 * @property {number} [frames] stop once this many frames, handshakes and requests were sent (default 100 000)
 * @property {number | string} [seed] default 1
 * @property {number} [lanes] cases in flight at once (default 8)
 * @property {number} [maxRssGrowthBytes] server RSS may grow this much over its start (default 96 MiB)
 * @property {number} [caseTimeoutMs] a case that has not ended by then is a failure (default 5000)
 * @property {string[]} [only] run only cases with these names or targets (the others are skipped,
 *   not sent), and only these scenarios (by name, `reports` for the three report lanes, or
 *   `scenario` for all): to home in on one kind of failure with the same seed
 * @property {number} [floodSeconds] how long the fair-flood scenarios' steady flood lasts (default 8)
 * @property {number} [reportFloodSeconds] how long report-flood's tight loop lasts (default 2)
 * @property {(p: { units: number, target: number, cases: number, failures: number, elapsedS: number }) => void} [onProgress]
 * @property {() => boolean} [shouldStop]
 */

/** Outcomes of one case. @typedef {{ ok: boolean, units: number, outcome: string, expected: string, detail?: string }} CaseResult */

const MIB = 1024 * 1024;

/** @param {number} ms */
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** @param {Uint8Array | string} data */
function hexOf(data) {
  if (typeof data === 'string') return JSON.stringify(data.slice(0, 60));
  const b = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return `${b.subarray(0, 48).toString('hex')}${b.length > 48 ? `...(${b.length} bytes)` : ''}`;
}

/**
 * A WebSocket that resolves how it closed (or 'timeout').
 * @param {string} url
 * @param {number} timeoutMs
 */
function openSocket(url, timeoutMs) {
  const ws = new WebSocket(url, { perMessageDeflate: false, handshakeTimeout: timeoutMs });
  ws.on('error', () => {});
  /** @type {string | null} */
  let first = null;
  ws.once('message', (data, isBinary) => {
    if (isBinary) { first = '(binary)'; return; }
    try { first = JSON.parse(String(data)).type ?? '(no type)'; } catch { first = '(not JSON)'; }
  });
  /** @type {Promise<{ code: number, reason: string } | 'timeout'>} */
  const closed = new Promise((resolve) => {
    const timer = setTimeout(() => { ws.terminate(); resolve('timeout'); }, timeoutMs);
    ws.once('close', (code, reason) => { clearTimeout(timer); resolve({ code, reason: String(reason) }); });
  });
  const opened = new Promise((resolve) => {
    ws.once('open', () => resolve(true));
    ws.once('close', () => resolve(false));
  });
  return { ws, opened, closed, first: () => first };
}

/**
 * @param {import('./fuzz-cases.js').RelayCase} c
 * @param {import('./fuzz-cases.js').FuzzWorld} world
 * @param {string} url
 * @param {number} timeoutMs
 * @returns {Promise<CaseResult>}
 */
async function runRelayCase(c, world, url, timeoutMs) {
  const expect = expectRelay(c.frames, world);
  const s = openSocket(url, timeoutMs);
  if (!(await s.opened)) return { ok: false, units: 0, outcome: 'no connection', expected: expect.codes.join('|') };
  let units = 0;
  for (const f of c.frames) {
    if (s.ws.readyState !== WebSocket.OPEN) break;
    if ('text' in f) s.ws.send(f.text, { binary: false });
    else s.ws.send(f.bytes, { binary: true });
    units++;
  }
  if (expect.probe && s.ws.readyState === WebSocket.OPEN) {
    s.ws.send(PROBE, { binary: true });
    units++;
  }
  const closed = await s.closed;
  const outcome = closed === 'timeout' ? 'timeout' : String(closed.code);
  const ok = closed !== 'timeout' && expect.codes.includes(closed.code);
  return {
    ok, units, outcome, expected: expect.codes.join('|'),
    detail: ok ? undefined : `${closed === 'timeout' ? '' : `reason "${closed.reason}"; `}frames ${c.frames.map((f) => hexOf('text' in f ? f.text : f.bytes)).join(' ')}`,
  };
}

/**
 * @param {import('./fuzz-cases.js').PeerCase} c
 * @param {import('./fuzz-cases.js').FuzzWorld} world
 * @param {string} base ws://host:port
 * @param {number} timeoutMs
 * @returns {Promise<CaseResult>}
 */
async function runPeerCase(c, world, base, timeoutMs) {
  const expect = expectPeer(c, world);
  const s = openSocket(`${base}/peerjs/peerjs?${new URLSearchParams(c.query)}`, timeoutMs);
  if (!(await s.opened)) return { ok: false, units: 0, outcome: 'no connection', expected: expect.codes.join('|') };
  let units = c.frames.length === 0 ? 1 : 0;
  for (const f of c.frames) {
    if (s.ws.readyState !== WebSocket.OPEN) break;
    s.ws.send(f.data, { binary: f.binary });
    units++;
  }
  if (expect.probe && s.ws.readyState === WebSocket.OPEN) {
    s.ws.send('this is not JSON', { binary: false });
    units++;
  }
  const closed = await s.closed;
  const outcome = closed === 'timeout' ? 'timeout' : String(closed.code);
  const firstOk = c.firstMessage === null || s.first() === c.firstMessage;
  const ok = closed !== 'timeout' && expect.codes.includes(closed.code) && firstOk;
  return {
    ok, units, outcome: firstOk ? outcome : `${outcome} after ${s.first()}`, expected: `${expect.codes.join('|')} after ${c.firstMessage}`,
    detail: ok ? undefined : `query ${JSON.stringify(c.query)}; frames ${c.frames.slice(0, 5).map((f) => hexOf(f.data)).join(' ')}`,
  };
}

/**
 * The first WebSocket close code in server-to-client frames (unmasked), if complete.
 * @param {Buffer} buf
 * @returns {number | undefined}
 */
export function closeCodeIn(buf) {
  let i = 0;
  while (i + 2 <= buf.length) {
    const opcode = buf[i] & 0x0f;
    let len = buf[i + 1] & 0x7f;
    let at = i + 2;
    if (len === 126) {
      if (at + 2 > buf.length) return undefined;
      len = buf.readUInt16BE(at);
      at += 2;
    } else if (len === 127) {
      if (at + 8 > buf.length) return undefined;
      len = Number(buf.readBigUInt64BE(at));
      at += 8;
    }
    if (at + len > buf.length) return undefined;
    if (opcode === 8) return len >= 2 ? buf.readUInt16BE(at) : 1005;
    i = at + len;
  }
  return undefined;
}

/**
 * Raw TCP: sends the request, reads the status line; after a 101, sends the
 * WebSocket bytes and reads the server's close frame.
 * @param {number} port
 * @param {import('./fuzz-cases.js').RawCase} c
 * @param {number} timeoutMs
 * @returns {Promise<CaseResult>}
 */
function runRawCase(port, c, timeoutMs) {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    let buf = Buffer.alloc(0);
    /** @type {number | null} */
    let status = null;
    let upgraded = false;
    let settled = false;
    const units = 1 + (c.afterUpgrade ? 1 : 0);
    /** @param {string} outcome */
    const finish = (outcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      sock.destroy();
      const ok = c.expect.includes('any') || c.expect.some((e) => String(e) === outcome);
      resolve({ ok, units, outcome, expected: c.expect.join('|'), detail: ok ? undefined : `request ${hexOf(c.request)}` });
    };
    const timer = setTimeout(() => finish(status === null ? 'timeout' : `timeout after ${status}`), timeoutMs);
    sock.on('error', () => {});
    sock.on('connect', () => {
      sock.write(c.request);
      if (c.halfClose) sock.end();
    });
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      if (status === null) {
        const m = /^HTTP\/1\.[01] (\d{3})/.exec(buf.toString('latin1', 0, Math.min(buf.length, 16)));
        if (!m) return;
        status = Number(m[1]);
        if (status !== 101) { finish(String(status)); return; }
      }
      if (!upgraded) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        upgraded = true;
        buf = buf.subarray(end + 4);
        if (!c.afterUpgrade) { finish('101'); return; }
        sock.write(c.afterUpgrade);
        if (c.abort) { finish('aborted'); return; }
      }
      const code = closeCodeIn(buf);
      if (code !== undefined) finish(`ws:${code}`);
    });
    sock.on('close', () => finish(status === null ? 'closed' : upgraded ? 'ws:dropped without close frame' : `${status} then closed`));
  });
}

/** What an answer from outside the web root would contain. */
const LEAK_SIGNS = ['"devDependencies"', 'root:x:0:0', 'PRIVATE KEY', 'createCarlabServer'];

/**
 * @param {number} port
 * @param {import('./fuzz-cases.js').HttpCase} c
 * @param {number} timeoutMs
 * @returns {Promise<CaseResult>}
 */
function runHttpCase(port, c, timeoutMs) {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    /** @type {Buffer[]} */
    const chunks = [];
    let settled = false;
    /** @param {string | null} timedOut */
    const finish = (timedOut) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      sock.destroy();
      const text = Buffer.concat(chunks).toString('latin1');
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      const status = m ? Number(m[1]) : null;
      const leak = c.traversal ? LEAK_SIGNS.find((sign) => text.includes(sign)) : undefined;
      const ok = !timedOut && status !== null && status >= 200 && status < 500 && !leak;
      const outcome = timedOut ?? (status === null ? 'no answer' : leak ? `${status} leaking ${leak}` : String(status));
      resolve({ ok, units: 1, outcome, expected: '2xx-4xx', detail: ok ? undefined : `request ${JSON.stringify(Buffer.from(c.request).toString('latin1').slice(0, 200))}` });
    };
    const timer = setTimeout(() => finish('timeout'), timeoutMs);
    sock.on('error', () => {});
    sock.on('connect', () => sock.write(c.request));
    sock.on('data', (d) => chunks.push(d));
    sock.on('close', () => finish(null));
  });
}

/**
 * Well-behaved PeerJS peers: A sends B a numbered OFFER every 100 ms; B must get them all, in order.
 * @param {string} base ws://host:port
 * @param {import('./fuzz-cases.js').FuzzWorld} world
 */
async function startSentinels(base, world) {
  const idA = `fuzz-sentinel-a-${world.seed}`;
  const connect = async (/** @type {string} */ id, /** @type {string} */ token) => {
    const ws = new WebSocket(`${base}/peerjs/peerjs?${new URLSearchParams({ key: world.peerKey, id, token })}`, { perMessageDeflate: false });
    ws.on('error', () => {});
    const data = /** @type {Buffer} */ (await new Promise((resolve, reject) => {
      ws.once('message', (d) => resolve(/** @type {Buffer} */ (d)));
      ws.once('close', (code) => reject(new Error(`sentinel ${id} closed with ${code}`)));
    }));
    if (JSON.parse(String(data)).type !== 'OPEN') throw new Error(`sentinel ${id}: no OPEN`);
    return ws;
  };
  const a = await connect(idA, `sentinel-a-${world.seed}`);
  const b = await connect(world.sentinel.id, world.sentinel.token);
  const state = { sent: 0, received: 0, outOfOrder: 0, closedA: /** @type {number | null} */ (null), closedB: /** @type {number | null} */ (null) };
  a.on('close', (code) => { state.closedA = code; });
  b.on('close', (code) => { state.closedB = code; });
  b.on('message', (data) => {
    let m;
    try { m = JSON.parse(String(data)); } catch { return; }
    if (m.type !== 'OFFER' || m.src !== idA) return; // fuzz cases send B junk too: only A's count
    if (m.payload?.n !== state.received + 1) state.outOfOrder++;
    state.received++;
  });
  const offers = setInterval(() => {
    if (a.readyState !== WebSocket.OPEN) return;
    a.send(JSON.stringify({ type: 'OFFER', dst: world.sentinel.id, payload: { n: ++state.sent } }));
  }, 100);
  const beats = setInterval(() => {
    for (const ws of [a, b]) if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: 'HEARTBEAT' }));
  }, 5000);
  return {
    state,
    async stop() {
      clearInterval(offers);
      clearInterval(beats);
      await sleep(300); // the last offers land
      const open = a.readyState === WebSocket.OPEN && b.readyState === WebSocket.OPEN;
      a.close(1000);
      b.close(1000);
      return { ...state, open };
    },
  };
}

/**
 * Well-behaved clients: two groups of three, one of them locked with a
 * token; connected, meshed (or 10 s passed) and started.
 * @param {string} wsBase ws://host:port
 * @param {import('./fuzz-cases.js').FuzzWorld} world
 */
async function startGoodClients(wsBase, world) {
  /** @type {CarClient[]} */
  const good = [];
  for (const g of world.goodGroups) {
    for (const id of g.ids) {
      const client = new CarClient({
        transport: createRelayTransport({ url: `${wsBase}/relay`, batched: true, WebSocket }),
        group: g.name, name: `good-${id}`, clientId: id, token: g.token, cycleMs: 50, ackTimeoutMs: 5000,
        pose: () => [Math.sin(performance.now() / 1000), 0, 0, 0, 0, 0, 1],
      });
      await client.connect();
      good.push(client);
    }
  }
  const meshEnd = Date.now() + 10000;
  while (good.some((c) => c.members.size < 2) && Date.now() < meshEnd) await sleep(20);
  for (const c of good) c.start();
  return good;
}

/**
 * The server's RSS from its own process.memoryUsage(): `sample()` records
 * one reading (and resolves with the metrics, or null without RSS).
 * @param {import('../target/server-process.js').ServerChild} server
 */
function rssMonitor(server) {
  const rss = { start: 0, end: 0, max: 0, samples: 0 };
  const sample = async () => {
    const m = await server.metrics();
    if (typeof m.rssBytes === 'number') {
      rss.max = Math.max(rss.max, m.rssBytes);
      rss.samples++;
      return m;
    }
    return null;
  };
  return { rss, sample };
}

/**
 * A case that did not end as documented, as the report lists it.
 * @typedef {{ index: number, target: string, name: string, expected: string, got: string, detail?: string }} FuzzFailure
 */

/**
 * What the lanes sent and how the cases ended, by target and by case name;
 * the first 25 failures in full.
 */
export function createFuzzTally() {
  return {
    units: 0,
    /** @type {Record<string, number>} */
    unitsByTarget: { relay: 0, peer: 0, raw: 0, http: 0 },
    /** @type {Record<string, Record<string, number>>} */
    outcomes: { relay: {}, peer: {}, raw: {}, http: {} },
    /** @type {Record<string, number>} */
    cases: {},
    done: 0,
    failureCount: 0,
    /** @type {FuzzFailure[]} */
    failures: [],
  };
}

/** @typedef {ReturnType<typeof createFuzzTally>} FuzzTally */

/**
 * Counts one case's result into the tally.
 * @param {FuzzTally} tally
 * @param {number} index the case's index (it regenerates from the seed)
 * @param {{ target: string, name: string }} c
 * @param {CaseResult} result
 */
export function recordCase(tally, index, c, result) {
  tally.units += result.units;
  tally.unitsByTarget[c.target] += result.units;
  tally.cases[c.name] = (tally.cases[c.name] ?? 0) + 1;
  tally.outcomes[c.target][result.outcome] = (tally.outcomes[c.target][result.outcome] ?? 0) + 1;
  tally.done++;
  if (!result.ok) {
    tally.failureCount++;
    if (tally.failures.length < 25) tally.failures.push({ index, target: c.target, name: c.name, expected: result.expected, got: result.outcome, detail: result.detail });
  }
}

/**
 * Runs one case on its target; a driver that throws is a failed case.
 * @param {import('./fuzz-cases.js').FuzzCase} c
 * @param {import('./fuzz-cases.js').FuzzWorld} world
 * @param {number} port
 * @param {number} timeoutMs
 * @returns {Promise<CaseResult>}
 */
async function runCase(c, world, port, timeoutMs) {
  const wsBase = `ws://127.0.0.1:${port}`;
  try {
    if (c.target === 'relay') return await runRelayCase(c, world, `${wsBase}/relay`, timeoutMs);
    if (c.target === 'peer') return await runPeerCase(c, world, wsBase, timeoutMs);
    if (c.target === 'raw') return await runRawCase(port, c, timeoutMs);
    return await runHttpCase(port, c, timeoutMs);
  } catch (err) {
    return { ok: false, units: unitsOf(c, world), outcome: `driver error: ${/** @type {Error | undefined} */ (err)?.message ?? err}`, expected: '' };
  }
}

/**
 * The lanes: case i is a pure function of (seed, i); each lane takes the
 * next index until the target is sent, the server died or Ctrl-C.
 * @param {FuzzOptions} o
 * @param {{ world: import('./fuzz-cases.js').FuzzWorld, server: import('../target/server-process.js').ServerChild, port: number,
 *   target: number, lanes: number, timeoutMs: number, started: number }} run
 */
async function runLanes(o, { world, server, port, target, lanes, timeoutMs, started }) {
  const tally = createFuzzTally();
  let next = 0;
  let lastProgress = 0;
  const stop = () => tally.units >= target || server.exit !== null || Boolean(o.shouldStop?.());
  const lane = async () => {
    while (!stop()) {
      const index = next++;
      const c = generateCase(world, index);
      if (o.only && !o.only.includes(c.name) && !o.only.includes(c.target)) continue;
      recordCase(tally, index, c, await runCase(c, world, port, timeoutMs));
      const now = performance.now();
      if (o.onProgress && now - lastProgress > 1000) {
        lastProgress = now;
        o.onProgress({ units: tally.units, target, cases: tally.done, failures: tally.failureCount, elapsedS: (now - started) / 1000 });
      }
    }
  };
  await Promise.all(Array.from({ length: lanes }, lane));
  return tally;
}

/**
 * The good clients: stop sending, let what is in flight land, then sum
 * their good-to-good streams.
 * @param {CarClient[]} good
 */
async function settleGoodClients(good) {
  await sleep(500);
  for (const c of good) c.stop();
  const settleEnd = Date.now() + 3000;
  while (good.some((c) => c.cycle.outstanding) && Date.now() < settleEnd) await sleep(20);
  await sleep(200);
  const stats = good.map((c) => c.stats());
  const ids = new Set(good.map((c) => `${c.options.group}\u0000${c.id}`));
  for (const s of stats) {
    // Updates also went to fuzz cases that joined the group: only good-to-good streams count.
    s.sentTo = Object.fromEntries(Object.entries(s.sentTo).filter(([rid]) => ids.has(`${s.group}\u0000${rid}`)));
  }
  const streams = aggregateStreams(stats);
  const goodClosed = good.filter((c) => c.closedWith).map((c) => `${c.id}: ${c.closedWith?.code}`);
  return { stats, streams, goodClosed };
}

/**
 * Every promise that did not hold, as one line each (none: the run is ok).
 * @param {object} seen
 * @param {{ code: number | null, signal: string | null } | null} seen.exit how the server ended during the run, null if it did not
 * @param {{ kind: string, message: string }[]} seen.faults
 * @param {number} seen.failureCount
 * @param {{ start: number, max: number }} seen.rss
 * @param {number} seen.maxRssGrowthBytes
 * @param {{ lost: number, duplicates: number, reorders: number, expected: number }} seen.streams
 * @param {{ updatesSent: number }[]} seen.stats
 * @param {string[]} seen.goodClosed
 * @param {{ open: boolean, sent: number, received: number, outOfOrder: number }} seen.sentinel
 * @param {{ relay?: { clients?: number, groups?: number, pending?: number } }} seen.after server metrics after everyone left
 * @returns {string[]}
 */
export function fuzzProblems({ exit, faults, failureCount, rss, maxRssGrowthBytes, streams, stats, goodClosed, sentinel, after }) {
  const problems = [];
  const crashed = exit !== null;
  if (crashed) problems.push(`the server died during the run (${JSON.stringify(exit)})`);
  if (faults.length) problems.push(`the server reported ${faults.length} fault(s): ${faults.slice(0, 3).map((f) => `${f.kind}: ${f.message.split('\n')[0]}`).join('; ')}`);
  if (failureCount) problems.push(`${failureCount} case(s) did not end as documented`);
  if (rss.max - rss.start > maxRssGrowthBytes) problems.push(`server RSS grew by ${((rss.max - rss.start) / MIB).toFixed(1)} MiB (bound ${maxRssGrowthBytes / MIB} MiB)`);
  if (streams.lost !== 0 || streams.duplicates !== 0 || streams.reorders !== 0) {
    problems.push(`good clients' streams: ${streams.lost} lost, ${streams.duplicates} duplicated, ${streams.reorders} reordered`);
  }
  if (stats.some((s) => s.updatesSent === 0) || streams.expected === 0) problems.push('a good client sent nothing');
  if (goodClosed.length) problems.push(`good clients were closed: ${goodClosed.join(', ')}`);
  if (!sentinel.open || sentinel.received !== sentinel.sent || sentinel.outOfOrder) {
    problems.push(`PeerJS sentinels: open ${sentinel.open}, ${sentinel.received}/${sentinel.sent} offers, ${sentinel.outOfOrder} out of order`);
  }
  if (!crashed && (after.relay?.clients !== 0 || after.relay?.groups !== 0 || after.relay?.pending !== 0)) {
    problems.push(`the relay kept state after everyone left: ${JSON.stringify({ clients: after.relay?.clients, groups: after.relay?.groups, pending: after.relay?.pending })}`);
  }
  return problems;
}

/** Every scenario lane's name, as --only takes them. */
export const ALL_SCENARIO_NAMES = Object.freeze([...SCENARIO_NAMES, ...REPORT_SCENARIO_NAMES]);

/**
 * Whether `only` (the --only list) leaves scenario `name` in: no list, its
 * name, `reports` (a report lane) or `scenario` (all of them).
 * @param {string[] | undefined} only @param {string} name
 */
export function scenarioSelected(only, name) {
  return !only || only.includes(name) || only.includes('scenario') || (only.includes(REPORTS_ALIAS) && REPORT_SCENARIO_NAMES.includes(name));
}

/**
 * Whether `only` leaves any fuzz case in (a list of scenario names only does
 * not: the lanes would skip every index without end).
 * @param {string[] | undefined} only
 */
export function casesSelected(only) {
  return !only || only.some((x) => x !== 'scenario' && x !== REPORTS_ALIAS && !ALL_SCENARIO_NAMES.includes(x));
}

/**
 * The scenario lanes (lab/fuzz/fuzz-scenarios.js, lab/fuzz/fuzz-reports.js) of one
 * run. peer-takeover runs at once and alone, since it counts the PeerServer's
 * live sockets; `during()` starts the others, which run beside the case lanes
 * (the relay and the HTTP server are under fuzz while they check their
 * promises) and resolve with every scenario's result. The report lanes take
 * a few seconds each (report-garbage beside report-flood then report-claim:
 * together within the slow-headers lane); their POSTs are booked in `ledger`
 * (null when none runs) for the books after the run.
 * @param {FuzzOptions} o
 * @param {{ seed: number, world: import('./fuzz-cases.js').FuzzWorld, server: import('../target/server-process.js').ServerChild, port: number }} run
 */
async function startScenarios(o, { seed, world, server, port }) {
  const limits = {
    updatesPerSecond: RELAY_DEFAULTS.maxUpdatesPerSecond, updateBurst: RELAY_DEFAULTS.maxUpdatesBurst,
    headersTimeoutMs: HTTP_TIMEOUTS.headersTimeoutMs, checkIntervalMs: HTTP_TIMEOUTS.checkIntervalMs,
  };
  const plan = scenarioPlan(seed, limits, { floodSeconds: o.floodSeconds });
  const wsBase = `ws://127.0.0.1:${port}`;
  const metrics = () => server.metrics();
  /** @param {string} name @param {() => Promise<import('./fuzz-scenarios.js').ScenarioResult>} go */
  const guarded = (name, go) => (scenarioSelected(o.only, name) ? go().catch((err) => failedScenario(name, err)) : null);
  const takeover = await guarded('peer-takeover', () => runPeerTakeover({ wsBase, peerKey: world.peerKey, plan: plan.takeover, metrics }));
  const reports = reportPlan(seed, undefined, { floodSeconds: o.reportFloodSeconds });
  const ledger = REPORT_SCENARIO_NAMES.some((name) => scenarioSelected(o.only, name)) ? createReportLedger() : null;
  const reportArgs = { wsBase, port, plan: reports, ledger: /** @type {import('./fuzz-reports.js').ReportLedger} */ (ledger), timeoutMs: o.caseTimeoutMs ?? 5000 };
  // report-garbage sends one request at a time: beside the other two, which run one after the other
  const runReports = () => Promise.all([
    guarded('report-garbage', () => runReportGarbage(reportArgs)),
    (async () => [
      await guarded('report-flood', () => runReportFlood(reportArgs)),
      await guarded('report-claim', () => runReportClaim(reportArgs)),
    ])(),
  ]).then((done) => done.flat());
  return {
    ledger,
    during() {
      const RTCPeerConnection = world.udpAvailable ? import('node-datachannel/polyfill').then((m) => m.RTCPeerConnection) : null;
      const pending = [
        guarded('fair-flood', () => runFairFlood({ wsBase, plan: plan.flood, limits, udp: false, metrics })),
        guarded('fair-flood-udp', async () => (RTCPeerConnection
          ? runFairFlood({ wsBase, plan: plan.floodUdp, limits, udp: true, RTCPeerConnection: await RTCPeerConnection, metrics })
          : skippedScenario('fair-flood-udp', 'relay-udp is not available (node-datachannel)'))),
        guarded('slow-headers', () => runSlowHeaders({ port, plan: plan.slow })),
      ];
      return Promise.all([...pending, runReports()]).then((done) => [takeover, ...done.flat()].filter((x) => x !== null));
    },
  };
}

/**
 * Runs the fuzz and returns its report; `report.ok` says whether every promise held.
 * (A little over 80 lines: the report literal at its end is the report's schema, kept whole.)
 * @param {FuzzOptions} [o]
 */
export async function runFuzz(o = {}) {
  const target = o.frames ?? 100000;
  const seed = seedOf(o.seed ?? 1);
  const maxRssGrowthBytes = o.maxRssGrowthBytes ?? 96 * MIB;
  const udpAvailable = await import('node-datachannel').then(() => true, () => false);
  const world = makeWorld(seed, {
    maxPayload: RELAY_DEFAULTS.maxPayload, burst: RELAY_DEFAULTS.maxMessagesBurst,
    peerBurst: SIGNALING_DEFAULTS.maxMessagesBurst, udpAvailable,
  });
  const started = performance.now();
  // every report the server accepts is recorded here (`carlab start --record`): the books read it back
  const recordDir = await mkdtemp(path.join(tmpdir(), 'carlab-fuzz-record-'));
  const server = await startServerChild({ peerjsKey: world.peerKey, record: recordDir }, { execArgv: ['--expose-gc'] }).catch(async (err) => {
    await rm(recordDir, { recursive: true, force: true });
    throw err;
  });
  const port = Number(new URL(server.url).port);
  const wsBase = `ws://127.0.0.1:${port}`;

  const good = await startGoodClients(wsBase, world);
  const sentinels = await startSentinels(wsBase, world);
  await sleep(300);
  // Memory: sampled all along, from the server's own process.memoryUsage().
  const { rss, sample: sampleRss } = rssMonitor(server);
  const heapStart = await server.heap();
  const first = await sampleRss();
  rss.start = first?.rssBytes ?? 0;
  const sampler = setInterval(() => { void sampleRss(); }, 500);

  const scenarioLanes = await startScenarios(o, { seed, world, server, port });
  const scenariosDone = scenarioLanes.during();
  const tally = casesSelected(o.only)
    ? await runLanes(o, { world, server, port, target, lanes: o.lanes ?? 8, timeoutMs: o.caseTimeoutMs ?? 5000, started })
    : createFuzzTally();
  const scenarios = await scenariosDone;
  const fuzzS = (performance.now() - started) / 1000;
  clearInterval(sampler);
  const reportCounts = scenarioLanes.ledger ? await fetchReportCounts(port).catch(() => null) : null;

  const { stats, streams, goodClosed } = await settleGoodClients(good);
  const sentinel = await sentinels.stop();
  const during = await server.metrics();
  for (const c of good) c.close();
  await sleep(500);
  const after = await server.metrics();
  const heapEnd = await server.heap();
  const last = await sampleRss();
  rss.end = last?.rssBytes ?? 0;
  const exit = server.exit;
  await server.close();
  if (scenarioLanes.ledger) {
    // the books: what the server counted and recorded against what the report lanes were answered
    const recorded = await readRecordedReports(recordDir).catch(() => null);
    scenarios.push(reportBooks(scenarioLanes.ledger, reportCounts, recorded));
  }
  await rm(recordDir, { recursive: true, force: true });

  const faults = server.faults;
  const problems = [
    ...fuzzProblems({ exit, faults, failureCount: tally.failureCount, rss, maxRssGrowthBytes, streams, stats, goodClosed, sentinel, after }),
    ...scenarios.flatMap((sc) => sc.problems.map((p) => `scenario ${sc.name}: ${p}`)),
  ];
  return {
    ok: problems.length === 0,
    problems,
    scenarios,
    seed,
    target,
    units: tally.units,
    unitsByTarget: tally.unitsByTarget,
    cases: tally.done,
    caseNames: tally.cases,
    outcomes: tally.outcomes,
    failureCount: tally.failureCount,
    failures: tally.failures,
    durationS: Math.round(fuzzS * 10) / 10,
    server: {
      crashed: exit !== null,
      exit,
      faults: { unhandledRejection: faults.filter((f) => f.kind === 'unhandledRejection').length, uncaughtException: faults.filter((f) => f.kind === 'uncaughtException').length },
      rssBytes: { start: rss.start, end: rss.end, max: rss.max, samples: rss.samples },
      heapUsedBytes: { start: heapStart.heapUsed ?? null, end: heapEnd.heapUsed ?? null },
      // after a GC: what RSS is made of at both ends (V8 keeps heap it grew, malloc keeps freed memory)
      memory: { start: pickMemory(heapStart), end: pickMemory(heapEnd) },
      relayClosedByCode: during.relay?.closedByCode ?? null,
      signalingClosedByCode: during.signaling?.closedByCode ?? null,
      after: after.relay ? { clients: after.relay.clients, groups: after.relay.groups, pending: after.relay.pending, queued: after.relay.queued, peerSockets: after.signaling?.sockets } : null,
    },
    good: {
      clients: good.length,
      updatesSent: stats.reduce((s, c) => s + c.updatesSent, 0),
      expected: streams.expected,
      received: streams.received,
      lossPct: streams.lossPct,
      dups: streams.duplicates,
      reorders: streams.reorders,
      ackLossPct: streams.ackLossPct,
      closed: goodClosed.length,
      rtMean: mean(stats.flatMap((c) => c.rt)),
      sentinel,
    },
  };
}

/** @param {any} m process.memoryUsage() */
function pickMemory(m) {
  return { rss: m.rss ?? null, heapTotal: m.heapTotal ?? null, heapUsed: m.heapUsed ?? null, external: m.external ?? null, arrayBuffers: m.arrayBuffers ?? null };
}

/** @param {number[]} values */
function mean(values) {
  return values.length ? values.reduce((a, b) => a + b, 0) / values.length : null;
}

/**
 * The report as text.
 * @param {Awaited<ReturnType<typeof runFuzz>>} r
 */
export function formatFuzzReport(r) {
  const mib = (/** @type {number} */ b) => `${(b / MIB).toFixed(1)} MiB`;
  const codes = (/** @type {Record<string, number>} */ o) => Object.entries(o).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${k}: ${v}`).join(', ') || '-';
  const lines = [
    `carlab fuzz: seed ${r.seed}, ${r.units} frames/handshakes/requests in ${r.cases} cases, ${r.durationS} s`,
    `  sent            relay ${r.unitsByTarget.relay}, PeerServer ${r.unitsByTarget.peer}, raw handshakes+framing ${r.unitsByTarget.raw}, HTTP ${r.unitsByTarget.http}`,
    `  relay closes    ${codes(r.outcomes.relay)}`,
    `  PeerServer      ${codes(r.outcomes.peer)}`,
    `  raw TCP         ${codes(r.outcomes.raw)}`,
    `  HTTP /peerjs    ${codes(r.outcomes.http)}`,
    `  not as documented: ${r.failureCount}`,
    `  server          crashed: ${r.server.crashed ? 'YES' : 'no'}, unhandled rejections: ${r.server.faults.unhandledRejection}, uncaught exceptions: ${r.server.faults.uncaughtException}`,
    `  server RSS      start ${mib(r.server.rssBytes.start)}, max ${mib(r.server.rssBytes.max)}, end ${mib(r.server.rssBytes.end)}; `
      + `heap used after GC ${mib(r.server.heapUsedBytes.start ?? 0)} -> ${mib(r.server.heapUsedBytes.end ?? 0)}, `
      + `heap total ${mib(r.server.memory.start.heapTotal ?? 0)} -> ${mib(r.server.memory.end.heapTotal ?? 0)}`,
    `  good clients    ${r.good.clients}: ${r.good.updatesSent} updates, ${r.good.received}/${r.good.expected} delivered, loss ${r.good.lossPct} %, dups ${r.good.dups}, reorders ${r.good.reorders}, closed ${r.good.closed}`,
    `  PeerJS peers    ${r.good.sentinel.received}/${r.good.sentinel.sent} offers in order, still open: ${r.good.sentinel.open}`,
    `  after           ${JSON.stringify(r.server.after)}`,
  ];
  for (const sc of r.scenarios) {
    lines.push(`  ${sc.name.padEnd(15)} ${sc.skipped ? 'skipped' : sc.ok ? 'as documented' : 'BROKEN'}: ${sc.summary}`);
    for (const note of sc.notes) lines.push(`    note: ${note}`);
  }
  for (const f of r.failures) lines.push(`  FAIL #${f.index} ${f.target}/${f.name}: expected ${f.expected}, got ${f.got}${f.detail ? ` — ${f.detail}` : ''}`);
  lines.push(r.ok ? 'every promise held' : `BROKEN:\n  ${r.problems.join('\n  ')}`);
  return `${lines.join('\n')}\n`;
}
