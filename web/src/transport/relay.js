// Transport `relay` / `relay-faithful`: the WebSocket relay. Works with the
// browser's WebSocket and, in Node, with the `ws` package's (passed in).

import { CloseCode, HelloFlag, MsgType, ProtocolError, decode, encode } from '../../../core/protocol.js';

/**
 * Reconnection after an unexpected close: exponential backoff with full
 * jitter (the n-th attempt waits a uniform random time in [0, min(maxMs,
 * baseMs * 2^n)) ), so clients that lost the same relay do not all come back
 * in the same instant.
 * @typedef {object} ReconnectOptions
 * @property {number} [baseMs] ceiling of the first wait, default 250
 * @property {number} [maxMs] largest ceiling, default 10 000
 * @property {number} [maxAttempts] give up (and report the close) after this many
 *   failed attempts in a row, default Infinity
 * @property {() => number} [random] [0, 1), default Math.random
 */

/** Defaults of ReconnectOptions. */
export const RECONNECT_DEFAULTS = Object.freeze({ baseMs: 250, maxMs: 10000, maxAttempts: Infinity });

/**
 * The wait before reconnection attempt `attempt` (0 = the first).
 * @param {number} attempt
 * @param {{ baseMs: number, maxMs: number }} o
 * @param {() => number} [random]
 */
export function backoffDelay(attempt, o, random = Math.random) {
  return random() * Math.min(o.maxMs, o.baseMs * 2 ** Math.min(attempt, 30));
}

/**
 * Whether a close the client did not ask for is worth reconnecting after:
 * the relay going away, the connection dropping, a server error. Not after
 * the relay's policy closes (4000..4999: our input was refused, a retry would
 * be refused again) nor after closes that say the client broke the protocol.
 * @param {number} code
 */
export function isReconnectable(code) {
  if (code >= 4000 && code <= 4999) return false;
  return ![1000, 1002, 1003, 1007, 1008, 1009, 1010].includes(code);
}

/** After this many ID_TAKEN answers in a row a rejoining client asks for a new id. */
const ID_TAKEN_RETRIES = 3;

/**
 * @typedef {object} RelayTransportOptions
 * @property {string} url ws:// or wss:// URL of the relay
 * @property {boolean} [batched] true = mode `relay` (the server coalesces
 *   frames and aggregates ACKs; we batch our ACKs per turn too);
 *   false = `relay-faithful` (one frame per message, every ACK forwarded)
 * @property {boolean} [membershipOnly] join for membership only (the p2p
 *   transport exchanges updates elsewhere); sendUpdate/sendAck must not be used
 * @property {string} [name] transport name to report (default from `batched`)
 * @property {any} [WebSocket] WebSocket constructor, default globalThis.WebSocket
 * @property {() => number} [now] clock for arrival times, default performance.now
 * @property {number} [extraFlags] more HELLO flags (relay-udp adds UDP)
 * @property {(m: import('../../../core/protocol.js').SignalMsg) => void} [onSignal] SIGNALs from the relay (relay-udp)
 * @property {boolean | ReconnectOptions} [reconnect] reconnect after an unexpected close (default
 *   false): the transport re-sends HELLO with the same client id and token, and reports the
 *   outage through the handlers' onReconnecting / onReconnected, and every attempt through
 *   onConnectionStatus
 */

/**
 * Creates a relay transport (implements core/client.js Transport).
 * @param {RelayTransportOptions} options
 * @returns {import('../../../core/client.js').Transport & { ws: any, sendSignal: (m: import('../../../core/protocol.js').SignalMsg) => void,
 *   reconnectInfo: () => { reconnects: number, attempts: number, lastCloseCode: number | null } }}
 */
