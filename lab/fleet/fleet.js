// A browser fleet over several machines (docs/fleet.md): what the bench
// (lab/fleet/fleet-bench.js) and every `carlab agent` (lab/fleet/agent.js) agree on, as
// pure functions: the NATS subjects, the shared token's check, how a point's
// peers are split over the agents and laid out in each agent's pages, the
// start skew, and the merge of every agent's peers into one run record.
// Clocks of different machines are never compared: each agent reports
// durations on its own clock, each page RT on the sender's and freshness on
// the receiver's; only the controller's clock places the agents' events.

import { createHash, timingSafeEqual } from 'node:crypto';
import { aggregateRun } from '../report/aggregate.js';
import { withLoadFlags } from '../report/saturation.js';
import { reportFields, sumReportTallies } from '../report/tallies.js';
import { slowdownFields } from '../bench/throttle.js';

/** Every subject of the fleet starts with this. */
export const FLEET_PREFIX = 'carlab.fleet';
/** Controllers ask here; every agent answers with its advert (no token needed: it opens nothing). */
export const DISCOVER_SUBJECT = `${FLEET_PREFIX}.discover`;

/** An agent's requests subject (one per agent). @param {string} name */
export const agentSubject = (name) => `${FLEET_PREFIX}.agent.${name}`;
/** An agent's heartbeats. @param {string} name */
export const heartbeatSubject = (name) => `${FLEET_PREFIX}.heartbeat.${name}`;
/** Every agent's heartbeats. */
export const HEARTBEATS = `${FLEET_PREFIX}.heartbeat.*`;

/** How often an agent says it is alive (ms). */
export const HEARTBEAT_MS = 1000;
/**
 * An agent not heard from for this long is lost (ms): five heartbeats, so a
 * loaded machine's late one is not a death.
 */
export const AGENT_SILENCE_MS = 5000;
/**
 * While it prepares a point (launches browsers, opens pages), an agent says
 * in every heartbeat how far it got; the bench fails the point, naming the
 * agent and where it stopped, once that has not moved for this long (ms).
 * Longer than any one step's own bound (a browser launch or a page load, 30 s
 * each), so a step that fails says why itself; how long the whole prepare
 * takes does not matter while it moves (two agents sharing a machine's two
 * cores open pages at half speed).
 */
export const PREPARE_STALL_MS = 45_000;
/** A prepare's bound however it moves (ms): a runaway is still ended. */
export const PREPARE_MAX_MS = 900_000;
/** How often the bench tells each busy agent it is still there (ms; the agent's lease). */
export const KEEPALIVE_MS = 2000;
/**
 * A busy agent that hears nothing from its controller for this long (ms)
 * stops its browsers: the controller died or the agent lost the broker.
 */
export const LEASE_MS = 10_000;

/**
 * An agent's name is one NATS subject token: letters, digits, '-' and '_'.
 * @param {string} name
 * @returns {string | null} the problem, or null
 */
export function agentNameProblem(name) {
  return /^[A-Za-z0-9_-]{1,64}$/.test(name) ? null : `agent name "${name}" is not 1..64 letters, digits, '-' or '_'`;
}

/**
 * Whether a presented token is the shared one, in constant time (both sides
 * hashed first, so neither the length nor a prefix leaks by timing). An empty
 * shared token matches nothing.
 * @param {unknown} presented
 * @param {string} expected
 */
export function tokenMatches(presented, expected) {
  if (typeof presented !== 'string' || typeof expected !== 'string' || expected.length === 0) return false;
  const a = createHash('sha256').update(presented, 'utf8').digest();
  const b = createHash('sha256').update(expected, 'utf8').digest();
  return timingSafeEqual(a, b);
}

