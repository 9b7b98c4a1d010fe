// Two baselines the lab measures our relay against, on the same load, the
// same machine, the same minute (issue: "a peer baseline in the same run"):
//
// - `socketio`: the same protocol through a Socket.IO server using rooms,
//   the way many teams would write it: one emit per message, a room
//   broadcast for each UPDATE, every ACK emitted to its update's sender.
// - `ws-floor`: a bare `ws` forwarder with no group bookkeeping beyond the
//   minimum for the protocol to work (who is in which group, who has which
//   id): no ACK tracking, no RTS, no batching, no limits. The practical floor.
//
// Both speak the frames of core/protocol.js (clients in mode
// relay-faithful semantics: every ACK reaches the sender). Lab use only.

import { Server as SocketIoServer } from 'socket.io';
import { WebSocketServer } from 'ws';
import { MsgType, decode, encode } from '../../core/protocol.js';
import { CpuSampler } from '../../relay/stats.js';
import { pathnameOf } from '../../relay/index.js';

/**
 * Counters both baselines keep: enough for the lab's CPU and traffic figures.
 */
function createCounters() {
  const cpu = new CpuSampler();
  const c = {
    framesIn: 0, framesOut: 0, bytesIn: 0, bytesOut: 0, updatesForwarded: 0,
    reset() { c.framesIn = 0; c.framesOut = 0; c.bytesIn = 0; c.bytesOut = 0; c.updatesForwarded = 0; cpu.reset(); },
    /** @param {Record<string, number>} gauges */
    snapshot(gauges) {
      return {
        ...gauges, framesIn: c.framesIn, framesOut: c.framesOut, bytesIn: c.bytesIn, bytesOut: c.bytesOut,
        updatesForwarded: c.updatesForwarded,
        messagesOut: c.framesOut, rts: { mean: null, max: null, n: 0 }, cpuPct: cpu.current, cpuPctMean: cpu.mean,
      };
    },
    stop() { cpu.stop(); },
  };
  return c;
}

/**
 * One group's membership: id -> send function.
 * @typedef {Map<number, { name: string, send: (frame: Uint8Array) => void }>} Members
 */

/**
 * The join/leave/forward logic both baselines share, minimal on purpose.
 * @param {ReturnType<typeof createCounters>} counters
 */
function createMinimalGroups(counters) {
  /** @type {Map<string, Members>} */
  const groups = new Map();
  let nextId = 1;
  return {
    groups,
    /**
     * @param {string} name @param {string} display @param {(frame: Uint8Array) => void} send
     * @returns {{ id: number, members: Members }}
     */
    join(name, display, send) {
      let members = groups.get(name);
      if (!members) { members = new Map(); groups.set(name, members); }
      const id = nextId++;
      const joined = encode({ type: MsgType.MEMBER_JOINED, id, name: display });
      for (const m of members.values()) { counters.framesOut++; m.send(joined); }
      members.set(id, { name: display, send });
      counters.framesOut++;
      send(encode({ type: MsgType.WELCOME, clientId: id, serverTime: Date.now(), members: [...members].map(([mid, m]) => ({ id: mid, name: m.name })) }));
      return { id, members };
    },
    /** @param {string} name @param {number} id */
    leave(name, id) {
      const members = groups.get(name);
      if (!members?.delete(id)) return;
      const left = encode({ type: MsgType.MEMBER_LEFT, id });
      for (const m of members.values()) { counters.framesOut++; m.send(left); }
      if (members.size === 0) groups.delete(name);
    },
  };
}

/**
 * The bare `ws` forwarder: UPDATE bytes go to every other member as they
 * came in, ACK bytes to the update's sender. Attach with `server` at `path`.
 * @param {{ server: import('node:http').Server, path?: string }} options
 */
