// relay-udp's session alone, over a fake WebSocket and a fake
// RTCPeerConnection: join, signaling, the channel opening, data both ways,
// a lost channel offered again, and the WebSocket going away.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CloseCode, HelloFlag, MsgType, encode } from '../../../../core/protocol.js';
import { RelayUdpSession } from './session.js';
import { fakePeerConnectionClass, fakeWebSocketClass, settle } from '../relay-fakes.js';
import { until } from '../../../../lab/shared/loop-stall.js';

/**
 * Waits for a retry the session scheduled 1-2 ms ahead (at most 5 s): a test's own
 * short sleep can end first when the process was starved in between.
 * @param {() => boolean} done
 */
const retryDone = (done) => until(done, 5000);

/** @param {Partial<import('./session.js').UdpSessionOptions>} [more] */
function setup(more = {}) {
  const ws = fakeWebSocketClass();
  const pcs = fakePeerConnectionClass();
  const session = new RelayUdpSession({
    url: 'ws://relay', iceServers: [], WebSocket: ws.WebSocket, now: () => 0, batched: true,
    RTCPeerConnection: /** @type {import('./link.js').PeerConnectionClass} */ (/** @type {unknown} */ (pcs.RTCPeerConnection)),
    maxMessageBytes: 1100, setupTimeoutMs: 60000, retryBaseMs: 1, retryMaxMs: 2, connectTimeoutMs: 60000,
    discardIncomingFraction: undefined, ...more,
  });
  /** @type {string[]} */
  const events = [];
  /** @type {import('../../../../core/client.js').TransportHandlers} */
  const handlers = {
    onUpdate: (m) => events.push(`update ${m.seq}`),
    onAck: (m) => events.push(`ack ${m.seq}`),
    onAckedAll: (m) => events.push(`ackedAll ${m.seq}`),
    onMemberJoined: (m) => events.push(`joined ${m.id}`),
    onMemberLeft: (id) => events.push(`left ${id}`),
    onClose: (code) => events.push(`close ${code}`),
  };
  return { session, ws, pcs, events, handlers };
}

/** @param {import('../relay-fakes.js').FakeWebSocket} socket */
function signalsSent(socket) {
  return socket.messages().flatMap((m) => (!(m instanceof Error) && m.type === MsgType.SIGNAL ? [JSON.parse(m.payload)] : []));
}

/** Joins as client 5 with member 7 there, and answers the offer. @param {ReturnType<typeof setup>} s */
async function joinAndAnswer(s) {
  const joined = s.session.connect({ group: 'g', name: 'me' }, s.handlers);
  const socket = s.ws.instances[0];
  socket.open();
  socket.receive({ type: MsgType.WELCOME, clientId: 5, serverTime: 0, members: [{ id: 5, name: 'me' }, { id: 7, name: 'o' }] });
  await settle();
  const pc = s.pcs.instances[0];
  socket.receive({ type: MsgType.SIGNAL, from: 0, to: 5, payload: JSON.stringify({ type: 'answer', sdp: 'a', attempt: 1 }) });
  await settle();
  return { joined, socket, pc, channel: /** @type {import('../relay-fakes.js').FakeDataChannel} */ (pc.channel) };
}

test('connect: HELLO with the UDP flag, offer over SIGNAL, resolves when the channel opens', async () => {
  const s = setup();
  const { joined, socket, pc, channel } = await joinAndAnswer(s);
  const [hello] = socket.messages();
  assert.ok(!(hello instanceof Error) && hello.type === MsgType.HELLO && hello.flags === (HelloFlag.BATCHED | HelloFlag.SUPERSEDED_MARKS | HelloFlag.RESUME | HelloFlag.MORE | HelloFlag.UDP));
  assert.deepEqual(signalsSent(socket), [{ type: 'offer', sdp: 'fake offer', attempt: 1 }]);
  assert.deepEqual(pc.remoteDescription, { type: 'answer', sdp: 'a' });
  socket.receive({ type: MsgType.SIGNAL, from: 0, to: 5, payload: JSON.stringify({ type: 'answer', sdp: 'a', attempt: 9 }) });
  assert.equal(s.session.counters.staleSignals, 1);
  assert.equal(s.session.openChannel, null);
  channel.openNow();
  const w = await joined;
  assert.deepEqual(w.members, [{ id: 7, name: 'o' }, { id: 5, name: 'me' }]);
  assert.equal(s.session.openChannel, /** @type {unknown} */ (channel));
  assert.equal(s.session.setupInfo().peers.length, 1);
  assert.equal(s.session.channelInfo().channels, 1);
  assert.deepEqual(s.events, [], 'the members come with the WELCOME, not as joins');
});

