// carlab's negotiated channel: requested parameters, parameters read back
// from the live channel, setup timings, getStats, the channelInfo summary.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  CARLAB_CHANNEL_ID, CHANNEL_PARAMS, openCarlabChannel, readChannel, selectedPair, settledSetupStats, setupStats, summarizeChannels, timeSetupPhases, turnServerIps,
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
    candidateType: 'host/srflx', viaTurn: false, setupBytesSent: 100, setupBytesReceived: 10, setupPacketsSent: 4, setupPacketsReceived: 3,
  });
  const firefox = new FakePeerConnection();
  firefox.stats = [
    { id: 'P1', type: 'candidate-pair', selected: true, localCandidateId: 'L1', remoteCandidateId: 'R9' },
    { id: 'L1', type: 'local-candidate', candidateType: 'relay' },
  ];
  assert.equal((await setupStats(asPc(firefox))).candidateType, 'relay/?');
  assert.equal((await setupStats(asPc(new FakePeerConnection()))).candidateType, null);
});

test('turnServerIps: IP literals of turn: and turns: URLs, any port or transport; no STUN, no host names', () => {
  const ips = turnServerIps([
    { urls: 'stun:192.0.2.1:3478' },
    { urls: ['turn:203.0.113.10:3478?transport=udp', 'turn:203.0.113.10:3478?transport=tcp'], username: 'u', credential: 'c' },
    { urls: 'TURNS:[2001:DB8::1]:5349' },
    { urls: 'turn:198.51.100.7' },
    { urls: 'turns:turn.example.org:5349' },
  ]);
  assert.deepEqual([...ips].sort(), ['198.51.100.7', '2001:db8::1', '203.0.113.10']);
  assert.deepEqual([...turnServerIps([])], []);
});

/** A fake peer connection with a getStats report and the ICE servers it was configured with. @param {object[]} stats @param {RTCIceServer[]} [iceServers] */
function withStats(stats, iceServers = []) {
  const pc = new FakePeerConnection();
  pc.stats = stats;
  Object.assign(pc, { getConfiguration: () => ({ iceServers }) });
  return asPc(pc);
}

const TURN = [{ urls: ['turn:10.201.0.1:3478?transport=udp', 'turn:10.201.0.1:3478?transport=tcp'], username: '1:carlab', credential: 'x' }];

test('setupStats viaTurn, Chromium shape: a relay candidate on either side, or a prflx on the TURN server\'s IP (any port)', async () => {
  /** @param {object} local @param {object} remote */
  const chromium = (local, remote) => [
    { id: 'T', type: 'transport', selectedCandidatePairId: 'P' },
    { id: 'P', type: 'candidate-pair', localCandidateId: 'L', remoteCandidateId: 'R', state: 'succeeded', nominated: true },
    { id: 'L', type: 'local-candidate', transportId: 'T', protocol: 'udp', ...local },
    { id: 'R', type: 'remote-candidate', transportId: 'T', protocol: 'udp', ...remote },
  ];
  const host = { candidateType: 'host', address: '10.201.1.2', port: 51000 };
  const relayed = { candidateType: 'relay', address: '10.201.0.1', port: 49160, relayProtocol: 'udp' };
  // the other side's allocation, learnt from its connectivity check before its candidate was signalled
  const prflxOnTurn = { candidateType: 'prflx', address: '10.201.0.1', port: 62011 };
  const peer = { candidateType: 'host', address: '10.201.1.3', port: 52000 };

  assert.equal((await setupStats(withStats(chromium(relayed, peer), TURN))).viaTurn, true, 'relay/host');
  assert.equal((await setupStats(withStats(chromium(host, { ...relayed, port: 49170 }), TURN))).viaTurn, true, 'host/relay');
  const learnt = await setupStats(withStats(chromium(host, prflxOnTurn), TURN));
  assert.deepEqual([learnt.candidateType, learnt.viaTurn], ['host/prflx', true]);
  // the same pair without TURN servers in use: a peer-reflexive neighbour, direct
  assert.equal((await setupStats(withStats(chromium(host, prflxOnTurn), []))).viaTurn, false);
  // a prflx at a neighbour's own address is direct, TURN or not
  assert.equal((await setupStats(withStats(chromium(host, { ...peer, candidateType: 'prflx' }), TURN))).viaTurn, false);
  assert.equal((await setupStats(withStats(chromium(host, peer), TURN))).viaTurn, false, 'host/host');
  // a host on the TURN server's own machine shares its IP and is still direct
  assert.equal((await setupStats(withStats(chromium(host, { ...peer, address: '10.201.0.1' }), TURN))).viaTurn, false);
  // Chromium's deprecated `ip` field
  assert.equal((await setupStats(withStats(chromium(host, { candidateType: 'prflx', ip: '10.201.0.1', port: 1 }), TURN))).viaTurn, true);
  // no selected pair yet: nothing to say
  assert.equal((await setupStats(withStats([{ id: 'L', type: 'local-candidate', ...relayed }], TURN))).viaTurn, false);
});

