// The location-update relay: a `ws` server that attaches to an HTTP(S)
// server at one path, validates every frame, and hands joined clients'
// messages to the group registry.

import { DEFAULT_ACK_TIMEOUT_MS, RELAY_LIMITS } from '../core/defaults.js';
import { WebSocketServer } from 'ws';
import { CloseCode } from '../core/protocol.js';
import { BUDGET_DEFAULTS } from './budget.js';
import { linkCounters } from './link.js';
import { ClusterLink } from './cluster.js';
import { FlushScheduler } from './flush.js';
import { SceneKeeper } from './scene-keeper.js';
import { GroupRegistry } from './groups.js';
import { LIVENESS_DEFAULTS, LivenessMonitor } from './liveness.js';
import { checkLagging } from './slow-consumers.js';
import { resumableSession, takeOver } from './resume.js';
import { onFrame } from './intake.js';
import { Session } from './session.js';
import { RelayStats } from './stats.js';
import { UdpEndpoint } from './udp.js';
import { groupOfRequestUrl, isOriginAllowed, listenForUpgrades, rejectUpgrade, shutDownWebSockets } from './upgrade.js';

/**
 * @typedef {object} RelayOptions
 * @property {import('node:http').Server} [server] HTTP(S) server to attach to
 * @property {string} [path] upgrade path, default '/relay'
 * @property {number} [maxPayload] largest frame in bytes (larger: close 1009)
 * @property {number} [queueSoftBytes] above this many buffered bytes a client
 *   is a slow consumer: its stale poses get replaced by the newest
 * @property {number} [queueHardBytes] above this the client is closed (4004)
 * @property {number} [ackTimeoutMs] pending ACKs older than this are given up
 * @property {number} [slowAckMs] a WebSocket member that has not ACKed for this long is not
 *   waited for any more (it lags) until it ACKs again; 0 turns the policy off
 * @property {number} [pingIntervalMs] a WebSocket quiet this long is pinged (relay/liveness.js); 0: never
 * @property {number} [livenessTimeoutMs] a session from which nothing (no frame, no pong) came this long
 *   is ended: its members see MEMBER_LEFT and its id is free; 0: never
 * @property {string[]} [allowedOrigins] browser Origins allowed to connect;
 *   default: same origin as the Host header (clients without Origin, like
 *   Node clients, are allowed); ['*'] allows any
 * @property {number} [closeTimeoutMs] bound on graceful shutdown
 * @property {number} [maxMessagesPerSecond] per-socket message rate (token bucket refill);
 *   a client above it is closed with 4005 (messages inside a BATCH count one by one)
 * @property {number} [maxMessagesBurst] the bucket's size
 * @property {number} [maxUpdatesPerSecond] per-connection UPDATE rate (relay/budget.js); above it close 4005
 *   (relay-udp: dropped)
 * @property {number} [maxUpdatesBurst] the UPDATE bucket's size
 * @property {number} [maxGroupForwardsPerSecond] fan-out bound of one group, shared equally by its members;
 *   an UPDATE over its sender's share is not forwarded (shed)
 * @property {import('./udp.js').UdpOptions} [udp] relay-udp: data channel and ICE settings
 * @property {import('./broker.js').Broker} [broker] join a cluster through this broker (NATS):
 *   groups span every relay on it (relay/cluster.js). The caller owns and closes the broker.
 * @property {import('./cluster-nodes.js').NodeDirectory} [nodes] the process's node directory, when
 *   signaling shares it; default: the relay's own
 * @property {RelayLogger} [logger] where the relay says why it closed a socket (one warn line per close)
 * @property {RelayObserver} [observer] hooks for the process's metrics (server/metrics.js)
 * @property {ReportSink} [reports] where client reports sent as STATS go (the server's study);
 *   without it STATS are discarded
 * @property {import('./scene-keeper.js').SceneStore | null} [sceneStore] where a group's scene is kept when its last
 *   member leaves, to be given to its next first member (relay/scene-keeper.js); without it scenes go with their
 *   group. In a cluster, one every node shares (server/scene-kv.js)
 */

/**
 * Takes a client report that came as STATS (docs/study.md) from a joined
 * session: null when accepted, else why not (`<code>: <reason>`, sent back
 * to the client in an ERROR).
 * @typedef {{ take(report: unknown, from: { userAgent: string, group: string, clientId: number }): string | null }} ReportSink
 */