/**
 * What an agent says of itself (discovery and heartbeats).
 * @typedef {object} AgentAdvert
 * @property {string} name
 * @property {string} host its host name
 * @property {number} pid
 * @property {number} cores
 * @property {number} memoryMb total memory
 * @property {number} freeMemoryMb
 * @property {string[]} browsers the browsers it can launch
 * @property {number} capacity its weight in the split (default: cores)
 * @property {string | null} busy the run it is busy with, or null
 * @property {boolean} [closing] busy closing that run's browsers: free again soon (a bench waits for it)
 * @property {{ runId: string, step: string } | null} [progress] while it prepares a run: the step it
 *   has reached ('launched 1/2 browsers', 'opened 3/10 pages'); the bench watches it move
 * @property {string} pagesOrigin the origin its peer pages come from (the server must allow it)
 * @property {string} version carlab's version
 */

/**
 * Peers per agent, proportional to capacity (largest remainder; ties to the
 * earlier agent).
 * @param {number} total
 * @param {number[]} capacities each > 0
 * @returns {number[]}
 */
export function capacityCounts(total, capacities) {
  if (capacities.length === 0) throw new Error('no agents to split over');
  const weights = capacities.map((c) => (Number.isFinite(c) && c > 0 ? c : 1));
  const sum = weights.reduce((a, b) => a + b, 0);
  const exact = weights.map((w) => (total * w) / sum);
  const counts = exact.map(Math.floor);
  let left = total - counts.reduce((a, b) => a + b, 0);
  const order = exact.map((x, i) => ({ i, frac: x - Math.floor(x) })).sort((a, b) => b.frac - a.frac || a.i - b.i);
  for (let k = 0; left > 0; k = (k + 1) % order.length, left--) counts[order[k].i]++;
  return counts;
}

/**
 * Which agent hosts each peer of the population: smooth weighted round robin
 * over the counts, so consecutive peers (a working group's members) go to
 * different agents and p2p crosses machines, as --net interleaves groups
 * over links; each agent gets exactly its count.
 * @param {number[]} counts peers per agent
 * @returns {number[]} agent index per peer index
 */
export function interleaveAssign(counts) {
  const n = counts.reduce((a, b) => a + b, 0);
  const current = counts.map(() => 0);
  /** @type {number[]} */
  const out = [];
  for (let i = 0; i < n; i++) {
    let best = -1;
    for (let a = 0; a < counts.length; a++) {
      current[a] += counts[a];
      if (counts[a] > 0 && (best === -1 || current[a] > current[best])) best = a;
    }
    current[best] -= n;
    out.push(best);
  }
  return out;
}

/**
 * A point's peers split over agents by capacity, interleaved.
 * @param {number} clients the population
 * @param {{ capacity: number }[]} agents
 * @returns {number[][]} per agent, the population indices of its peers (ascending)
 */
export function splitPeers(clients, agents) {
  const assign = interleaveAssign(capacityCounts(clients, agents.map((a) => a.capacity)));
  /** @type {number[][]} */
  const shares = agents.map(() => []);
  assign.forEach((a, i) => shares[a].push(i));
  return shares;
}

/**
 * One agent's pages: its peers in chunks of `peersPerPage`, pages over
 * browser processes as a local bench lays them out (benchLayout).
 * @param {number[]} indices the agent's peers
 * @param {{ peersPerPage: number, pagesPerBrowser: number, kinds?: number }} o kinds: browser kinds in the mix
 */
export function agentPageLayout(indices, { peersPerPage, pagesPerBrowser, kinds = 1 }) {
  const pageCount = Math.ceil(indices.length / peersPerPage);
  const browserCount = Math.max(1, Math.ceil(pageCount / pagesPerBrowser), Math.min(pageCount, kinds));
  const pages = Array.from({ length: pageCount }, (_, p) => {
    const mine = indices.slice(p * peersPerPage, (p + 1) * peersPerPage);
    return { peers: mine.length, offset: mine[0], stride: 1, indices: mine };
  });
  return { pageCount, browserCount, pages };
}

