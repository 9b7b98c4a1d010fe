// A load generator: runs a slice of the simulated population as Node
// clients on the shared client core (core/) with the `ws` WebSocket
// (and, for relay-udp, node-datachannel's RTCPeerConnection polyfill), and
// reports their stats. Driven by lab/sim/sim.js (started by generators.js), as a worker thread or,
// for relay-udp, as a child process: node-datachannel cannot live in worker
// threads (a second worker that loads it crashes the process, and a worker
// that used it never exits), so there the job comes in argv and the messages
// go over the IPC channel.

import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import http from 'node:http';
import https from 'node:https';
import WebSocket from 'ws';
import { CarClient, DEFAULT_CYCLE_MODE, parseCycleMode } from '../../core/client.js';
import { HORIZON_MAX_MS } from '../../core/cycle.js';
import { epochNow, scriptedPose } from '../../core/path.js';
import { Reporter, overSession, tallyReports } from '../../core/report.js';
import { createLabTransport } from './transports.js';
import { startEditing } from '../shared/edits.js';
import { DrawnMeasurement } from '../../core/playout-probe.js';
import { scriptedTruth } from '../shared/drawn-measure.js';
import { DEFAULT_RENDER_FPS } from '../shared/flags.js';
import { RecoveryProbe } from '../../core/recovery.js';
import { createNetWatch } from './net-watch.js';
import { measuringHook } from '../shared/client-events.js';

const inChildProcess = isMainThread && typeof process.send === 'function';
/** @type {{ url: string, urls?: string[], placement?: import('../shared/flags.js').Placement, config: any, transport: string, from: number, to: number, clients: number,
 *   groupSize: number, runId: string, cycleMs: number, cycleMode?: string, ackTimeoutMs: number, warmupMs: number,
 *   maxUpdates: number, reportsIntervalMs?: number, reconnect?: { baseMs?: number, maxMs?: number }, editsPerMinute?: number,
 *   lateJoinMs?: number, playout?: import('../../core/playout.js').PlayoutMode[], renderFps?: number,
 *   indices?: number[], recovery?: boolean }} indices: the population indices of this generator's clients
 *   (from/to then count them), recovery: each client keeps a recovery probe (--net-events) */
const job = inChildProcess ? JSON.parse(process.argv[2]) : workerData;
/** @type {{ on: (event: 'message', f: (m: any) => void) => void, postMessage: (m: any) => void }} */
const port = inChildProcess
  ? { on: (event, f) => { process.on(event, f); }, postMessage: (m) => { if (process.connected) /** @type {any} */ (process).send(m); } }
  : /** @type {any} */ (parentPort);

/** @type {CarClient[]} */
const clients = [];
/** @type {{ stop: () => void } | null} the edit workload (--edits-per-minute) */
let editing = null;

/**
 * `ws` as the simulated phones' WebSocket, with the per-frame work a phone's
 * browser would not do here left out: no permessage-deflate offer (the relay
 * refuses it anyway) and no UTF-8 check of text frames (the protocol has none).
 */
class SimWebSocket extends WebSocket {
  /** @param {string} url */
  constructor(url) {
    super(url, { perMessageDeflate: false, skipUTF8Validation: true });
  }
}

/** WebRTC for relay-udp; loaded only when needed (a native module). */
const nativeRtc = job.transport === 'relay-udp' ? await import('node-datachannel') : null;
const RTCPeerConnection = nativeRtc ? (await import('node-datachannel/polyfill')).RTCPeerConnection : undefined;
/** socket.io-client for the Socket.IO baseline. */
const io = job.transport === 'socketio' ? (await import('socket.io-client')).io : undefined;

/** Closes every client and exits; open peer connections would keep the process alive. */
function exit() {
  drawn?.stop();
  for (const r of reporting) r.stop();
  for (const c of clients) c.close();
  setTimeout(() => {
    try { nativeRtc?.cleanup(); } catch { /* exiting anyway */ }
    process.exit(0);
  }, 100);
}
const groupOf = (/** @type {number} */ i) => Math.floor(i / job.groupSize);
/** The population index of this generator's k-th client. @param {number} k */
const indexOf = (k) => (job.indices ? job.indices[k] : job.from + k);
/** --net-events: each client's recovery probe (core/recovery.js), by k. @type {RecoveryProbe[]} */
const probes = [];
/** --net-events: the machine's addresses watched, as a phone's OS announces a new network. */
const netWatch = job.recovery ? createNetWatch() : undefined;