/**
 * The part of a logger (pino's) the relay writes to: structured fields, then a message.
 * @typedef {{ warn(fields: Record<string, unknown>, msg: string): void }} RelayLogger
 */

/**
 * Hooks for metrics the relay's windowed stats cannot give: a monotonic
 * counter must see the window before it is reset. (RTS samples are tallied
 * since start in stats.rtsTally, read at scrape time.)
 * @typedef {object} RelayObserver
 * @property {() => void} [beforeReset] resetWindow() is about to zero the window's counters
 */

// The WebSocket plumbing other servers on the same port share (signaling/).
export { groupOfRequestUrl, isOriginAllowed, listenForUpgrades, pathnameOf, rejectUpgrade, shutDownWebSockets } from './upgrade.js';
export { TokenBucket } from './session.js';
export { RTS_BUCKETS_MS, RtsTally } from './stats.js';
// The cluster's plumbing, for the server that composes a node and for signaling.
export { ERR_BROKER_UNREACHABLE, connectNatsBroker, newNodeId } from './broker.js';
export { NodeDirectory } from './cluster-nodes.js';
export { nodeSubject, jsonBytes, parseJsonBytes } from './cluster-wire.js';

/** Defaults a relay runs with when an option is not given. */
export const RELAY_DEFAULTS = Object.freeze({
  path: '/relay',
  maxPayload: RELAY_LIMITS.maxPayload,
  queueSoftBytes: RELAY_LIMITS.queueSoftBytes,
  queueHardBytes: RELAY_LIMITS.queueHardBytes,
  ackTimeoutMs: DEFAULT_ACK_TIMEOUT_MS,
  // Far above the 250 ms a shared scene tolerates, so only a member that
  // stopped reading trips it, not a loaded relay: there every member is slow
  // and RT must show it.
  slowAckMs: 5000,
  closeTimeoutMs: 3000,
  ...LIVENESS_DEFAULTS,
  maxMessagesPerSecond: RELAY_LIMITS.maxMessagesPerSecond,
  maxMessagesBurst: RELAY_LIMITS.burstFactor * RELAY_LIMITS.maxMessagesPerSecond,
  ...BUDGET_DEFAULTS,
});

/**
 * What sessions and the group registry share.
 * @typedef {object} RelayContext
 * @property {Required<Omit<RelayOptions, 'server' | 'allowedOrigins' | 'udp' | 'broker' | 'nodes' | 'logger' | 'observer' | 'reports' | 'sceneStore'>> & { allowedOrigins?: string[] }} options
 * @property {RelayStats} stats
 * @property {(o: Outbox) => void} scheduleFlush
 * @property {(o: Outbox) => void} markBlocked
 * @property {(s: Session, code: number, reason: string) => void} closeSession
 * @property {(entry: import('./session.js').PendingUpdate, dest: Session) => void} dropDestination
 */

/** @typedef {import('./session.js').Outbox} Outbox */

/** What Relay.metrics() returns. @typedef {ReturnType<typeof relayMetrics>} RelayMetrics */

/**
 * @typedef {object} Relay
 * @property {string} path
 * @property {WebSocketServer} wss
 * @property {GroupRegistry} groups
 * @property {RelayStats} stats
 * @property {UdpEndpoint} udp the relay-udp endpoint (peer connections)
 * @property {(req: import('node:http').IncomingMessage, socket: import('node:stream').Duplex, head: Buffer) => void} handleUpgrade
 * @property {() => RelayMetrics} metrics JSON snapshot of counters and gauges
 * @property {() => void} resetWindow starts a new measurement window
 * @property {ClusterLink | null} cluster this node's link to the others, when it is one of a cluster
 * @property {() => { ready: boolean, reason: string }} readiness whether it can take clients (cluster: NATS reachable)
 * @property {() => Promise<void>} close graceful: tells clients, closes within closeTimeoutMs
 */

/**
 * Creates a relay. With `server` it listens for upgrades on `path` itself;
 * without, call `handleUpgrade` from your own 'upgrade' handler.
 * @param {RelayOptions} [options]
 * @returns {Relay}
 */
