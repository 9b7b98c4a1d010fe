// Runs one sweep point of `carlab sim`: the server in a child process, the
// population as Node clients in worker threads (child processes for
// relay-udp, whose native WebRTC module cannot live in worker threads), then
// aggregation. The load generators are in generators.js, the timeline and
// stability figures in timeline.js, the relay cluster or `carlab start` seen as
// one server in lab/target/point-server.js.

import { availableParallelism } from 'node:os';
import { sceneRecord } from '../report/scene-record.js';
import { SCENE_SETTLE_S } from '../shared/edits.js';
import { NODE_TRANSPORTS } from '../../core/transports.js';
import { aggregateRun } from '../report/aggregate.js';
import { withLoadFlags } from '../report/saturation.js';
import { BASELINE_TRANSPORTS } from './transports.js';
import { clusterRunFields, startRelayCluster } from '../target/cluster.js';
import { startCarlab, startClusterRunFields } from '../target/start-cluster.js';
import { DEFAULT_RENDER_FPS, reportPeriodMs } from '../shared/flags.js';
import { drawnRecord } from '../report/drawn.js';
import { reportFields } from '../report/tallies.js';
import { startServerChild } from '../target/server-process.js';
import { startBalancer } from '../target/lb.js';
import { clusterAsServer, killRelay, pauseRelay, startedAsServer } from '../target/point-server.js';
import { childCpuMicros, closeGenerators, generatorShares, startGenerator, stopGenerators, whenConnected } from './generators.js';
import { createTimeline, stabilityOf, tallyProgress } from './timeline.js';
import { movingShares, startNetEvents } from './net-events.js';
import { netEventsFields } from '../report/recovery.js';

/** @typedef {import('../target/server-process.js').ServerChild} ServerChild */
/** @typedef {import('../report/tallies.js').ReportTally} ReportTally */
/** @typedef {import('./generators.js').Generator} Generator */
/** @typedef {import('./timeline.js').LiveTally} LiveTally */
/** @typedef {import('./timeline.js').BucketTally} BucketTally */
/** @typedef {import('../target/point-server.js').PauseInfo} PauseInfo */

/** Transports the Node clients can run. */
export const SIM_TRANSPORTS = Object.freeze([...NODE_TRANSPORTS, ...BASELINE_TRANSPORTS]);

/** Transports that are baselines, not carlab's relay (lab/target/baselines.js). */
export const BASELINES = BASELINE_TRANSPORTS;
/** How long the window's end waits for an overloaded server's timeline answers before it counts without them. */
const TIMELINE_ANSWER_WAIT_MS = 5000;

/**
 * @typedef {object} PointOptions
 * @property {import('../shared/flags.js').SweepPoint} point
 * @property {number} durationS
 * @property {number} warmupS
 * @property {number} updates per client, 0 = use durationS
 * @property {number} ackTimeoutMs
 * @property {number} [editsPerMinute] each client edits the shared scene this often (0: never)
 * @property {number} [lateJoinS] --late-join: the last member of every group joins this many seconds into the window
 * @property {import('../../core/playout.js').PlayoutMode[] | null} [playout] --playout: the modes every receiver draws
 * @property {number} [renderFps] --render-fps: at this rate
 * @property {number} [workers] generator threads (default: 1 per 400 clients, at most 2)
 * @property {(p: { phase: string, elapsedS: number, rtMean: number | null, sent: number }) => void} [onProgress]
 * @property {() => boolean} [shouldStop] Ctrl-C: end the measurement early
 * @property {number} [timelineS] length of the timeline's buckets (RT mean and server RSS), default 10
 * @property {boolean} [liveHeap] start the relay with --expose-gc and force a full GC as each
 *   timeline bucket closes, so that every bucket holds the live heap and the native memory
 *   (RSS beyond V8's heap and external buffers) rather than wherever V8's sizing happens to be:
 *   what a leak check compares (the gate soak); it costs the relay a GC per bucket
 * @property {{ atS: number, downMs?: number }} [restart] kill the server (SIGKILL) this many
 *   seconds into the measured window and start it again on the same port after downMs:
 *   the clients reconnect, the run record reports the outage
 * @property {{ baseMs?: number, maxMs?: number }} [reconnect] the clients' reconnection backoff
 *   (default: the product's, RECONNECT_DEFAULTS in web/src/transport/relay-reconnect.js)
 * @property {string | null} [nats] --nats: the NATS server the relays join (default: one of the run's own)
 * @property {number | null} [killRelayAtS] --kill-relay-at: SIGKILL one relay this many seconds into the
 *   measured window (with point.relays >= 2); its clients fail over to the others
 * @property {{ atS: number, forS: number } | null} [pauseRelay] --pause-relay: SIGSTOP one relay atS seconds
 *   into the measured window, SIGCONT it forS seconds later (with point.relays >= 2)
 * @property {import('../net/network.js').PointNetwork | null} [net] --net: the server in
 *   net.serverNs, generator w (a child process) in net.clientNs[w]; needs
 *   net.clientNs.length === simGeneratorCount(clients, workers), or 2 with netEvents
 * @property {{ atS: number, forS: number } | null} [pauseNats] --pause-nats: SIGSTOP the run's nats-server atS seconds
 *   into the measured window, SIGCONT it forS seconds later (with point.relays >= 2)
 * @property {import('../net/events.js').NetEventsPlan | null} [netEvents] --net-events (with net): the
 *   moving members of each group on link 0, where the timeline plays, the rest on link 1
 */

