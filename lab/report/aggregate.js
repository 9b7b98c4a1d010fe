// Turns what one sweep point measured (every client's stats, the relay's
// window metrics, CPU) into one run record of results.json (docs/architecture.md: "Results
// files"). Pure functions: unit tested without running anything.

import { aggregateFreshness, aggregateStreams, summarize } from '../../core/metrics.js';
import { RtHistogram } from '../../core/report.js';

/**
 * Summary of a list of numbers, or null when there are none.
 * @param {number[]} values
 */
function summaryOrNull(values) {
  const s = summarize(values);
  return s.n ? s : null;
}

/**
 * Setup delays over every client (p2p transports): signaling open and
 * channel open per connection, plus the phases, and candidate types seen.
 * @param {any[]} clients
 */
export function aggregateSetup(clients) {
  const signaling = [];
  /** @type {Record<string, number[]>} */
  const phases = { offerAnswerMs: [], iceConnectedMs: [], dtlsConnectedMs: [], channelOpenMs: [] };
  /** @type {Record<string, number>} */
  const candidateTypes = {};
  /** @type {Record<'sent' | 'received' | 'packetsSent' | 'packetsReceived', number[]>} */
  const bytes = { sent: [], received: [], packetsSent: [], packetsReceived: [] };
  for (const c of clients) {
    if (!c.setup) continue;
    if (typeof c.setup.signalingMs === 'number') signaling.push(c.setup.signalingMs);
    for (const p of c.setup.peers ?? []) {
      for (const k of Object.keys(phases)) if (typeof p[k] === 'number') phases[k].push(p[k]);
      if (p.candidateType) candidateTypes[p.candidateType] = (candidateTypes[p.candidateType] ?? 0) + 1;
      if (typeof p.setupBytesSent === 'number') bytes.sent.push(p.setupBytesSent);
      if (typeof p.setupBytesReceived === 'number') bytes.received.push(p.setupBytesReceived);
      if (typeof p.setupPacketsSent === 'number') bytes.packetsSent.push(p.setupPacketsSent);
      if (typeof p.setupPacketsReceived === 'number') bytes.packetsReceived.push(p.setupPacketsReceived);
    }
  }
  if (signaling.length === 0 && phases.channelOpenMs.length === 0) return null;
  return {
    paths: aggregatePaths(clients),
    signaling: summaryOrNull(signaling),
    peer: summaryOrNull(phases.channelOpenMs),
    phases: Object.fromEntries(Object.entries(phases).map(([k, v]) => [k, summaryOrNull(v)])),
    candidateTypes,
    setupBytes: {
      sent: summaryOrNull(bytes.sent), received: summaryOrNull(bytes.received),
      packetsSent: summaryOrNull(bytes.packetsSent), packetsReceived: summaryOrNull(bytes.packetsReceived),
    },
  };
}

/**
 * The p2p links by path (docs/turn.md): how many ended direct, via TURN or on
 * the relay fallback (counted once, at the dialling end; from setupInfo().paths),
 * and the setup time of each kind (every record: connect -> channel open for
 * direct and turn, link made -> fallback for relay).
 * @param {any[]} clients
 */
export function aggregatePaths(clients) {
  /** @type {Record<string, { links: number, setup: number[] }>} */
  const kinds = { direct: { links: 0, setup: [] }, turn: { links: 0, setup: [] }, relay: { links: 0, setup: [] } };
  let any = false;
  for (const c of clients) {
    /** @type {Map<number, string>} */
    const last = new Map();
    for (const r of c.setup?.paths ?? []) {
      any = true;
      if (!kinds[r.path]) continue;
      if (typeof r.setupMs === 'number') kinds[r.path].setup.push(r.setupMs);
      if (r.initiator) last.set(r.id, r.path);
    }
    for (const path of last.values()) if (kinds[path]) kinds[path].links++;
  }
  if (!any) return null;
  return Object.fromEntries(Object.entries(kinds).map(([k, v]) => [k, { links: v.links, setupMs: summaryOrNull(v.setup) }]));
}

/**
 * The channel parameters every client reported, if they all agree; else
 * `{ mixed: [...] }`. Null for transports without a channel.
 * @param {any[]} clients
 */
