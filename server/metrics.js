/**
 * /metrics in the Prometheus text format (prom-client): the process's default
 * metrics and carlab's own, read from the relay's and signaling's JSON
 * snapshots at scrape time so the hot path only bumps the numbers it already
 * bumps.
 *
 * The relay counts in measurement windows the lab resets (resetWindow);
 * Prometheus counters must never go down. The relay's `beforeReset` hook
 * folds each window into a running base, so a `_total` here is every event
 * since the process started, however often the lab resets.
 *
 * @module server/metrics
 */

import client from 'prom-client';

import { RTS_BUCKETS_MS, transportGauges } from '../relay/index.js';

/** Where the relay's RTS samples fall, in seconds (relay/stats.js tallies them in ms). */
export const RTS_BUCKETS_S = Object.freeze(RTS_BUCKETS_MS.map((ms) => ms / 1000));

/** The relay's window counters exported as `carlab_relay_<name>_total`, by their snapshot field. */
export const RELAY_COUNTERS = Object.freeze({
  updatesIn: ['updates_received', 'UPDATEs received from clients'],
  updatesForwarded: ['updates_forwarded', 'UPDATEs forwarded to group members'],
  acksIn: ['acks_received', 'ACKs received from clients'],
  acksForwarded: ['acks_forwarded', 'ACKs forwarded to senders (relay-faithful)'],
  ackedAllSent: ['acked_all_sent', 'ACKED_ALL aggregates sent (relay)'],
  droppedUpdates: ['updates_dropped', 'pose updates replaced by a newer one in a slow consumer\'s queue'],
  ackTimeouts: ['ack_timeouts', '(update, destination) pairs never ACKed within the ACK timeout'],
  unexpectedAcks: ['acks_unexpected', 'ACKs for unknown or already-acknowledged updates'],
  slowConsumers: ['slow_consumers', 'members found lagging and no longer waited for'],
  silentEnded: ['silent_sessions_ended', 'sessions ended because nothing, not even a pong, came for the liveness timeout'],
  resumed: ['sessions_resumed', 'sessions a member took over on a new connection with its resume secret'],
  replayed: ['updates_replayed', 'update copies written again to a member that resumed its session (its old connection swallowed them)'],
  replaysDropped: ['replays_dropped', 'updates a resumed member sent again that the relay already had'],
  framesIn: ['frames_received', 'WebSocket and data-channel frames received'],
  framesOut: ['frames_sent', 'WebSocket and data-channel frames sent'],
  messagesIn: ['messages_received', 'protocol messages received (BATCH contents counted one by one)'],
  messagesOut: ['messages_sent', 'protocol messages sent'],
  bytesIn: ['received_bytes', 'bytes received in frames'],
  bytesOut: ['sent_bytes', 'bytes sent in frames'],
});

/** Transports every per-transport gauge reports, 0 when none is connected (a series that vanishes reads as missing data). */
const TRANSPORTS = ['none', 'relay', 'relay-faithful', 'relay-udp', 'p2p'];

/**
 * What the metrics read; the server's relay and signaling satisfy it.
 *
 * @typedef {object} MetricSources
 * @property {{ metrics(): import('../relay/index.js').RelayMetrics, groups: import('../relay/groups.js').GroupRegistry,
 *   wss: { clients: { size: number } }, readiness?(): { ready: boolean, reason: string },
 *   stats: { rtsTally: import('../relay/index.js').RtsTally } }} relay
 * @property {{ metrics(): import('../signaling/index.js').SignalingMetrics }} signaling
 */

/**
 * @typedef {object} CarlabMetrics
 * @property {client.Registry} registry every family, default ones included
 * @property {() => Promise<string>} text the exposition, for a scrape
 * @property {string} contentType the exposition's Content-Type
 * @property {import('../relay/index.js').RelayObserver} observer pass to createRelay
 * @property {(sources: MetricSources) => void} attach read these from now on (the relay needs the observer first)
 * @property {(result: string) => void} countReport one client report's outcome: accepted, or why it was refused
 */

/**
 * Creates the registry: default process metrics plus carlab's families.
 * Nothing is read until `attach` names the relay and signaling.
 *
 * @returns {CarlabMetrics}
 */
