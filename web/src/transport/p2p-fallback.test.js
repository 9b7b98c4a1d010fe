// The relay fallback's state machine on fakes (docs/turn.md "Fallback"): a
// link that cannot be made within the bound, whose ICE fails or that dies
// carries its updates and ACKs through the relay (LINK), with the same ACK
// accounting; a later channel moves it back; per-neighbour paths and the
// setup records of each path are reported.
import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { MsgType } from '../../../core/protocol.js';
import { createP2PTransport } from './p2p.js';
import { FakeNetwork, FakeRelay } from './p2p-fakes.js';
import { waitFor as until } from '../../../lab/shared/loop-stall.js';

const GROUP = 'p2p-fallback';
const PEERJS = { host: '127.0.0.1', port: 1, path: '/peerjs', key: 'peerjs', secure: false };
const AFTER_MS = 60;

/** @type {{ close: () => void }[]} */
const open = [];
afterEach(() => { for (const t of open.splice(0)) t.close(); });

/**
 * @param {{ relay: FakeRelay, network: FakeNetwork }} env
 * @param {string} name
 * @param {Partial<import('./p2p.js').P2PTransportOptions>} [extra]
 */
async function join(env, name, extra = {}) {
  const transport = createP2PTransport({
    relayUrl: 'ws://relay.test/relay', peerjs: PEERJS, Peer: env.network.Peer, WebSocket: env.relay.WebSocket,
    reconnect: { baseMs: 1, maxMs: 1 }, fallback: { afterMs: AFTER_MS }, ...extra,
  });
  open.push(transport);
  /** @type {string[]} */
  const events = [];
  /** @type {import('../../../core/protocol.js').UpdateMsg[]} */
  const updates = [];
  /** @type {import('../../../core/protocol.js').AckMsg[]} */
  const acks = [];
  const welcome = await transport.connect({ group: GROUP, name }, {
    onUpdate: (m) => updates.push(m),
    onAck: (m) => acks.push(m),
    onAckedAll: () => {},
    onMemberJoined: (m) => events.push(`joined ${m.id}`),
    onMemberLeft: (id) => events.push(`left ${id}`),
    onClose: (code) => events.push(`closed ${code}`),
  });
  return { transport, id: welcome.clientId, events, updates, acks };
}

/** @param {number} sender @param {number} seq @returns {import('../../../core/protocol.js').UpdateMsg} */
const update = (sender, seq) => ({ type: MsgType.UPDATE, sender, seq, sendTime: seq, pose: [0, 0, 0, 0, 0, 0, 1], object: null });

/** @param {{ transport: import('./p2p.js').P2PTransport }} x @param {number} id */
const pathTo = (x, id) => x.transport.linkPaths().find((l) => l.id === id)?.path;

test('no channel within the bound: the neighbour joins on the relay path and updates and ACKs flow through LINK', async () => {
  const e = { relay: new FakeRelay(), network: new FakeNetwork() };
  e.network.blockDirect = 'silent';
  const a = await join(e, 'a');
  const b = await join(e, 'b');
  assert.equal(pathTo(a, b.id), 'connecting');
  assert.deepEqual(a.events, [], 'nobody is reported before the bound');
  await until(() => a.events.length === 1 && b.events.length === 1);
  assert.deepEqual([pathTo(a, b.id), pathTo(b, a.id)], ['relay', 'relay']);
  a.transport.sendUpdate(update(a.id, 1));
  await until(() => b.updates.length === 1);
  b.transport.sendAck(a.id, 1, b.id);
  await until(() => a.acks.length === 1);
  assert.deepEqual([a.acks[0].sender, a.acks[0].seq, a.acks[0].acker], [a.id, 1, b.id]);
  assert.deepEqual(e.relay.links.map((l) => [l.peers, l.message.type]), [[[b.id], MsgType.UPDATE], [[a.id], MsgType.ACK]]);
  const setup = /** @type {any} */ (a.transport.setupInfo?.());
  assert.equal(setup.paths.length, 1);
  assert.equal(setup.paths[0].path, 'relay');
  assert.ok(setup.paths[0].setupMs >= AFTER_MS - 5, `fallback after the bound (${setup.paths[0].setupMs} ms)`);
  assert.match(setup.paths[0].why, /no channel after/);
  assert.deepEqual(setup.links.map((/** @type {any} */ l) => l.path), ['relay']);
  assert.equal(a.transport.counters.fallbacks, 1);
  assert.equal(a.transport.counters.relayedUpdates, 1);
  assert.equal(b.transport.counters.relayedAcks, 1);
});