/**
 * The clients one load generator runs: a range of the population, or (--net-events) a list.
 * @typedef {{ from: number, to: number, indices?: undefined } | { indices: number[], from?: undefined, to?: undefined }} Share
 */

/** @param {Share} share */
const shareSize = (share) => (share.indices ? share.indices.length : share.to - share.from);

/**
 * The live state of one point: the server (a restart replaces it), the ones
 * before it (their faults count too), the generators and what they reported.
 * @typedef {object} SimPointState
 * @property {ServerChild} server
 * @property {ServerChild[]} pastServers
 * @property {Generator[]} workers
 * @property {LiveTally} live
 * @property {BucketTally} bucket
 * @property {{ atS: number, serverDownMs: number } | null} restartInfo set once --restart happened
 * @property {import('../target/cluster.js').RelayCluster | null} cluster --relays: the relays and their NATS
 * @property {Awaited<ReturnType<typeof startBalancer>> | null} lb --placement haproxy: HAProxy in front of them
 * @property {import('../target/start-cluster.js').StartedServer | null} started --start-cluster: the `carlab start` under test
 * @property {{ atS: number, relayPid: number } | null} killInfo set once --kill-relay-at happened
 * @property {Promise<PauseInfo> | null} pause set once --pause-relay began; resolves once the relay runs again
 * @property {boolean} [editsStopped] --edits-per-minute: the clients were told to stop editing
 * @property {Promise<{ atS: number, forS: number, stoppedS: number }> | null} [natsPause] set once --pause-nats began
 * @property {number[]} [movingIndices] --net-events: the clients behind the link that changes
 * @property {ReturnType<typeof startNetEvents> | null} [netPlayer] --net-events: the timeline playing
 */

/**
 * Starts one generator per share, each connecting its clients; resolves
 * when all of them are connected.
 * @param {PointOptions} o
 * @param {SimPointState} run
 * @param {Share[]} shares
 * @param {string} runId
 * @param {boolean} asProcesses
 */