/**
 * The client hooks of what this generator measures beside the stats: the drawn error, recovery.
 * @param {number} k
 * @returns {((event: string, detail: any) => void) | undefined}
 */
function eventsOf(k) {
  return measuringHook(k, drawn, job.recovery ? (probes[k] = new RecoveryProbe()) : null);
}

/**
 * The servers client i uses, its home first: with several relays (--relays),
 * `spread` puts a group's members round-robin over them (groups span relays),
 * `group` puts a whole group on one; a rejoin fails over to the next.
 * @param {number} i
 * @returns {string[]}
 */
function serversOf(i) {
  const urls = job.urls ?? [job.url];
  const home = (job.placement === 'group' ? groupOf(i) : i % job.groupSize) % urls.length;
  return [...urls.slice(home), ...urls.slice(0, home)];
}
const groupSizeOf = (/** @type {number} */ g) => Math.min(job.groupSize, job.clients - g * job.groupSize);
/**
 * --late-join: the last member of each group of two or more connects lateJoinMs after the start.
 * @param {number} i
 */
const joinsLate = (i) => job.lateJoinMs !== undefined && groupSizeOf(groupOf(i)) >= 2 && i === groupOf(i) * job.groupSize + groupSizeOf(groupOf(i)) - 1;

/** @type {DrawnMeasurement | null} */
/** --playout: the drawn error of every client's drawing against its sender's scripted path. */
const drawn = job.playout?.length ? new DrawnMeasurement(job.playout, scriptedTruth(clients)) : null;

async function connectAll() {
  const CONCURRENCY = 64;
  let next = 0;
  const count = job.to - job.from;
  const one = async () => {
    while (next < count) {
      const k = next++;
      const i = indexOf(k);
      const onEvent = eventsOf(k);
      const client = new CarClient({
        transport: createLabTransport(job.transport, {
          baseUrl: serversOf(i)[0], failoverBaseUrls: serversOf(i).slice(1), config: job.config, WebSocket: SimWebSocket, RTCPeerConnection, io,
          ...(job.reconnect ? { reconnect: job.reconnect } : {}),
          ...(netWatch ? { network: netWatch } : {}),
        }),
        group: `${job.runId}-g${groupOf(i)}`,
        name: `sim${i}`,
        cycleMs: job.cycleMs,
        cycleMode: parseCycleMode(job.cycleMode) ?? DEFAULT_CYCLE_MODE,
        ackTimeoutMs: job.ackTimeoutMs,
        warmupMs: job.warmupMs,
        maxUpdates: job.maxUpdates,
        pose: () => scriptedPose(i, epochNow()),
        ...(onEvent ? { onEvent } : {}),
      });
      clients[k] = client;
      if (!joinsLate(i)) await client.connect();
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, one));
}

/** Every client sees its whole group (the other members may live in other threads), late joiners aside. */
function allMeshed() {
  return clients.every((c, k) => {
    const i = indexOf(k);
    const late = job.lateJoinMs !== undefined && groupSizeOf(groupOf(i)) >= 2;
    return joinsLate(i) || c.members.size === groupSizeOf(groupOf(i)) - 1 - Number(late);
  });
}

/** --late-join: the held-back members connect and start their cycle. */
function joinLate() {
  clients.forEach((c, k) => {
    if (joinsLate(indexOf(k))) c.connect().then(() => c.start(), (err) => port.postMessage({ type: 'error', message: `late join: ${err?.message ?? err}` }));
  });
}

// Client reports (--reports): every client POSTs a core/report.js report to
// its home server every reportsIntervalMs and a final one on stop, as the
// phone app does. Nothing in the action cycle waits for them: a report is a
// fetch on its own timer whose outcome is only counted.

/** The period of each client's reports (ms; lab/shared/flags.js reportPeriodMs), 0 for none. */
const reportsMs = job.reportsIntervalMs ?? 0;
/** A report not answered in this long counts as failed. */
const REPORT_TIMEOUT_MS = 10_000;
/** Final reports in flight at once when the clients stop. */
const FINAL_REPORTS_IN_FLIGHT = 64;
/** How long stop waits for the final reports before it posts the stats anyway. */
const FINAL_REPORTS_BUDGET_MS = 15_000;