/**
 * Each agent's start skew (ms) on the controller's clock alone: the start
 * was sent at `sentAt` and answered at `repliedAt` (controller's
 * performance.now()); the agent took `tookMs` (its own clock, a duration)
 * from receiving it to its last page started. Its start instant is estimated
 * as sentAt + one way + tookMs, one way = (round trip - tookMs) / 2; the skew
 * is that instant minus the earliest agent's. `oneWayMs` bounds the error.
 * @param {{ sentAt: number, repliedAt: number, tookMs: number }[]} replies
 * @returns {{ startSkewMs: number, oneWayMs: number }[]}
 */
export function startSkews(replies) {
  const est = replies.map((r) => {
    const oneWayMs = Math.max(0, (r.repliedAt - r.sentAt - r.tookMs) / 2);
    return { at: r.sentAt + oneWayMs + r.tookMs, oneWayMs };
  });
  const first = Math.min(...est.map((e) => e.at));
  return est.map((e) => ({ startSkewMs: round1(e.at - first), oneWayMs: round1(e.oneWayMs) }));
}

/** @param {number} x */
const round1 = (x) => Math.round(x * 10) / 10;

/**
 * What an agent sends back at the end of a point.
 * @typedef {object} AgentResult
 * @property {any[]} clients every peer's CarClient.stats(), tagged with its browser
 * @property {number | null} cpuPct its browsers' CPU over the measured window (100 = one core)
 * @property {number | null} rssMaxBytes its browsers' peak RSS
 * @property {Record<string, { cpuPct: number | null, rssMaxBytes: number | null }>} [browserUsage] the same per browser kind
 * @property {number | null} agentCpuPct the agent process's own CPU over the window
 * @property {Record<string, string>} browserVersions
 * @property {Record<string, { webrtc: boolean, userAgent: string }>} browserCapabilities
 * @property {string[]} pageErrors
 * @property {import('../report/tallies.js').ReportTally | null} reports
 * @property {number} pages
 * @property {number} browserProcesses
 * @property {string[]} browsers the kinds it ran
 * @property {number} windowMs its measured window, on its own clock
 * @property {number} setupMs launch and page opening, on its own clock
 */

/**
 * One agent's part in a point, as the controller saw it.
 * @typedef {object} AgentPart
 * @property {string} name
 * @property {string} host
 * @property {number} peers peers it was given
 * @property {AgentResult | null} result null when it was lost
 * @property {number | null} startSkewMs
 * @property {{ atS: number, phase: string, reason: string } | null} lost when and why it was lost
 *   (seconds since the point's start, controller's clock)
 */

/**
 * The `fleet` block of a run: one row per agent, and the lost peers by agent.
 * @param {AgentPart[]} parts
 */
export function fleetBlock(parts) {
  const lost = parts.filter((p) => p.lost).map((p) => ({ agent: p.name, host: p.host, peers: p.peers, ...p.lost }));
  const skews = parts.map((p) => p.startSkewMs).filter((x) => typeof x === 'number');
  return {
    agents: parts.map((p) => ({
      name: p.name,
      host: p.host,
      peers: p.peers,
      browsers: p.result?.browsers ?? [],
      browserProcesses: p.result?.browserProcesses ?? null,
      pages: p.result?.pages ?? null,
      cpuPct: p.result?.cpuPct == null ? null : round1(p.result.cpuPct),
      rssMaxMb: p.result?.rssMaxBytes == null ? null : Math.round(p.result.rssMaxBytes / 2 ** 20),
      agentCpuPct: p.result?.agentCpuPct ?? null,
      setupMs: p.result?.setupMs ?? null,
      startSkewMs: p.startSkewMs,
      lost: Boolean(p.lost),
    })),
    startSkewMs: skews.length ? Math.max(...skews) : null,
    lostPeers: lost.reduce((s, l) => s + l.peers, 0),
    lost,
  };
}

/**
 * Every agent's peers merged into one run record, the same fields as a
 * one-machine bench's plus `fleet`. Peers of a lost agent are lost peers,
 * not network loss: the streams into them are left out of loss (as the
 * streams of a receiver outside a per-browser split are).
 * @param {object} o
 * @param {import('../shared/flags.js').SweepPoint} o.point
 * @param {AgentPart[]} o.parts
 * @param {any} o.serverMetrics the server child's metrics, or null (--url)
 * @param {number} o.windowMs the measured window on the controller's clock
 * @param {string[]} o.browsers the fleet mix
 * @param {number} o.peersPerPage
 * @param {boolean} o.stoppedEarly
 */
