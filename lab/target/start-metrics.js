// The metrics windows and CPU of a started `carlab start`
// (lab/target/start-cluster.js): its workers' `/metrics` JSON over HTTP,
// relay counters differenced between two snapshots, and the CPU of each of
// its processes from /proc.
//
// `/metrics` has no window reset over HTTP, and the relay's counters over
// HTTP run from the process's start: a window is the difference of two
// snapshots of each worker (`resetWindow` takes the first).
//
// The workers of `--cluster` listen on `127.0.0.1:0`; in a cluster worker that
// is one listening socket the cluster module shares between all of them (the
// workers' `listening` lines name the same port), so a request to it reaches
// whichever worker the cluster module's round-robin picks. Each worker is
// therefore read by asking until every expected pid (`process.pid` in the
// answer) has answered, over fresh connections.

import { readFileSync, readdirSync } from 'node:fs';
import http from 'node:http';

import { readProc } from '../shared/proctree.js';

/** USER_HZ: /proc's CPU ticks per second. */
const CLOCK_TICKS = 100;

/** The relay's window counters (relay/stats.js): summed, differenced between snapshots. */
export const WINDOW_COUNTERS = Object.freeze([
  'framesIn', 'framesOut', 'messagesIn', 'messagesOut', 'bytesIn', 'bytesOut', 'updatesIn', 'updatesForwarded',
  'acksIn', 'acksForwarded', 'ackedAllSent', 'droppedUpdates', 'unexpectedAcks', 'ackTimeouts', 'slowConsumers',
  'slowConsumersRecovered',
]);

/** The relay cluster's window counters (relay/cluster.js). */
export const CLUSTER_WINDOW_COUNTERS = Object.freeze([
  'updatesPublished', 'updatesReceived', 'acksRouted', 'acksReceived', 'dropsRouted', 'unknownSender', 'idConflicts',
  'nodesLost', 'membersLost', 'claimsTakenOver', 'brokerMessagesOut', 'brokerEnvelopesOut',
]);

/**
 * On-CPU time (ns) of every thread of a process, from its tasks' schedstat:
 * finer than /proc's 10 ms ticks, for short phases (the connect phase). Falls
 * back to the ticks where schedstat is missing; null when the process is gone.
 *
 * @param {number} pid
 * @returns {number | null}
 */
export function processCpuNs(pid) {
  try {
    let ns = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      } catch { /* the thread ended */ }
    }
    return ns;
  } catch {
    const p = readProc(pid);
    return p ? (p.ticks / CLOCK_TICKS) * 1e9 : null;
  }
}

/**
 * GET a URL's JSON over a connection of its own (no keep-alive: the cluster
 * module hands each new connection to the next worker).
 *
 * @param {string} url
 * @param {number} [timeoutMs]
 * @returns {Promise<any>}
 */
export function getJson(url, timeoutMs = 5000) {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent: false, headers: { accept: 'application/json', connection: 'close' }, timeout: timeoutMs }, (res) => {
      /** @type {Buffer[]} */
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        if (res.statusCode !== 200) { reject(new Error(`${url}: HTTP ${res.statusCode}`)); return; }
        try { resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))); } catch (err) { reject(err); }
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${url}: no answer in ${timeoutMs} ms`)));
    req.on('error', reject);
  });
}

/**
 * The `/metrics` JSON of every expected worker, by pid: asks the workers'
 * URLs in turn, each time on a new connection, until every pid answered (a
 * shared port answers from whichever worker the cluster module picks).
 *
 * @param {string[]} urls the workers' private base URLs (duplicates allowed)
 * @param {number[]} pids the workers expected
 * @param {{ attemptsPerWorker?: number }} [o]
 * @returns {Promise<Map<number, any>>} what answered (a worker that never did is missing)
 */
export async function workerMetrics(urls, pids, { attemptsPerWorker = 12 } = {}) {
  const distinct = [...new Set(urls)];
  /** @type {Map<number, any>} */
  const got = new Map();
  const attempts = Math.max(1, pids.length) * attemptsPerWorker;
  for (let i = 0; i < attempts && pids.some((pid) => !got.has(pid)); i++) {
    try {
      const m = await getJson(new URL('metrics', distinct[i % distinct.length]).href);
      const pid = m?.process?.pid;
      if (typeof pid === 'number' && pids.includes(pid)) got.set(pid, m);
    } catch { /* a worker restarting, or busy: ask again */ }
  }
  return got;
}

/**
 * A worker's relay metrics over a window: its cumulative counters now minus
 * at the window's start (`before` null: everything since its start), gauges
 * as they are now, RTS mean over the window from count and sum.
 *
 * @param {any} before relay metrics at the window's start, or null
 * @param {any} after relay metrics now
 * @returns {any}
 */
export function relayWindow(before, after) {
  /** @type {Record<string, any>} */
  const out = { ...after };
  const diff = (/** @type {any} */ a, /** @type {any} */ b, /** @type {string} */ key) => (typeof b?.[key] === 'number' ? b[key] : 0) - (typeof a?.[key] === 'number' ? a[key] : 0);
  for (const key of WINDOW_COUNTERS) out[key] = diff(before, after, key);
  const n0 = before?.rts?.n ?? 0;
  const n1 = after?.rts?.n ?? 0;
  const sum0 = n0 ? before.rts.mean * n0 : 0;
  const sum1 = n1 ? after.rts.mean * n1 : 0;
  out.rts = n1 - n0 > 0 ? { mean: (sum1 - sum0) / (n1 - n0), max: after.rts.max, n: n1 - n0 } : { mean: null, max: null, n: 0 };
  /** @type {Record<string, number>} */
  const closed = {};
  for (const [code, n] of Object.entries(after?.closedByCode ?? {})) {
    const d = Number(n) - Number(before?.closedByCode?.[code] ?? 0);
    if (d) closed[code] = d;
  }
  out.closedByCode = closed;
  if (after?.cluster) {
    /** @type {Record<string, any>} */
    const cluster = { ...after.cluster };
    for (const key of CLUSTER_WINDOW_COUNTERS) cluster[key] = diff(before?.cluster, after.cluster, key);
    cluster.crossNodeUpdates = cluster.updatesPublished;
    out.cluster = cluster;
  }
  return out;
}

/**
 * CPU ticks of a set of processes, to take differences of.
 *
 * @param {Iterable<number>} pids
 * @returns {Map<number, number>}
 */
export function ticksOf(pids) {
  /** @type {Map<number, number>} */
  const out = new Map();
  for (const pid of pids) {
    const p = readProc(pid);
    if (p) out.set(pid, p.ticks);
  }
  return out;
}

/**
 * CPU % (100 = one core) of each process between two tick snapshots over
 * `elapsedMs`; a process absent at the start (born in the window) counts
 * all its ticks.
 *
 * @param {Map<number, number>} start
 * @param {Map<number, number>} end
 * @param {number} elapsedMs
 * @returns {Map<number, number>}
 */
export function cpuPctBetween(start, end, elapsedMs) {
  /** @type {Map<number, number>} */
  const out = new Map();
  if (elapsedMs <= 0) return out;
  for (const [pid, ticks] of end) out.set(pid, (((ticks - (start.get(pid) ?? 0)) / CLOCK_TICKS) * 1000 / elapsedMs) * 100);
  return out;
}
