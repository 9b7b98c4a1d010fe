/**
 * The system under test as the product runs it (`carlab sim --start-cluster
 * N`): a real `node scripts/carlab.js start --http` process, plain (N = 1:
 * one process, no NATS) or `--cluster N` (a primary that routes each group's
 * WebSockets to one of N workers, and the nats-server it starts). Nothing is
 * injected into it: the lab reads its JSON log lines (the pids of the
 * primary, the workers and nats-server, the workers' private URLs, the
 * primary's routing counts at shutdown; start-log.js), its workers' `/metrics`
 * JSON over HTTP, and the CPU of every one of its processes from /proc
 * (start-metrics.js, which also says how a window and each worker are read).
 *
 * @module lab/start-cluster
 */

import { spawn } from 'node:child_process';
import net from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

import { mergeRelayMetrics } from './cluster.js';
import { StartLog } from './start-log.js';
import { cpuPctBetween, processCpuNs, relayWindow, ticksOf, workerMetrics } from './start-metrics.js';
import { processRef, processStart, processTree, readProc, sameProcess } from '../shared/proctree.js';

/** The CLI the server under test runs. */
export const CARLAB_BIN = fileURLToPath(new URL('../../scripts/carlab.js', import.meta.url));

/** How long the server may take to come up (a 2-core machine, N workers and NATS). */
const START_TIMEOUT_MS = 60_000;

/** How long an orderly SIGTERM stop may take before the process group is killed. */
const STOP_TIMEOUT_MS = 20_000;

/**
 * The `carlab start` arguments for a --start-cluster value.
 *
 * @param {{ cluster: number, port: number, ackTimeoutMs?: number | null }} o cluster 1: plain `carlab start`
 * @returns {string[]} argv after the script
 */
export function startArgv({ cluster, port, ackTimeoutMs = null }) {
  return [
    // the lab's runs start from empty groups: no scene kept from an earlier run (docs/operations.md "Kept scenes")
    'start', '--http', '--host', '127.0.0.1', '--port', String(port), '--no-build', '--no-qr', '--log-level', 'info', '--no-scene-store',
    ...(ackTimeoutMs ? ['--ack-timeout-ms', String(Math.round(ackTimeoutMs))] : []),
    ...(cluster >= 2 ? ['--cluster', String(cluster)] : []),
  ];
}

/**
 * A free TCP port on 127.0.0.1 (free when asked: the server binds it next).
 *
 * @returns {Promise<number>}
 */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
      server.close(() => resolve(port));
    });
  });
}

/**
 * Whether a process runs (a zombie does not).
 *
 * @param {number} pid
 */
export function isAlive(pid) {
  return processStart(pid) !== null;
}

/**
 * The processes a started server's log has named (the primary, its workers, nats-server), each
 * as it was when named: stopProcess signals only those still the same process, never a pid the
 * kernel has since given to another.
 * @type {WeakMap<StartLog, Map<number, import('../shared/proctree.js').ProcessRef>>}
 */
const namedRefs = new WeakMap();

/**
 * Takes a reference to every process the log names that has none yet.
 * @param {StartLog} log
 */
function rememberNamed(log) {
  let refs = namedRefs.get(log);
  if (!refs) namedRefs.set(log, refs = new Map());
  for (const pid of [log.rootPid, ...log.workers.keys(), ...(log.nats ? [log.nats.pid] : [])]) {
    if (!refs.has(pid)) refs.set(pid, processRef(pid));
  }
}

/**
 * @typedef {object} StartedPids
 * @property {number} primary the process the lab started (the plain server for --start-cluster 1)
 * @property {number[]} workers the relay processes (the plain server itself for 1)
 * @property {number | null} nats the cluster's own nats-server
 */

/**
 * @typedef {object} StopResult
 * @property {number | null} code the started process's exit code
 * @property {string | null} signal
 * @property {number} ms from SIGTERM to its exit
 * @property {boolean} forced the process group had to be killed
 * @property {number[]} leftoverPids processes of it still running after it exited (then killed)
 * @property {Record<string, number> | null} routing the primary's routing counts
 */

/**
 * A started `carlab start`.
 *
 * @typedef {object} StartedServer
 * @property {number} cluster the --start-cluster value
 * @property {string} url what clients connect to
 * @property {StartedPids} pids
 * @property {string | null} natsVersion
 * @property {string | null} natsUrl
 * @property {{ kind: string, message: string }[]} faults error lines and worker or NATS exits in its log
 * @property {() => Promise<void>} resetWindow the window starts now: workers' counters and every process's CPU
 * @property {() => Promise<any>} metrics the window so far: relay metrics merged over the workers (window
 *   differences), `serverCpuPct` (all processes), `cpuPct` per role, `rssBytes` (all processes), `perRelay`
 * @property {() => () => { cpuUs: number, seconds: number }} measurePrimary starts measuring the primary's
 *   CPU (schedstat); the function returned ends it
 * @property {() => Promise<StopResult>} stop SIGTERM, wait for the exit, check nothing is left (once)
 * @property {Promise<{ code: number | null, signal: string | null }>} exited
 * @property {(signal?: NodeJS.Signals) => Promise<{ code: number | null, signal: string | null }>} kill
 */

