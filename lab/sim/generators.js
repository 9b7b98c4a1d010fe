// The load generators of a sim point: sim-worker.js started as worker threads
// or child processes (same messages), how many a point uses and which clients
// each runs, and asking them to connect, stop, report their CPU and close.

import { fork } from 'node:child_process';
import { Worker } from 'node:worker_threads';
import { forkInNamespace } from '../net/network.js';
import { sumReportTallies } from '../report/tallies.js';

/** @typedef {import('../report/tallies.js').ReportTally} ReportTally */
/** @typedef {ReturnType<import('../../core/playout-probe.js').DrawnErrorLab['toJSON']>} DrawnLabJson */

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
export function startGenerator(job, asProcess, netns = null) {
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
export async function childCpuMicros(generators) {
  const usages = await Promise.all(generators.filter((g) => g.isProcess).map((g) => new Promise((resolve) => {
    const onMessage = (/** @type {any} */ m) => { if (m.type === 'cpu') { g.off('message', onMessage); resolve(m.usage); } };
    g.on('message', onMessage);
    g.postMessage({ cmd: 'cpu' });
  })));
  return usages.reduce((sum, u) => sum + u.user + u.system, 0);
}

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
 * What a load generator posts (sim-worker.js): progress every 250 ms, then
 * `connected` once, `stats` on stop and `cpu` when asked.
 * @typedef {{ type: 'progress', rtSum: number, rtN: number, sent: number, done: boolean }
 *   | { type: 'connected', count: number, meshed: boolean }
 *   | { type: 'error', message: string }
 *   | { type: 'stats', stats: any[], reports?: ReportTally | null, drawn?: DrawnLabJson | null }
 *   | { type: 'cpu', usage: NodeJS.CpuUsage }} GeneratorMessage
 */

/**
 * Resolves when the generator says its clients are connected, rejects if it
 * fails or exits first.
 * @param {Generator} worker
 */
export function whenConnected(worker) {
  return new Promise((resolve, reject) => {
    const onMessage = (/** @type {GeneratorMessage} */ m) => {
      if (m.type === 'connected') { worker.off('message', onMessage); resolve(m); }
      if (m.type === 'error') reject(new Error(`client: ${m.message}`));
    };
    worker.on('message', onMessage);
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`load generator exited with code ${code} before connecting`)));
  });
}

/**
 * Asks every generator to stop (their clients send their final reports) and
 * resolves with all its clients' stats and what their reports did.
 * @param {Generator[]} workers
 * @returns {Promise<{ stats: any[], reports: ReportTally | null, drawn: (DrawnLabJson | null)[] }>} CarClient.stats() of
 *   every client; with --playout each generator's drawn-error tallies
 */
export async function stopGenerators(workers) {
  const perWorker = await Promise.all(workers.map((w) => new Promise((resolve) => {
    const onMessage = (/** @type {GeneratorMessage} */ m) => { if (m.type === 'stats') { w.off('message', onMessage); resolve(m); } };
    w.on('message', onMessage);
    w.postMessage({ cmd: 'stop' });
  })));
  const replies = /** @type {{ stats: any[], reports?: ReportTally | null, drawn?: DrawnLabJson | null }[]} */ (perWorker);
  return { stats: replies.flatMap((m) => m.stats), reports: sumReportTallies(replies.map((m) => m.reports)), drawn: replies.map((m) => m.drawn ?? null) };
}

/**
 * Closes every generator, killing one that has not exited after 3 s.
 * @param {Generator[]} workers
 */
export async function closeGenerators(workers) {
  for (const w of workers) w.postMessage({ cmd: 'close' });
  await Promise.all(workers.map((w) => new Promise((r) => { w.once('exit', r); setTimeout(() => { w.terminate(); r(null); }, 3000); })));
}