export function aggregateChannel(clients) {
  const seen = new Map();
  for (const c of clients) {
    const ch = c.channel;
    if (!ch || ch.kind !== 'rtcdatachannel' || !ch.channels) continue;
    const key = `${ch.ordered}/${ch.maxRetransmits}/${ch.maxPacketLifeTime}/${ch.uniform}`;
    if (!seen.has(key)) seen.set(key, { ordered: ch.ordered, maxRetransmits: ch.maxRetransmits, maxPacketLifeTime: ch.maxPacketLifeTime, uniform: ch.uniform, clients: 0 });
    seen.get(key).clients++;
  }
  if (seen.size === 0) return null;
  if (seen.size === 1) return [...seen.values()][0];
  return { mixed: [...seen.values()] };
}

/**
 * RT over clients (docs/architecture.md "RT"): from their `rt` arrays (exact,
 * metrics.summarize), or, when any client carries an `rtHist` (a client
 * report's RtHistogramJson, core/report.js) instead, from the merged
 * histograms: count, mean, Dev and max exact, percentiles to the bucket
 * resolution (RtHistogram.summary). Array clients among histogram clients
 * are added value by value.
 * @param {{ rt?: number[], rtHist?: import('../../core/report.js').RtHistogramJson | null }[]} clients
 * @returns {import('../../core/metrics.js').Summary}
 */
export function rtSummaryOf(clients) {
  if (!clients.some((c) => c.rtHist)) return summarize(clients.flatMap((c) => c.rt ?? []));
  const h = RtHistogram.merged(clients.map((c) => c.rtHist));
  for (const c of clients) if (!c.rtHist) for (const ms of c.rt ?? []) h.add(ms);
  return h.summary();
}

/**
 * One run record.
 * @param {object} input
 * @param {Pick<import('../shared/flags.js').SweepPoint, 'transport' | 'clients' | 'group' | 'cycleMs'> & { cycleMode?: string }} input.point
 *   the sweep point (only these fields are read)
 * @param {any[]} input.clients every client's CarClient.stats(), or records rebuilt from client
 *   reports that carry `rtHist` (an RtHistogramJson) instead of `rt` (see {@link rtSummaryOf})
 * @param {any} input.relay relay metrics over the measured window, or null
 * @param {{ server: number | null, clients: number | null, serverSplit?: { userUs: number, systemUs: number } | null, serverWindowS?: number | null }} input.cpu
 *   mean CPU % (100 = one core); `serverSplit`: the server process's user and system CPU over its
 *   window, `serverWindowS` that window's length when the server measured it (else the run's)
 * @param {Record<string, any>} [input.extra] fields to add (browser/sim, durationS, ...)
 * @param {(client: any) => boolean} [input.only] the clients the run is about, when it is a part
 *   of a population (a recording's browser family): RT, updates, setup, channel and freshness
 *   over them; loss, duplicates, reorders and jitter over the streams into them from any sender
 *   of `clients` (as {@link byBrowserOf} does). Default: every client.
 */
