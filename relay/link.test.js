// LINK (docs/protocol.md §14.1): a p2p link's UPDATE and ACK carried by the
// relay between membership-only sessions, its checks, and its budgets (an
// ACK for a LINK'd UPDATE that was delivered is paid by credit).
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { once } from 'node:events';
import { CloseCode, HelloFlag, MsgType, encode } from '../core/protocol.js';
import { rawClient } from './raw-client-harness.js';
import { createRelay } from './index.js';
import { costOf, countsOf } from './budget.js';
import { waitFor as until } from '../lab/shared/loop-stall.js';

/** @type {(() => Promise<void>)[]} */
const cleanups = [];
after(async () => { for (const c of cleanups) await c(); });

/** @param {import('./index.js').RelayOptions} [options] */
async function startRelay(options = {}) {
  const server = http.createServer();
  const relay = createRelay({ server, path: '/relay', ...options });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = /** @type {import('node:net').AddressInfo} */ (server.address());
  cleanups.push(async () => { await relay.close(); server.closeAllConnections(); await new Promise((r) => server.close(r)); });
  return { relay, url: `ws://127.0.0.1:${address.port}/relay` };
}

/** @type {import('../core/protocol.js').Pose} */
const POSE = [0, 0, 0, 0, 0, 0, 1];

/** A raw client (relay/raw-client-harness.js). */
const client = rawClient;

test('LINK carries an UPDATE to the named members and their ACK back, bytes unchanged', async () => {
  const { relay, url } = await startRelay();
  const a = await client(url, 'g', HelloFlag.MEMBERSHIP_ONLY);
  const b = await client(url, 'g', HelloFlag.MEMBERSHIP_ONLY);
  const c = await client(url, 'g', HelloFlag.MEMBERSHIP_ONLY);
  const update = { type: MsgType.UPDATE, sender: a.id, seq: 1, sendTime: 5, pose: POSE, object: null };
  a.ws.send(encode({ type: MsgType.LINK, peers: [b.id, 999], message: update }));
  // The receiver gets the carried UPDATE itself (its sender checked by the relay).
  await until(() => b.got.some((m) => m.type === MsgType.UPDATE));
  const got = /** @type {import('../core/protocol.js').UpdateMsg} */ (b.got.find((m) => m.type === MsgType.UPDATE));
  assert.deepEqual([got.sender, got.seq], [a.id, 1]);
  b.ws.send(encode({ type: MsgType.LINK, peers: [a.id], message: { type: MsgType.ACK, sender: a.id, seq: 1, acker: b.id } }));
  await until(() => a.got.some((m) => m.type === MsgType.ACK));
  const back = /** @type {import('../core/protocol.js').AckMsg} */ (a.got.find((m) => m.type === MsgType.ACK));
  assert.deepEqual([back.sender, back.seq, back.acker], [a.id, 1, b.id]);
  await new Promise((r) => setTimeout(r, 30));
  assert.equal(c.got.filter((m) => m.type === MsgType.UPDATE).length, 0, 'only the named member gets it');
  const links = /** @type {any} */ (relay.metrics()).links;
  assert.deepEqual(links, { in: 2, updates: 1, forwarded: 2, unknownPeer: 1, shed: 0, acksToRelayed: 0, forwardedRemote: 0 });
  assert.equal(a.closed ?? b.closed, null);
});

test('one group whatever the transport: relayed and p2p members exchange updates and ACKs, RTS and ACKED_ALL included', async () => {
  const { relay, url } = await startRelay();
  const r = await client(url, 'mix', HelloFlag.BATCHED); // mode relay
  const f = await client(url, 'mix', 0); // relay-faithful
  const p = await client(url, 'mix', HelloFlag.MEMBERSHIP_ONLY); // p2p
  await until(() => r.got.filter((m) => m.type === MsgType.MEMBER_JOINED).length === 2);
  // a relayed member's update reaches the p2p member; its LINK'd ACK completes the update
  r.ws.send(encode({ type: MsgType.UPDATE, sender: r.id, seq: 1, sendTime: 1, pose: POSE, object: null }));
  await until(() => p.got.some((m) => m.type === MsgType.UPDATE) && f.got.some((m) => m.type === MsgType.UPDATE));
  f.ws.send(encode({ type: MsgType.ACK, sender: r.id, seq: 1, acker: f.id }));
  p.ws.send(encode({ type: MsgType.LINK, peers: [r.id], message: { type: MsgType.ACK, sender: r.id, seq: 1, acker: p.id } }));
  await until(() => r.got.some((m) => m.type === MsgType.ACKED_ALL));
  const all = /** @type {import('../core/protocol.js').AckedAllMsg} */ (r.got.find((m) => m.type === MsgType.ACKED_ALL));
  assert.deepEqual([all.acked, all.dropped], [2, 0], 'both ACKs counted, the p2p one too');
  // the p2p member's update reaches both relayed members through LINK; their ACKs come back to it
  const update = { type: MsgType.UPDATE, sender: p.id, seq: 1, sendTime: 5, pose: POSE, object: null };
  p.ws.send(encode({ type: MsgType.LINK, peers: [r.id, f.id], message: update }));
  await until(() => r.got.filter((m) => m.type === MsgType.UPDATE).length === 1 && f.got.filter((m) => m.type === MsgType.UPDATE).length === 2);
  r.ws.send(encode({ type: MsgType.ACK, sender: p.id, seq: 1, acker: r.id }));
  f.ws.send(encode({ type: MsgType.ACK, sender: p.id, seq: 1, acker: f.id }));
  await until(() => p.got.filter((m) => m.type === MsgType.ACK).length === 2);
  assert.deepEqual(p.got.filter((m) => m.type === MsgType.ACK).map((m) => /** @type {import('../core/protocol.js').AckMsg} */ (m).acker).sort(), [r.id, f.id].sort());
  const metrics = /** @type {any} */ (relay.metrics());
  assert.equal(metrics.links.acksToRelayed, 1);
  assert.equal(metrics.unexpectedAcks, 0);
  for (const c of [r, f, p]) assert.equal(c.closed, null);
});

