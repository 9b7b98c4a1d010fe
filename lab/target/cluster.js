/**
 * The system under test as N relay processes joined through NATS (`carlab sim
 * --relays N`): a nats-server of the run's own (or `--nats`), N server
 * children each joined to it, their metrics merged into one relay's worth for
 * the run record, NATS's own CPU read from /proc, a kill of one relay for
 * `--kill-relay-at` and a pause of one (SIGSTOP, then SIGCONT) for `--pause-relay`.
 *
 * @module lab/cluster
 */

import { startNatsServer } from '../../server/nats-process.js';
import { readProc } from '../shared/proctree.js';
import { startServerChild } from '../target/server-process.js';

/** USER_HZ: /proc's CPU ticks per second. */
const CLOCK_TICKS = 100;

/** @typedef {Awaited<ReturnType<typeof startServerChild>>} ServerChild */

/**
 * @typedef {object} RelayCluster
 * @property {ServerChild[]} servers the relays, in placement order (client homes index into it)
 * @property {string[]} urls their base URLs
 * @property {{ url: string, version: string | null, pid: number | null }} nats
 * @property {() => Promise<void>} resetWindow every relay's window, and NATS's CPU clock
 * @property {() => Promise<any>} metrics the relays' metrics merged (see mergeRelayMetrics), with `cluster`
 * @property {(index: number) => Promise<void>} kill SIGKILL one relay
 * @property {(index: number, forMs: number) => Promise<number>} pause SIGSTOP one relay, SIGCONT it after forMs;
 *   resolves once it runs again, with how long it was stopped (ms; more than forMs when this process was late)
 * @property {(forMs: number) => Promise<number>} pauseNats SIGSTOP the run's own nats-server for forMs, then SIGCONT it; how long it really was stopped
 * @property {() => Promise<void>} close every relay, then our nats-server
 */

/**
 * Starts NATS (unless given) and N relays on it; resolves once every relay
 * knows all the others (so the first groups span them from the start).
 *
 * @param {{ relays: number, natsUrl?: string | null, serverOptions: Record<string, unknown>, serverPlace?: { netns?: string } }} o
 * @returns {Promise<RelayCluster>}
 */
export async function startRelayCluster(o) {
  const own = o.natsUrl ? null : await startNatsServer();
  const natsUrl = o.natsUrl ?? /** @type {NonNullable<typeof own>} */ (own).url;
  /** @type {ServerChild[]} */
  const servers = [];
  try {
    for (let i = 0; i < o.relays; i++) servers.push(await startServerChild({ ...o.serverOptions, natsUrl }, o.serverPlace ?? {}));
    await waitForMesh(servers, o.relays);
  } catch (err) {
    await Promise.all(servers.map((s) => s.close()));
    await own?.stop();
    throw err;
  }
  const killed = new Set();
  let natsTicksAt = { ticks: own ? readProc(own.pid)?.ticks ?? 0 : 0, at: performance.now() };
  const live = () => servers.filter((_, i) => !killed.has(i));
  const first = await servers[0].metrics();
  return {
    servers,
    urls: servers.map((s) => s.url),
    nats: { url: natsUrl, version: first.relay?.cluster?.nats?.version ?? own?.version ?? null, pid: own?.pid ?? null },
    async resetWindow() {
      await Promise.all(live().map((s) => s.resetWindow()));
      natsTicksAt = { ticks: own ? readProc(own.pid)?.ticks ?? 0 : 0, at: performance.now() };
    },
    async metrics() {
      const all = await Promise.all(live().map((s) => s.metrics()));
      const natsCpuPct = own ? natsCpuSince(own.pid, natsTicksAt) : null;
      const loopStallMs = Math.max(0, ...all.map((m) => m.loopStallMs ?? 0));
      // every relay's CPU split summed (a killed relay's window is lost with it: then no split)
      const cpuWindow = killed.size === 0 && all.every((m) => m.cpuWindow)
        ? {
          userUs: all.reduce((t, m) => t + m.cpuWindow.userUs, 0), systemUs: all.reduce((t, m) => t + m.cpuWindow.systemUs, 0),
          ms: Math.max(...all.map((m) => m.cpuWindow.ms)),
        }
        : null;
      return { ...all[0], relay: mergeRelayMetrics(all.map((m) => m.relay)), perRelay: all.map((m) => m.relay), natsCpuPct, loopStallMs, cpuWindow };
    },
    async kill(index) {
      killed.add(index);
      await servers[index].kill('SIGKILL');
    },
    async pause(index, forMs) {
      const { pid } = servers[index];
      process.kill(pid, 'SIGSTOP');
      const stoppedAt = performance.now();
      try {
        await new Promise((r) => setTimeout(r, forMs));
      } finally {
        if (servers[index].exit === null) process.kill(pid, 'SIGCONT');
      }
      return performance.now() - stoppedAt;
    },
    async pauseNats(forMs) {
      if (!own) throw new Error('--pause-nats stops the run\'s own nats-server: not with --nats');
      process.kill(own.pid, 'SIGSTOP');
      const stoppedAt = performance.now();
      try {
        await new Promise((r) => setTimeout(r, forMs));
      } finally {
        process.kill(own.pid, 'SIGCONT');
      }
      return performance.now() - stoppedAt;
    },
    async close() {
      await Promise.all(servers.map((s) => s.close()));
      await own?.stop();
    },
  };
}