/**
 * What this generator's HTTP reports did: not accepted and why (HTTP status,
 * 'network' or 'timeout'). Sent and skipped are the reporters' counts, refusals
 * over the relay session the clients' (tallyReports).
 */
const reportTally = { failed: 0, failedBy: /** @type {Record<string, number>} */ ({}) };

/** @type {Reporter[]} every client's reporter (core/report.js skips a report the server would refuse) */
const reporting = [];

/**
 * POSTs one report; resolves when the server accepted it (2xx), else counts
 * the failure and rejects (the Reporter counts it too, and never retries: the
 * next report carries everything).
 * @param {string} url
 * @param {import('../../core/report.js').ClientReport} report
 */
async function postReport(url, report) {
  let failure;
  try {
    const status = await httpPost(url, JSON.stringify(report));
    if (status >= 200 && status < 300) return;
    failure = String(status);
  } catch (err) {
    failure = /** @type {Error} */ (err)?.name === 'TimeoutError' ? 'timeout' : 'network';
  }
  reportTally.failed++;
  reportTally.failedBy[failure] = (reportTally.failedBy[failure] ?? 0) + 1;
  throw new Error(`report not accepted: ${failure}`);
}

/**
 * Kept-alive connections for the reports. node:http, not fetch: undici's fetch
 * cost the generator ~1 ms of CPU per report, which on two cores is taken from
 * the server being measured.
 */
const reportAgents = { http: new http.Agent({ keepAlive: true, maxSockets: 16 }), https: new https.Agent({ keepAlive: true, maxSockets: 16 }) };

/**
 * POSTs a JSON body; resolves with the status once the answer was read.
 * @param {string} url @param {string} body
 * @returns {Promise<number>}
 */
function httpPost(url, body) {
  return httpPostOnce(url, body).catch((err) => {
    // A kept-alive socket the server closed as we reused it (its idle timeout equals the
    // report period): Node's documented case for one retry, on a fresh socket.
    if (err?.reusedSocket && err.code === 'ECONNRESET') return httpPostOnce(url, body);
    throw err;
  });
}

/**
 * @param {string} url @param {string} body
 * @returns {Promise<number>}
 */
function httpPostOnce(url, body) {
  return new Promise((resolve, reject) => {
    const secure = url.startsWith('https:');
    const req = (secure ? https : http).request(url, {
      method: 'POST', agent: secure ? reportAgents.https : reportAgents.http, timeout: REPORT_TIMEOUT_MS,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    }, (res) => {
      res.resume(); // read what came back so the connection can carry the next report
      res.once('end', () => resolve(res.statusCode ?? 0));
      res.once('error', reject);
    });
    req.once('timeout', () => req.destroy(Object.assign(new Error('report timed out'), { name: 'TimeoutError' })));
    req.once('error', (err) => reject(Object.assign(err, { reusedSocket: req.reusedSocket })));
    req.end(body);
  });
}

/**
 * Gives every client its reporter: its first report after a random delay in
 * [0, period), then one every period, so the population's reports spread
 * evenly over the period from the start (the measured window sees the steady
 * rate, not a ramp).
 */
function startReports() {
  if (!reportsMs) return;
  clients.forEach((client, k) => {
    const url = new URL('/reports', serversOf(indexOf(k))[0]).href;
    // STATS on the client's relay session; HTTP when it has none open
    const reporter = new Reporter({ client, kind: 'sim', intervalMs: reportsMs, send: overSession(client, (report) => postReport(url, report)) });
    reporter.start(Math.random() * reportsMs);
    reporting.push(reporter);
  });
}

/**
 * Sends every client's final report, at most FINAL_REPORTS_IN_FLIGHT at once,
 * each after its periodic report in flight (so the final one arrives last);
 * resolves when all are answered or the budget ran out.
 */
