// A phone whose path goes dead (the network vanished: nothing arrives either
// way and nobody closes anything) notices on its own that its UPDATEs go
// unanswered, comes back on a new connection and resumes its session: same
// id, and its group never sees it leave. The dead path is a TCP proxy that
// stops forwarding its open connections; new ones pass.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { once } from 'node:events';
import WebSocket from 'ws';

import { HelloFlag, MsgType, decode, encode, unbatch } from '../core/protocol.js';
import { createRelayTransport } from '../web/src/transport/relay.js';
import { waitFor } from '../lab/shared/loop-stall.js';
import { createRelay } from './index.js';

/** @type {(() => unknown)[]} */
const cleanups = [];
after(async () => { for (const c of cleanups.reverse()) await c(); });

/**
 * A TCP proxy to `port` whose cut() turns every open connection into a dead
 * path: bytes and closes stop both ways, as when a phone's network vanishes.
 * @param {number} port
 */
async function deadablePath(port) {
  /** @type {Set<{ dead: boolean, sockets: net.Socket[] }>} */
  const open = new Set();
  const server = net.createServer((phone) => {
    const relay = net.connect(port, '127.0.0.1');
    const link = { dead: false, sockets: [phone, relay] };
    open.add(link);
    phone.on('data', (d) => { if (!link.dead) relay.write(d); });
    relay.on('data', (d) => { if (!link.dead) phone.write(d); });
    for (const [a, b] of [[phone, relay], [relay, phone]]) {
      a.on('error', () => {});
      a.on('close', () => { if (!link.dead) b.destroy(); });
    }
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanups.push(() => { for (const l of open) for (const s of l.sockets) s.destroy(); server.close(); });
  return {
    port: /** @type {net.AddressInfo} */ (server.address()).port,
    cut() { for (const l of open) l.dead = true; },
  };
}

test('a phone on a dead path rejoins on its own and resumes: same id, no MEMBER_LEFT', async () => {
  const server = http.createServer();
  const relay = createRelay({ server });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanups.push(async () => { await relay.close(); server.close(); });
  const relayPort = /** @type {net.AddressInfo} */ (server.address()).port;
  const path = await deadablePath(relayPort);

  // The neighbour, connected straight to the relay, records what its group does.
  const neighbour = new WebSocket(`ws://127.0.0.1:${relayPort}/relay`);
  /** @type {any[]} */
  const seen = [];
  let neighbourId = 0;
  neighbour.on('message', (data) => {
    const frame = decode(/** @type {Buffer} */ (data));
    if (frame instanceof Error) return;
    for (const m of unbatch(frame)) {
      seen.push(m);
      if (m.type === MsgType.WELCOME) neighbourId = m.clientId;
      // A neighbour ACKs what it gets, as every client does: the phone's updates are answered.
      if (m.type === MsgType.UPDATE) neighbour.send(encode({ type: MsgType.ACK, sender: m.sender, seq: m.seq, acker: neighbourId }));
    }
  });
  await once(neighbour, 'open');
  cleanups.push(() => neighbour.terminate());
  neighbour.send(encode({ type: MsgType.HELLO, flags: HelloFlag.BATCHED, clientId: 0, group: 'walk', name: 'n', token: '' }));
  await waitFor(() => seen.some((m) => m.type === MsgType.WELCOME), 2000);

  /** @type {string[]} */
  const events = [];
  const phone = createRelayTransport({
    url: `ws://127.0.0.1:${path.port}/relay`,
    WebSocket: /** @type {any} */ (WebSocket),
    reconnect: { random: () => 0 },
    silenceMs: 400,
  });
  cleanups.push(() => phone.close());
  const welcome = await phone.connect({ group: 'walk', name: 'phone' }, {
    onUpdate: () => {}, onAck: () => {}, onAckedAll: () => events.push('ackedAll'), onMemberJoined: () => {}, onMemberLeft: () => {},
    onClose: (code) => events.push(`close ${code}`),
    onReconnecting: (i) => events.push(`reconnecting ${i.reason}`),
    onReconnected: (m) => events.push(`reconnected ${m.clientId}`),
  });
  let seq = 0;
  const cycle = setInterval(() => phone.sendUpdate({ type: MsgType.UPDATE, sender: welcome.clientId, seq: ++seq, sendTime: 0, pose: [0, 0, 0, 0, 0, 0, 1], object: null }), 100);
  cleanups.push(() => clearInterval(cycle));
  await waitFor(() => events.includes('ackedAll'), 2000);

  path.cut();
  await waitFor(() => events.includes(`reconnected ${welcome.clientId}`), 5000);
  assert.ok(events.some((e) => e.startsWith('reconnecting no answer for 400 ms')), events.join(', '));
  assert.equal(relay.metrics().resumed, 1, 'taken over, not joined anew');
  // Its updates reach the neighbour again, from the same id.
  const before = seen.filter((m) => m.type === MsgType.UPDATE).length;
  await waitFor(() => seen.filter((m) => m.type === MsgType.UPDATE).length > before + 2, 2000);
  assert.ok(seen.filter((m) => m.type === MsgType.UPDATE).every((m) => m.sender === welcome.clientId));
  assert.deepEqual(seen.filter((m) => m.type === MsgType.MEMBER_LEFT), [], 'the group never saw it leave');
  assert.equal(seen.filter((m) => m.type === MsgType.MEMBER_JOINED).length, 1);
  assert.notEqual(neighbourId, welcome.clientId);
});
