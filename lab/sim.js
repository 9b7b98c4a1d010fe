// Runs one sweep point of `carlab sim`: the server in a child process, the
// population as Node clients in worker threads (child processes for
// relay-udp, whose native WebRTC module cannot live in worker threads), then
// aggregation.

import { fork } from 'node:child_process';
import { Worker } from 'node:worker_threads';
import { NODE_TRANSPORTS } from '../core/transports.js';
import { aggregateRun } from './aggregate.js';
import { forkInNamespace } from './net/network.js';
import { BASELINE_TRANSPORTS } from './transports.js';

const SERVER_CHILD = new URL('./server-child.js', import.meta.url);
const SIM_WORKER = new URL('./sim-worker.js', import.meta.url);

/**
 * A load generator, as a worker thread or a child process (same messages).
 * @typedef {object} Generator
 * @property {(event: string, f: (...args: any[]) => void) => void} on
 * @property {(event: string, f: (...args: any[]) => void) => void} off
 * @property {(event: string, f: (...args: any[]) => void) => void} once
 * @property {(m: any) => void} postMessage
 * @property {() => void} terminate
 * @property {boolean} isProcess
 */

/**
 * Starts sim-worker.js on a job.
 * @param {Record<string, any>} job
 * @param {boolean} asProcess
 * @param {string | null} [netns] run the process in this network namespace (--net)
 * @returns {Generator}
 */