function startGenerators(o, run, shares, runId, asProcesses) {
  const { point } = o;
  const net = o.net ?? null;
  const config = { iceServers: [], relayPath: '/relay', peerjs: { path: '/peerjs', key: 'peerjs' } };
  return Promise.all(shares.map((share, w) => {
    const worker = startGenerator({
      url: run.lb?.url ?? run.server.url, urls: run.lb ? [run.lb.url] : run.cluster?.urls, placement: point.placement, config, transport: point.transport,
      ...(share.indices ? { indices: share.indices, from: 0, to: share.indices.length } : { from: share.from, to: share.to }), clients: point.clients,
      ...(o.netEvents ? { recovery: true } : {}),
      groupSize: point.group, runId, cycleMs: point.cycleMs, cycleMode: point.cycleMode, ackTimeoutMs: o.ackTimeoutMs,
      warmupMs: o.warmupS * 1000, maxUpdates: o.updates, reportsIntervalMs: reportPeriodMs(point.reportsIntervalS ?? 0),
      editsPerMinute: o.editsPerMinute ?? 0,
      ...(o.playout ? { playout: o.playout, renderFps: o.renderFps } : {}),
      ...(o.lateJoinS !== undefined ? { lateJoinMs: (o.warmupS + o.lateJoinS) * 1000 } : {}),
      ...(o.reconnect ? { reconnect: o.reconnect } : {}),
    }, asProcesses, net ? net.clientNs[w] : null);
    run.workers.push(worker);
    worker.on('message', (m) => tallyProgress(run.live, run.bucket, m));
    return whenConnected(worker);
  }));
}

/**
 * Reports the progress since the last report and starts a new one.
 * @param {PointOptions} o
 * @param {LiveTally} live
 * @param {string} phase
 * @param {number} started Date.now() when the clients started
 */
function reportProgress(o, live, phase, started) {
  const rtMean = live.rtN ? live.rtSum / live.rtN : null;
  o.onProgress?.({ phase, elapsedS: (Date.now() - started) / 1000, rtMean, sent: live.sent });
  live.rtSum = 0; live.rtN = 0; live.sent = 0;
}

/**
 * While measuring: the timeline being filled, where the window began
 * (performance.now()) and what --restart does.
 * @typedef {object} MeasuringWindow
 * @property {number} windowStart
 * @property {ReturnType<typeof createTimeline>} timeline
 * @property {number} timelineS
 * @property {(at: number) => Promise<{ atS: number, serverDownMs: number }>} restart
 * @property {number} editsStopAtMs when the clients stop editing (ms into the window), so the scene can settle
 */

/**
 * One phase (warm-up, measuring): reports progress every 250 ms until
 * `seconds` passed, Ctrl-C, or (with --updates) every generator is done;
 * while measuring, also closes timeline buckets and restarts the server when
 * --restart says so.
 * @param {PointOptions} o
 * @param {SimPointState} run
 * @param {number} started Date.now() when the clients started
 * @param {string} phase
 * @param {number} seconds
 * @param {MeasuringWindow | null} [measuring]
 */
async function runPhase(o, run, started, phase, seconds, measuring = null) {
  const end = Date.now() + seconds * 1000;
  while (Date.now() < end && !o.shouldStop?.()) {
    if (o.updates > 0 && run.live.done === run.workers.length) break;
    await new Promise((r) => setTimeout(r, 250));
    reportProgress(o, run.live, phase, started);
    if (!measuring) continue;
    const at = performance.now() - measuring.windowStart;
    if (o.restart && !run.restartInfo && at >= o.restart.atS * 1000) run.restartInfo = await measuring.restart(at);
    if (o.killRelayAtS != null && run.cluster && !run.killInfo && at >= o.killRelayAtS * 1000) run.killInfo = await killRelay(run.cluster, at);
    if (o.pauseRelay && run.cluster && !run.pause && at >= o.pauseRelay.atS * 1000) run.pause = pauseRelay(run.cluster, o.pauseRelay.forS, at);
    if (o.pauseNats && run.cluster && !run.natsPause && at >= o.pauseNats.atS * 1000) {
      const { forS } = o.pauseNats;
      const atS = Math.round(at / 100) / 10;
      run.natsPause = run.cluster.pauseNats(forS * 1000).then((ms) => ({ atS, forS, stoppedS: Math.round(ms / 100) / 10 }));
    }
    if (o.editsPerMinute && !run.editsStopped && at >= measuring.editsStopAtMs) {
      run.editsStopped = true;
      for (const w of run.workers) w.postMessage({ cmd: 'edits-stop' });
    }
    if (at - measuring.timeline.start >= measuring.timelineS * 1000) measuring.timeline.close(at);
  }
}

