// The location-update relay: a `ws` server that attaches to an HTTP(S)
// server at one path, validates every frame, and hands joined clients'
// messages to the group registry.

import { DEFAULT_ACK_TIMEOUT_MS, RELAY_LIMITS } from '../core/defaults.js';
import { WebSocketServer } from 'ws';
import { CloseCode, HelloFlag, MsgType, ProtocolError, decode } from '../core/protocol.js';
import { ClusterLink } from './cluster.js';
import { GroupRegistry } from './groups.js';
import { Session } from './session.js';
import { RelayStats } from './stats.js';
import { UdpEndpoint } from './udp.js';
import { isOriginAllowed, rejectUpgrade } from './upgrade.js';

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
 * @property {string[]} [allowedOrigins] browser Origins allowed to connect;
 *   default: same origin as the Host header (clients without Origin, like
 *   Node clients, are allowed); ['*'] allows any
 * @property {number} [closeTimeoutMs] bound on graceful shutdown
 * @property {number} [maxMessagesPerSecond] per-socket message rate (token bucket refill);
 *   a client above it is closed with 4005 (messages inside a BATCH count one by one)
 * @property {number} [maxMessagesBurst] the bucket's size
 * @property {import('./udp.js').UdpOptions} [udp] relay-udp: data channel and ICE settings
 * @property {import('./broker.js').Broker} [broker] join a cluster through this broker (NATS):
 *   groups span every relay on it (relay/cluster.js). The caller owns and closes the broker.
 * @property {import('./cluster-nodes.js').NodeDirectory} [nodes] the process's node directory, when
 *   signaling shares it; default: the relay's own
 */

// The WebSocket plumbing other servers on the same port share (signaling/).
export { isOriginAllowed, rejectUpgrade } from './upgrade.js';
export { TokenBucket } from './session.js';
// The cluster's plumbing, for the server that composes a node and for signaling.
export { ERR_BROKER_UNREACHABLE, connectNatsBroker } from './broker.js';
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
  maxMessagesPerSecond: RELAY_LIMITS.maxMessagesPerSecond,
  maxMessagesBurst: RELAY_LIMITS.burstFactor * RELAY_LIMITS.maxMessagesPerSecond,
});

/**
 * What sessions and the group registry share.
 * @typedef {object} RelayContext
 * @property {Required<Omit<RelayOptions, 'server' | 'allowedOrigins' | 'udp' | 'broker' | 'nodes'>> & { allowedOrigins?: string[] }} options
 * @property {RelayStats} stats
 * @property {(o: Outbox) => void} scheduleFlush
 * @property {(o: Outbox) => void} markBlocked
 * @property {(s: Session, code: number, reason: string) => void} closeSession
 * @property {(entry: import('./session.js').PendingUpdate, dest: Session) => void} dropDestination
 */

/** @typedef {import('./session.js').Outbox} Outbox */