test('ICE failed: the link falls back at once, before the bound', async () => {
  const e = { relay: new FakeRelay(), network: new FakeNetwork() };
  e.network.blockDirect = 'fail';
  const a = await join(e, 'a', { fallback: { afterMs: 60_000 } });
  const b = await join(e, 'b', { fallback: { afterMs: 60_000 } });
  await until(() => a.events.length === 1 && b.events.length === 1, 1000);
  assert.deepEqual([pathTo(a, b.id), pathTo(b, a.id)], ['relay', 'relay']);
  assert.match(/** @type {any} */ (b.transport.setupInfo?.()).paths[0].why, /ICE failed/);
});

test('a direct link that dies moves onto the relay without a leave, and back once a new channel opens', async () => {
  const e = { relay: new FakeRelay(), network: new FakeNetwork() };
  const a = await join(e, 'a');
  const b = await join(e, 'b');
  await until(() => a.events.length === 1 && b.events.length === 1);
  assert.deepEqual([pathTo(a, b.id), pathTo(b, a.id)], ['direct', 'direct']);
  // The path breaks: every new attempt stays blocked for now.
  e.network.blockDirect = 'silent';
  // A browser fires close on both ends (the fake only on the far one).
  const channel = /** @type {import('./p2p-fakes.js').FakeChannel} */ (/** @type {unknown} */ (b.transport.links.get(a.id)?.channel));
  channel.close();
  channel.onclose?.();
  await until(() => pathTo(a, b.id) === 'relay' && pathTo(b, a.id) === 'relay');
  assert.deepEqual(a.events, [`joined ${b.id}`], 'no leave: the neighbour stays in the ACK sets');
  b.transport.sendUpdate(update(b.id, 1));
  await until(() => a.updates.length === 1);
  // The path heals: the dialler's next retry opens a channel and the link moves back.
  e.network.blockDirect = false;
  await until(() => pathTo(a, b.id) === 'direct' && pathTo(b, a.id) === 'direct', 5000);
  assert.equal(b.transport.counters.recoveries, 1);
  const before = e.relay.links.length;
  b.transport.sendUpdate(update(b.id, 2));
  await until(() => a.updates.length === 2);
  assert.equal(e.relay.links.length, before, 'back on the channel: nothing through the relay');
  assert.deepEqual(a.events, [`joined ${b.id}`]);
  const paths = /** @type {any} */ (b.transport.setupInfo?.()).paths.map((/** @type {any} */ p) => p.path);
  assert.deepEqual(paths, ['direct', 'relay', 'direct']);
});

test('a neighbour that sends through the relay pulls us onto the relay path before our own bound', async () => {
  const e = { relay: new FakeRelay(), network: new FakeNetwork() };
  e.network.blockDirect = 'silent';
  const a = await join(e, 'a', { fallback: { afterMs: 60_000 } });
  const b = await join(e, 'b', { fallback: { afterMs: AFTER_MS } });
  await until(() => b.events.length === 1);
  b.transport.sendUpdate(update(b.id, 1));
  await until(() => a.updates.length === 1 && a.events.length === 1);
  assert.equal(pathTo(a, b.id), 'relay');
  assert.match(/** @type {any} */ (a.transport.setupInfo?.()).paths[0].why, /neighbour uses the relay/);
});

test('fallback: false keeps the old behaviour: a neighbour without a channel is missing', async () => {
  const e = { relay: new FakeRelay(), network: new FakeNetwork() };
  e.network.blockDirect = 'silent';
  const a = await join(e, 'a', { fallback: false });
  await join(e, 'b', { fallback: false });
  await new Promise((r) => setTimeout(r, AFTER_MS * 3));
  assert.deepEqual(a.events, []);
  assert.equal(e.relay.links.length, 0);
});

test('a relayed UPDATE from someone who is no member, or a spoofed one, is ignored', async () => {
  const e = { relay: new FakeRelay(), network: new FakeNetwork() };
  e.network.blockDirect = 'silent';
  const a = await join(e, 'a');
  const b = await join(e, 'b');
  await until(() => a.events.length === 1);
  // b's LINK claiming another sender: the fake relay does not check, the transport does.
  const member = e.relay.members.get(a.id);
  member?.socket.deliver(new Uint8Array([1, 5, ...new Uint8Array(45)]));
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(a.updates.length, 0);
  assert.ok(b.id > 0);
});
