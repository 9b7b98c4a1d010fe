// Transport `socketio`: the lab's Socket.IO baseline (relay/baselines.js).
// Same frames, carried as binary Socket.IO events named 'm'; every message
// is its own emit, every ACK goes back to its sender (relay-faithful semantics).

import { MsgType, ProtocolError, decode, encode } from '../../core/protocol.js';

/** @typedef {typeof import('socket.io-client').io} SocketIoConnect socket.io-client's `io` */

/**
 * @param {{ url: string, path?: string, io: SocketIoConnect, now?: () => number }} options
 *   url: http(s) origin; io: the socket.io-client `io` function
 * @returns {import('../../core/client.js').Transport}
 */
export function createSocketIoTransport(options) {
  const now = options.now ?? (() => performance.now());
  /** @type {import('socket.io-client').Socket | null} */
  let socket = null;
  return {
    name: 'socketio',
    connect(join, handlers) {
      return new Promise((resolve, reject) => {
        const io = options.io(options.url, {
          path: options.path ?? '/socket.io', transports: ['websocket'], reconnection: false, forceNew: true,
        });
        socket = io;
        let welcomed = false;
        io.on('connect', () => {
          io.emit('m', encode({ type: MsgType.HELLO, flags: 0, clientId: 0, group: join.group, name: join.name, token: join.token ?? '' }));
        });
        io.on('m', (data) => {
          const arrival = now();
          const m = decode(data);
          if (m instanceof ProtocolError) return;
          switch (m.type) {
            case MsgType.WELCOME: welcomed = true; resolve(m); break;
            case MsgType.UPDATE: handlers.onUpdate(m, arrival); break;
            case MsgType.ACK: handlers.onAck(m); break;
            case MsgType.MEMBER_JOINED: handlers.onMemberJoined(m); break;
            case MsgType.MEMBER_LEFT: handlers.onMemberLeft(m.id); break;
            default: break;
          }
        });
        io.on('connect_error', (err) => { if (!welcomed) reject(err); });
        io.on('disconnect', (reason) => {
          if (!welcomed) reject(new Error(`socket.io disconnected before WELCOME: ${reason}`));
          handlers.onClose(1000, String(reason));
        });
      });
    },
    sendUpdate(update) { socket?.emit('m', encode(update)); },
    sendAck(sender, seq, acker) { socket?.emit('m', encode({ type: MsgType.ACK, sender, seq, acker })); },
    channelInfo: () => ({ kind: 'socket.io', ordered: true, maxRetransmits: null, maxPacketLifeTime: null, protocol: 'socket.io' }),
    close() { socket?.disconnect(); },
  };
}