/**
 * @typedef {object} Relay
 * @property {string} path
 * @property {WebSocketServer} wss
 * @property {GroupRegistry} groups
 * @property {RelayStats} stats
 * @property {UdpEndpoint} udp the relay-udp endpoint (peer connections)
 * @property {(req: import('node:http').IncomingMessage, socket: import('node:stream').Duplex, head: Buffer) => void} handleUpgrade
 * @property {() => object} metrics JSON snapshot of counters and gauges
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
  const opts = { ...RELAY_DEFAULTS, ...stripUndefined(options) };
  const stats = new RelayStats();
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: opts.maxPayload,
    perMessageDeflate: false,
    clientTracking: true,
  });

  /** Outboxes with something to write at the end of this turn. @type {Set<Outbox>} */
  const flushQueue = new Set();
  let flushPending = false;
  const flushAll = () => {
    flushPending = false;
    const outboxes = [...flushQueue];
    flushQueue.clear();
    for (const o of outboxes) o.flush();
  };

  /** Outboxes held back as slow consumers. @type {Set<Outbox>} */
  const blocked = new Set();
  const retryBlocked = setInterval(() => {
    for (const o of blocked) {
      if (!o.active || o.session.closed) { blocked.delete(o); continue; }
      if (o.socket.bufferedAmount <= opts.queueSoftBytes) {
        blocked.delete(o);
        o.flush();
      }
    }
  }, 20);
  retryBlocked.unref();

  /** @type {RelayContext} */
  const ctx = {
    options: opts,
    stats,
    scheduleFlush(o) {
      if (o.blocked) return; // retried by the blocked timer
      flushQueue.add(o);
      if (!flushPending) {
        flushPending = true;
        setImmediate(flushAll);
      }
    },
    markBlocked(o) { blocked.add(o); },
    closeSession(s, code, reason) {
      if (s.closed) return;
      stats.recordClose(code);
      s.socket.close(code, closeReason(reason));
      detach(s);
    },
    dropDestination(entry, dest) { groups.dropDestination(entry, dest); },
  };
  const groups = new GroupRegistry(ctx);
  const cluster = options.broker ? new ClusterLink(options.broker, groups, options.nodes) : null;
  groups.cluster = cluster;
  cluster?.start();
  const udp = new UdpEndpoint(ctx, options.udp ?? {}, {
    onFrame: (s, data, isBinary) => onFrame(s, data, isBinary, 'dc'),
    announce: (s) => groups.announce(s),
    retract: (s) => groups.retract(s),
  });

  const sweeper = setInterval(() => groups.sweep(opts.ackTimeoutMs), Math.min(1000, opts.ackTimeoutMs));
  sweeper.unref();
  const lagCheck = opts.slowAckMs > 0
    ? setInterval(() => groups.checkLagging(opts.slowAckMs), Math.max(50, Math.min(250, opts.slowAckMs / 4)))
    : null;
  lagCheck?.unref();

  /** @param {Session} s */
  function detach(s) {
    if (s.closed) return;
    s.closed = true;
    for (const o of [s.out, s.dataOut]) {
      if (!o) continue;
      blocked.delete(o);
      flushQueue.delete(o);
    }
    groups.leave(s);
    udp.drop(s);
  }

  wss.on('connection', (ws) => {
    const session = new Session(ws, ctx);
    ws.on('message', (data, isBinary) => onFrame(session, /** @type {Buffer} */ (data), isBinary, 'ws'));
    ws.on('close', () => detach(session));
    ws.on('error', () => detach(session)); // e.g. 1009 too big: ws closes it itself
  });

  /**
   * One frame from a client: from its WebSocket, or (relay-udp) from its data
   * channel. Both go through the same checks into the same group registry; a
   * bad frame on either closes the session's WebSocket with the same code.
   * @param {Session} s
   * @param {Uint8Array | string} data
   * @param {boolean} isBinary
   * @param {'ws' | 'dc'} source
   */
  function onFrame(s, data, isBinary, source) {
    if (s.closed) return;
    const length = typeof data === 'string' ? Buffer.byteLength(data) : data.length;
    stats.framesIn++;
    stats.bytesIn += length;
    if (source === 'dc') {
      stats.udp.framesIn++;
      stats.udp.bytesIn += length;
      // The WebSocket library enforces maxPayload itself; on a data channel we do.
      if (length > opts.maxPayload) {
        ctx.closeSession(s, CloseCode.TOO_BIG, `data channel message of ${length} bytes, over maxPayload`);
        return;
      }
    }
    if (!isBinary || typeof data === 'string') {
      ctx.closeSession(s, CloseCode.BAD_FRAME, 'text frames are not part of the protocol');
      return;
    }
    const msg = decode(data);
    if (msg instanceof ProtocolError) {
      ctx.closeSession(s, msg.closeCode, `${msg.code}: ${msg.message}${source === 'dc' ? ' (data channel)' : ''}`);
      return;
    }
    const messages = msg.type === MsgType.BATCH ? msg.messages : [msg];
    if (!s.rate.take(messages.length)) {
      ctx.closeSession(s, CloseCode.RATE_LIMITED, `over ${opts.maxMessagesPerSecond} messages/s`);
      return;
    }
    for (const m of messages) {
      stats.messagesIn++;
      const problem = onMessage(s, /** @type {any} */ (m), source);
      if (problem) {
        ctx.closeSession(s, problem[0], problem[1]);
        return;
      }
    }
  }

  /**
   * @param {Session} s
   * @param {import('../core/protocol.js').Message & { body: Uint8Array }} m
   * @param {'ws' | 'dc'} source
   * @returns {[number, string] | null} a close code and reason if the client misbehaved
   */
  function onMessage(s, m, source) {
    if (source === 'dc' && m.type !== MsgType.UPDATE && m.type !== MsgType.ACK) {
      return [CloseCode.PROTOCOL_VIOLATION, `${typeNameOf(m.type)} is not sent on the data channel`];
    }
    if (m.type === MsgType.HELLO) {
      if (s.group) return [CloseCode.PROTOCOL_VIOLATION, 'HELLO after joining'];
      s.name = m.name;
      s.batched = (m.flags & HelloFlag.BATCHED) !== 0;
      s.membershipOnly = (m.flags & HelloFlag.MEMBERSHIP_ONLY) !== 0;
      s.udp = (m.flags & HelloFlag.UDP) !== 0;
      if (s.udp && s.membershipOnly) return [CloseCode.PROTOCOL_VIOLATION, 'HELLO flags UDP and MEMBERSHIP_ONLY exclude each other'];
      if (s.udp && !udp.available) return [CloseCode.PROTOCOL_VIOLATION, `relay-udp is not available here: ${udp.unavailableReason}`];
      const err = groups.join(s, m.group, m.clientId, m.token);
      return err;
    }
    if (!s.group) return [CloseCode.NOT_JOINED, `${typeNameOf(m.type)} before HELLO`];
    switch (m.type) {
      case MsgType.UPDATE:
        if (s.membershipOnly) return [CloseCode.PROTOCOL_VIOLATION, 'UPDATE on a membership-only connection'];
        if (s.udp && source !== 'dc') return [CloseCode.PROTOCOL_VIOLATION, 'a relay-udp client sends UPDATE on its data channel'];
        if (m.sender !== s.id) return [CloseCode.SPOOFED_SENDER, `UPDATE from ${s.id} claims sender ${m.sender}`];
        if (s.pending.has(m.seq)) return [CloseCode.PROTOCOL_VIOLATION, `UPDATE seq ${m.seq} reused while awaiting its ACKs`];
        groups.update(s, m);
        return null;
      case MsgType.ACK:
        if (s.udp && source !== 'dc') return [CloseCode.PROTOCOL_VIOLATION, 'a relay-udp client sends ACK on its data channel'];
        if (m.acker !== s.id) return [CloseCode.SPOOFED_SENDER, `ACK from ${s.id} claims acker ${m.acker}`];
        groups.ack(s, m);
        return null;
      case MsgType.STATS:
        return null; // end-of-run counters: accepted, collected by the bench from the client itself
      case MsgType.SIGNAL:
        if (!s.udp) return [CloseCode.PROTOCOL_VIOLATION, 'SIGNAL is only for relay-udp sessions (HELLO flag UDP)'];
        return udp.onSignal(s, m);
      default:
        return [CloseCode.PROTOCOL_VIOLATION, `${typeNameOf(m.type)} is not sent by clients`];
    }
  }

  const handleUpgrade = (req, socket, head) => {
    if (!isOriginAllowed(req, opts.allowedOrigins)) {
      rejectUpgrade(socket, 403, 'Origin not allowed');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
  };

  /** @type {((req: any, socket: any, head: any) => void) | null} */
  let onServerUpgrade = null;
  if (options.server) {
    onServerUpgrade = (req, socket, head) => {
      if (pathnameOf(req.url) === opts.path) handleUpgrade(req, socket, head);
    };
    options.server.on('upgrade', onServerUpgrade);
  }

  let closing = null;
  return {
    path: opts.path,
    wss,
    groups,
    stats,
    udp,
    handleUpgrade,
    metrics: () => ({
      ...stats.snapshot({
        clients: wss.clients.size, joined: groups.memberCount, groups: groups.localGroupCount, udpChannels: udp.openChannels,
        ...groups.backlog(), blocked: blocked.size,
      }),
      cluster: cluster?.snapshot() ?? null,
    }),
    cluster,
    readiness: () => cluster?.readiness() ?? { ready: true, reason: 'single process' },
    resetWindow: () => stats.resetWindow(),
    close() {
      closing ??= new Promise((resolve) => {
        if (onServerUpgrade) options.server.off('upgrade', onServerUpgrade);
        clearInterval(retryBlocked);
        clearInterval(sweeper);
        if (lagCheck) clearInterval(lagCheck);
        stats.stop();
        udp.close();
        for (const ws of wss.clients) ws.close(CloseCode.GOING_AWAY, 'relay shutting down');
        const force = setTimeout(() => {
          for (const ws of wss.clients) ws.terminate();
        }, opts.closeTimeoutMs);
        wss.close(() => {
          clearTimeout(force);
          resolve(cluster?.close());
        });
      });
      return closing;
    },
  };
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

/** @param {number} type */
function typeNameOf(type) {
  return Object.keys(MsgType).find((k) => MsgType[k] === type) ?? `type ${type}`;
}

/** @param {string | undefined} url */
export function pathnameOf(url) {
  const q = (url ?? '/').indexOf('?');
  return q === -1 ? url ?? '/' : url.slice(0, q);
}

/**
 * @template T
 * @param {T} o
 * @returns {Partial<T>}
 */
function stripUndefined(o) {
  return /** @type {any} */ (Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)));
}