export function createMetrics() {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  /** @type {MetricSources | null} */
  let sources = null;
  const base = new RunningTotals();
  /** One snapshot per scrape: every collect() below reads the same numbers. */
  let scrape = /** @type {{ relay: import('../relay/index.js').RelayMetrics, signaling: import('../signaling/index.js').SignalingMetrics } | null} */ (null);
  const current = () => {
    if (!sources) return null;
    scrape ??= { relay: sources.relay.metrics(), signaling: sources.signaling.metrics() };
    return scrape;
  };

  const rts = new TallyHistogram({
    name: 'carlab_relay_rts_seconds',
    help: 'RTS: time from the relay forwarding an update to that destination\'s ACK (relay transports)',
    buckets: RTS_BUCKETS_S,
  }, () => sources?.relay.stats.rtsTally ?? null);
  registry.registerMetric(/** @type {client.Metric} */ (/** @type {unknown} */ (rts)));

  const reports = new client.Counter({
    name: 'carlab_reports_total',
    help: 'Client study reports (POST /reports) by outcome: accepted, or the reason they were refused (docs/study.md)',
    labelNames: ['result'],
    registers: [registry],
  });

  registerRelayFamilies(registry, current, base, () => sources);
  registerSignalingFamilies(registry, current);
  registerClusterFamilies(registry, current, base, () => sources);

  return {
    registry,
    contentType: registry.contentType,
    async text() {
      scrape = null;
      try {
        return await registry.metrics();
      } finally {
        scrape = null;
      }
    },
    observer: {
      beforeReset: () => {
        if (!sources) return;
        const relay = sources.relay.metrics();
        base.fold(relayWindowNumbers(relay));
      },
    },
    attach(s) {
      sources = s;
    },
    countReport: (result) => reports.inc({ result }),
  };
}

/**
 * A histogram whose samples the relay tallied itself (relay/stats.js
 * RtsTally, in ms): prom-client's observe per ACK cost more than the relay's
 * handling of the ACK. At scrape time it reads the tally and reports it as a
 * prom-client Histogram reports its buckets, in seconds. The registry takes
 * any metric with a name and get() (prom-client's collectors are such objects).
 */
export class TallyHistogram {
  /**
   * @param {{ name: string, help: string, buckets: readonly number[] }} config the tally's bounds, in seconds
   * @param {() => import('../relay/index.js').RtsTally | null} read the tally, once there is one
   */
  constructor(config, read) {
    this.name = config.name;
    this.help = config.help;
    this.type = 'histogram';
    this.aggregator = 'sum';
    this.boundsS = config.buckets;
    this.read = read;
  }

  async get() {
    return { name: this.name, help: this.help, type: this.type, values: this.values(), aggregator: this.aggregator };
  }

  /** @returns {{ labels: Record<string, string | number>, value: number, metricName: string }[]} */
  values() {
    const tally = this.read();
    const bucket = `${this.name}_bucket`;
    const cumulative = tally?.cumulative() ?? this.boundsS.map(() => 0);
    const count = tally?.count ?? 0;
    return [
      ...this.boundsS.map((le, i) => ({ labels: { le }, value: cumulative[i], metricName: bucket })),
      { labels: { le: '+Inf' }, value: count, metricName: bucket },
      { labels: {}, value: (tally?.sumMs ?? 0) / 1000, metricName: `${this.name}_sum` },
      { labels: {}, value: count, metricName: `${this.name}_count` },
    ];
  }

  reset() {}
}

/**
 * Counts that survive window resets: the sum of the windows already closed.
 */
export class RunningTotals {
  /** @type {Map<string, number>} */
  totals = new Map();

  /**
   * Adds a closing window's numbers.
   *
   * @param {Map<string, number>} window
   */
  fold(window) {
    for (const [key, value] of window) this.totals.set(key, (this.totals.get(key) ?? 0) + value);
  }

  /**
   * The running total of `key` with the open window's value added.
   *
   * @param {string} key
   * @param {number} open
   * @returns {number}
   */
  with(key, open) {
    return (this.totals.get(key) ?? 0) + open;
  }

  /**
   * Keys under `prefix` seen in closed windows (a close code that happened once stays a series).
   *
   * @param {string} prefix
   * @returns {string[]} the rest of each key
   */
  keysUnder(prefix) {
    return [...this.totals.keys()].filter((k) => k.startsWith(prefix)).map((k) => k.slice(prefix.length));
  }
}

/**
 * The windowed numbers of a relay snapshot, by a flat key: the counters,
 * closes by code, and the cluster's counters.
 *
 * @param {import('../relay/index.js').RelayMetrics} relay
 * @returns {Map<string, number>}
 */