test('data: sent on the channel in one frame per turn, received from it; garbage closes the WebSocket', async () => {
  const s = setup();
  const { joined, socket, channel } = await joinAndAnswer(s);
  s.session.sendData({ type: MsgType.ACK, sender: 7, seq: 1, acker: 5 });
  assert.equal(s.session.counters.notSent, 1, 'before the channel opened: not sent');
  channel.openNow();
  await joined;
  s.session.sendData({ type: MsgType.ACK, sender: 7, seq: 2, acker: 5 });
  s.session.sendData({ type: MsgType.ACK, sender: 7, seq: 3, acker: 5 });
  await Promise.resolve();
  assert.equal(channel.sent.length, 1);
  channel.deliver(encode({ type: MsgType.ACKED_ALL, sender: 5, seq: 4, acked: 1, dropped: 0 }));
  assert.deepEqual(s.events, ['ackedAll 4']);
  channel.deliver(new Uint8Array([9, 9]));
  assert.equal(socket.closedWith?.code, CloseCode.BAD_VERSION);
  assert.equal(s.session.counters.badFrames, 1);
});

test('a lost channel: members leave, the channel is offered again, members come back', async () => {
  const s = setup();
  const { joined, socket, channel } = await joinAndAnswer(s);
  channel.openNow();
  await joined;
  channel.close();
  await settle();
  assert.deepEqual(s.events, ['left 7']);
  assert.equal(s.session.counters.channelDrops, 1);
  assert.equal(s.session.setupInfo().failures[0].error, 'channel closed');
  await retryDone(() => s.pcs.instances.length >= 2);
  assert.equal(s.pcs.instances.length, 2, 'offered again');
  assert.equal(s.session.counters.dtlsRetries, 1);
  assert.deepEqual(signalsSent(socket).at(-1), { type: 'offer', sdp: 'fake offer', attempt: 2 });
  /** @type {import('../relay-fakes.js').FakeDataChannel} */ (s.pcs.instances[1].channel).openNow();
  assert.deepEqual(s.events, ['left 7', 'joined 7']);
});

test('the WebSocket closing before the channel opened rejects connect() and ends the attempts', async () => {
  const s = setup();
  const { joined, socket, pc } = await joinAndAnswer(s);
  socket.drop(1001, 'bye');
  await assert.rejects(joined, (/** @type {any} */ e) => e.code === 1001 && /before the data channel opened: 1001 bye/.test(e.message));
  assert.equal(pc.closed, true);
  assert.deepEqual(s.events, ['close 1001']);
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(s.pcs.instances.length, 1);
});

test('no channel within connectTimeoutMs: connect() fails naming the last error, and the session closes', async () => {
  const s = setup({ connectTimeoutMs: 20, setupTimeoutMs: 5, retryBaseMs: 100, retryMaxMs: 100 });
  const joined = s.session.connect({ group: 'g', name: 'me' }, s.handlers);
  s.ws.instances[0].open();
  s.ws.instances[0].receive({ type: MsgType.WELCOME, clientId: 5, serverTime: 0, members: [] });
  await assert.rejects(joined, /no data channel after 20 ms \(channel not open after 5 ms\)/);
  assert.equal(s.session.closed, true);
  assert.equal(s.session.counters.setupFailures, 1);
  assert.deepEqual(s.ws.instances[0].closedWith, { code: 1000, reason: 'bye' });
});

test('a peer connection that cannot be made counts as a setup failure and is tried again', async () => {
  let calls = 0;
  const Failing = class { constructor() { calls++; throw new Error('no WebRTC here'); } };
  const s = setup({ RTCPeerConnection: /** @type {any} */ (Failing), retryBaseMs: 1, retryMaxMs: 1 });
  s.session.connect({ group: 'g', name: 'me' }, s.handlers).catch(() => {});
  s.ws.instances[0].open();
  s.ws.instances[0].receive({ type: MsgType.WELCOME, clientId: 5, serverTime: 0, members: [] });
  await retryDone(() => calls >= 2);
  assert.ok(calls >= 2, `tried again: ${calls} attempts`);
  assert.equal(s.session.setupInfo().lastError, 'RTCPeerConnection: no WebRTC here');
  s.session.close();
  const after = calls;
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(calls, after, 'no attempt after close()');
});