export function aggregateRun({ point, clients: all, relay, cpu, extra = {}, only }) {
  const clients = only ? all.filter(only) : all;
  const rt = rtSummaryOf(clients);
  const rtWarmup = summarize(clients.flatMap((c) => c.rtWarmup ?? []));
  const streams = aggregateStreams(all, only);
  const connected = clients.filter((c) => c.id > 0).length;
  const rts = relay && relay.rts && relay.rts.n > 0 ? { mean: relay.rts.mean, max: relay.rts.max, n: relay.rts.n } : null;
  // Server CPU per update delivered to a neighbour, over the measured window:
  // the unit of useful work, the same for every transport whatever its ACK scheme.
  // the server's own span when it says (an overloaded one answers late: its counters cover that span)
  const windowS = typeof cpu.serverWindowS === 'number' ? cpu.serverWindowS : typeof extra.durationS === 'number' ? extra.durationS : null;
  const serverCpuUsPerUpdate = relay && typeof cpu.server === 'number' && windowS && relay.updatesForwarded > 0
    ? (cpu.server / 100) * windowS * 1e6 / relay.updatesForwarded
    : null;
  const { serverSplit = null, serverWindowS = null, ...cpuPct } = cpu;
  const serverCost = serverCostOf(relay, serverCpuUsPerUpdate, serverSplit);
  return {
    transport: point.transport,
    clients: point.clients,
    group: point.group,
    cycleMs: point.cycleMs,
    cycleMode: cycleModeOf(point, clients),
    ...extra,
    connected,
    rt,
    rtWarmup,
    rts,
    cpu: cpuPct,
    serverCpuUsPerUpdate,
    serverCost,
    lossPct: streams.lossPct,
    ackLossPct: streams.ackLossPct,
    dups: streams.duplicates,
    reorders: streams.reorders,
    jitterMs: streams.jitterMs,
    freshness: freshnessOf(clients),
    updates: {
      sent: clients.reduce((s, c) => s + (c.updatesSent ?? 0), 0),
      completed: clients.reduce((s, c) => s + (c.completed ?? 0), 0),
      ackTimeouts: clients.reduce((s, c) => s + (c.ackTimeouts ?? 0), 0),
      skippedCycles: clients.reduce((s, c) => s + (c.skippedCycles ?? 0), 0),
      lateAcks: clients.reduce((s, c) => s + (c.lateAcks ?? 0), 0),
      expected: streams.expected,
      received: streams.received,
      /** Replaced at the relay by a newer pose of the same sender that did arrive (mode relay): not lost. */
      superseded: streams.superseded,
      lost: streams.lost,
      /** Sent within the delivery horizon before the count: counted on neither end (docs/architecture.md "Loss"). */
      inFlight: streams.inFlight,
      /** Sender->receiver streams counted. */
      streams: streams.streams,
      /** Streams of records from before seq sets, counted the old way (older study recordings). */
      legacyStreams: streams.legacyStreams,
      /** Sent to a member that left before answering: not expected there. */
      takenBack: clients.reduce((s, c) => s + (c.takenBack ?? 0), 0),
    },
    relay: relay
      ? {
        updatesForwarded: relay.updatesForwarded ?? null,
        droppedUpdates: relay.droppedUpdates, ackTimeouts: relay.ackTimeouts, framesIn: relay.framesIn ?? null, framesOut: relay.framesOut,
        messagesOut: relay.messagesOut, bytesIn: relay.bytesIn, bytesOut: relay.bytesOut, closedByCode: relay.closedByCode,
        slowConsumers: relay.slowConsumers ?? null,
        // Ended with nothing heard for the liveness timeout, and taken over by a resume (docs/protocol.md §8.4, §8.10).
        silentEnded: relay.silentEnded ?? null,
        resumed: relay.resumed ?? null,
        replayed: relay.replayed ?? null,
        replaysDropped: relay.replaysDropped ?? null,
      }
      : null,
    setupMs: aggregateSetup(clients),
    channel: aggregateChannel(clients),
    ...byBrowserOf(clients),
    ...outageOf(clients, streams),
  };
}

/**
 * What one delivered update (one UPDATE reaching one neighbour) cost the
 * server over the window: CPU µs in user and system time (the window's split of
 * serverCpuUsPerUpdate: the two add up to it) and frames read and written.
 * Null without a relay's counters.
 * @param {any} relay the window's relay (or baseline) metrics, or null
 * @param {number | null} usPerUpdate serverCpuUsPerUpdate
 * @param {{ userUs: number, systemUs: number } | null} split the server process's CPU over the window
 * @returns {import('./types.js').ServerCost | null}
 */
export function serverCostOf(relay, usPerUpdate, split) {
  const delivered = relay?.updatesForwarded;
  if (typeof delivered !== 'number' || delivered <= 0) return null;
  const total = split ? split.userUs + split.systemUs : 0;
  const userShare = total > 0 ? /** @type {{ userUs: number }} */ (split).userUs / total : null;
  const perUpdate = (/** @type {unknown} */ n) => (typeof n === 'number' ? n / delivered : null);
  return {
    usPerUpdate,
    userUsPerUpdate: usPerUpdate !== null && userShare !== null ? usPerUpdate * userShare : null,
    systemUsPerUpdate: usPerUpdate !== null && userShare !== null ? usPerUpdate * (1 - userShare) : null,
    framesInPerUpdate: perUpdate(relay.framesIn),
    framesOutPerUpdate: perUpdate(relay.framesOut),
  };
}

