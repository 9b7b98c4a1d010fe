// carlab's negotiated channel: requested parameters, parameters read back
// from the live channel, setup timings, getStats, the channelInfo summary.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  CARLAB_CHANNEL_ID, CHANNEL_PARAMS, openCarlabChannel, readChannel, setupStats, summarizeChannels, timeSetupPhases,
} from './p2p-channel.js';
import { FakeChannel, FakePeerConnection } from './p2p-fakes.js';

/** @param {FakePeerConnection} pc */
const asPc = (pc) => /** @type {RTCPeerConnection} */ (/** @type {unknown} */ (pc));
/** @param {FakeChannel} c */
const asChannel = (c) => /** @type {RTCDataChannel} */ (/** @type {unknown} */ (c));

test('openCarlabChannel: pre-negotiated id 10 with the mode\'s parameters, binary as ArrayBuffer', () => {
  for (const mode of /** @type {const} */ (['p2p', 'p2p-reliable'])) {
    const pc = new FakePeerConnection();
    openCarlabChannel(asPc(pc), mode);
    const [channel] = pc.channels;
    assert.equal(channel.label, `carlab-${mode}`);
    assert.equal(channel.negotiated, true);
    assert.equal(channel.id, CARLAB_CHANNEL_ID);
    assert.equal(channel.binaryType, 'arraybuffer');
    assert.equal(channel.ordered, CHANNEL_PARAMS[mode].ordered);
  }
  assert.equal(new FakePeerConnection().createDataChannel('x', { ...CHANNEL_PARAMS.p2p }).maxRetransmits, 0);
});

test('readChannel reports what the live channel says, not what was asked for', () => {
  const channel = new FakeChannel('carlab-p2p', { negotiated: true, id: 10, ...CHANNEL_PARAMS.p2p });
  // A browser that ignored maxRetransmits: the read-back must show it.
  channel.maxRetransmits = null;
  channel.ordered = true;
  assert.deepEqual(readChannel(asChannel(channel)), {
    ordered: true, maxRetransmits: null, maxPacketLifeTime: null, protocol: '', negotiated: true, channelId: 10, label: 'carlab-p2p',
  });
});

test('summarizeChannels: requested parameters while none is open, read-back ones and uniformity after', () => {
  assert.deepEqual(summarizeChannels([], 'p2p'),
    { kind: 'rtcdatachannel', ordered: false, maxRetransmits: 0, maxPacketLifeTime: null, protocol: '', channels: 0, uniform: true });
  const a = new FakeChannel('carlab-p2p', { negotiated: true, id: 10, ...CHANNEL_PARAMS.p2p });
  const b = new FakeChannel('carlab-p2p', { negotiated: true, id: 10, ...CHANNEL_PARAMS.p2p });
  const two = summarizeChannels([asChannel(a), asChannel(b)], 'p2p');
  assert.deepEqual(two, { kind: 'rtcdatachannel', ...readChannel(asChannel(a)), channels: 2, uniform: true });
  b.maxRetransmits = null;
  assert.equal(summarizeChannels([asChannel(a), asChannel(b)], 'p2p').uniform, false);
});

test('timeSetupPhases: each phase timed once from t0; ICE or DTLS failure reported', () => {
  const pc = new FakePeerConnection();
  let t = 100;
  /** @type {import('./p2p-channel.js').SetupPhases} */
  const setup = {};
  /** @type {string[]} */
  const failures = [];
  timeSetupPhases(asPc(pc), setup, 100, () => t, (why) => failures.push(why));
  t = 130; pc.set('signalingState', 'stable');
  t = 150; pc.set('iceConnectionState', 'checking');
  t = 160; pc.set('iceConnectionState', 'connected');
  t = 170; pc.set('connectionState', 'connected');
  t = 999; pc.set('iceConnectionState', 'completed'); pc.set('signalingState', 'stable');
  assert.deepEqual(setup, { offerAnswerMs: 30, iceConnectedMs: 60, dtlsConnectedMs: 70 });
  pc.set('iceConnectionState', 'failed');
  pc.set('connectionState', 'failed');
  assert.deepEqual(failures, ['ICE failed', 'connection failed']);
});

test('setupStats: the selected pair (Chromium: named on the transport; Firefox: marked selected), bytes over all pairs', async () => {
  const chromium = new FakePeerConnection();
  chromium.stats = [
    { id: 'T', type: 'transport', selectedCandidatePairId: 'P2' },
    { id: 'P1', type: 'candidate-pair', localCandidateId: 'L1', remoteCandidateId: 'R1', bytesSent: 10, bytesReceived: 1, packetsSent: 1, packetsReceived: 1 },
    { id: 'P2', type: 'candidate-pair', localCandidateId: 'L2', remoteCandidateId: 'R2', bytesSent: 90, bytesReceived: 9, packetsSent: 3, packetsReceived: 2 },
    { id: 'L2', type: 'local-candidate', candidateType: 'host' },
    { id: 'R2', type: 'remote-candidate', candidateType: 'srflx' },
  ];
  assert.deepEqual(await setupStats(asPc(chromium)), {
    candidateType: 'host/srflx', setupBytesSent: 100, setupBytesReceived: 10, setupPacketsSent: 4, setupPacketsReceived: 3,
  });
  const firefox = new FakePeerConnection();
  firefox.stats = [
    { id: 'P1', type: 'candidate-pair', selected: true, localCandidateId: 'L1', remoteCandidateId: 'R9' },
    { id: 'L1', type: 'local-candidate', candidateType: 'relay' },
  ];
  assert.equal((await setupStats(asPc(firefox))).candidateType, 'relay/?');
  assert.equal((await setupStats(asPc(new FakePeerConnection()))).candidateType, null);
});