export function createRelay(options = {}) {
  const opts = relayOptions(options);
  const stats = new RelayStats();
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: opts.maxPayload,
    perMessageDeflate: false,
    clientTracking: true,
  });
  const flusher = new FlushScheduler(opts.queueSoftBytes);
  const ctx = relayContext(opts, stats, flusher, {
    detach: (s) => detach(s),
    dropDestination: (entry, dest) => groups.dropDestination(entry, dest),
    logger: options.logger,
  });
  const broker = options.broker;
  const groups = new GroupRegistry(ctx, broker ? (g) => new ClusterLink(broker, g, options.nodes) : null);
  if (options.sceneStore) groups.scenes = new SceneKeeper(options.sceneStore);
  const liveness = new LivenessMonitor(opts, (/** @type {Session} */ s) => {
    stats.silentEnded++;
    options.logger?.warn(closeFields(s, 1006, `nothing heard for ${opts.livenessTimeoutMs} ms`), 'relay ended a silent socket');
  });
  const cluster = groups.cluster;
  cluster?.start();
  const udp = new UdpEndpoint(ctx, options.udp ?? {}, {
    // Data-channel frames arrive once a channel is open, long after `intake` below exists.
    onFrame: (s, data, isBinary) => { liveness.heard(s); onFrame(intake, s, data, isBinary, 'dc'); },
    announce: (s) => groups.announce(s),
    retract: (s) => groups.retract(s),
    unqueue: (s) => groups.unqueue(s),
  });
  /** Which session each WebSocket's frames go to (a resume moves a socket to another session). @type {WeakMap<object, import('./resume.js').SocketBinding>} */
  const bindings = new WeakMap();
  /** @type {import('./intake.js').IntakeDeps} */
  const intake = {
    ctx, groups, udp, reports: options.reports,
    resume: (fresh, hello) => {
      const holder = resumableSession(groups, fresh, hello);
      if (holder) takeOver({ bindings, groups, liveness, flusher, stats }, fresh, holder);
      return holder !== null;
    },
  };
  const timers = startGroupTimers({
    sweep: (ms) => groups.sweep(ms),
    checkLagging: (ms) => checkLagging(groups, ms),
  }, opts);

  /** @param {Session} s */
  function detach(s) {
    if (s.closed) return;
    s.closed = true;
    liveness.forget(s);
    for (const o of [s.out, s.dataOut]) if (o) flusher.forget(o);
    groups.leave(s);
    udp.drop(s);
  }

  wss.on('connection', (ws, req) => acceptSession(ws, req, { ctx, intake, detach, liveness, bindings, logger: options.logger }));

  const handleUpgrade = upgradeHandler(wss, opts.allowedOrigins);
  const unlisten = options.server ? listenForUpgrades(options.server, opts.path, handleUpgrade) : null;

  /** @type {Promise<void> | null} */
  let closing = null;
  return {
    path: opts.path,
    wss,
    groups,
    stats,
    udp,
    handleUpgrade,
    metrics: () => relayMetrics({ stats, wss, groups, udp, flusher, cluster }),
    cluster,
    readiness: () => cluster?.readiness() ?? { ready: true, reason: 'single process' },
    resetWindow: () => {
      options.observer?.beforeReset?.();
      stats.resetWindow();
      cluster?.resetWindow();
    },
    close() {
      closing ??= (async () => {
        unlisten?.();
        flusher.stop();
        timers.stop();
        liveness.stop();
        stats.stop();
        udp.close();
        await shutDownWebSockets(wss, CloseCode.GOING_AWAY, 'relay shutting down', opts.closeTimeoutMs);
        await cluster?.close();
      })();
      return closing;
    },
  };
}

/**
 * A new WebSocket becomes a session: its frames go to the intake, its close
 * or error detaches it; the group its URL named (`?g=`) is what its HELLO must name.
 * @param {import('ws').WebSocket} ws
 * @param {import('node:http').IncomingMessage} req the upgrade request
 * @param {{ ctx: RelayContext, intake: import('./intake.js').IntakeDeps, detach: (s: Session) => void,
 *   liveness: LivenessMonitor<Session>, bindings: WeakMap<object, import('./resume.js').SocketBinding>,
 *   logger?: RelayOptions['logger'] }} deps
 */
