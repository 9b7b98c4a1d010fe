// The relay's floor (floor-batched.js) speaks mode relay to the real client: every update reaches
// every neighbour, its sender hears one ACKED_ALL per update, what one turn queues for a socket
// is one frame; a client in another mode is refused with a close code and reason.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { once } from 'node:events';
import WebSocket from 'ws';
import { createWsFloorBatched } from './floor-batched.js';
import { CarClient } from '../../core/client.js';
import { createLabTransport } from '../sim/transports.js';
import { waitFor } from '../shared/loop-stall.js';
import { HelloFlag, MsgType, decode, encode } from '../../core/protocol.js';

const pose = () => /** @type {any} */ ([0, 0, 0, 0, 0, 0, 1]);

/** A floor on a fresh HTTP server; `run` gets its base URL. @param {(base: string, floor: ReturnType<typeof createWsFloorBatched>) => Promise<void>} run */
async function withFloor(run) {
  const server = http.createServer();
  const floor = createWsFloorBatched({ server });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    await run(`http://127.0.0.1:${/** @type {any} */ (server.address()).port}`, floor);
  } finally {
    await floor.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
}

test('three mode-relay clients: every update acknowledged by one ACKED_ALL, batched frames', { timeout: 60_000 }, async () => {
  await withFloor(async (base, floor) => {
    /** @type {CarClient[]} */
    const clients = [];
    for (let i = 0; i < 3; i++) {
      const c = new CarClient({
        transport: createLabTransport('ws-floor-batched', { baseUrl: base, WebSocket, config: { iceServers: [], relayPath: '/relay', peerjs: /** @type {any} */ ({}) } }),
        group: 'floor', name: `c${i}`, cycleMs: 50, ackTimeoutMs: 5000, pose,
      });
      await c.connect();
      clients.push(c);
    }
    await waitFor(() => clients.every((c) => c.members.size === 2), 10_000, () => 'every client sees the other two');
    floor.resetWindow();
    for (const c of clients) c.start();
    await waitFor(() => clients.every((c) => c.cycle.completed >= 20), 30_000, () => 'twenty updates each, acknowledged');
    for (const c of clients) c.stop();
    const m = floor.metrics();
    for (const c of clients) {
      assert.equal(c.cycle.ackTimeouts, 0);
      assert.equal(c.closedWith, null);
    }
    assert.ok(m.updatesForwarded >= 2 * 20 * 3, `delivered ${m.updatesForwarded}`);
    assert.equal(m.clients, 3);
    for (const c of clients) c.close();
  });
});

test('what one turn queues for a socket goes out as one BATCH frame', async () => {
  await withFloor(async (base) => {
    const url = `${base.replace('http', 'ws')}/floor-batched`;
    /** @type {any[]} frames the receiver got, decoded */
    const frames = [];
    const receiver = new WebSocket(url);
    receiver.on('message', (d) => frames.push(decode(/** @type {Buffer} */ (d))));
    await once(receiver, 'open');
    receiver.send(encode({ type: MsgType.HELLO, flags: HelloFlag.BATCHED, clientId: 0, group: 'g', name: 'r', token: '' }));
    const sender = new WebSocket(url);
    /** @type {any[]} */
    const toSender = [];
    sender.on('message', (d) => { const m = /** @type {any} */ (decode(/** @type {Buffer} */ (d))); toSender.push(...(m.type === MsgType.BATCH ? m.messages : [m])); });
    await once(sender, 'open');
    sender.send(encode({ type: MsgType.HELLO, flags: HelloFlag.BATCHED, clientId: 0, group: 'g', name: 's', token: '' }));
    await waitFor(() => toSender.some((m) => m.type === MsgType.WELCOME) && frames.length >= 2, 10_000, () => 'both joined');
    const id = toSender.find((m) => m.type === MsgType.WELCOME).clientId;
    frames.length = 0;
    const updates = [1, 2, 3, 4, 5].map((seq) => ({ type: MsgType.UPDATE, sender: id, seq, sendTime: 0, pose: pose(), object: null }));
    sender.send(encode({ type: MsgType.BATCH, messages: updates }));
    await waitFor(() => frames.length >= 1, 10_000, () => 'the updates');
    assert.equal(frames[0].type, MsgType.BATCH);
    assert.deepEqual(frames[0].messages.map((/** @type {any} */ m) => m.seq), [1, 2, 3, 4, 5]);
    // the receiver answers all five in one frame: the sender hears five ACKED_ALLs, each for one destination
    receiver.send(encode({ type: MsgType.BATCH, messages: updates.map((u) => ({ type: MsgType.ACK, sender: id, seq: u.seq, acker: 0 })) }));
    await waitFor(() => toSender.filter((m) => m.type === MsgType.ACKED_ALL).length === 5, 10_000, () => 'five ACKED_ALLs');
    assert.deepEqual(toSender.filter((m) => m.type === MsgType.ACKED_ALL).map((m) => [m.seq, m.acked, m.dropped]), [[1, 1, 0], [2, 1, 0], [3, 1, 0], [4, 1, 0], [5, 1, 0]]);
    receiver.close();
    sender.close();
  });
});

test('a relay-faithful or relay-udp HELLO is closed 4008 with its reason', async () => {
  await withFloor(async (base) => {
    for (const flags of [0, HelloFlag.BATCHED | HelloFlag.UDP]) {
      const ws = new WebSocket(`${base.replace('http', 'ws')}/floor-batched`);
      await once(ws, 'open');
      ws.send(encode({ type: MsgType.HELLO, flags, clientId: 0, group: 'g', name: 'n', token: '' }));
      const [code, reason] = await once(ws, 'close');
      assert.equal(code, 4008, `flags ${flags}`);
      assert.match(String(reason), /mode relay only/);
    }
  });
});

test('a member that leaves is announced to the others', async () => {
  await withFloor(async (base) => {
    const url = `${base.replace('http', 'ws')}/floor-batched`;
    /** @type {any[]} */
    const seen = [];
    const a = new WebSocket(url);
    a.on('message', (d) => { const m = /** @type {any} */ (decode(/** @type {Buffer} */ (d))); seen.push(...(m.type === MsgType.BATCH ? m.messages : [m])); });
    await once(a, 'open');
    a.send(encode({ type: MsgType.HELLO, flags: HelloFlag.BATCHED, clientId: 0, group: 'g', name: 'a', token: '' }));
    const b = new WebSocket(url);
    await once(b, 'open');
    b.send(encode({ type: MsgType.HELLO, flags: HelloFlag.BATCHED, clientId: 0, group: 'g', name: 'b', token: '' }));
    await waitFor(() => seen.some((m) => m.type === MsgType.MEMBER_JOINED && m.name === 'b'), 10_000, () => 'b joined');
    b.close();
    await waitFor(() => seen.some((m) => m.type === MsgType.MEMBER_LEFT), 10_000, () => 'b left');
    assert.equal(seen[0].type, MsgType.WELCOME);
    a.close();
  });
});