/**
 * The run's cycle mode: the sweep point's, else what the clients report
 * (they all run the point's), else null (records from before the modes).
 * @param {{ cycleMode?: string }} point
 * @param {any[]} clients
 * @returns {string | null}
 */
export function cycleModeOf(point, clients) {
  if (typeof point.cycleMode === 'string') return point.cycleMode;
  const modes = [...new Set(clients.map((c) => c.cycleMode).filter((m) => typeof m === 'string'))];
  return modes.length === 1 ? modes[0] : modes.length ? modes.join('+') : null;
}

/**
 * The run's `freshness` (docs/architecture.md "Freshness"): over every
 * (receiver, sender) stream of the run, fresh updates applied per stream per
 * second, the gaps between them (freeze p50, p99, max, ms) and the share of
 * stream time frozen (gaps > 1 s).
 * @param {any[]} clients
 */
export function freshnessOf(clients) {
  const f = aggregateFreshness(clients);
  return { updatesPerStreamPerS: f.updatesPerStreamPerS, freezeMs: f.freezeMs, frozenPct: f.frozenPct, streams: f.streams, gaps: f.gaps };
}

/**
 * The `byBrowser` field of a mixed fleet (clients of more than one
 * `browser`): per browser, RT of the updates its peers sent (sender's clock)
 * and loss, duplicates, reorders and jitter of the streams its peers
 * received, from any sender. Nothing for a single-browser or Node run.
 * @param {any[]} clients client records, each with a `browser` name in a bench
 */
export function byBrowserOf(clients) {
  const names = [...new Set(clients.map((c) => c.browser).filter(Boolean))].sort();
  if (names.length < 2) return {};
  return {
    byBrowser: Object.fromEntries(names.map((name) => {
      const own = clients.filter((c) => c.browser === name);
      const streams = aggregateStreams(clients, (receiver) => /** @type {any} */ (receiver).browser === name);
      return [name, {
        clients: own.length,
        rt: rtSummaryOf(own),
        lossPct: streams.lossPct,
        dups: streams.duplicates,
        reorders: streams.reorders,
        jitterMs: streams.jitterMs,
      }];
    })),
  };
}

/**
 * The `outage` fields of a run in which clients lost the relay and
 * reconnected (a relay restart): how many, how long each was without it
 * (detection to rejoin, on its own clock) and what the run lost meanwhile.
 * Nothing when nobody reconnected.
 * @param {{ reconnects?: number, reconnecting?: boolean, outages?: { at: number, ms: number, code?: number }[], abandoned?: number, pausedCycles?: number }[]} clients
 * @param {ReturnType<typeof aggregateStreams>} streams
 */
export function outageOf(clients, streams) {
  const reconnected = clients.filter((c) => (c.reconnects ?? 0) > 0);
  const down = clients.filter((c) => c.reconnecting);
  if (reconnected.length === 0 && down.length === 0) return {};
  const outages = clients.flatMap((c) => (c.outages ?? []).map((x) => x.ms));
  return {
    outage: {
      clientsReconnected: reconnected.length,
      reconnects: clients.reduce((s, c) => s + (c.reconnects ?? 0), 0),
      /** Clients still without the relay when the run ended. */
      stillDown: down.length,
      outageMs: summarize(outages),
      /** Updates some neighbour never received: in flight when the relay died, or sent into the gap. */
      updatesLost: streams.lost,
      /** Outstanding updates given up at the disconnect. */
      abandoned: clients.reduce((s, c) => s + (c.abandoned ?? 0), 0),
      /** Action cycles that passed while a client was disconnected (nothing sent). */
      pausedCycles: clients.reduce((s, c) => s + (c.pausedCycles ?? 0), 0),
    },
  };
}

/**
 * Splits a population into working groups of `size`; the last may be smaller.
 * @param {number} clients
 * @param {number} size
 * @returns {number[]} group index per client
 */
export function assignGroups(clients, size) {
  return Array.from({ length: clients }, (_, i) => Math.floor(i / size));
}