function acceptSession(ws, req, { ctx, intake, detach, liveness, bindings, logger }) {
  const session = new Session(ws, ctx);
  session.urlGroup = groupOfRequestUrl(req.url);
  session.userAgent = String(req.headers['user-agent'] ?? '').slice(0, 512);
  liveness.watch(session, ws);
  // Its session, until a resume moves this socket to the session it takes over (relay/resume.js).
  /** @type {import('./resume.js').SocketBinding} */
  const bound = { session };
  bindings.set(ws, bound);
  // Binary frames arrive as one Buffer: the server sets no binaryType.
  ws.on('message', (data, isBinary) => {
    if (!bound.session) return;
    liveness.heard(bound.session);
    onFrame(intake, bound.session, /** @type {Buffer} */ (data), isBinary, 'ws');
  });
  ws.on('close', () => { if (bound.session) detach(bound.session); });
  ws.on('error', (err) => {
    const s = bound.session;
    if (!s) return;
    // e.g. 1009 too big: ws closes it itself, so this is the one place to say so.
    if (!s.closed) logger?.warn(closeFields(s, wsErrorCloseCode(err), err.message), 'relay closed a socket');
    detach(s);
  });
}

/** The options a relay runs with: RelayOptions over RELAY_DEFAULTS. @typedef {RelayContext['options']} ResolvedRelayOptions */

/**
 * Fills in RELAY_DEFAULTS for every option not given (an explicit undefined counts as not given).
 * @param {RelayOptions} options
 * @returns {ResolvedRelayOptions}
 */
export function relayOptions(options) {
  const { server: _server, udp: _udp, broker: _broker, nodes: _nodes, logger: _logger, observer: _observer, reports: _reports, ...rest } = options;
  return { ...RELAY_DEFAULTS, ...stripUndefined(rest) };
}

/**
 * What sessions and the group registry share: flushing goes through the
 * scheduler, closing a session detaches it (hooks.detach) after counting the code.
 * @param {ResolvedRelayOptions} options
 * @param {RelayStats} stats
 * @param {FlushScheduler} flusher
 * @param {{ detach: (s: Session) => void, dropDestination: RelayContext['dropDestination'], logger?: RelayLogger }} hooks
 * @returns {RelayContext}
 */
export function relayContext(options, stats, flusher, hooks) {
  return {
    options,
    stats,
    scheduleFlush: (o) => flusher.schedule(o),
    markBlocked: (o) => flusher.markBlocked(o),
    closeSession(s, code, reason) {
      if (s.closed) return;
      stats.recordClose(code);
      hooks.logger?.warn(closeFields(s, code, reason), 'relay closed a socket');
      s.socket.close(code, closeReason(reason));
      hooks.detach(s);
    },
    dropDestination: hooks.dropDestination,
  };
}

/**
 * The registry's periodic work: giving up on old ACKs (sweep) and, unless
 * slowAckMs is 0, finding members that stopped ACKing (relay/slow-consumers.js).
 * @param {{ sweep(ackTimeoutMs: number): void, checkLagging(slowAckMs: number): void }} groups the two tasks
 * @param {Pick<ResolvedRelayOptions, 'ackTimeoutMs' | 'slowAckMs'>} opts
 * @returns {{ stop: () => void }}
 */
export function startGroupTimers(groups, opts) {
  const sweeper = setInterval(() => groups.sweep(opts.ackTimeoutMs), Math.min(1000, opts.ackTimeoutMs));
  sweeper.unref();
  // A quarter of the limit, within 50..250 ms: late by at most a quarter, and never busy.
  const lagCheck = opts.slowAckMs > 0
    ? setInterval(() => groups.checkLagging(opts.slowAckMs), Math.max(50, Math.min(250, opts.slowAckMs / 4)))
    : null;
  lagCheck?.unref();
  return {
    stop() {
      clearInterval(sweeper);
      if (lagCheck) clearInterval(lagCheck);
    },
  };
}

/**
 * Checks the Origin, then hands the upgrade to the WebSocket server.
 * @param {WebSocketServer} wss
 * @param {string[] | undefined} allowedOrigins
 * @returns {import('./upgrade.js').UpgradeHandler}
 */
