// `ws-floor-batched`: the floor of mode `relay`. A bare `ws` server that sends
// the frames the relay sends a mode-relay client — per socket, one BATCH of
// everything queued for it in an event-loop turn; to an update's sender one
// ACKED_ALL once every destination has acknowledged it — and does nothing else:
// no validation past the bytes it reads, no budgets, no stats beyond the lab's
// counters, no scene, no slow-consumer policy, no cluster. `relay`'s CPU per
// delivered update over this one's is what the relay's own work costs.
//
// It imports nothing from relay/ (only the codec, core/protocol.js), so that
// nothing the relay does creeps into the floor. Lab use only: a malformed
// frame may throw here, which `ws` turns into a closed socket.

import { WebSocketServer } from 'ws';
import { CAPABILITY_BITS, HelloFlag, MsgType, ackedAllBody, decode, encode, encodeBatchOfBodies, frameOfBody, u32At } from '../../core/protocol.js';

/** Pending updates a sender may have unanswered before the oldest is forgotten (a lost ACK never completes). */
const PENDING_MAX = 256;
/** Most messages one BATCH counts (a u16). */
const BATCH_MAX = 65535;

/**
 * One connected member.
 * @typedef {object} FloorMember
 * @property {import('ws').WebSocket} ws
 * @property {number} id
 * @property {string} name
 * @property {Map<number, FloorMember>} group the members of its group, itself included
 * @property {Uint8Array[]} out bodies queued for it this turn
 * @property {Map<number, number>} pending seq -> destinations * 65536 + ACKs still missing
 */

/** The counters the lab reads (the fields of lab/target/baselines.js); CPU is the server process's (lab/target/server-child.js). */
function createFloorCounters() {
  const c = {
    framesIn: 0, framesOut: 0, bytesIn: 0, bytesOut: 0, updatesForwarded: 0, messagesOut: 0,
    reset() { c.framesIn = 0; c.framesOut = 0; c.bytesIn = 0; c.bytesOut = 0; c.updatesForwarded = 0; c.messagesOut = 0; },
  };
  return c;
}

/** Frames and bodies from Node's Buffer pool, as the relay's. @param {number} size */
const pooledBytes = (size) => Buffer.allocUnsafe(size);

/**
 * The batched floor, attached to `server` at `path`.
 * @param {{ server: import('node:http').Server, path?: string }} options
 */