async function finishReports() {
  for (const r of reporting) r.stop();
  let next = 0;
  const one = async () => {
    while (next < reporting.length) {
      const r = reporting[next++];
      await r.idle();
      r.finish();
      await r.idle();
    }
  };
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let budget;
  await Promise.race([
    Promise.all(Array.from({ length: Math.min(FINAL_REPORTS_IN_FLIGHT, reporting.length) }, one)),
    new Promise((r) => { budget = setTimeout(r, FINAL_REPORTS_BUDGET_MS); }),
  ]);
  clearTimeout(budget);
}

/**
 * A client's stats, with the edit workload its scene as the measures see it (core/scene-metrics.js),
 * with --net-events its recovery record.
 * @param {CarClient} c
 * @param {number} k
 * @param {number} endedAt ms since 1970
 */
function withSceneMember(c, k, endedAt) {
  const stats = c.stats();
  return {
    ...stats,
    ...(job.editsPerMinute ? { sceneMember: c.sceneMember(endedAt) } : {}),
    ...(probes[k] ? { recovery: probes[k].toJSON() } : {}),
  };
}

/** @type {ReturnType<typeof setInterval> | undefined} */
let progressTimer;
let lastRtIndex = new Map();

/** The longest the stop waits for what is still on its way: the longest delivery horizon, and a second. */
export const DRAIN_MAX_MS = HORIZON_MAX_MS + 1000;

/**
 * Lets what is on its way land before the count (docs/architecture.md "Loss"):
 * until each client's last update is one delivery horizon old (a few times its
 * RT p99, at least a second), so its count's cutoff covers every update it sent
 * and the receivers' counts hold what arrived. At most DRAIN_MAX_MS.
 */
async function drain() {
  const end = Date.now() + DRAIN_MAX_MS;
  while (Date.now() < end && !clients.every((c) => c.cycle.settled())) await new Promise((r) => setTimeout(r, 50));
}

port.on('message', async (m) => {
  if (m.cmd === 'start') {
    clients.forEach((c, k) => { if (!joinsLate(indexOf(k))) c.start(); });
    if (job.lateJoinMs !== undefined) setTimeout(joinLate, job.lateJoinMs);
    if (job.editsPerMinute) editing = startEditing(clients, job.editsPerMinute);
    drawn?.start(job.warmupMs, job.renderFps ?? DEFAULT_RENDER_FPS);
    startReports();
    progressTimer = setInterval(() => {
      // RTs since the last report, for the live progress line
      let sum = 0; let n = 0; let sent = 0;
      for (const c of clients) {
        const from = lastRtIndex.get(c) ?? 0;
        for (let i = from; i < c.rt.length; i++) { sum += c.rt[i]; n++; }
        lastRtIndex.set(c, c.rt.length);
        sent += c.cycle.updatesSent;
      }
      port.postMessage({ type: 'progress', rtSum: sum, rtN: n, sent, done: clients.every((c) => !c.cycle.running) });
    }, 1000);
  } else if (m.cmd === 'net-mark') {
    // an event's moment, on the run's shared clock: each probe reads it back on this process's own
    const at = m.epochMs - performance.timeOrigin;
    for (const p of probes) p?.mark(m.index, m.phase, at);
  } else if (m.cmd === 'edits-stop') {
    editing?.stop();
  } else if (m.cmd === 'stop') {
    clearInterval(progressTimer);
    editing?.stop();
    const endedAt = performance.timeOrigin + performance.now();
    for (const c of clients) c.stop();
    drawn?.stop();
    await drain();
    await finishReports();
    port.postMessage({
      type: 'stats', stats: clients.map((c, k) => withSceneMember(c, k, endedAt)), reports: reportsMs ? tallyReports(reporting, reportTally) : null,
      drawn: drawn ? drawn.toJSON() : null,
    });
  } else if (m.cmd === 'cpu') {
    // only asked of child processes: in a worker thread this would be the whole process's
    port.postMessage({ type: 'cpu', usage: process.cpuUsage() });
  } else if (m.cmd === 'close') {
    exit();
  }
});
if (inChildProcess) process.on('disconnect', exit); // the runner died: do not linger

connectAll().then(async () => {
  const end = Date.now() + 30000;
  while (!allMeshed() && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
  port.postMessage({ type: 'connected', count: clients.length, meshed: allMeshed() });
}, (err) => port.postMessage({ type: 'error', message: String(err?.message ?? err) }));