test('setupStats viaTurn: the TURN server named by host name is known by the relay candidates the report lists', async () => {
  const byName = [{ urls: 'turn:turn.example.org:3478', username: 'u', credential: 'c' }];
  const stats = [
    { id: 'T', type: 'transport', selectedCandidatePairId: 'P' },
    { id: 'P', type: 'candidate-pair', localCandidateId: 'L1', remoteCandidateId: 'R1' },
    { id: 'L1', type: 'local-candidate', candidateType: 'host', address: '192.168.1.20', port: 50000 },
    { id: 'L2', type: 'local-candidate', candidateType: 'relay', address: '198.51.100.9', port: 49200 },
    { id: 'R1', type: 'remote-candidate', candidateType: 'prflx', address: '198.51.100.9', port: 49377 },
  ];
  assert.equal((await setupStats(withStats(stats, byName))).viaTurn, true);
  // the remote side's relay candidate names its TURN server too
  const remoteOnly = stats.map((s) => (s.id === 'L2' ? { ...s, type: 'remote-candidate', id: 'R2' } : s));
  assert.equal((await setupStats(withStats(remoteOnly, []))).viaTurn, true);
  // ICE servers given explicitly win over the configuration
  const bare = stats.filter((s) => s.id !== 'L2');
  assert.equal((await setupStats(withStats(bare, []), [{ urls: 'turn:198.51.100.9' }])).viaTurn, true);
  assert.equal((await setupStats(withStats(bare, byName))).viaTurn, false);
});

test('setupStats viaTurn, Firefox shape: the pair marked selected, relay, prflx on the TURN server, old field names', async () => {
  /** @param {object} local @param {object} remote */
  const firefox = (local, remote) => [
    { id: 'P', type: 'candidate-pair', selected: true, nominated: true, state: 'succeeded', localCandidateId: 'L', remoteCandidateId: 'R' },
    { id: 'P0', type: 'candidate-pair', selected: false, localCandidateId: 'L0', remoteCandidateId: 'R' },
    { id: 'L0', type: 'local-candidate', candidateType: 'host', address: '10.201.1.2', port: 50001, protocol: 'udp' },
    { id: 'L', type: 'local-candidate', protocol: 'udp', ...local },
    { id: 'R', type: 'remote-candidate', protocol: 'udp', ...remote },
  ];
  const relayTcp = { candidateType: 'relay', address: '10.201.0.1', port: 49300, relayProtocol: 'tcp' };
  const host = { candidateType: 'host', address: '10.201.1.2', port: 50000 };
  const ffRelay = await setupStats(withStats(firefox(relayTcp, { candidateType: 'relay', address: '10.201.0.1', port: 49301 }), TURN));
  assert.deepEqual([ffRelay.candidateType, ffRelay.viaTurn], ['relay/relay', true]);
  assert.equal((await setupStats(withStats(firefox(host, { candidateType: 'prflx', address: '10.201.0.1', port: 60000 }), TURN))).viaTurn, true);
  assert.equal((await setupStats(withStats(firefox(host, { candidateType: 'host', address: '10.201.1.3', port: 50002 }), TURN))).viaTurn, false);
  // Firefox before the spec's names: ipAddress/portNumber, 'relayed' and 'peerreflexive'
  assert.equal((await setupStats(withStats(firefox({ candidateType: 'relayed', ipAddress: '10.201.0.1', portNumber: 1 }, host), TURN))).viaTurn, true);
  assert.equal((await setupStats(withStats(firefox(host, { candidateType: 'peerreflexive', ipAddress: '10.201.0.1', portNumber: 2 }), TURN))).viaTurn, true);
  // a peer connection without getConfiguration (the fakes' default): only the report counts
  const bare = new FakePeerConnection();
  bare.stats = firefox(host, { candidateType: 'prflx', address: '10.201.0.1', port: 60000 });
  assert.equal((await setupStats(asPc(bare))).viaTurn, false);
});