export function mergeFleetRun({ point, parts, serverMetrics, windowMs, browsers, peersPerPage, stoppedEarly }) {
  const done = parts.filter((p) => p.result);
  const clients = done.flatMap((p) => /** @type {AgentResult} */ (p.result).clients.map((c) => ({ ...c, agent: p.name })));
  const relay = serverMetrics?.relay ?? null;
  const cpus = done.map((p) => p.result?.cpuPct).filter((x) => typeof x === 'number');
  const rss = done.map((p) => p.result?.rssMaxBytes).filter((x) => typeof x === 'number');
  /** @type {Record<string, string>} */
  const browserVersions = {};
  /** @type {Record<string, { webrtc: boolean, userAgent: string }>} */
  const browserCapabilities = {};
  for (const p of done) {
    Object.assign(browserVersions, p.result?.browserVersions);
    Object.assign(browserCapabilities, p.result?.browserCapabilities);
  }
  // per browser kind over the agents: CPU summed, peaks summed (as browserRssMaxBytes)
  /** @type {Record<string, { cpuPct: number | null, rssMaxBytes: number | null }>} */
  const browserUsage = {};
  for (const p of done) {
    for (const [name, u] of Object.entries(p.result?.browserUsage ?? {})) {
      const sum = browserUsage[name] ?? { cpuPct: null, rssMaxBytes: null };
      if (typeof u.cpuPct === 'number') sum.cpuPct = (sum.cpuPct ?? 0) + u.cpuPct;
      if (typeof u.rssMaxBytes === 'number') sum.rssMaxBytes = (sum.rssMaxBytes ?? 0) + u.rssMaxBytes;
      browserUsage[name] = sum;
    }
  }
  const anyLost = parts.some((p) => p.lost);
  const fleet = fleetBlock(parts);
  const record = aggregateRun({
    point,
    clients,
    relay: relay && point.transport.startsWith('relay') ? relay : null,
    cpu: { server: relay?.cpuPctMean ?? null, clients: cpus.length ? cpus.reduce((a, b) => a + /** @type {number} */ (b), 0) : null },
    // streams into a lost agent's peers are not network loss
    ...(anyLost ? { only: () => true } : {}),
    extra: {
      browser: browsers.join('+'),
      browserVersions,
      peersPerPage,
      pages: done.reduce((s, p) => s + (p.result?.pages ?? 0), 0),
      browserProcesses: done.reduce((s, p) => s + (p.result?.browserProcesses ?? 0), 0),
      // the agents' peaks summed: an upper bound of the fleet's (they need not peak together)
      browserRssMaxBytes: rss.length ? rss.reduce((a, b) => a + /** @type {number} */ (b), 0) : null,
      browserUsage,
      browserCapabilities,
      serverRssBytes: serverMetrics?.rssBytes ?? null,
      durationS: Math.round(windowMs / 100) / 10,
      ...reportFields(point.reportsIntervalS ?? 0, sumReportTallies(done.map((p) => p.result?.reports ?? null))),
      pageErrors: done.flatMap((p) => (p.result?.pageErrors ?? []).map((e) => `${p.name}: ${e}`)).slice(0, 20),
      stoppedEarly,
      ...slowdownFields(point, browsers),
      lostPeers: fleet.lostPeers,
      fleet,
    },
  });
  // a mixed fleet's per-browser figures carry each browser's CPU and memory too (as lab/bench/bench.js)
  const byBrowser = /** @type {Record<string, any> | undefined} */ (/** @type {any} */ (record).byBrowser);
  for (const [name, figures] of Object.entries(byBrowser ?? {})) Object.assign(figures, browserUsage[name] ?? {});
  // the agents' cores are not this machine's: never saturated here; unsettled is judged as anywhere
  return withLoadFlags(record, { cores: 0 });
}
