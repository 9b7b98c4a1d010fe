// Transport `relay` / `relay-faithful`: the WebSocket relay. Works with the
// browser's WebSocket and, in Node, with the `ws` package's (passed in).

import { HelloFlag, MsgType, ProtocolError, decode, encode } from '../core/protocol.js';

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
 * @property {(m: import('../core/protocol.js').SignalMsg) => void} [onSignal] SIGNALs from the relay (relay-udp)
 */

/**
 * Creates a relay transport (implements core/client.js Transport).
 * @param {RelayTransportOptions} options
 * @returns {import('../core/client.js').Transport & { ws: any, sendSignal: (m: import('../core/protocol.js').SignalMsg) => void }}
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

  return {
    name: options.name ?? (batched ? 'relay' : 'relay-faithful'),
    get ws() { return ws; },
    connect(join, handlers) {
      return new Promise((resolve, reject) => {
        ws = new WS(options.url);
        ws.binaryType = 'arraybuffer';
        let welcomed = false;
        ws.onopen = () => {
          ws.send(encode({
            type: MsgType.HELLO,
            flags: (batched ? HelloFlag.BATCHED : 0) | (options.membershipOnly ? HelloFlag.MEMBERSHIP_ONLY : 0)
              | (options.extraFlags ?? 0),
            clientId: join.clientId ?? 0,
            group: join.group,
            name: join.name,
            token: join.token ?? '',
          }));
        };
        ws.onmessage = (event) => {
          const arrival = now();
          const frame = decode(event.data);
          if (frame instanceof ProtocolError) {
            ws.close(frame.closeCode, frame.message.slice(0, 120));
            return;
          }
          const messages = frame.type === MsgType.BATCH ? frame.messages : [frame];
          for (const m of messages) {
            switch (m.type) {
              case MsgType.WELCOME:
                welcomed = true;
                handlers.onWelcome?.(m);
                resolve(m);
                break;
              case MsgType.UPDATE: handlers.onUpdate(m, arrival); break;
              case MsgType.ACK: handlers.onAck(m); break;
              case MsgType.ACKED_ALL: handlers.onAckedAll(m); break;
              case MsgType.MEMBER_JOINED: handlers.onMemberJoined(m); break;
              case MsgType.MEMBER_LEFT: handlers.onMemberLeft(m.id); break;
              case MsgType.SIGNAL: options.onSignal?.(m); break;
              default: break; // ERROR and others: informational
            }
          }
        };
        ws.onerror = () => {}; // the close event follows and carries the reason
        ws.onclose = (event) => {
          if (!welcomed) {
            const err = new Error(`relay closed before WELCOME: ${event.code} ${event.reason || ''}`.trim());
            /** @type {any} */ (err).code = event.code;
            reject(err);
          }
          handlers.onClose(event.code, event.reason);
        };
      });
    },
    sendUpdate(update) { send(update); },
    sendAck(sender, seq, acker) { send({ type: MsgType.ACK, sender, seq, acker }); },
    sendStats(stats) { send({ type: MsgType.STATS, clientId: stats.id ?? 0, stats }); },
    sendSignal(m) { send(m); },
    channelInfo: () => ({ kind: 'websocket', ordered: true, maxRetransmits: null, maxPacketLifeTime: null, protocol: '' }),
    close() {
      flush();
      if (ws && ws.readyState <= 1) ws.close(1000, 'bye');
    },
  };
}
