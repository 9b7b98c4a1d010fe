// The location-update relay: a `ws` server that attaches to an HTTP(S)
// server at one path, validates every frame, and hands joined clients'
// messages to the group registry.

import { WebSocketServer } from 'ws';
import { CloseCode, HelloFlag, MsgType, ProtocolError, decode } from '../web/src/core/protocol.js';
import { GroupRegistry } from './groups.js';
import { Session } from './session.js';
import { RelayStats } from './stats.js';
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
 * @property {string[]} [allowedOrigins] browser Origins allowed to connect;
 *   default: same origin as the Host header (clients without Origin, like
 *   Node clients, are allowed); ['*'] allows any
 * @property {number} [closeTimeoutMs] bound on graceful shutdown
 */

/** Defaults a relay runs with when an option is not given. */
export const RELAY_DEFAULTS = Object.freeze({
  path: '/relay',
  maxPayload: 64 * 1024,
  queueSoftBytes: 256 * 1024,
  queueHardBytes: 4 * 1024 * 1024,
  ackTimeoutMs: 20000,
  closeTimeoutMs: 3000,
});

/**
 * What sessions and the group registry share.
 * @typedef {object} RelayContext
 * @property {Required<Omit<RelayOptions, 'server' | 'allowedOrigins'>> & { allowedOrigins?: string[] }} options
 * @property {RelayStats} stats
 * @property {(s: Session) => void} scheduleFlush
 * @property {(s: Session) => void} markBlocked
 * @property {(s: Session, code: number, reason: string) => void} closeSession
 * @property {(entry: import('./session.js').PendingUpdate, dest: Session) => void} dropDestination
 */

/**
 * @typedef {object} Relay
 * @property {string} path
 * @property {WebSocketServer} wss
 * @property {GroupRegistry} groups
 * @property {RelayStats} stats
 * @property {(req: import('node:http').IncomingMessage, socket: import('node:stream').Duplex, head: Buffer) => void} handleUpgrade
 * @property {() => object} metrics JSON snapshot of counters and gauges
 * @property {() => void} resetWindow starts a new measurement window
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

  /** @type {Set<Session>} */
  const flushQueue = new Set();
  let flushPending = false;
  const flushAll = () => {
    flushPending = false;
    const sessions = [...flushQueue];
    flushQueue.clear();
    for (const s of sessions) s.flush();
  };

  /** @type {Set<Session>} */
  const blocked = new Set();
  const retryBlocked = setInterval(() => {
    for (const s of blocked) {
      if (s.closed) { blocked.delete(s); continue; }
      if (s.socket.bufferedAmount <= opts.queueSoftBytes) {
        blocked.delete(s);
        s.flush();
      }
    }
  }, 20);
  retryBlocked.unref();

  /** @type {RelayContext} */
  const ctx = {
    options: opts,
    stats,
    scheduleFlush(s) {
      if (s.blocked) return; // retried by the blocked timer
      flushQueue.add(s);
      if (!flushPending) {
        flushPending = true;
        setImmediate(flushAll);
      }
    },
    markBlocked(s) { blocked.add(s); },
    closeSession(s, code, reason) {
      if (s.closed) return;
      stats.recordClose(code);
      s.socket.close(code, closeReason(reason));
      detach(s);
    },
    dropDestination(entry, dest) { groups.dropDestination(entry, dest); },
  };
  const groups = new GroupRegistry(ctx);

  const sweeper = setInterval(() => groups.sweep(opts.ackTimeoutMs), Math.min(1000, opts.ackTimeoutMs));
  sweeper.unref();

  /** @param {Session} s */
  function detach(s) {
    if (s.closed) return;
    s.closed = true;
    blocked.delete(s);
    flushQueue.delete(s);
    groups.leave(s);
  }

  wss.on('connection', (ws) => {
    const session = new Session(ws, ctx);
    ws.on('message', (data, isBinary) => onFrame(session, data, isBinary));
    ws.on('close', () => detach(session));
    ws.on('error', () => detach(session)); // e.g. 1009 too big: ws closes it itself
  });

  /**
   * @param {Session} s
   * @param {import('ws').RawData} data
   * @param {boolean} isBinary
   */
  function onFrame(s, data, isBinary) {
    if (s.closed) return;
    stats.framesIn++;
    const bytes = /** @type {Buffer} */ (data);
    stats.bytesIn += bytes.length;
    if (!isBinary) {
      ctx.closeSession(s, CloseCode.BAD_FRAME, 'text frames are not part of the protocol');
      return;
    }
    const msg = decode(bytes);
    if (msg instanceof ProtocolError) {
      ctx.closeSession(s, msg.closeCode, `${msg.code}: ${msg.message}`);
      return;
    }
    const messages = msg.type === MsgType.BATCH ? msg.messages : [msg];
    for (const m of messages) {
      stats.messagesIn++;
      const problem = onMessage(s, /** @type {any} */ (m));
      if (problem) {
        ctx.closeSession(s, problem[0], problem[1]);
        return;
      }
    }
  }

  /**
   * @param {Session} s
   * @param {import('../web/src/core/protocol.js').Message & { body: Uint8Array }} m
   * @returns {[number, string] | null} a close code and reason if the client misbehaved
   */
  function onMessage(s, m) {
    if (m.type === MsgType.HELLO) {
      if (s.group) return [CloseCode.PROTOCOL_VIOLATION, 'HELLO after joining'];
      s.name = m.name;
      s.batched = (m.flags & HelloFlag.BATCHED) !== 0;
      s.membershipOnly = (m.flags & HelloFlag.MEMBERSHIP_ONLY) !== 0;
      const err = groups.join(s, m.group, m.clientId);
      return err ? [CloseCode.ID_TAKEN, err] : null;
    }
    if (!s.group) return [CloseCode.NOT_JOINED, `${typeNameOf(m.type)} before HELLO`];
    switch (m.type) {
      case MsgType.UPDATE:
        if (s.membershipOnly) return [CloseCode.PROTOCOL_VIOLATION, 'UPDATE on a membership-only connection'];
        if (m.sender !== s.id) return [CloseCode.SPOOFED_SENDER, `UPDATE from ${s.id} claims sender ${m.sender}`];
        if (s.pending.has(m.seq)) return [CloseCode.PROTOCOL_VIOLATION, `UPDATE seq ${m.seq} reused while awaiting its ACKs`];
        groups.update(s, m);
        return null;
      case MsgType.ACK:
        if (m.acker !== s.id) return [CloseCode.SPOOFED_SENDER, `ACK from ${s.id} claims acker ${m.acker}`];
        groups.ack(s, m);
        return null;
      case MsgType.STATS:
        return null; // end-of-run counters: accepted, collected by the bench from the client itself
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
    handleUpgrade,
    metrics: () => stats.snapshot({ clients: wss.clients.size, joined: groups.memberCount, groups: groups.groups.size }),
    resetWindow: () => stats.resetWindow(),
    close() {
      closing ??= new Promise((resolve) => {
        if (onServerUpgrade) options.server.off('upgrade', onServerUpgrade);
        clearInterval(retryBlocked);
        clearInterval(sweeper);
        stats.stop();
        for (const ws of wss.clients) ws.close(CloseCode.GOING_AWAY, 'relay shutting down');
        const force = setTimeout(() => {
          for (const ws of wss.clients) ws.terminate();
        }, opts.closeTimeoutMs);
        wss.close(() => {
          clearTimeout(force);
          resolve();
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