export function upgradeHandler(wss, allowedOrigins) {
  return (req, socket, head) => {
    if (!isOriginAllowed(req, allowedOrigins)) {
      rejectUpgrade(socket, 403, 'Origin not allowed');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
  };
}

/**
 * The relay's JSON snapshot: counters, gauges and the cluster's view.
 * @param {{ stats: RelayStats, wss: WebSocketServer, groups: GroupRegistry, udp: Pick<UdpEndpoint, 'openChannels'>,
 *   flusher: FlushScheduler, cluster: ClusterLink | null }} parts
 */
export function relayMetrics({ stats, wss, groups, udp, flusher, cluster }) {
  return {
    ...stats.snapshot({
      clients: wss.clients.size, joined: groups.memberCount, groups: groups.localGroupCount, udpChannels: udp.openChannels,
      ...groups.backlog(), blocked: flusher.blocked.size,
    }),
    budget: { ...groups.budget },
    links: { ...linkCounters(groups) },
    cluster: cluster?.snapshot() ?? null,
  };
}

/**
 * The transport a session uses, by its HELLO flags (docs/architecture.md's
 * names; `p2p` covers both p2p transports, which differ only between phones);
 * `none` before HELLO.
 * @param {Pick<Session, 'group' | 'membershipOnly' | 'udp' | 'batched'>} s
 * @returns {'none' | 'p2p' | 'relay-udp' | 'relay' | 'relay-faithful'}
 */
export function sessionTransport(s) {
  if (!s.group) return 'none';
  if (s.membershipOnly) return 'p2p';
  if (s.udp) return 'relay-udp';
  return s.batched ? 'relay' : 'relay-faithful';
}

/**
 * The fields of the one log line a policy close gets: code, reason, transport
 * and group name (never the group's token).
 * @param {Pick<Session, 'group' | 'membershipOnly' | 'udp' | 'batched' | 'id'>} s
 * @param {number} code
 * @param {string} reason
 */
export function closeFields(s, code, reason) {
  // Group keys carry a prefix (`g:`, GROUP_KEY_PREFIX in relay/groups.js); the name is what users chose.
  return { event: 'close', code, reason, transport: sessionTransport(s), group: s.group ? s.group.key.slice(2) : null, clientId: s.id || null };
}

/**
 * The close code ws sends when it closes a socket itself on a bad frame.
 * @param {Error & { code?: string }} err
 */
function wsErrorCloseCode(err) {
  if (err.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH') return CloseCode.TOO_BIG;
  if (err.code === 'WS_ERR_INVALID_UTF8') return 1007;
  return 1002;
}

/**
 * Live per-transport gauges of this node's sessions: connections, groups with
 * such a member, bytes waiting in their outboxes. For /metrics.
 * @param {Pick<GroupRegistry, 'groups'>} groups
 * @param {number} clients open WebSockets (those not joined count under `none`)
 * @returns {Record<string, { connections: number, groups: number, queuedBytes: number }>}
 */
export function transportGauges(groups, clients) {
  /** @type {Record<string, { connections: number, groups: number, queuedBytes: number }>} */
  const out = {};
  let joined = 0;
  for (const g of groups.groups.values()) {
    /** @type {Set<string>} */
    const seen = new Set();
    for (const m of g.members.values()) {
      if (!m.local) continue;
      joined++;
      const t = sessionTransport(m);
      const row = (out[t] ??= { connections: 0, groups: 0, queuedBytes: 0 });
      row.connections++;
      row.queuedBytes += m.out.queuedBytes + (m.dataOut?.queuedBytes ?? 0);
      if (!seen.has(t)) { seen.add(t); row.groups++; }
    }
  }
  if (clients > joined) out.none = { connections: clients - joined, groups: 0, queuedBytes: 0 };
  return out;
}

const utf8 = new TextEncoder();

/**
 * A WebSocket close reason must fit in 123 bytes of UTF-8 (ws throws otherwise).
 * @param {string} reason
 */
export function closeReason(reason) {
  if (utf8.encode(reason).length <= 123) return reason;
  let cut = reason.slice(0, 120);
  while (utf8.encode(`${cut}...`).length > 123) cut = cut.slice(0, -1);
  return `${cut}...`;
}

/**
 * The object without its undefined properties, so that spreading it keeps defaults.
 * @template {object} T
 * @param {T} o
 * @returns {Partial<T>}
 */
function stripUndefined(o) {
  // Object.fromEntries loses the key types; the entries are a subset of o's.
  return /** @type {Partial<T>} */ (Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)));
}
