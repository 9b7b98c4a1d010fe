// Runs one sweep point of `carlab sim`: the server in a child process, the
// population as Node clients in worker threads (child processes for
// relay-udp, whose native WebRTC module cannot live in worker threads), then
// aggregation.

import { fork } from 'node:child_process';
import { Worker } from 'node:worker_threads';
import { aggregateRun } from './aggregate.js';

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
 * @returns {Generator}
 */
function startGenerator(job, asProcess) {
  if (!asProcess) {
    const w = new Worker(SIM_WORKER, { workerData: job });
    return {
      on: (e, f) => { w.on(e, f); }, off: (e, f) => { w.off(e, f); }, once: (e, f) => { w.once(e, f); },
      postMessage: (m) => w.postMessage(m), terminate: () => { w.terminate(); }, isProcess: false,
    };
  }
  const c = fork(SIM_WORKER, [JSON.stringify(job)], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
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
export const SIM_TRANSPORTS = Object.freeze(['relay', 'relay-faithful', 'relay-udp', 'socketio', 'ws-floor']);

/** Transports that are baselines, not carlab's relay (relay/baselines.js). */
export const BASELINES = Object.freeze(['socketio', 'ws-floor']);

/**
 * The system under test in its own process.
 * @param {Record<string, any>} [serverOptions] createCarlabServer options
 */
export async function startServerChild(serverOptions = {}) {
  const child = fork(SERVER_CHILD, [JSON.stringify(serverOptions)], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  let nextId = 1;
  /** @type {Map<number, (m: any) => void>} */
  const waiting = new Map();
  const ready = new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`server exited with code ${code} before it was ready`)));
    child.on('message', (/** @type {any} */ m) => {
      if (m.type === 'ready') resolve(m);
      else if (waiting.has(m.id)) { waiting.get(m.id)?.(m); waiting.delete(m.id); }
    });
  });
  const { url } = /** @type {any} */ (await ready);
  /** @param {string} cmd */
  const ask = (cmd) => new Promise((resolve) => {
    const id = nextId++;
    waiting.set(id, resolve);
    child.send({ cmd, id });
  });
  return {
    url,
    pid: /** @type {number} */ (child.pid),
    resetWindow: () => ask('reset'),
    /** @returns {Promise<any>} */
    metrics: () => ask('metrics'),
    async close() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
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
 */

/**
 * Runs one point and returns its run record.
 * @param {PointOptions} o
 */
export async function runSimPoint(o) {
  const { point } = o;
  const server = await startServerChild({ ackTimeoutMs: o.ackTimeoutMs, baselines: BASELINES.includes(point.transport) });
  const config = { iceServers: [], relayPath: '/relay', peerjs: { path: '/peerjs', key: 'peerjs' } };
  const workerCount = Math.max(1, Math.min(o.workers ?? Math.min(2, Math.ceil(point.clients / 400)), point.clients));
  const runId = `sim${Date.now().toString(36)}`;
  // node-datachannel (relay-udp) only works in a process's main thread
  const asProcesses = point.transport === 'relay-udp';
  /** @type {Generator[]} */
  const workers = [];
  const live = { rtSum: 0, rtN: 0, sent: 0, done: 0 };
  try {
    const per = Math.ceil(point.clients / workerCount);
    const connected = [];
    for (let w = 0; w < workerCount; w++) {
      const from = w * per;
      const to = Math.min(point.clients, from + per);
      const worker = startGenerator({
        url: server.url, config, transport: point.transport, from, to, clients: point.clients,
        groupSize: point.group, runId, cycleMs: point.cycleMs, ackTimeoutMs: o.ackTimeoutMs,
        warmupMs: o.warmupS * 1000, maxUpdates: o.updates,
      }, asProcesses);
      workers.push(worker);
      worker.on('message', (m) => {
        if (m.type === 'progress') {
          live.rtSum += m.rtSum; live.rtN += m.rtN; live.sent += m.sent;
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
    const tick = async (phase, seconds) => {
      const end = Date.now() + seconds * 1000;
      while (Date.now() < end && !o.shouldStop?.()) {
        if (o.updates > 0 && live.done === workers.length) break;
        await new Promise((r) => setTimeout(r, 250));
        const rtMean = live.rtN ? live.rtSum / live.rtN : null;
        o.onProgress?.({ phase, elapsedS: (Date.now() - started) / 1000, rtMean, sent: live.sent });
        live.rtSum = 0; live.rtN = 0; live.sent = 0;
      }
    };
    await tick('warm-up', o.warmupS);
    await server.resetWindow();
    const cpuStart = process.cpuUsage();
    const childCpuStart = asProcesses ? await childCpuMicros(workers) : 0;
    const windowStart = performance.now();
    // with --updates, run until every client sent them (bounded by the ACK timeout per update)
    await tick('measuring', o.updates > 0 ? (o.updates * point.cycleMs + o.ackTimeoutMs) / 1000 + 5 : o.durationS);
    const windowMs = performance.now() - windowStart;
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
          clientsPerProcess: asProcesses ? Math.ceil(point.clients / workerCount) : point.clients,
        },
        durationS: Math.round(windowMs / 100) / 10,
        serverRssBytes: serverMetrics.rssBytes,
        stoppedEarly: Boolean(o.shouldStop?.()),
      },
    });
  } finally {
    for (const w of workers) w.postMessage({ cmd: 'close' });
    await Promise.all(workers.map((w) => new Promise((r) => { w.once('exit', r); setTimeout(() => { w.terminate(); r(null); }, 3000); })));
    await server.close();
  }
}