/**
 * The `cluster` (and, after a kill, `failover`) fields of a --relays run record.
 *
 * @param {object} input
 * @param {import('../shared/flags.js').SweepPoint} input.point
 * @param {RelayCluster} input.cluster
 * @param {any} input.serverMetrics the cluster's merged metrics after the window
 * @param {{ atS: number, relayPid: number } | null} [input.killInfo] --kill-relay-at happened
 * @param {{ atS: number, forS: number, stoppedS: number, relayPid: number } | null} [input.pauseInfo] --pause-relay happened
 *   (point-server.js PauseInfo)
 * @param {any} [input.outage] the run record's `outage` (the clients' reconnects)
 * @param {{ atS: number, forS: number, stoppedS: number } | null} [input.natsPauseInfo] --pause-nats happened
 */
export function clusterRunFields({ point, cluster, serverMetrics, killInfo = null, pauseInfo = null, outage = null, natsPauseInfo = null }) {
  const c = serverMetrics.relay?.cluster ?? {};
  const updatesIn = serverMetrics.relay?.updatesIn ?? 0;
  return {
    cluster: {
      nodes: point.relays,
      placement: point.placement,
      crossNodeUpdates: c.crossNodeUpdates ?? 0,
      crossNodePct: updatesIn > 0 ? (100 * (c.crossNodeUpdates ?? 0)) / updatesIn : null,
      remoteUpdatesDelivered: c.updatesReceived ?? 0,
      acksRouted: c.acksRouted ?? 0,
      brokerMessages: c.brokerMessagesOut ?? 0,
      natsVersion: cluster.nats.version,
      natsUrl: cluster.nats.url,
      natsCpuPct: serverMetrics.natsCpuPct ?? null,
      relayCpuPct: (serverMetrics.perRelay ?? []).map((/** @type {any} */ r) => r?.cpuPctMean ?? null),
      unknownSender: c.unknownSender ?? 0,
      // a node dropped by another (silent 3.5 s), and a node that found itself silent that long and announced its members again
      nodesLost: c.nodesLost ?? 0,
      nodesLostByRelay: (serverMetrics.perRelay ?? []).map((/** @type {any} */ r) => r?.cluster?.nodesLost ?? null),
      reannounced: c.reannounced ?? 0,
      ...(pauseInfo ? { pause: pauseInfo } : {}),
      // the broker falling silent (docs/scale-out.md "A broker stall"): summed over the relays
      broker: brokerFigures(serverMetrics.perRelay ?? []),
      ...(natsPauseInfo ? { natsPause: natsPauseInfo } : {}),
    },
    ...(killInfo ? {
      failover: {
        killedAtS: killInfo.atS,
        relayPid: killInfo.relayPid,
        clientsMoved: outage?.clientsReconnected ?? 0,
        reconnectMs: { p50: outage?.outageMs?.p50 ?? null, p99: outage?.outageMs?.p99 ?? null, max: outage?.outageMs?.max ?? null },
        lostUpdates: outage?.updatesLost ?? 0,
        stillDown: outage?.stillDown ?? 0,
        note: 'relay counters and CPU after the kill cover the live relays only',
      },
    } : {}),
  };
}

/**
 * What the relays' brokers went through: stalls waited out, time stalled (the longest relay's),
 * publications dropped past the buffer bound, and unconfirmed ones on connections given up.
 * @param {any[]} perRelay each relay's metrics
 */
