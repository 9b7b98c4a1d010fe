// One relay-udp channel attempt alone, on a fake RTCPeerConnection: the
// channel asked for, the offer, candidates held back until the answer, the
// setup timings, and failures reported to the owner.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UdpLink, errorText } from './link.js';
import { fakePeerConnectionClass, settle } from '../relay-fakes.js';

/** @param {number} [setupTimeoutMs] */
function setup(setupTimeoutMs = 60000) {
  const fake = fakePeerConnectionClass();
  const PC = /** @type {import('./link.js').PeerConnectionClass} */ (/** @type {unknown} */ (fake.RTCPeerConnection));
  let clock = 100;
  const link = new UdpLink(PC, [{ urls: 'stun:x' }], 3, clock);
  /** @type {any[]} */
  const signals = [];
  /** @type {string[]} */
  const events = [];
  let current = true;
  /** @type {import('./link.js').LinkOwner} */
  const owner = {
    isCurrent: () => current,
    signal: (p) => signals.push(p),
    opened: (l) => { events.push('opened'); l.markOpen(clock); },
    failed: (_l, why) => events.push(`failed ${why}`),
    message: (_l, data) => events.push(`message ${String(data)}`),
    badCandidate: () => events.push('bad candidate'),
  };
  link.start(owner, () => clock, setupTimeoutMs);
  const pc = fake.instances[0];
  return {
    link, pc, owner, channel: /** @type {import('../relay-fakes.js').FakeDataChannel} */ (pc.channel), signals, events,
    /** @param {number} t */ setClock: (t) => { clock = t; },
    notCurrent: () => { current = false; },
  };
}

test('the channel asked for: negotiated id 0, unordered, no retransmits, binary as ArrayBuffer', () => {
  const { pc, channel } = setup();
  assert.deepEqual(pc.config, { iceServers: [{ urls: 'stun:x' }] });
  assert.deepEqual([channel.label, channel.negotiated, channel.id, channel.ordered, channel.maxRetransmits, channel.binaryType],
    ['carlab-udp', true, 0, false, 0, 'arraybuffer']);
  setup().link.teardown();
});

test('offer, answer, candidates after the answer, timings', async () => {
  const { link, pc, channel, signals, events, owner, setClock } = setup();
  await settle();
  assert.deepEqual(signals, [{ type: 'offer', sdp: 'fake offer', attempt: 3 }]);
  assert.equal(link.setup.offerSentMs, 0);
  pc.gather('cand-1');
  pc.gather('');
  assert.equal(signals.length, 1, 'held back until the answer');
  setClock(130);
  link.applyAnswer(owner, 'answer sdp', () => 130);
  await settle();
  assert.equal(link.answered, true);
  assert.equal(link.setup.offerAnswerMs, 30);
  assert.deepEqual(signals.slice(1), [{ type: 'candidate', candidate: 'cand-1', mid: '0', attempt: 3 }]);
  assert.deepEqual(link.localCandidates, []);
  pc.gather('cand-2');
  assert.deepEqual(signals.at(-1), { type: 'candidate', candidate: 'cand-2', mid: '0', attempt: 3 }, 'after the answer: at once');
  setClock(150);
  pc.setState('iceConnectionState', 'connected', 'iceconnectionstatechange');
  setClock(160);
  pc.setState('connectionState', 'connected', 'connectionstatechange');
  setClock(170);
  channel.openNow();
  assert.deepEqual([link.setup.iceConnectedMs, link.setup.dtlsConnectedMs, link.setup.channelOpenMs, link.open], [50, 60, 70, true]);
  channel.deliver(new Uint8Array([1]));
  assert.deepEqual(events, ['opened', 'message [object ArrayBuffer]']);
});

test('held-back candidates go out when the answer is applied', async () => {
  const { link, pc, signals, owner } = setup();
  await settle();
  pc.gather('early');
  link.applyAnswer(owner, 'answer', () => 0);
  await settle();
  assert.deepEqual(signals.at(-1), { type: 'candidate', candidate: 'early', mid: '0', attempt: 3 });
});

test('a message before onopen opens the link; messages of an old attempt are ignored', () => {
  const { channel, events, notCurrent } = setup();
  channel.deliver(new Uint8Array([1]));
  assert.deepEqual(events, ['opened', 'message [object ArrayBuffer]']);
  notCurrent();
  channel.deliver(new Uint8Array([2]));
  assert.equal(events.length, 2);
});

test('failures: ICE, connection, channel close, refused answer, refused candidate, setup timeout', async () => {
  const { link, pc, channel, events, owner } = setup();
  pc.setState('iceConnectionState', 'failed', 'iceconnectionstatechange');
  pc.setState('connectionState', 'failed', 'connectionstatechange');
  channel.close();
  await settle();
  link.applyAnswer(owner, 'refused', () => 0);
  link.addRemoteCandidate(owner, 'refused', '0');
  link.addRemoteCandidate(owner, 'fine', '1');
  await settle();
  assert.deepEqual(pc.remoteCandidates, [{ candidate: 'fine', sdpMid: '1' }]);
  assert.deepEqual(events, ['failed ICE failed', 'failed connection failed', 'failed channel closed', 'failed answer: bad answer', 'bad candidate']);
  const slow = setup(5);
  await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(slow.events, ['failed channel not open after 5 ms']);
  slow.link.teardown();
  assert.equal(slow.pc.closed, true);
});

test('errorText', () => {
  assert.equal(errorText(new Error('e')), 'e');
  assert.equal(errorText({ message: 'm' }), 'm');
  assert.equal(errorText('s'), 's');
  assert.equal(errorText(null), 'null');
});