export function relayWindowNumbers(relay) {
  /** @type {Map<string, number>} */
  const out = new Map();
  const fields = /** @type {Record<string, unknown>} */ (/** @type {unknown} */ (relay));
  for (const field of Object.keys(RELAY_COUNTERS)) out.set(field, Number(fields[field] ?? 0));
  out.set('rtsCount', relay.rts.n);
  for (const [code, n] of Object.entries(relay.closedByCode)) out.set(`close:${code}`, n);
  if (relay.cluster) {
    for (const [name, value] of Object.entries(relay.cluster)) {
      if (typeof value === 'number' && CLUSTER_COUNTER_FIELDS.has(name)) out.set(`cluster:${name}`, value);
    }
  }
  return out;
}

/** The cluster snapshot's window counters (ClusterLink.zeroStats and the batcher's). */
const CLUSTER_COUNTER_FIELDS = new Set(['updatesPublished', 'updatesReceived', 'acksRouted', 'acksReceived', 'dropsRouted',
  'unknownSender', 'idConflicts', 'nodesLost', 'membersLost', 'claimsTakenOver', 'brokerMessagesOut', 'brokerEnvelopesOut']);

/**
 * @typedef {() => { relay: import('../relay/index.js').RelayMetrics, signaling: import('../signaling/index.js').SignalingMetrics } | null} Current
 */

/**
 * A counter whose value is set at scrape time from a running total.
 *
 * @param {client.Registry} registry
 * @param {string} name
 * @param {string} help
 * @param {string[]} labelNames
 * @param {() => Array<[Record<string, string>, number]> | null} read labels and totals, or null before attach
 */
function totalCounter(registry, name, help, labelNames, read) {
  return new client.Counter({
    name, help, labelNames, registers: [registry],
    collect() {
      const rows = read();
      if (!rows) return;
      this.reset();
      for (const [labels, value] of rows) this.inc(labels, Math.max(0, value));
    },
  });
}

/**
 * A gauge whose value is set at scrape time.
 *
 * @param {client.Registry} registry
 * @param {string} name
 * @param {string} help
 * @param {string[]} labelNames
 * @param {() => Array<[Record<string, string>, number]> | null} read
 */
function readGauge(registry, name, help, labelNames, read) {
  return new client.Gauge({
    name, help, labelNames, registers: [registry],
    collect() {
      const rows = read();
      if (!rows) return;
      this.reset();
      for (const [labels, value] of rows) this.set(labels, value);
    },
  });
}

/**
 * @param {client.Registry} registry
 * @param {Current} current
 * @param {RunningTotals} base
 * @param {() => MetricSources | null} sources
 */
function registerRelayFamilies(registry, current, base, sources) {
  /** @param {keyof typeof RELAY_COUNTERS} field */
  const window = (field) => {
    const c = current();
    if (!c) return null;
    const fields = /** @type {Record<string, unknown>} */ (/** @type {unknown} */ (c.relay));
    return /** @type {Array<[Record<string, string>, number]>} */ ([[{}, base.with(field, Number(fields[field] ?? 0))]]);
  };
  for (const [field, [name, help]] of Object.entries(RELAY_COUNTERS)) {
    totalCounter(registry, `carlab_relay_${name}_total`, help, [], () => window(/** @type {keyof typeof RELAY_COUNTERS} */ (field)));
  }
  totalCounter(registry, 'carlab_relay_closes_total', 'sockets the relay closed for a protocol or limit violation, by close code',
    ['code'], () => {
      const c = current();
      if (!c) return null;
      const codes = new Set([...base.keysUnder('close:'), ...Object.keys(c.relay.closedByCode)]);
      return [...codes].map((code) => [{ code }, base.with(`close:${code}`, c.relay.closedByCode[code] ?? 0)]);
    });

  /** @param {'connections' | 'groups' | 'queuedBytes'} field */
  const byTransport = (field) => {
    const s = sources();
    if (!s) return null;
    const gauges = transportGauges(s.relay.groups, s.relay.wss.clients.size);
    return TRANSPORTS.map((transport) => /** @type {[Record<string, string>, number]} */ ([{ transport }, gauges[transport]?.[field] ?? 0]));
  };
  readGauge(registry, 'carlab_relay_connections', 'open relay connections on this node, by transport (`none`: not joined yet)',
    ['transport'], () => byTransport('connections'));
  readGauge(registry, 'carlab_relay_groups', 'groups with a member on this node using the transport', ['transport'], () => byTransport('groups'));
  readGauge(registry, 'carlab_relay_queued_bytes', 'bytes waiting in the relay\'s per-client send queues, by transport',
    ['transport'], () => byTransport('queuedBytes'));
  readGauge(registry, 'carlab_relay_pending_acks', 'forwarded updates still waiting for ACKs', [], () => {
    const c = current();
    return c ? [[{}, Number(/** @type {Record<string, unknown>} */ (/** @type {unknown} */ (c.relay)).pending ?? 0)]] : null;
  });
  readGauge(registry, 'carlab_relay_udp_channels', 'open relay-udp data channels', [], () => {
    const c = current();
    return c ? [[{}, c.relay.udpChannels]] : null;
  });
}