export function createRelayTransport(options) {
  const WS = options.WebSocket ?? globalThis.WebSocket;
  const batched = options.batched ?? true;
  const now = options.now ?? (() => performance.now());
  /** @type {any} */
  let ws = null;
  /** @type {any[]} messages waiting for the end of this turn (mode `relay`) */
  let outgoing = [];
  let flushQueued = false;

  const flush = () => {
    flushQueued = false;
    if (outgoing.length === 0 || !ws || ws.readyState !== 1) { outgoing = []; return; }
    const msg = outgoing.length === 1 ? outgoing[0] : { type: MsgType.BATCH, messages: outgoing };
    outgoing = [];
    ws.send(encode(msg));
  };

  /** @param {any} msg */
  const send = (msg) => {
    if (!ws || ws.readyState !== 1) return;
    if (!batched) {
      ws.send(encode(msg));
      return;
    }
    outgoing.push(msg);
    if (!flushQueued) {
      flushQueued = true;
      // Everything this turn produces (e.g. ACKs for a whole BATCH) goes in one frame.
      queueMicrotask(flush);
    }
  };

  const reconnect = options.reconnect
    ? { ...RECONNECT_DEFAULTS, random: Math.random, ...(options.reconnect === true ? {} : options.reconnect) }
    : null;
  /** The client closed us: never reconnect then. */
  let closedByUs = false;
  /** @type {any} */
  let retryTimer = null;
  let attempt = 0;
  let idTaken = 0;
  /** Our id in the group once welcomed; a rejoin asks for it again. */
  let myId = 0;
  /** @type {import('../../../core/client.js').TransportHandlers | null} */
  let handlers = null;
  /** @type {import('../../../core/client.js').JoinParams | null} */
  let joinParams = null;
  const counters = { reconnects: 0, attempts: 0, lastCloseCode: /** @type {number | null} */ (null) };

  /**
   * Opens one WebSocket and joins. `first`: the connect() call, which
   * resolves on WELCOME and rejects on a close before it (no retry then);
   * otherwise a rejoin, which retries on its own until it is welcomed.
   * @param {{ resolve: (w: any) => void, reject: (e: Error) => void } | null} first
   */
  function open(first) {
    const h = /** @type {import('../../../core/client.js').TransportHandlers} */ (handlers);
    const join = /** @type {import('../../../core/client.js').JoinParams} */ (joinParams);
    const socket = new WS(options.url);
    ws = socket;
    let welcomed = false;
    socket.onopen = () => {
      socket.send(encode({
        type: MsgType.HELLO,
        flags: (batched ? HelloFlag.BATCHED : 0) | (options.membershipOnly ? HelloFlag.MEMBERSHIP_ONLY : 0)
          | (options.extraFlags ?? 0),
        // A rejoin keeps its id, so its neighbours' streams from it go on; a
        // new one only if the old one stays taken.
        clientId: first ? join.clientId ?? 0 : idTaken >= ID_TAKEN_RETRIES ? 0 : myId,
        group: join.group,
        name: join.name,
        token: join.token ?? '',
      }));
    };
    /** @param {any} data one frame: an ArrayBuffer (browser) or a Buffer (Node's `ws`) */
    const onFrame = (data) => {
      if (socket !== ws) return;
      const arrival = now();
      const frame = decode(data);
      if (frame instanceof ProtocolError) {
        socket.close(frame.closeCode, frame.message.slice(0, 120));
        return;
      }
      const messages = frame.type === MsgType.BATCH ? frame.messages : [frame];
      for (const m of messages) {
        switch (m.type) {
          case MsgType.WELCOME:
            welcomed = true;
            myId = m.clientId;
            if (first) {
              h.onWelcome?.(m);
              first.resolve(m);
            } else {
              counters.reconnects++;
              attempt = 0;
              idTaken = 0;
              h.onReconnected?.(m);
            }
            h.onConnectionStatus?.({ state: 'connected', part: 'relay' });
            break;
          case MsgType.UPDATE: h.onUpdate(m, arrival); break;
          case MsgType.ACK: h.onAck(m); break;
          case MsgType.ACKED_ALL: h.onAckedAll(m); break;
          case MsgType.MEMBER_JOINED: h.onMemberJoined(m); break;
          case MsgType.MEMBER_LEFT: h.onMemberLeft(m.id); break;
          case MsgType.SIGNAL: options.onSignal?.(m); break;
          default: break; // ERROR and others: informational
        }
      }
    };
    if (typeof socket.on === 'function') {
      // Node's `ws` (the load generator): the frame as a Buffer, without the
      // ArrayBuffer copy and the MessageEvent per frame; text stays a string.
      socket.binaryType = 'nodebuffer';
      socket.on('message', (/** @type {any} */ data, /** @type {boolean} */ isBinary) => onFrame(isBinary ? data : String(data)));
    } else {
      socket.binaryType = 'arraybuffer';
      socket.onmessage = (/** @type {any} */ event) => onFrame(event.data);
    }
    socket.onerror = () => {}; // the close event follows and carries the reason
    socket.onclose = (event) => {
      if (socket !== ws) return;
      counters.lastCloseCode = event.code;
      if (first && !welcomed) {
        const err = new Error(`relay closed before WELCOME: ${event.code} ${event.reason || ''}`.trim());
        /** @type {any} */ (err).code = event.code;
        first.reject(err);
        h.onClose(event.code, event.reason);
        return;
      }
      if (!closedByUs && reconnect) {
        // While rejoining, an id still held by our old session is worth waiting out.
        const taken = !welcomed && event.code === CloseCode.ID_TAKEN;
        if (taken) idTaken++;
        if ((isReconnectable(event.code) || taken) && attempt < reconnect.maxAttempts) {
          if (welcomed) h.onReconnecting?.({ code: event.code, reason: event.reason });
          const delay = backoffDelay(attempt++, reconnect, reconnect.random);
          h.onConnectionStatus?.({ state: 'reconnecting', part: 'relay', attempt, delayMs: delay, code: event.code });
          retryTimer = setTimeout(() => {
            retryTimer = null;
            if (closedByUs) return;
            counters.attempts++;
            open(null);
          }, delay);
          return;
        }
      }
      h.onClose(event.code, event.reason);
    };
  }

  return {
    name: options.name ?? (batched ? 'relay' : 'relay-faithful'),
    get ws() { return ws; },
    connect(join, h) {
      joinParams = join;
      handlers = h;
      closedByUs = false;
      return new Promise((resolve, reject) => open({ resolve, reject }));
    },
    sendUpdate(update) { send(update); },
    sendAck(sender, seq, acker) { send({ type: MsgType.ACK, sender, seq, acker }); },
    sendStats(stats) { send({ type: MsgType.STATS, clientId: stats.id ?? 0, stats }); },
    sendSignal(m) { send(m); },
    channelInfo: () => ({ kind: 'websocket', ordered: true, maxRetransmits: null, maxPacketLifeTime: null, protocol: '' }),
    /** Reconnection counters: rejoins that succeeded, attempts made, the last close code seen. */
    reconnectInfo: () => ({ ...counters }),
    close() {
      closedByUs = true;
      flush();
      if (retryTimer !== null) {
        // Between two attempts there is no socket to close: report the close ourselves.
        clearTimeout(retryTimer);
        retryTimer = null;
        handlers?.onClose(1000, 'closed while reconnecting');
        return;
      }
      if (ws && ws.readyState <= 1) ws.close(1000, 'bye');
    },
  };
}