/**
 * Kills the server mid-run and starts it again on the same port.
 * @param {SimPointState} run
 * @param {PointOptions} o
 * @param {Record<string, any>} serverOptions
 * @param {{ netns?: string, execArgv?: string[] }} serverPlace
 * @param {number} at ms into the measured window
 */
async function restartServer(run, o, serverOptions, serverPlace, at) {
  const port = Number(new URL(run.server.url).port);
  run.pastServers.push(run.server);
  const killedAt = performance.now();
  await run.server.kill('SIGKILL');
  if (o.restart?.downMs) await new Promise((r) => setTimeout(r, o.restart?.downMs));
  run.server = await startServerChild({ ...serverOptions, port }, serverPlace);
  return { atS: Math.round(at / 100) / 10, serverDownMs: Math.round(performance.now() - killedAt) };
}

/**
 * Starts the clients, warms up, then measures: the window's timeline, the
 * server's RSS when it began, its length and the generators' CPU over it.
 * @param {PointOptions} o
 * @param {SimPointState} run
 * @param {boolean} asProcesses generators are child processes (their CPU is asked for)
 * @param {MeasuringWindow['restart']} restart
 */
async function measure(o, run, asProcesses, restart) {
  for (const w of run.workers) w.postMessage({ cmd: 'start' });
  const started = Date.now();
  const timeline = createTimeline(() => run.server, run.bucket, o.liveHeap ?? false);
  await runPhase(o, run, started, 'warm-up', o.warmupS);
  await run.server.resetWindow();
  const rssWarm = (await run.server.metrics()).rssBytes ?? null;
  const cpuStart = process.cpuUsage();
  const childCpuStart = asProcesses ? await childCpuMicros(run.workers) : 0;
  const windowStart = performance.now();
  run.bucket.on = true;
  if (o.netEvents && o.net) run.netPlayer = startNetEvents(o.netEvents, o.net, run.movingIndices?.length ?? 0, run.workers, windowStart);
  // with --updates, run until every client sent them (bounded by the ACK timeout per update)
  const seconds = o.updates > 0 ? (o.updates * o.point.cycleMs + o.ackTimeoutMs) / 1000 + 5 : o.durationS;
  const editsStopAtMs = (seconds - SCENE_SETTLE_S) * 1000;
  await runPhase(o, run, started, 'measuring', seconds, { windowStart, timeline, timelineS: o.timelineS ?? 10, restart, editsStopAtMs });
  const windowMs = performance.now() - windowStart;
  run.bucket.on = false;
  run.netPlayer?.stop();
  if (windowMs - timeline.start >= 1000 || timeline.buckets.length === 0) timeline.close(windowMs);
  await timeline.settled(TIMELINE_ANSWER_WAIT_MS);
  const cpuUsed = process.cpuUsage(cpuStart);
  const childCpuUsed = asProcesses ? await childCpuMicros(run.workers) - childCpuStart : 0;
  return { timeline: timeline.buckets, rssWarm, windowMs, clientCpuMicros: cpuUsed.user + cpuUsed.system + childCpuUsed };
}

/**
 * The server's CPU over its own window (from the reset to its answer, which an overloaded
 * server gives late): mean %, the user / system split and the span, so that CPU per delivered
 * update divides the CPU and the updates of one span. --start-cluster: every process of the
 * server summed over the run's window, no split.
 * @param {any} serverMetrics @param {any} relay the window's counters of the transport under test
 * @returns {{ server: number | null, serverSplit: { userUs: number, systemUs: number } | null, serverWindowS: number | null }}
 */
export function serverCpuOf(serverMetrics, relay) {
  if (typeof serverMetrics.serverCpuPct === 'number') return { server: serverMetrics.serverCpuPct, serverSplit: null, serverWindowS: null };
  const w = serverMetrics.cpuWindow;
  if (!w || !(w.ms > 0)) return { server: relay?.cpuPctMean ?? null, serverSplit: null, serverWindowS: null };
  return { server: ((w.userUs + w.systemUs) / 1000 / w.ms) * 100, serverSplit: { userUs: w.userUs, systemUs: w.systemUs }, serverWindowS: w.ms / 1000 };
}