export function createWsFloor(options) {
  const path = options.path ?? '/floor';
  const counters = createCounters();
  const minimal = createMinimalGroups(counters);
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload: 64 * 1024 });
  wss.on('connection', (ws) => {
    /** @type {{ id: number, group: string, members: Members } | null} */
    let me = null;
    const send = (/** @type {Uint8Array} */ frame) => { counters.bytesOut += frame.length; ws.send(frame); };
    ws.on('message', (data) => {
      const bytes = /** @type {Buffer} */ (data);
      counters.framesIn++;
      counters.bytesIn += bytes.length;
      const type = bytes[1];
      if (me && type === MsgType.UPDATE) {
        for (const [id, m] of me.members) if (id !== me.id) { counters.framesOut++; counters.updatesForwarded++; m.send(bytes); }
      } else if (me && type === MsgType.ACK && bytes.length >= 6) {
        const sender = bytes.readUInt32BE(2);
        const target = me.members.get(sender);
        if (target) { counters.framesOut++; target.send(bytes); }
      } else if (!me && type === MsgType.HELLO) {
        const hello = decode(bytes);
        if (hello instanceof Error || hello.type !== MsgType.HELLO) { ws.close(4000, 'bad HELLO'); return; }
        const joined = minimal.join(hello.group, hello.name, send);
        me = { id: joined.id, group: hello.group, members: joined.members };
      }
    });
    ws.on('close', () => { if (me) minimal.leave(me.group, me.id); });
    ws.on('error', () => {});
  });
  /** @param {import('node:http').IncomingMessage} req @param {import('node:stream').Duplex} socket @param {Buffer} head */
  const onUpgrade = (req, socket, head) => {
    if (pathnameOf(req.url) === path) wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
  };
  options.server.on('upgrade', onUpgrade);
  return {
    path,
    metrics: () => counters.snapshot({ clients: wss.clients.size, groups: minimal.groups.size }),
    resetWindow: () => counters.reset(),
    close() {
      options.server.off('upgrade', onUpgrade);
      counters.stop();
      for (const ws of wss.clients) ws.terminate();
      return new Promise((resolve) => wss.close(() => resolve(undefined)));
    },
  };
}

/**
 * The Socket.IO baseline: rooms per group, one emit per message.
 * @param {{ server: import('node:http').Server, path?: string }} options
 */
export function createSocketIoBaseline(options) {
  const path = options.path ?? '/socket.io';
  const counters = createCounters();
  const minimal = createMinimalGroups(counters);
  const io = new SocketIoServer(options.server, {
    path, serveClient: false, perMessageDeflate: false, transports: ['websocket'], maxHttpBufferSize: 64 * 1024,
  });
  /** @type {Map<number, import('socket.io').Socket>} */
  const byId = new Map();
  io.on('connection', (socket) => {
    /** @type {{ id: number, group: string } | null} */
    let me = null;
    const send = (/** @type {Uint8Array} */ frame) => { counters.bytesOut += frame.length; socket.emit('m', frame); };
    socket.on('m', (data) => {
      const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
      counters.framesIn++;
      counters.bytesIn += bytes.length;
      const msg = decode(bytes);
      if (msg instanceof Error) { socket.disconnect(true); return; }
      if (!me) {
        if (msg.type !== MsgType.HELLO) { socket.disconnect(true); return; }
        const joined = minimal.join(msg.group, msg.name, send);
        me = { id: joined.id, group: msg.group };
        byId.set(me.id, socket);
        socket.join(msg.group);
        return;
      }
      if (msg.type === MsgType.UPDATE) {
        const receivers = (io.sockets.adapter.rooms.get(me.group)?.size ?? 1) - 1;
        counters.framesOut += receivers;
        counters.updatesForwarded += receivers;
        counters.bytesOut += receivers * bytes.length;
        socket.to(me.group).emit('m', bytes);
      } else if (msg.type === MsgType.ACK) {
        const target = byId.get(msg.sender);
        if (target) { counters.framesOut++; counters.bytesOut += bytes.length; target.emit('m', bytes); }
      }
    });
    socket.on('disconnect', () => {
      if (!me) return;
      byId.delete(me.id);
      minimal.leave(me.group, me.id);
    });
  });
  return {
    path,
    metrics: () => counters.snapshot({ clients: io.engine.clientsCount, groups: minimal.groups.size }),
    resetWindow: () => counters.reset(),
    close() {
      counters.stop();
      return new Promise((resolve) => io.close(() => resolve(undefined)));
    },
  };
}
