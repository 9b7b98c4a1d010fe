// The composed p2p transport on fakes (a membership relay over fake
// WebSockets, fake PeerJS peers whose channels are paired): meshing, the
// channel parameters it reports, fan-out and ACKs, a member leaving, the
// discard knob, and both reconnections.
import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { CloseCode, MsgType } from '../../../core/protocol.js';
import { createP2PTransport, peerIdOf } from './p2p.js';
import { FakeNetwork, FakeRelay } from './p2p-fakes.js';
import { waitFor as until } from '../../../lab/shared/loop-stall.js';

const GROUP = 'p2p-unit';
const PEERJS = { host: '127.0.0.1', port: 1, path: '/peerjs', key: 'peerjs', secure: false };

/** @type {{ close: () => void }[]} */
const open = [];
afterEach(() => { for (const t of open.splice(0)) t.close(); });

/**
 * Joins one member: its transport and what its client core heard.
 * @param {{ relay: FakeRelay, network: FakeNetwork }} env
 * @param {string} name
 * @param {Partial<import('./p2p.js').P2PTransportOptions>} [extra]
 */
async function join(env, name, extra = {}) {
  const transport = createP2PTransport({
    relayUrl: 'ws://relay.test/relay', peerjs: PEERJS, Peer: env.network.Peer, WebSocket: env.relay.WebSocket,
    reconnect: { baseMs: 1, maxMs: 1 }, ...extra,
  });
  open.push(transport);
  /** @type {string[]} */
  const events = [];
  /** @type {import('../../../core/protocol.js').UpdateMsg[]} */
  const updates = [];
  /** @type {import('../../../core/protocol.js').AckMsg[]} */
  const acks = [];
  /** @type {any[]} */
  const status = [];
  const welcome = await transport.connect({ group: GROUP, name }, {
    onUpdate: (m) => updates.push(m),
    onAck: (m) => acks.push(m),
    onAckedAll: () => {},
    onMemberJoined: (m) => events.push(`joined ${m.id}`),
    onMemberLeft: (id) => events.push(`left ${id}`),
    onClose: (code, reason) => events.push(`closed ${code} ${reason}`),
    onConnectionStatus: (s) => status.push(s),
  });
  return { transport, welcome, id: welcome.clientId, events, updates, acks, status };
}

/** channelInfo() without the per-neighbour paths (p2p-fallback.test.js checks those). @param {any} info */
const withoutLinks = ({ links, ...rest }) => rest;

/** @param {number} sender @param {number} seq @returns {import('../../../core/protocol.js').UpdateMsg} */
const update = (sender, seq) => ({ type: MsgType.UPDATE, sender, seq, sendTime: seq, pose: [0, 0, 0, 0, 0, 0, 1], object: null });

function env() {
  return { relay: new FakeRelay(), network: new FakeNetwork() };
}

test('members mesh over the negotiated channel; channelInfo and setupInfo read it back', async () => {
  const e = env();
  const a = await join(e, 'a');
  const b = await join(e, 'b');
  const c = await join(e, 'c');
  assert.deepEqual(a.welcome.members, [{ id: a.id, name: 'a' }], 'neighbours come later, once their channel opens');
  await until(() => a.events.length === 2 && b.events.length === 2 && c.events.length === 2);
  assert.deepEqual(a.events.sort(), [`joined ${b.id}`, `joined ${c.id}`].sort());
  assert.equal(a.transport.peer && e.network.peers.get(peerIdOf(GROUP, a.id)) === /** @type {unknown} */ (a.transport.peer), true);
  assert.deepEqual(withoutLinks(a.transport.channelInfo()), {
    kind: 'rtcdatachannel', ordered: false, maxRetransmits: 0, maxPacketLifeTime: null, protocol: '', negotiated: true,
    channelId: 10, label: 'carlab-p2p', channels: 2, uniform: true,
  });
  await until(() => /** @type {any} */ (c.transport.setupInfo?.()).peers.length === 2);
  const setup = /** @type {any} */ (c.transport.setupInfo?.());
  assert.equal(typeof setup.signalingMs, 'number');
  assert.deepEqual(setup.peers.map((/** @type {any} */ p) => [p.initiator, p.maxRetransmits, p.negotiated]), [[true, 0, true], [true, 0, true]]);
  assert.equal(setup.counters.connectAttempts, 2);
  assert.equal(a.transport.counters.connectAttempts, 0, 'the oldest member only answers');
});

test('p2p-reliable reports ordered channels with unlimited retransmits', async () => {
  const e = env();
  const a = await join(e, 'a', { mode: 'p2p-reliable' });
  await join(e, 'b', { mode: 'p2p-reliable' });
  await until(() => a.events.length === 1);
  assert.deepEqual(withoutLinks(a.transport.channelInfo()), {
    kind: 'rtcdatachannel', ordered: true, maxRetransmits: null, maxPacketLifeTime: null, protocol: '', negotiated: true,
    channelId: 10, label: 'carlab-p2p-reliable', channels: 1, uniform: true,
  });
  assert.throws(() => createP2PTransport({ mode: /** @type {any} */ ('p2p-x'), relayUrl: '', peerjs: PEERJS, Peer: e.network.Peer }), /unknown p2p mode/);
});