/**
 * The run record of a point from what was measured.
 * @param {object} input
 * @param {PointOptions} input.o
 * @param {SimPointState} input.run
 * @param {Share[]} input.shares
 * @param {boolean} input.asProcesses
 * @param {Awaited<ReturnType<typeof measure>>} input.window
 * @param {any} input.serverMetrics the server child's metrics after the window
 * @param {any[]} input.stats every client's CarClient.stats()
 * @param {ReportTally | null} input.reports what the clients' reports did (--reports)
 * @param {(import('./generators.js').DrawnLabJson | null)[]} input.drawn each generator's drawn-error tallies (--playout)
 */
function simRunRecord({ o, run, shares, asProcesses, window, serverMetrics, stats, reports, drawn }) {
  const { point } = o;
  const { restartInfo } = run;
  // the server's counters for the transport under test
  const relay = BASELINES.includes(point.transport) ? serverMetrics.baselines[point.transport] : serverMetrics.relay;
  const serverCpu = serverCpuOf(serverMetrics, relay);
  // the generators share this machine with the server: whether they had CPU to spare (lab/report/saturation.js)
  return withLoadFlags(aggregateRun({
    point,
    clients: stats,
    relay,
    cpu: { ...serverCpu, clients: (window.clientCpuMicros / 1000 / window.windowMs) * 100 },
    extra: {
      sim: {
        workers: shares.length,
        generator: asProcesses ? 'process' : 'thread',
        clientsPerProcess: asProcesses ? shareSize(shares[0]) : point.clients,
      },
      durationS: Math.round(window.windowMs / 100) / 10,
      // the span the server's counters and CPU cover (longer than the window when it answered late)
      serverWindowS: serverCpu.serverWindowS === null ? null : Math.round(serverCpu.serverWindowS * 10) / 10,
      ...reportFields(point.reportsIntervalS ?? 0, reports),
      serverRssBytes: serverMetrics.rssBytes,
      // the server's longest event-loop stall from its start to the window's end (null: not measured)
      serverLoopStallMs: typeof serverMetrics.loopStallMs === 'number' ? serverMetrics.loopStallMs : null,
      stoppedEarly: Boolean(o.shouldStop?.()),
      ...(o.editsPerMinute ? { scene: sceneRecord(stats, o.editsPerMinute) } : {}),
      ...(o.playout ? { drawn: drawnRecord(drawn, { renderFps: o.renderFps ?? DEFAULT_RENDER_FPS }) } : {}),
      ...(o.netEvents && run.netPlayer ? netEventsFields({
        movingPerGroup: o.netEvents.movingPerGroup, links: [0], played: run.netPlayer.played,
        movingNames: (run.movingIndices ?? []).map((i) => `sim${i}`), stats,
      }) : {}),
      timeline: window.timeline,
      stability: restartInfo ? null : stabilityOf(window.timeline, window.rssWarm, window.windowMs / 1000),
      serverFaults: [...run.pastServers, run.server].flatMap((x) => x.faults).length,
      ...(restartInfo ? { restart: { ...restartInfo, note: 'relay counters, RTS and server CPU cover the window after the restart' } } : {}),
    },
  }), { cores: availableParallelism() });
}

/**
 * The system under test: one relay (the server child), with point.relays
 * a cluster of them on NATS, or with point.startCluster the product's own
 * `carlab start` (`--cluster N` for N >= 2) in a process of its own.
 * @param {PointOptions} o
 * @param {Record<string, any>} serverOptions
 * @param {{ netns?: string, execArgv?: string[] }} serverPlace
 * @returns {Promise<{ server: ServerChild, cluster: import('../target/cluster.js').RelayCluster | null,
 *   started: import('../target/start-cluster.js').StartedServer | null, lb: SimPointState['lb'] }>}
 */