function startGenerator(job, asProcess, netns = null) {
  if (!asProcess) {
    const w = new Worker(SIM_WORKER, { workerData: job });
    return {
      on: (e, f) => { w.on(e, f); }, off: (e, f) => { w.off(e, f); }, once: (e, f) => { w.once(e, f); },
      postMessage: (m) => w.postMessage(m), terminate: () => { w.terminate(); }, isProcess: false,
    };
  }
  const c = fork(SIM_WORKER, [JSON.stringify(job)], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'], ...(netns ? forkInNamespace(netns) : {}) });
  return {
    on: (e, f) => { c.on(e, f); }, off: (e, f) => { c.off(e, f); }, once: (e, f) => { c.once(e, f); },
    postMessage: (m) => { if (c.connected) c.send(m); }, terminate: () => { c.kill('SIGKILL'); }, isProcess: true,
  };
}

/**
 * CPU time (user + system, µs) the child-process generators used so far.
 * @param {Generator[]} generators
 */
async function childCpuMicros(generators) {
  const usages = await Promise.all(generators.filter((g) => g.isProcess).map((g) => new Promise((resolve) => {
    const onMessage = (/** @type {any} */ m) => { if (m.type === 'cpu') { g.off('message', onMessage); resolve(m.usage); } };
    g.on('message', onMessage);
    g.postMessage({ cmd: 'cpu' });
  })));
  return usages.reduce((sum, u) => sum + u.user + u.system, 0);
}

/** Transports the Node clients can run. */
export const SIM_TRANSPORTS = Object.freeze([...NODE_TRANSPORTS, ...BASELINE_TRANSPORTS]);

/** Transports that are baselines, not carlab's relay (lab/baselines.js). */
export const BASELINES = BASELINE_TRANSPORTS;

/**
 * The system under test in its own process.
 * @param {Record<string, any>} [serverOptions] createCarlabServer options
 * @param {{ execArgv?: string[], stderr?: 'inherit' | 'ignore', netns?: string }} [childOptions] e.g. ['--expose-gc']
 *   for heap measurements (`heap()`); stderr 'ignore' for runs that kill it on purpose;
 *   netns: run it in this network namespace (--net; give serverOptions.host an address there)
 */
export async function startServerChild(serverOptions = {}, childOptions = {}) {
  const child = fork(SERVER_CHILD, [JSON.stringify(serverOptions)], {
    stdio: ['ignore', 'ignore', childOptions.stderr ?? 'inherit', 'ipc'],
    ...(childOptions.netns
      ? forkInNamespace(childOptions.netns, childOptions.execArgv)
      : { execArgv: [...process.execArgv, ...(childOptions.execArgv ?? [])] }),
  });
  let nextId = 1;
  /** @type {Map<number, (m: any) => void>} */
  const waiting = new Map();
  /** Unhandled rejections and uncaught exceptions the server reported. @type {{ kind: string, message: string }[]} */
  const faults = [];
  /** @type {{ code: number | null, signal: string | null } | null} */
  let exit = null;
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => {
    exit = { code, signal };
    for (const reply of waiting.values()) reply({ error: 'server exited' });
    waiting.clear();
    resolve(exit);
  }));
  const ready = new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`server exited with code ${code} before it was ready`)));
    child.on('message', (/** @type {any} */ m) => {
      if (m.type === 'ready') resolve(m);
      else if (m.type === 'fault') faults.push({ kind: m.kind, message: m.message });
      else if (waiting.has(m.id)) { waiting.get(m.id)?.(m); waiting.delete(m.id); }
    });
  });
  const { url } = /** @type {any} */ (await ready);
  /** @param {string} cmd */
  const ask = (cmd) => new Promise((resolve) => {
    if (exit || !child.connected) { resolve({ error: 'server exited' }); return; }
    const id = nextId++;
    waiting.set(id, resolve);
    child.send({ cmd, id });
  });
  return {
    url,
    pid: /** @type {number} */ (child.pid),
    faults,
    /** Resolves with how the process ended. */
    exited,
    /** How it ended, null while it runs. */
    get exit() { return exit; },
    resetWindow: () => ask('reset'),
    /** @returns {Promise<any>} */
    metrics: () => ask('metrics'),
    /** process.memoryUsage() after a GC (when started with --expose-gc). @returns {Promise<any>} */
    heap: () => ask('heap'),
    /** Kills it without a goodbye (a crash, for the restart tests). @param {NodeJS.Signals} [signal] */
    async kill(signal = 'SIGKILL') {
      if (exit) return exit;
      child.kill(signal);
      return exited;
    },
    async close() {
      if (exit) return;
      ask('close');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * @typedef {object} PointOptions
 * @property {import('./flags.js').SweepPoint} point
 * @property {number} durationS
 * @property {number} warmupS
 * @property {number} updates per client, 0 = use durationS
 * @property {number} ackTimeoutMs
 * @property {number} [workers] generator threads (default: 1 per 400 clients, at most 2)
 * @property {(p: { phase: string, elapsedS: number, rtMean: number | null, sent: number }) => void} [onProgress]
 * @property {() => boolean} [shouldStop] Ctrl-C: end the measurement early
 * @property {number} [timelineS] length of the timeline's buckets (RT mean and server RSS), default 10
 * @property {{ atS: number, downMs?: number }} [restart] kill the server (SIGKILL) this many
 *   seconds into the measured window and start it again on the same port after downMs:
 *   the clients reconnect, the run record reports the outage
 * @property {import('./net/network.js').PointNetwork | null} [net] --net: the server in
 *   net.serverNs, generator w (a child process) in net.clientNs[w]; needs
 *   net.clientNs.length === simGeneratorCount(clients, workers)
 */

/**
 * How many load generators a point uses: --workers, or 1 per 400 clients, at most 2.
 * @param {number} clients
 * @param {number} [workers]
 */
export function simGeneratorCount(clients, workers) {
  return Math.max(1, Math.min(workers ?? Math.min(2, Math.ceil(clients / 400)), clients));
}

/**
 * The clients each load generator runs: contiguous ranges [from, to) of the
 * population, one per generator (and one client namespace each under --net).
 * @param {number} clients
 * @param {number} [workers]
 * @returns {{ from: number, to: number }[]}
 */
export function generatorShares(clients, workers) {
  const count = simGeneratorCount(clients, workers);
  const per = Math.ceil(clients / count);
  return Array.from({ length: count }, (_, w) => ({ from: Math.min(clients, w * per), to: Math.min(clients, (w + 1) * per) }));
}

/**
 * One bucket of a run's timeline: RT mean and count of the updates completed
 * in it, and the server's memory when it closed: RSS, V8's heap size, and the
 * live heap after V8's last full GC (none forced: a JS leak shows as a climb
 * there, while RSS also moves with V8's heap sizing and the allocator).
 * @typedef {{ t: number, s: number, rtMean: number | null, n: number, rssBytes: number | null,
 *   heapTotalBytes?: number | null, heapAfterGcBytes?: number | null }} TimelineBucket
 */

/**
 * RT and memory stability over a run from its timeline: the mean RT of the
 * first and the last window (60 s, or a quarter of a shorter run) and the
 * server's RSS growth from the end of the warm-up to the end of the run.
 * @param {TimelineBucket[]} timeline
 * @param {number} rssWarmBytes server RSS when the measured window began
 * @param {number} durationS
 */
export function stabilityOf(timeline, rssWarmBytes, durationS) {
  const full = timeline.filter((b) => b.s >= (timeline[0]?.s ?? 0) * 0.5);
  if (full.length === 0) return null;
  const bucketS = full[0].s;
  const windowS = durationS >= 240 ? 60 : Math.max(bucketS, durationS / 4);
  const k = Math.max(1, Math.min(Math.floor(full.length / 2) || 1, Math.round(windowS / bucketS)));
  const meanOf = (/** @type {typeof timeline} */ bs) => {
    const n = bs.reduce((a, b) => a + b.n, 0);
    return n ? bs.reduce((a, b) => a + (b.rtMean ?? 0) * b.n, 0) / n : null;
  };
  const rtFirst = meanOf(full.slice(0, k));
  const rtLast = meanOf(full.slice(-k));
  const rss = timeline.map((b) => b.rssBytes).filter((v) => typeof v === 'number');
  const rssEnd = rss.length ? rss[rss.length - 1] : null;
  const rssMax = rss.length ? Math.max(...rss) : null;
  const heap = timeline.map((b) => b.heapAfterGcBytes).filter((v) => typeof v === 'number');
  const heapFirst = heap.length ? heap[0] : null;
  const heapLast = heap.length ? heap[heap.length - 1] : null;
  return {
    windowS: k * bucketS,
    rtFirst,
    rtLast,
    rtDriftPct: rtFirst && rtLast !== null ? (100 * Math.abs(rtLast - rtFirst)) / rtFirst : null,
    rssWarmBytes,
    rssEndBytes: rssEnd,
    rssMaxBytes: rssMax,
    rssGrowthPct: rssWarmBytes && rssEnd !== null ? (100 * (rssEnd - rssWarmBytes)) / rssWarmBytes : null,
    rssMaxGrowthPct: rssWarmBytes && rssMax !== null ? (100 * (rssMax - rssWarmBytes)) / rssWarmBytes : null,
    heapAfterGcFirstBytes: heapFirst,
    heapAfterGcLastBytes: heapLast,
    heapAfterGcGrowthPct: heapFirst && heapLast !== null ? (100 * (heapLast - heapFirst)) / heapFirst : null,
  };
}

/**
 * Runs one point and returns its run record.
 * @param {PointOptions} o
 */
export async function runSimPoint(o) {
  const { point } = o;
  const net = o.net ?? null;
  const serverOptions = { ackTimeoutMs: o.ackTimeoutMs, baselines: BASELINES.includes(point.transport), ...(net ? { host: net.serverIp } : {}) };
  const serverPlace = net ? { netns: net.serverNs } : {};
  let server = await startServerChild(serverOptions, serverPlace);
  /** Servers that died or were killed during the run (their faults count too). */
  const pastServers = [];
  const config = { iceServers: [], relayPath: '/relay', peerjs: { path: '/peerjs', key: 'peerjs' } };
  const shares = generatorShares(point.clients, o.workers);
  const workerCount = shares.length;
  if (net && net.clientNs.length !== workerCount) throw new Error(`--net: ${net.clientNs.length} client namespaces for ${workerCount} generators`);
  const runId = `sim${Date.now().toString(36)}`;
  // node-datachannel (relay-udp) only works in a process's main thread; a
  // thread cannot change network namespace (--net)
  const asProcesses = point.transport === 'relay-udp' || Boolean(net);
  /** @type {Generator[]} */
  const workers = [];
  const live = { rtSum: 0, rtN: 0, sent: 0, done: 0 };
  /** The timeline bucket being filled (RTs reported while measuring). */
  const bucket = { on: false, rtSum: 0, rtN: 0 };
  try {
    const connected = [];
    for (let w = 0; w < workerCount; w++) {
      const { from, to } = shares[w];
      const worker = startGenerator({
        url: server.url, config, transport: point.transport, from, to, clients: point.clients,
        groupSize: point.group, runId, cycleMs: point.cycleMs, ackTimeoutMs: o.ackTimeoutMs,
        warmupMs: o.warmupS * 1000, maxUpdates: o.updates,
      }, asProcesses, net ? net.clientNs[w] : null);
      workers.push(worker);
      worker.on('message', (m) => {
        if (m.type === 'progress') {
          live.rtSum += m.rtSum; live.rtN += m.rtN; live.sent += m.sent;
          if (bucket.on) { bucket.rtSum += m.rtSum; bucket.rtN += m.rtN; }
          if (m.done) live.done++;
        }
      });
      connected.push(new Promise((resolve, reject) => {
        const onMessage = (m) => {
          if (m.type === 'connected') { worker.off('message', onMessage); resolve(m); }
          if (m.type === 'error') reject(new Error(`client: ${m.message}`));
        };
        worker.on('message', onMessage);
        worker.once('error', reject);
        worker.once('exit', (code) => reject(new Error(`load generator exited with code ${code} before connecting`)));
      }));
    }
    o.onProgress?.({ phase: 'connecting', elapsedS: 0, rtMean: null, sent: 0 });
    await Promise.all(connected);

    for (const w of workers) w.postMessage({ cmd: 'start' });
    const started = Date.now();
    const timelineS = o.timelineS ?? 10;
    /** @type {TimelineBucket[]} */
    const timeline = [];
    let bucketStart = 0;
    /** Closes the bucket being filled: its RT mean and the server's RSS now. */
    const closeBucket = async (/** @type {number} */ at) => {
      const m = await server.metrics();
      timeline.push({
        t: Math.round(bucketStart / 100) / 10, s: Math.round((at - bucketStart) / 100) / 10,
        rtMean: bucket.rtN ? bucket.rtSum / bucket.rtN : null, n: bucket.rtN, rssBytes: m.rssBytes ?? null,
        heapTotalBytes: m.memory?.heapTotal ?? null, heapAfterGcBytes: m.heapAfterMajorGc?.bytes ?? null,
      });
      bucket.rtSum = 0; bucket.rtN = 0;
      bucketStart = at;
    };
    /** @type {any} */
    let restartInfo = null;
    const tick = async (phase, seconds, measuring = false) => {
      const end = Date.now() + seconds * 1000;
      while (Date.now() < end && !o.shouldStop?.()) {
        if (o.updates > 0 && live.done === workers.length) break;
        await new Promise((r) => setTimeout(r, 250));
        const rtMean = live.rtN ? live.rtSum / live.rtN : null;
        o.onProgress?.({ phase, elapsedS: (Date.now() - started) / 1000, rtMean, sent: live.sent });
        live.rtSum = 0; live.rtN = 0; live.sent = 0;
        if (!measuring) continue;
        const at = performance.now() - windowStart;
        if (o.restart && !restartInfo && at >= o.restart.atS * 1000) restartInfo = await restartServer(at);
        if (at - bucketStart >= timelineS * 1000) await closeBucket(at);
      }
    };
    /** Kills the server mid-run and starts it again on the same port. @param {number} at */
    const restartServer = async (at) => {
      const port = Number(new URL(server.url).port);
      pastServers.push(server);
      const killedAt = performance.now();
      await server.kill('SIGKILL');
      if (o.restart?.downMs) await new Promise((r) => setTimeout(r, o.restart?.downMs));
      server = await startServerChild({ ...serverOptions, port }, serverPlace);
      return { atS: Math.round(at / 100) / 10, serverDownMs: Math.round(performance.now() - killedAt) };
    };
    let windowStart = 0;
    await tick('warm-up', o.warmupS);
    await server.resetWindow();
    const rssWarm = (await server.metrics()).rssBytes ?? null;
    const cpuStart = process.cpuUsage();
    const childCpuStart = asProcesses ? await childCpuMicros(workers) : 0;
    windowStart = performance.now();
    bucket.on = true;
    // with --updates, run until every client sent them (bounded by the ACK timeout per update)
    await tick('measuring', o.updates > 0 ? (o.updates * point.cycleMs + o.ackTimeoutMs) / 1000 + 5 : o.durationS, true);
    const windowMs = performance.now() - windowStart;
    bucket.on = false;
    if (windowMs - bucketStart >= 1000 || timeline.length === 0) await closeBucket(windowMs);
    const cpuUsed = process.cpuUsage(cpuStart);
    const childCpuUsed = asProcesses ? await childCpuMicros(workers) - childCpuStart : 0;
    const serverMetrics = await server.metrics();
    const stats = (await Promise.all(workers.map((w) => new Promise((resolve) => {
      const onMessage = (m) => { if (m.type === 'stats') { w.off('message', onMessage); resolve(m.stats); } };
      w.on('message', onMessage);
      w.postMessage({ cmd: 'stop' });
    })))).flat();
    // the server's counters for the transport under test
    const relay = BASELINES.includes(point.transport) ? serverMetrics.baselines[point.transport] : serverMetrics.relay;
    return aggregateRun({
      point,
      clients: stats,
      relay,
      cpu: {
        server: relay.cpuPctMean,
        clients: ((cpuUsed.user + cpuUsed.system + childCpuUsed) / 1000 / windowMs) * 100,
      },
      extra: {
        sim: {
          workers: workerCount,
          generator: asProcesses ? 'process' : 'thread',
          clientsPerProcess: asProcesses ? shares[0].to - shares[0].from : point.clients,
        },
        durationS: Math.round(windowMs / 100) / 10,
        serverRssBytes: serverMetrics.rssBytes,
        stoppedEarly: Boolean(o.shouldStop?.()),
        timeline,
        stability: restartInfo ? null : stabilityOf(timeline, rssWarm, windowMs / 1000),
        serverFaults: [...pastServers, server].flatMap((x) => x.faults).length,
        ...(restartInfo ? { restart: { ...restartInfo, note: 'relay counters, RTS and server CPU cover the window after the restart' } } : {}),
      },
    });
  } finally {
    for (const w of workers) w.postMessage({ cmd: 'close' });
    await Promise.all(workers.map((w) => new Promise((r) => { w.once('exit', r); setTimeout(() => { w.terminate(); r(null); }, 3000); })));
    await server.close();
  }
}