test('malformed scene data closes only its sender, with 4000 and the reason; a good scene block is forwarded byte for byte', async () => {
  const { url } = await startRelay();
  const good = await client(url, 'scene', HelloFlag.BATCHED);
  const bad = await client(url, 'scene', HelloFlag.BATCHED);
  const other = await client(url, 'scene', HelloFlag.MEMBERSHIP_ONLY);
  const record = { id: 9, version: 1, writer: good.id, kind: 1, removed: false, pose: POSE };
  const frame = encode({ type: MsgType.UPDATE, sender: good.id, seq: 1, sendTime: 1, pose: POSE, object: null, scene: { digest: 7, held: 2, records: [record] } });
  good.ws.send(frame);
  await until(() => other.got.some((m) => m.type === MsgType.UPDATE));
  const got = /** @type {import('../core/protocol.js').UpdateMsg} */ (other.got.find((m) => m.type === MsgType.UPDATE));
  assert.deepEqual(got.scene, { digest: 7, held: 2, records: [record] });
  // the same block with a record of kind 9
  const broken = encode({ type: MsgType.UPDATE, sender: bad.id, seq: 1, sendTime: 1, pose: POSE, object: null, scene: { digest: 7, held: 2, records: [{ ...record, writer: bad.id }] } });
  broken[47 + 7 + 12] = 9;
  bad.ws.send(broken);
  await until(() => bad.closed !== null);
  assert.equal(bad.closed?.code, CloseCode.BAD_FRAME);
  assert.match(bad.closed?.reason ?? '', /scene record of unknown kind 9/);
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(good.closed, null);
  assert.equal(other.closed, null);
});

test('LINK is refused on relayed sessions (4008) and with a spoofed sender or acker (4003)', async () => {
  const { url } = await startRelay();
  const relayed = await client(url, 'h', HelloFlag.BATCHED);
  relayed.ws.send(encode({ type: MsgType.LINK, peers: [1], message: { type: MsgType.ACK, sender: 1, seq: 1, acker: relayed.id } }));
  await until(() => relayed.closed !== null);
  assert.equal(relayed.closed?.code, CloseCode.PROTOCOL_VIOLATION);
  const p = await client(url, 'h', HelloFlag.MEMBERSHIP_ONLY);
  p.ws.send(encode({ type: MsgType.LINK, peers: [1], message: { type: MsgType.UPDATE, sender: p.id + 1, seq: 1, sendTime: 0, pose: POSE, object: null } }));
  await until(() => p.closed !== null);
  assert.equal(p.closed?.code, CloseCode.SPOOFED_SENDER);
  const q = await client(url, 'h', HelloFlag.MEMBERSHIP_ONLY);
  q.ws.send(encode({ type: MsgType.LINK, peers: [1], message: { type: MsgType.ACK, sender: 1, seq: 1, acker: q.id + 1 } }));
  await until(() => q.closed !== null);
  assert.equal(q.closed?.code, CloseCode.SPOOFED_SENDER);
});

test('budgets: a LINK costs what it carries; each delivered LINK UPDATE buys one ACK credit', async () => {
  const ack = { type: MsgType.LINK, message: { type: MsgType.ACK } };
  const upd = { type: MsgType.LINK, message: { type: MsgType.UPDATE } };
  assert.deepEqual(costOf(countsOf([ack, ack, upd]), 1), { credited: 1, charged: 2, updates: 1 });
  // A member flooded with LINK'd UPDATEs can ACK every one of them without being closed.
  const { url } = await startRelay({ maxMessagesPerSecond: 20, maxMessagesBurst: 5 });
  const a = await client(url, 'k', HelloFlag.MEMBERSHIP_ONLY);
  const b = await client(url, 'k', HelloFlag.MEMBERSHIP_ONLY);
  for (let seq = 1; seq <= 15; seq++) {
    a.ws.send(encode({ type: MsgType.LINK, peers: [b.id], message: { type: MsgType.UPDATE, sender: a.id, seq, sendTime: 0, pose: POSE, object: null } }));
    await new Promise((r) => setTimeout(r, 60)); // within a's own message rate
  }
  await until(() => b.got.filter((m) => m.type === MsgType.UPDATE).length === 15);
  for (let seq = 1; seq <= 15; seq++) b.ws.send(encode({ type: MsgType.LINK, peers: [a.id], message: { type: MsgType.ACK, sender: a.id, seq, acker: b.id } }));
  // 15 ACKs at once, three times b's message burst: all paid by credit.
  await until(() => a.got.filter((m) => m.type === MsgType.ACK).length === 15);
  assert.equal(b.closed, null);
  assert.equal(a.closed, null);
});