export function createWsFloorBatched(options) {
  const path = options.path ?? '/floor-batched';
  const counters = createFloorCounters();
  /** @type {Map<string, Map<number, FloorMember>>} */
  const groups = new Map();
  /** @type {FloorMember[]} members with bodies queued this turn */
  const dirty = [];
  let flushScheduled = false;
  let nextId = 1;

  const flushAll = () => {
    flushScheduled = false;
    for (const m of dirty) {
      const bodies = m.out;
      m.out = [];
      counters.messagesOut += bodies.length;
      for (let from = 0; from < bodies.length; from += BATCH_MAX) {
        const part = bodies.length <= BATCH_MAX ? bodies : bodies.slice(from, from + BATCH_MAX);
        const frame = part.length === 1 ? frameOfBody(part[0], pooledBytes) : encodeBatchOfBodies(part, pooledBytes);
        counters.framesOut++;
        counters.bytesOut += frame.length;
        m.ws.send(frame);
      }
    }
    dirty.length = 0;
  };

  /** @param {FloorMember} m @param {Uint8Array} body */
  const queue = (m, body) => {
    if (m.out.length === 0) dirty.push(m);
    m.out.push(body);
    if (!flushScheduled) { flushScheduled = true; setImmediate(flushAll); }
  };

  /** An UPDATE body from `me`: to every other member; its ACKs awaited. @param {FloorMember} me @param {Uint8Array} body */
  const onUpdate = (me, body) => {
    let n = 0;
    for (const m of me.group.values()) if (m !== me) { queue(m, body); n++; }
    counters.updatesForwarded += n;
    if (n === 0) return;
    me.pending.set(u32At(body, 5), n * 65536 + n);
    if (me.pending.size > PENDING_MAX) me.pending.delete(/** @type {number} */ (me.pending.keys().next().value));
  };

  /** An ACK body: one fewer missing; the last one answers the sender. @param {FloorMember} me @param {Uint8Array} body */
  const onAck = (me, body) => {
    const sender = u32At(body, 1);
    const target = me.group.get(sender);
    if (!target) return;
    const seq = u32At(body, 5);
    const state = target.pending.get(seq);
    if (state === undefined) return;
    if (state % 65536 > 1) { target.pending.set(seq, state - 1); return; }
    target.pending.delete(seq);
    queue(target, ackedAllBody(sender, seq, Math.min(Math.floor(state / 65536), 0xffff), 0, pooledBytes));
  };

  /** A body (type + payload) of a joined member. @param {FloorMember} me @param {Uint8Array} body */
  const onBody = (me, body) => {
    if (body[0] === MsgType.UPDATE) onUpdate(me, body);
    else if (body[0] === MsgType.ACK) onAck(me, body);
    // STATS and anything else: the floor has no use for them
  };

  /** A HELLO: joins its group (mode relay only). @param {import('ws').WebSocket} ws @param {Uint8Array} bytes */
  const join = (ws, bytes) => {
    const hello = decode(bytes);
    if (hello instanceof Error || hello.type !== MsgType.HELLO) { ws.close(4000, 'bad HELLO'); return null; }
    if ((hello.flags & HelloFlag.BATCHED) === 0 || (hello.flags & (HelloFlag.UDP | HelloFlag.MEMBERSHIP_ONLY)) !== 0) {
      ws.close(4008, 'ws-floor-batched speaks mode relay only');
      return null;
    }
    let group = groups.get(hello.group);
    if (!group) { group = new Map(); groups.set(hello.group, group); }
    /** @type {FloorMember} */
    const me = { ws, id: nextId++, name: hello.name, group, out: [], pending: new Map() };
    const joined = encode({ type: MsgType.MEMBER_JOINED, id: me.id, name: hello.name }).subarray(1);
    for (const m of group.values()) queue(m, joined);
    const members = [...group.values()].map((m) => ({ id: m.id, name: m.name }));
    group.set(me.id, me);
    const asked = (hello.flags & CAPABILITY_BITS) !== 0;
    // grants no capability: it never replaces a pose, so it has no SUPERSEDED to send
    queue(me, encode({ type: MsgType.WELCOME, clientId: me.id, serverTime: Date.now(), members, ...(asked ? { capabilities: 0 } : {}) }).subarray(1));
    return me;
  };

  /** @param {FloorMember} me */
  const leave = (me) => {
    me.group.delete(me.id);
    if (me.group.size === 0) { for (const [name, g] of groups) if (g === me.group) groups.delete(name); return; }
    const left = encode({ type: MsgType.MEMBER_LEFT, id: me.id }).subarray(1);
    for (const m of me.group.values()) queue(m, left);
  };

  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload: 64 * 1024 });
  wss.on('connection', (ws) => {
    /** @type {FloorMember | null} */
    let me = null;
    ws.on('message', (data) => {
      const bytes = /** @type {Buffer} */ (data);
      counters.framesIn++;
      counters.bytesIn += bytes.length;
      if (!me) { me = join(ws, bytes); return; }
      if (bytes[1] !== MsgType.BATCH) { onBody(me, bytes.subarray(1)); return; }
      const n = bytes.readUInt16BE(2);
      for (let i = 0, pos = 4; i < n; i++) {
        const len = bytes.readUInt16BE(pos);
        onBody(me, bytes.subarray(pos + 2, pos + 2 + len));
        pos += 2 + len;
      }
    });
    ws.on('close', () => { if (me) leave(me); });
    ws.on('error', () => {});
  });

  /** @param {import('node:http').IncomingMessage} req @param {import('node:stream').Duplex} socket @param {Buffer} head */
  const onUpgrade = (req, socket, head) => {
    if ((req.url ?? '').split('?')[0] === path) wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
  };
  options.server.on('upgrade', onUpgrade);
  return {
    path,
    metrics: () => ({
      clients: wss.clients.size, groups: groups.size,
      framesIn: counters.framesIn, framesOut: counters.framesOut, bytesIn: counters.bytesIn, bytesOut: counters.bytesOut,
      updatesForwarded: counters.updatesForwarded, messagesOut: counters.messagesOut,
      rts: { mean: null, max: null, n: 0 }, cpuPct: null, cpuPctMean: null,
    }),
    resetWindow: () => counters.reset(),
    close() {
      options.server.off('upgrade', onUpgrade);
      for (const ws of wss.clients) ws.terminate();
      return new Promise((resolve) => wss.close(() => resolve(undefined)));
    },
  };
}