async function startSystem(o, serverOptions, serverPlace) {
  if (o.point.startCluster) {
    const started = await startCarlab({ cluster: o.point.startCluster, ackTimeoutMs: o.ackTimeoutMs });
    return { server: startedAsServer(started), cluster: null, started, lb: null };
  }
  if (!o.point.relays) return { server: await startServerChild(serverOptions, serverPlace), cluster: null, started: null, lb: null };
  const cluster = await startRelayCluster({ relays: o.point.relays, natsUrl: o.nats, serverOptions, serverPlace });
  const server = clusterAsServer(cluster);
  if (o.point.placement !== 'haproxy') return { server, cluster, started: null, lb: null };
  try {
    return { server, cluster, started: null, lb: await startBalancer(cluster.urls) };
  } catch (err) {
    await server.close();
    throw err;
  }
}

/**
 * Runs one point and returns its run record.
 * @param {PointOptions} o
 */
export async function runSimPoint(o) {
  const { point } = o;
  const net = o.net ?? null;
  const serverOptions = { ackTimeoutMs: o.ackTimeoutMs, baselines: BASELINES.includes(point.transport), ...(net ? { host: net.serverIp } : {}) };
  const serverPlace = { ...(net ? { netns: net.serverNs } : {}), ...(o.liveHeap ? { execArgv: ['--expose-gc'] } : {}) };
  const system = await startSystem(o, serverOptions, serverPlace);
  /** @type {SimPointState} */
  const run = {
    server: system.server,
    cluster: system.cluster,
    started: system.started,
    lb: system.lb,
    killInfo: null,
    pause: null,
    pastServers: [],
    workers: [],
    live: { rtSum: 0, rtN: 0, sent: 0, done: 0 },
    bucket: { on: false, rtSum: 0, rtN: 0 },
    restartInfo: null,
  };
  /** @type {Share[]} */
  const shares = o.netEvents ? movingShares(point.clients, point.group, o.netEvents.movingPerGroup) : generatorShares(point.clients, o.workers);
  run.movingIndices = o.netEvents ? shares[0].indices : undefined;
  if (net && net.clientNs.length !== shares.length) throw new Error(`--net: ${net.clientNs.length} client namespaces for ${shares.length} generators`);
  const runId = `sim${Date.now().toString(36)}`;
  // node-datachannel (relay-udp) only works in a process's main thread; a
  // thread cannot change network namespace (--net)
  const asProcesses = point.transport === 'relay-udp' || Boolean(net);
  let generatorsClosed = false;
  try {
    // --start-cluster: the primary's CPU while the clients connect (every connection goes through it then)
    const connectPhase = run.started?.measurePrimary() ?? null;
    const connected = startGenerators(o, run, shares, runId, asProcesses);
    o.onProgress?.({ phase: 'connecting', elapsedS: 0, rtMean: null, sent: 0 });
    await connected;
    const primaryConnect = connectPhase?.() ?? null;
    const window = await measure(o, run, asProcesses, (at) => restartServer(run, o, serverOptions, serverPlace, at));
    const pauseInfo = await run.pause;
    const natsPauseInfo = (await run.natsPause) ?? null;
    // The clients stop at the window's end even when the server is slow to answer: its counters
    // then cover its own span from the reset to its answer (serverWindowS), not more sending.
    const [serverMetrics, { stats, reports, drawn }] = await Promise.all([run.server.metrics(), stopGenerators(run.workers)]);
    const record = simRunRecord({ o, run, shares, asProcesses, window, serverMetrics, stats, reports, drawn });
    if (run.started) {
      // Stopped before the record is done: the primary logs what it routed as it stops.
      await closeGenerators(run.workers);
      generatorsClosed = true;
      const stopped = await run.started.stop();
      const fields = startClusterRunFields({ started: run.started, serverMetrics, connectPhase: primaryConnect, stopped });
      return { ...record, ...fields, serverFaults: run.started.faults.length };
    }
    return run.cluster ? { ...record, ...clusterRunFields({ point, cluster: run.cluster, serverMetrics, killInfo: run.killInfo, pauseInfo, outage: record.outage, natsPauseInfo }) } : record;
  } finally {
    await run.pause?.catch(() => {});
    await run.natsPause?.catch(() => {});
    if (!generatorsClosed) await closeGenerators(run.workers);
    await run.lb?.stop();
    await run.server.close();
  }
}