export function brokerFigures(perRelay) {
  const nats = perRelay.map((r) => r?.cluster?.nats ?? {});
  const sum = (/** @type {string} */ k) => nats.reduce((t, n) => t + (n[k] ?? 0), 0);
  return {
    stalls: sum('stalls'),
    stalledMs: Math.max(0, ...nats.map((n) => n.stalledMs ?? 0)),
    disconnects: sum('disconnects'),
    droppedWhileSilent: sum('droppedWhileSilent'),
    unconfirmedAtDisconnect: sum('unconfirmedAtDisconnect'),
  };
}

/**
 * Waits until every relay counts `n` nodes (itself included).
 *
 * @param {ServerChild[]} servers
 * @param {number} n
 */
async function waitForMesh(servers, n) {
  const end = Date.now() + 15_000;
  for (;;) {
    const counts = await Promise.all(servers.map(async (s) => (await s.metrics()).relay?.cluster?.nodes ?? 0));
    if (counts.every((c) => c === n)) return;
    if (Date.now() > end) throw new Error(`relays did not find each other through NATS (nodes seen: ${counts.join(', ')} of ${n})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * NATS's CPU % (100 % = one core) since `since`.
 *
 * @param {number} pid
 * @param {{ ticks: number, at: number }} since
 * @returns {number | null}
 */
function natsCpuSince(pid, since) {
  const now = readProc(pid);
  const elapsedS = (performance.now() - since.at) / 1000;
  if (!now || elapsedS <= 0) return null;
  return ((now.ticks - since.ticks) / CLOCK_TICKS / elapsedS) * 100;
}

/** Counters that add up over relays. */
const SUMMED = [
  'clients', 'joined', 'framesIn', 'framesOut', 'messagesIn', 'messagesOut', 'bytesIn', 'bytesOut', 'updatesIn',
  'updatesForwarded', 'acksIn', 'acksForwarded', 'ackedAllSent', 'droppedUpdates', 'unexpectedAcks', 'ackTimeouts',
  'slowConsumers', 'slowConsumersRecovered', 'pending', 'queued', 'blocked',
];

/** Cluster counters that add up over relays. */
const CLUSTER_SUMMED = [
  'updatesPublished', 'updatesReceived', 'acksRouted', 'acksReceived', 'dropsRouted', 'unknownSender', 'idConflicts',
  'nodesLost', 'membersLost', 'reannounced', 'brokerMessagesOut', 'brokerEnvelopesOut',
];

/**
 * N relays' metrics as one relay's: counters summed, CPU summed (the
 * relays' cores together; 100 % = one core), RTS weighted by count, closes by
 * code summed, and the cluster counters summed under `cluster`.
 *
 * @param {any[]} relays relay.metrics() of each relay
 * @returns {any}
 */
export function mergeRelayMetrics(relays) {
  /** @type {Record<string, any>} */
  const out = { ...relays[0] };
  for (const key of SUMMED) out[key] = relays.reduce((s, r) => s + (typeof r?.[key] === 'number' ? r[key] : 0), 0);
  const rtsN = relays.reduce((s, r) => s + (r?.rts?.n ?? 0), 0);
  out.rts = rtsN > 0
    ? { mean: relays.reduce((s, r) => s + (r?.rts?.n ? r.rts.mean * r.rts.n : 0), 0) / rtsN, max: Math.max(...relays.map((r) => r?.rts?.max ?? 0)), n: rtsN }
    : { mean: null, max: null, n: 0 };
  const cpus = relays.map((r) => r?.cpuPctMean).filter((x) => typeof x === 'number');
  out.cpuPctMean = cpus.length ? cpus.reduce((a, b) => a + b, 0) : null;
  /** @type {Record<string, number>} */
  const closed = {};
  for (const r of relays) for (const [code, n] of Object.entries(r?.closedByCode ?? {})) closed[code] = (closed[code] ?? 0) + Number(n);
  out.closedByCode = closed;
  if (relays[0]?.cluster) {
    /** @type {Record<string, any>} */
    const cluster = { ...relays[0].cluster };
    for (const key of CLUSTER_SUMMED) cluster[key] = relays.reduce((s, r) => s + (r?.cluster?.[key] ?? 0), 0);
    cluster.crossNodeUpdates = cluster.updatesPublished;
    out.cluster = cluster;
  }
  return out;
}