test('an update fans out to every neighbour, each ACKs on its own channel; a member that leaves is dropped', async () => {
  const e = env();
  const a = await join(e, 'a');
  const b = await join(e, 'b');
  const c = await join(e, 'c');
  await until(() => a.events.length === 2 && b.events.length === 2 && c.events.length === 2);
  a.transport.sendUpdate(update(a.id, 1));
  await until(() => b.updates.length === 1 && c.updates.length === 1);
  assert.deepEqual([b.updates[0].sender, b.updates[0].seq, c.updates[0].seq], [a.id, 1, 1]);
  b.transport.sendAck(a.id, 1, b.id);
  c.transport.sendAck(a.id, 1, c.id);
  await until(() => a.acks.length === 2);
  assert.deepEqual(a.acks.map((m) => m.acker).sort(), [b.id, c.id].sort());

  c.transport.close();
  await until(() => a.events.includes(`left ${c.id}`) && b.events.includes(`left ${c.id}`));
  assert.deepEqual([...a.transport.links.keys()], [b.id]);
  a.transport.sendUpdate(update(a.id, 2));
  await until(() => b.updates.length === 2);
  assert.equal(c.updates.length, 1);
  assert.equal(a.transport.counters.sendErrors, 0);
});

test('discardIncomingFraction drops every n-th received update before the client core and counts it', async () => {
  const e = env();
  const a = await join(e, 'a');
  const b = await join(e, 'b', { discardIncomingFraction: 0.25 });
  await until(() => a.events.length === 1 && b.events.length === 1);
  for (let seq = 1; seq <= 8; seq++) a.transport.sendUpdate(update(a.id, seq));
  await until(() => b.transport.counters.updatesSeen === 8);
  assert.deepEqual(b.updates.map((m) => m.seq), [1, 2, 3, 5, 6, 7]);
  assert.equal(b.transport.counters.discarded, 2);
  assert.equal(/** @type {any} */ (b.transport.setupInfo?.()).counters.discarded, 2);
});

test('the relay restarts: membership rejoins under the same id, open channels are untouched', async () => {
  const e = env();
  const a = await join(e, 'a');
  const b = await join(e, 'b');
  await until(() => a.events.length === 1 && b.events.length === 1);
  e.relay.restart();
  await until(() => a.transport.counters.membershipRejoins === 1 && b.transport.counters.membershipRejoins === 1);
  await until(() => a.status.some((s) => s.part === 'membership' && s.state === 'connected'));
  assert.deepEqual(a.events, [`joined ${b.id}`], 'no one left');
  assert.equal(a.transport.counters.failures + b.transport.counters.failures, 0);
  b.transport.sendUpdate(update(b.id, 1));
  await until(() => a.updates.length === 1);
});

test('a rejoin under another id closes the transport with ID_TAKEN (our PeerJS id names the old one)', async () => {
  const e = env();
  const a = await join(e, 'a');
  const peer = /** @type {import('./p2p-fakes.js').FakePeer} */ (/** @type {unknown} */ (a.transport.peer));
  e.relay.keepIds = false;
  e.relay.restart();
  await until(() => a.events.some((x) => x.startsWith('closed')));
  assert.deepEqual(a.events, [`closed ${CloseCode.ID_TAKEN} rejoined the group with another id`]);
  assert.equal(a.transport.counters.membershipRejoins, 1);
  assert.equal(peer.destroyed, true);
});

test('the PeerServer goes away: Peer.reconnect() with the same id, counted, status reported; channels untouched', async () => {
  const e = env();
  const a = await join(e, 'a');
  const b = await join(e, 'b');
  await until(() => a.events.length === 1 && b.events.length === 1);
  const peer = /** @type {import('./p2p-fakes.js').FakePeer} */ (/** @type {unknown} */ (a.transport.peer));
  peer.disconnected = true;
  peer.emit('disconnected');
  assert.equal(a.transport.counters.signalingLost, 1);
  assert.deepEqual([a.status.at(-1).state, a.status.at(-1).part, a.status.at(-1).attempt], ['reconnecting', 'signaling', 1]);
  await until(() => peer.reconnects === 1, 2000);
  peer.disconnected = false;
  peer.emit('open', peer.id);
  assert.equal(a.transport.counters.signalingReconnects, 1);
  assert.deepEqual(a.status.at(-1), { state: 'connected', part: 'signaling' });
  b.transport.sendUpdate(update(b.id, 1));
  await until(() => a.updates.length === 1);
});

test('close: peer destroyed, membership closed, the close reported once', async () => {
  const e = env();
  const a = await join(e, 'a');
  const peer = /** @type {import('./p2p-fakes.js').FakePeer} */ (/** @type {unknown} */ (a.transport.peer));
  a.transport.close();
  assert.equal(peer.destroyed, true);
  await until(() => a.events.length === 1);
  assert.deepEqual(a.events, ['closed 1000 bye']);
});