/** Started servers still running: killed if the lab exits without stopping them. @type {Set<import('node:child_process').ChildProcess>} */
const running = new Set();
let exitHookInstalled = false;

/** @param {import('node:child_process').ChildProcess} child */
function track(child) {
  running.add(child);
  child.once('exit', () => running.delete(child));
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // The server runs in its own process group (a terminal's Ctrl-C is the lab's to handle):
  // if the lab exits without stopping it, take the group down with it.
  process.once('exit', () => {
    for (const c of running) { try { if (c.pid) process.kill(-c.pid, 'SIGKILL'); } catch { /* gone */ } }
  });
}

/**
 * Starts `carlab start --http` (plus `--cluster N` for N >= 2) on a free
 * loopback port and resolves once it serves: its URL logged, every worker
 * listening and (with a cluster) every worker seeing all N nodes on NATS.
 *
 * @param {{ cluster: number, ackTimeoutMs?: number | null, env?: NodeJS.ProcessEnv }} o
 *   env: the server's environment (default the lab's without CARLAB_* variables, which
 *   `carlab start` would read as flags)
 * @returns {Promise<StartedServer>}
 */
export async function startCarlab(o) {
  const port = await freePort();
  const env = o.env ?? Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('CARLAB_')));
  const child = spawn(process.execPath, [CARLAB_BIN, ...startArgv({ cluster: o.cluster, port, ackTimeoutMs: o.ackTimeoutMs })], {
    stdio: ['ignore', 'pipe', 'pipe'], env, detached: true,
  });
  track(child);
  const rootPid = /** @type {number} */ (child.pid);
  const log = new StartLog(rootPid);
  rememberNamed(log);
  /** @type {string[]} */
  const stderrTail = [];
  createInterface({ input: /** @type {import('node:stream').Readable} */ (child.stdout) }).on('line', (line) => {
    log.add(line);
    rememberNamed(log);
  });
  createInterface({ input: /** @type {import('node:stream').Readable} */ (child.stderr) }).on('line', (line) => {
    stderrTail.push(line);
    if (stderrTail.length > 40) stderrTail.shift();
  });
  /** @type {{ exit: { code: number | null, signal: string | null } | null }} */
  const state = { exit: null };
  const exitNow = () => state.exit;
  /** @type {Promise<{ code: number | null, signal: string | null }>} */
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => {
    const exit = { code, signal };
    state.exit = exit;
    resolve(exit);
  }));
  const why = () => [log.fatal, ...stderrTail.slice(-10), ...log.tail.slice(-5)].filter(Boolean).join('\n');
  const wantWorkers = o.cluster >= 2 ? o.cluster : 1;
  const started = Date.now();
  try {
    for (;;) {
      const exit = exitNow();
      if (exit) throw new Error(`carlab start exited (${exit.signal ?? exit.code}) before it served:\n${why()}`);
      if (log.fatal) throw new Error(`carlab start did not start: ${why()}`);
      const up = o.cluster >= 2 ? log.clusterUp && log.workers.size >= wantWorkers : log.url !== null;
      if (up) break;
      if (Date.now() - started > START_TIMEOUT_MS) throw new Error(`carlab start did not serve within ${START_TIMEOUT_MS / 1000} s:\n${why()}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    if (o.cluster >= 2) await waitForMesh(log, wantWorkers, started + START_TIMEOUT_MS);
  } catch (err) {
    await stopProcess(child, exited, exitNow, log, { quiet: true });
    throw err;
  }
  return startedServer(o.cluster, child, log, exited, exitNow);
}

/**
 * Waits until every worker counts `n` nodes on NATS (itself included).
 *
 * @param {StartLog} log
 * @param {number} n
 * @param {number} deadline Date.now() to give up at
 */
async function waitForMesh(log, n, deadline) {
  for (;;) {
    const pids = [...log.workers.keys()];
    const got = await workerMetrics([...log.workers.values()], pids);
    const counts = pids.map((pid) => got.get(pid)?.relay?.cluster?.nodes ?? 0);
    if (counts.length === n && counts.every((c) => c === n)) return;
    if (Date.now() > deadline) throw new Error(`the workers did not find each other through NATS (nodes seen: ${counts.join(', ')} of ${n})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Every process of the server now: the started one, its descendants (the
 * workers and nats-server), and the ones its log named, each as a reference
 * (the named ones as they were when named).
 *
 * @param {StartLog} log
 * @returns {import('../shared/proctree.js').ProcessRef[]}
 */
function serverRefs(log) {
  const refs = new Map(namedRefs.get(log));
  if (isAlive(log.rootPid)) for (const pid of processTree([log.rootPid])) if (!refs.has(pid)) refs.set(pid, processRef(pid));
  return [...refs.values()];
}

/**
 * The pids of the server's processes that still run (for CPU sampling).
 * @param {StartLog} log
 */
function serverPids(log) {
  return serverRefs(log).filter(sameProcess).map((r) => r.pid);
}

/**
 * SIGTERM, wait (SIGKILL to the group after STOP_TIMEOUT_MS), then make sure
 * none of its processes is left (killing and reporting any that is).
 *
 * @param {import('node:child_process').ChildProcess} child
 * @param {Promise<{ code: number | null, signal: string | null }>} exited
 * @param {() => { code: number | null, signal: string | null } | null} exitNow
 * @param {StartLog} log
 * @param {{ quiet?: boolean }} [o]
 * @returns {Promise<StopResult>}
 */
async function stopProcess(child, exited, exitNow, log, o = {}) {
  const refs = serverRefs(log);
  const t0 = performance.now();
  let forced = false;
  if (!exitNow()) {
    child.kill('SIGTERM');
    const timer = setTimeout(() => {
      forced = true;
      try { process.kill(-log.rootPid, 'SIGKILL'); } catch { /* gone */ }
    }, STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  }
  const ms = Math.round(performance.now() - t0);
  // The workers and nats-server are gone by the time the primary exits; give stragglers a moment.
  let left = refs.filter(sameProcess);
  for (let i = 0; i < 20 && left.length > 0; i++) {
    await new Promise((r) => setTimeout(r, 100));
    left = left.filter(sameProcess);
  }
  for (const { pid } of left) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } }
  const leftoverPids = left.map((r) => r.pid);
  if (left.length && !o.quiet) log.faults.push({ kind: 'leftover', message: `still running after carlab start exited: ${leftoverPids.join(', ')}` });
  const exit = exitNow();
  return { code: exit?.code ?? null, signal: exit?.signal ?? null, ms, forced, leftoverPids, routing: log.routing };
}

/**
 * The started server's handle (see StartedServer).
 *
 * @param {number} clusterSize
 * @param {import('node:child_process').ChildProcess} child
 * @param {StartLog} log
 * @param {Promise<{ code: number | null, signal: string | null }>} exited
 * @param {() => { code: number | null, signal: string | null } | null} exitNow
 * @returns {StartedServer}
 */
function startedServer(clusterSize, child, log, exited, exitNow) {
  const rootPid = log.rootPid;
  const plain = clusterSize < 2;
  /** worker pids and URLs: the plain server is its own (only) worker */
  const workerPids = () => (plain ? [rootPid] : [...log.workers.keys()]);
  const workerUrls = () => (plain ? [/** @type {string} */ (log.url)] : [...log.workers.values()]);
  /** Where the window began: when, every process's CPU ticks, every worker's relay counters. */
  /** @type {{ at: number, ticks: Map<number, number>, relay: Map<number, any> }} */
  let win = { at: performance.now(), ticks: ticksOf(serverPids(log)), relay: new Map() };
  /** @type {Promise<StopResult> | null} */
  let stopping = null;
  return {
    cluster: clusterSize,
    url: /** @type {string} */ (log.url),
    get pids() { return { primary: rootPid, workers: workerPids(), nats: log.nats?.pid ?? null }; },
    get natsVersion() { return log.nats?.version ?? null; },
    get natsUrl() { return log.nats?.url ?? null; },
    faults: log.faults,
    exited,
    async resetWindow() {
      const pids = workerPids();
      const got = await workerMetrics(workerUrls(), pids);
      const missing = pids.filter((pid) => !got.has(pid));
      // Without a worker's counters at the start its window would run from its start: refuse that.
      if (missing.length) throw new Error(`carlab start: worker(s) ${missing.join(', ')} did not answer /metrics at the window's start`);
      win = { at: performance.now(), ticks: ticksOf(serverPids(log)), relay: new Map([...got].map(([pid, m]) => [pid, m.relay])) };
    },
    async metrics() {
      const pids = workerPids();
      const got = await workerMetrics(workerUrls(), pids);
      const all = serverPids(log);
      const cpu = cpuPctBetween(win.ticks, ticksOf(all), performance.now() - win.at);
      const rss = all.reduce((s, pid) => s + (readProc(pid)?.rssBytes ?? 0), 0);
      const answered = pids.filter((pid) => got.has(pid));
      const perRelay = answered.map((pid) => ({
        ...relayWindow(win.relay.get(pid) ?? null, got.get(pid).relay),
        cpuPctMean: cpu.get(pid) ?? null,
        pid,
      }));
      const relay = perRelay.length ? mergeRelayMetrics(perRelay) : null;
      const sum = (/** @type {number[]} */ xs) => xs.reduce((a, b) => a + b, 0);
      const natsPid = log.nats?.pid ?? null;
      return {
        relay,
        perRelay,
        missingWorkers: pids.filter((pid) => !got.has(pid)),
        rssBytes: rss,
        serverCpuPct: sum([...cpu.values()]),
        cpuPct: {
          primary: plain ? null : cpu.get(rootPid) ?? null,
          workers: pids.map((pid) => cpu.get(pid) ?? null),
          nats: natsPid === null ? null : cpu.get(natsPid) ?? null,
          other: sum([...cpu].filter(([pid]) => pid !== rootPid && pid !== natsPid && !pids.includes(pid)).map(([, v]) => v)),
        },
        natsCpuPct: natsPid === null ? null : cpu.get(natsPid) ?? null,
      };
    },
    measurePrimary() {
      const t0 = performance.now();
      const ns0 = processCpuNs(rootPid) ?? 0;
      return () => ({ cpuUs: ((processCpuNs(rootPid) ?? ns0) - ns0) / 1000, seconds: (performance.now() - t0) / 1000 });
    },
    stop() {
      stopping ??= stopProcess(child, exited, exitNow, log);
      return stopping;
    },
    async kill(signal = 'SIGKILL') {
      if (!exitNow()) { try { process.kill(-rootPid, signal); } catch { /* gone */ } }
      return exited;
    },
  };
}

/**
 * The `cluster` field of a --start-cluster run record (the shape --relays
 * records, plus the primary's): nodes, cross-node updates, NATS, the CPU of
 * each role over the window, what the primary routed and its CPU per routed
 * connection (its CPU during the connect phase over the connections it handed
 * on, all of which came then in a run without reconnects).
 *
 * @param {object} input
 * @param {StartedServer} input.started
 * @param {any} input.serverMetrics its metrics() after the window
 * @param {{ cpuUs: number, seconds: number } | null} input.connectPhase the primary's CPU while the clients connected
 * @param {StopResult} input.stopped
 */
export function startClusterRunFields({ started, serverMetrics, connectPhase, stopped }) {
  const plain = started.cluster < 2;
  const c = serverMetrics.relay?.cluster ?? {};
  const updatesIn = serverMetrics.relay?.updatesIn ?? 0;
  const routing = stopped.routing;
  const handed = routing ? (routing.byGroup ?? 0) + (routing.roundRobin ?? 0) : null;
  return {
    startCluster: started.cluster,
    cluster: {
      nodes: plain ? 1 : started.pids.workers.length,
      server: plain ? 'carlab start' : `carlab start --cluster ${started.cluster}`,
      placement: plain ? null : 'group',
      crossNodeUpdates: plain ? 0 : c.crossNodeUpdates ?? 0,
      crossNodePct: plain ? 0 : updatesIn > 0 ? (100 * (c.crossNodeUpdates ?? 0)) / updatesIn : null,
      remoteUpdatesDelivered: c.updatesReceived ?? 0,
      acksRouted: c.acksRouted ?? 0,
      brokerMessages: c.brokerMessagesOut ?? 0,
      natsVersion: started.natsVersion,
      natsUrl: started.natsUrl,
      natsCpuPct: serverMetrics.natsCpuPct ?? null,
      relayCpuPct: serverMetrics.cpuPct?.workers ?? [],
      primaryCpuPct: serverMetrics.cpuPct?.primary ?? null,
      serverCpuPct: serverMetrics.serverCpuPct ?? null,
      unknownSender: c.unknownSender ?? 0,
      routed: plain ? null : routing,
      connectPhaseS: connectPhase ? Math.round(connectPhase.seconds * 100) / 100 : null,
      primaryConnectCpuUs: plain || !connectPhase ? null : Math.round(connectPhase.cpuUs),
      primaryUsPerConnection: plain || !connectPhase || !handed ? null : connectPhase.cpuUs / handed,
      pids: started.pids,
      stop: { code: stopped.code, signal: stopped.signal, ms: stopped.ms, forced: stopped.forced, leftoverPids: stopped.leftoverPids },
      missingWorkers: serverMetrics.missingWorkers ?? [],
    },
  };
}