test('settledSetupStats: a remote peer-reflexive candidate with its address hidden is read again until the other side\'s candidate names it', async () => {
  /** @param {object} remote */
  const report = (remote) => [
    { id: 'T', type: 'transport', selectedCandidatePairId: 'P' },
    { id: 'P', type: 'candidate-pair', localCandidateId: 'L', remoteCandidateId: 'R' },
    { id: 'L', type: 'local-candidate', candidateType: 'host', address: '10.201.1.2', port: 51000 },
    { id: 'R', type: 'remote-candidate', ...remote },
  ];
  // Chromium before the other side signalled its relay candidate: type prflx, no address (the spec hides it)
  const hidden = { candidateType: 'prflx', port: 60372 };
  const signalled = { candidateType: 'relay', address: '10.201.0.1', port: 60372 };
  const pc = new FakePeerConnection();
  pc.stats = report(hidden);
  const reads = { n: 0 };
  const getStats = pc.getStats.bind(pc);
  pc.getStats = async () => { if (++reads.n === 3) pc.stats = report(signalled); return getStats(); };
  assert.equal((await setupStats(asPc(pc))).viaTurn, false, 'one reading cannot tell');
  reads.n = 0;
  pc.stats = report(hidden);
  const settled = await settledSetupStats(asPc(pc), { everyMs: 5 });
  assert.deepEqual([settled.candidateType, settled.viaTurn, reads.n], ['host/relay', true, 3]);
  // a prflx whose address shows is decided at once; one that stays hidden gives up after waitMs (direct)
  pc.stats = report({ candidateType: 'prflx', address: '10.201.1.3', port: 1 });
  reads.n = -100;
  assert.equal((await settledSetupStats(asPc(pc), { everyMs: 5 })).viaTurn, false);
  assert.equal(reads.n, -99, 'read once');
  pc.stats = report(hidden);
  pc.getStats = getStats;
  const t0 = Date.now();
  assert.equal((await settledSetupStats(asPc(pc), { everyMs: 5, waitMs: 50 })).candidateType, 'host/prflx');
  assert.ok(Date.now() - t0 >= 50);
});

test('selectedPair names the selected pair by type, address and port; null without one or when getStats fails', async () => {
  const stats = [
    { id: 'T', type: 'transport', selectedCandidatePairId: 'P' },
    { id: 'P', type: 'candidate-pair', localCandidateId: 'L', remoteCandidateId: 'R', state: 'succeeded', nominated: true },
    { id: 'L', type: 'local-candidate', candidateType: 'host', address: '10.201.1.2', port: 51000 },
    { id: 'R', type: 'remote-candidate', candidateType: 'prflx', port: 52000 }, // its address hidden
  ];
  assert.equal(await selectedPair(withStats(stats)), 'host 10.201.1.2:51000 -> prflx ?:52000');
  assert.equal(await selectedPair(withStats([])), null);
  const broken = withStats([]);
  Object.assign(broken, { getStats: async () => { throw new Error('closed'); } });
  assert.equal(await selectedPair(broken), null);
});