/**
 * @param {client.Registry} registry
 * @param {Current} current
 */
function registerSignalingFamilies(registry, current) {
  /** @param {(m: import('../signaling/index.js').SignalingMetrics) => number} pick */
  const one = (pick) => () => {
    const c = current();
    return c ? /** @type {Array<[Record<string, string>, number]>} */ ([[{}, pick(c.signaling)]]) : null;
  };
  // Signaling's counters are never reset, so they are totals as they stand.
  readGauge(registry, 'carlab_signaling_peers', 'PeerJS peers connected to this node', [], one((m) => m.peersConnected));
  readGauge(registry, 'carlab_signaling_sockets', 'PeerServer WebSockets open on this node', [], one((m) => m.sockets));
  totalCounter(registry, 'carlab_signaling_peers_accepted_total', 'PeerJS peers ever accepted', [], one((m) => m.peersTotal));
  totalCounter(registry, 'carlab_signaling_messages_total', 'messages the PeerServer handled', [], one((m) => m.messages));
  totalCounter(registry, 'carlab_signaling_errors_total', 'errors the PeerServer reported', [], one((m) => m.errors));
  totalCounter(registry, 'carlab_signaling_bad_requests_total', 'REST requests answered with an error status', [], one((m) => m.badRequests));
  totalCounter(registry, 'carlab_signaling_closes_total', 'PeerServer sockets carlab closed for a protocol or limit violation, by close code',
    ['code'], () => {
      const c = current();
      return c ? Object.entries(c.signaling.closedByCode).map(([code, n]) => [{ code }, n]) : null;
    });
  readGauge(registry, 'carlab_signaling_cluster_peers', 'peer ids in the cluster directory, by where they are connected',
    ['where'], () => {
      const dir = current()?.signaling.cluster;
      return dir ? [[{ where: 'local' }, dir.localPeers], [{ where: 'remote' }, dir.remotePeers]] : null;
    });
}

/**
 * @param {client.Registry} registry
 * @param {Current} current
 * @param {RunningTotals} base
 * @param {() => MetricSources | null} sources
 */
function registerClusterFamilies(registry, current, base, sources) {
  readGauge(registry, 'carlab_ready', 'whether this node takes clients (1) or not (0): /readyz\'s cluster check', [], () => {
    const s = sources();
    return s ? [[{}, (s.relay.readiness?.().ready ?? true) ? 1 : 0]] : null;
  });
  const cluster = () => current()?.relay.cluster ?? null;
  readGauge(registry, 'carlab_cluster_nodes', 'relay nodes this node knows of, itself included', [], () => {
    const c = cluster();
    return c ? [[{}, c.nodes]] : null;
  });
  readGauge(registry, 'carlab_cluster_nats_connected', 'whether the NATS connection is up (1) or not (0)', [], () => {
    const c = cluster();
    return c ? [[{}, c.nats.connected ? 1 : 0]] : null;
  });
  totalCounter(registry, 'carlab_cluster_nats_disconnects_total', 'NATS disconnections since start', [], () => {
    const c = cluster();
    return c ? [[{}, c.nats.disconnects]] : null;
  });
  totalCounter(registry, 'carlab_cluster_events_total', 'cross-node traffic and membership events, by kind', ['event'], () => {
    const c = cluster();
    if (!c) return null;
    const fields = /** @type {Record<string, unknown>} */ (/** @type {unknown} */ (c));
    return [...CLUSTER_COUNTER_FIELDS].map((event) => [{ event }, base.with(`cluster:${event}`, Number(fields[event] ?? 0))]);
  });
}

/**
 * Whether a request asks for the JSON snapshot rather than the exposition:
 * `Accept: application/json` (the lab, the tests) or `?format=json`.
 * Anything else, Prometheus's own Accept and curl's `*\/*` included, gets text.
 *
 * @param {import('node:http').IncomingMessage} req
 * @returns {boolean}
 */
export function wantsJson(req) {
  if (/[?&]format=json(&|$)/.test(req.url ?? '')) return true;
  const accept = String(req.headers.accept ?? '');
  return /\bapplication\/json\b/i.test(accept) && !/\b(openmetrics-text|text\/plain)\b/i.test(accept);
}
