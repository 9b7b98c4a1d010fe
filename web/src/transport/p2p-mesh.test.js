// The mesh's bookkeeping and one link's lifecycle, on fake PeerJS objects:
// who dials, channel open -> member reported, departures, retries, the
// grace period after a relay restart, incoming connections that are refused.
import { afterEach, test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { LINK_SILENCE_MS, MEMBERSHIP_GRACE_MS, P2PMesh, RETRY_BASE_MS, peerIdOf } from './p2p-mesh.js';
import { P2PLink, SETUP_TIMEOUT_MS } from './p2p-link.js';
import { FakeDataConnection, FakeNetwork } from './p2p-fakes.js';

const GROUP = 'mesh-test';
/** Meshes a test made: closed after it, so no retry or setup timer outlives it. @type {P2PMesh[]} */
const made = [];
afterEach(() => { for (const mesh of made.splice(0)) mesh.close(); });

/**
 * A mesh for client `myId` whose Peer is on a fake network; `events` logs
 * what the client core hears.
 * @param {number} myId
 */
function makeMesh(myId) {
  const network = new FakeNetwork();
  network.autoOpen = false;
  network.openPeers = false;
  const peer = new network.Peer(peerIdOf(GROUP, myId), {});
  /** @type {import('./p2p-mesh.js').MeshCounters} */
  const counters = { connectAttempts: 0, failures: 0, retries: 0, membershipRejoins: 0 };
  /** @type {string[]} */
  const events = [];
  /** @type {[number, any][]} */
  const messages = [];
  const mesh = new P2PMesh({
    mode: 'p2p', now: () => 0, counters, peer: () => peer, random: () => 1,
    onMessage: (link, data) => messages.push([link.id, data]),
  });
  made.push(mesh);
  mesh.group = GROUP;
  mesh.myId = myId;
  mesh.handlers = { onMemberJoined: (m) => events.push(`joined ${m.id} ${m.name}`), onMemberLeft: (id) => events.push(`left ${id}`) };
  return { network, peer, mesh, counters, events, messages };
}

/** Lets microtasks and the channel's async onopen run. */
const settle = () => new Promise((r) => setImmediate(r));

describe('P2PMesh', () => {
  test('peerIdOf is stable and group-scoped', () => {
    assert.equal(peerIdOf('g', 3), peerIdOf('g', 3));
    assert.notEqual(peerIdOf('g', 3), peerIdOf('h', 3));
    assert.match(peerIdOf('g', 3), /^carlab-[0-9a-z]+-3$/);
  });

  test('an ICE restart that brought a link back is recorded at the dialling end with its pairs and channel', () => {
    const { mesh, counters } = makeMesh(5);
    mesh.memberAppeared(2, 'older', 1 | 2); // we have the larger id: we dial
    const link = /** @type {P2PLink} */ (mesh.links.get(2));
    mesh.restarted(link, { ms: 412.4, pairBefore: 'host 10.0.1.2:1 -> host 10.0.2.2:2', pairAfter: 'host 10.0.9.2:3 -> host 10.0.2.2:2', sameChannel: true });
    mesh.restarted(link, { ms: 90, pairBefore: null, pairAfter: null, sameChannel: false });
    assert.deepEqual([counters.iceRestarts, counters.restartsNewPair, counters.restartsSameChannel], [2, 1, 1]);
    const records = mesh.pathRecords.filter((r) => r.why === 'ICE restart');
    assert.deepEqual(records[0], {
      id: 2, initiator: true, path: link.path, setupMs: 412, why: 'ICE restart',
      pairBefore: 'host 10.0.1.2:1 -> host 10.0.2.2:2', pairAfter: 'host 10.0.9.2:3 -> host 10.0.2.2:2', sameChannel: true,
    });
    // the answering side counts nothing (each link once)
    const other = makeMesh(1);
    other.mesh.memberAppeared(2, 'newer', 1 | 2);
    other.mesh.restarted(/** @type {P2PLink} */ (other.mesh.links.get(2)), { ms: 1, pairBefore: 'a', pairAfter: 'b', sameChannel: true });
    assert.equal(other.counters.iceRestarts, undefined);
  });

  test('a member the relay says takes no peer connections is never dialled: it is on the relay from the start', () => {
    const { mesh, peer, counters, events } = makeMesh(5);
    mesh.fallback = { send: () => {} };
    mesh.memberAppeared(2, 'relay member', 1); // RELAY only
    mesh.memberAppeared(3, 'udp member', 1 | 4); // RELAY | UDP
    mesh.memberAppeared(4, 'p2p member', 1 | 2); // RELAY | PEER: dialled as ever
    mesh.memberAppeared(1, 'old relay', undefined); // a relay that predates REACHABILITY: dialled, as before
    assert.deepEqual(peer.dialled.map((c) => c.peer), [peerIdOf(GROUP, 4), peerIdOf(GROUP, 1)]);
    assert.deepEqual(mesh.linkPaths().filter((l) => l.path === 'relay').map((l) => l.id), [2, 3]);
    assert.deepEqual(events, ['joined 2 relay member', 'joined 3 udp member'], 'reported at once, on the relay');
    assert.equal(counters.relayOnly, 2);
    // a rejoin's WELCOME names it again: still not dialled
    mesh.rejoined({ type: 2, clientId: 5, serverTime: 0, members: [{ id: 2, name: 'relay member', reach: 1 }, { id: 5, name: 'me', reach: 3 }] });
    assert.equal(peer.dialled.length, 2);
    assert.equal(mesh.linkPaths().find((l) => l.id === 2)?.path, 'relay');
  });

  test('links silent for LINK_SILENCE_MS are restarted; when all are, the relay connection is rejoined, once per silence', () => {
    const { mesh } = makeMesh(5);
    let rejoins = 0;
    mesh.peerSignal = () => {};
    mesh.rejoinRelay = async () => { rejoins++; };
    /** @type {number[]} */
    const restarted = [];
    const link = (/** @type {number} */ id, /** @type {number} */ heardAt) => {
      const l = mesh.makeLink(id, `n${id}`, true);
      l.channel = /** @type {any} */ ({ readyState: 'open', close() {} });
      l.heardAt = heardAt;
      l.restart = /** @type {any} */ ({ networkChanged: () => restarted.push(id), stop() {} });
      return l;
    };
    const a = link(2, 1000);
    link(3, 1000);
    mesh.checkSilence(1000 + LINK_SILENCE_MS - 1);
    assert.deepEqual([restarted, rejoins], [[], 0], 'not yet');
    a.heardAt = 2500; // 2 is heard again, 3 stays silent
    mesh.checkSilence(1000 + LINK_SILENCE_MS + 1);
    assert.deepEqual([restarted, rejoins], [[3], 0], 'one silent link: its restart, no rejoin');
    mesh.checkSilence(2500 + LINK_SILENCE_MS + 1);
    assert.deepEqual([restarted, rejoins], [[3, 2], 1], 'every link silent: the relay connection too');
    mesh.checkSilence(2500 + LINK_SILENCE_MS + 500);
    assert.deepEqual([restarted, rejoins], [[3, 2], 1], 'one doubt per silence');
  });

  test('the newer member dials the older; the older waits to be dialled', () => {
    const { mesh, peer, counters } = makeMesh(5);
    mesh.memberAppeared(2, 'old');
    mesh.memberAppeared(9, 'new');
    mesh.memberAppeared(5, 'me'); // ourselves: ignored
    assert.deepEqual(peer.dialled.map((c) => c.peer), [peerIdOf(GROUP, 2)]);
    assert.deepEqual(peer.dialled[0].metadata, { clientId: 5 });
    assert.equal(counters.connectAttempts, 1);
    assert.deepEqual([...mesh.links.keys()], [2, 9]);
    assert.equal(mesh.links.get(9)?.conn, null);
  });

  test('a member is reported once its channel opens, with the parameters read back from it', async () => {
    const { mesh, peer, events } = makeMesh(5);
    mesh.memberAppeared(2, 'old');
    assert.deepEqual(events, []);
    const conn = peer.dialled[0];
    const channel = conn.channel;
    assert.ok(channel);
    assert.deepEqual({ negotiated: channel.negotiated, id: channel.id, ordered: channel.ordered, maxRetransmits: channel.maxRetransmits },
      { negotiated: true, id: 10, ordered: false, maxRetransmits: 0 });
    channel.maxRetransmits = 7; // what the live channel says wins
    channel.open();
    assert.deepEqual(events, ['joined 2 old']);
    await settle();
    assert.equal(mesh.setupPeers.length, 1);
    assert.deepEqual(mesh.setupPeers[0], {
      id: 2, initiator: true, attempt: 1, channelOpenMs: 0, ordered: false, maxRetransmits: 7, maxPacketLifeTime: null, protocol: '',
      negotiated: true, channelId: 10, label: 'carlab-p2p', candidateType: null, viaTurn: false, setupBytesSent: 0, setupBytesReceived: 0,
      setupPacketsSent: 0, setupPacketsReceived: 0,
    });
    assert.deepEqual(mesh.openChannels(), [channel]);
  });

  test('a link whose selected pair reaches the TURN server\'s IP as peer-reflexive counts as turn', async () => {
    const { mesh, peer } = makeMesh(5);
    mesh.memberAppeared(2, 'old');
    const conn = peer.dialled[0];
    // Chromium's shape: the other side's allocation learnt as prflx before its relay candidate came.
    Object.assign(/** @type {any} */ (conn.peerConnection), {
      stats: [
        { id: 'T', type: 'transport', selectedCandidatePairId: 'P' },
        { id: 'P', type: 'candidate-pair', localCandidateId: 'L', remoteCandidateId: 'R' },
        { id: 'L', type: 'local-candidate', candidateType: 'host', address: '10.201.1.2', port: 40000 },
        { id: 'R', type: 'remote-candidate', candidateType: 'prflx', address: '10.201.0.1', port: 61000 },
      ],
      getConfiguration: () => ({ iceServers: [{ urls: 'turn:10.201.0.1:3478?transport=udp', username: 'u', credential: 'c' }] }),
    });
    conn.channel?.open();
    await settle();
    assert.equal(mesh.setupPeers[0].candidateType, 'host/prflx');
    assert.equal(mesh.links.get(2)?.path, 'turn');
    assert.deepEqual(mesh.pathRecords.map((r) => r.path), ['turn']);
  });

  test('frames on a link\'s channel go to onMessage with the link', () => {
    const { mesh, peer, messages } = makeMesh(5);
    mesh.memberAppeared(2, 'old');
    const channel = peer.dialled[0].channel;
    channel?.open();
    channel?.onmessage?.({ data: 'frame' });
    assert.deepEqual(messages, [[2, 'frame']]);
  });

  test('a member that leaves: reported gone, its channel and connection closed, the link dropped', () => {
    const { mesh, peer, events } = makeMesh(5);
    mesh.memberAppeared(2, 'old');
    const conn = peer.dialled[0];
    conn.channel?.open();
    mesh.memberGone(2);
    assert.deepEqual(events, ['joined 2 old', 'left 2']);
    assert.equal(conn.channel?.readyState, 'closed');
    assert.equal(conn.closed, true);
    assert.equal(mesh.links.size, 0);
    assert.deepEqual(mesh.openChannels(), []);
  });

  test('a failed connection is retried by the dialling side after a backoff', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const { mesh, peer, events, counters } = makeMesh(5);
    mesh.memberAppeared(2, 'old');
    const first = peer.dialled[0];
    first.channel?.open();
    first.emit('close');
    assert.deepEqual(events, ['joined 2 old', 'left 2']);
    assert.equal(counters.failures, 1);
    assert.equal(counters.retries, 1);
    assert.equal(mesh.links.get(2)?.setup.lastError, 'peerjs connection closed');
    // attempts was reset by the open: the first retry waits RETRY_BASE_MS (jitter at its top)
    t.mock.timers.tick(RETRY_BASE_MS - 1);
    assert.equal(peer.dialled.length, 1);
    t.mock.timers.tick(1);
    assert.equal(peer.dialled.length, 2);
    assert.equal(counters.connectAttempts, 2);
    // a channel that never opens fails after SETUP_TIMEOUT_MS and is retried with a longer wait
    t.mock.timers.tick(SETUP_TIMEOUT_MS);
    assert.equal(counters.failures, 2);
    assert.equal(mesh.links.get(2)?.setup.lastError, `channel not open after ${SETUP_TIMEOUT_MS} ms`);
    t.mock.timers.tick(2 * RETRY_BASE_MS);
    assert.equal(peer.dialled.length, 3);
  });

  test('the answering side does not retry; a failure after the member left is ignored', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const { mesh, counters } = makeMesh(5);
    const conn = new FakeDataConnection(peerIdOf(GROUP, 9), { clientId: 9 });
    mesh.memberAppeared(9, 'new');
    mesh.incoming(conn);
    conn.emit('error', { type: 'network' });
    assert.equal(counters.failures, 1);
    assert.equal(counters.retries, 0);
    assert.equal(mesh.links.get(9)?.setup.lastError, 'peerjs: network');
    mesh.memberGone(9);
    conn.emit('close');
    assert.equal(counters.failures, 1);
  });

  test('incoming connections: only from a newer member whose PeerJS id matches the id it claims', () => {
    const { mesh, events } = makeMesh(5);
    const bad = [
      new FakeDataConnection(peerIdOf(GROUP, 3), { clientId: 3 }), // older: it should be dialled by us
      new FakeDataConnection(peerIdOf(GROUP, 5), { clientId: 5 }), // ourselves
      new FakeDataConnection(peerIdOf(GROUP, 8), { clientId: 9 }), // claims another id
      new FakeDataConnection(peerIdOf('other', 9), { clientId: 9 }), // another group
      new FakeDataConnection(peerIdOf(GROUP, 9), undefined), // no metadata
    ];
    for (const conn of bad) mesh.incoming(conn);
    assert.deepEqual(bad.map((c) => c.closed), [true, true, true, true, true]);
    assert.equal(mesh.links.size, 0);
    const good = new FakeDataConnection(peerIdOf(GROUP, 9), { clientId: 9 });
    mesh.incoming(good); // before its MEMBER_JOINED
    assert.equal(good.closed, false);
    assert.equal(mesh.links.get(9)?.initiator, false);
    good.channel?.open();
    assert.deepEqual(events, ['joined 9 ']);
    // the same member dials again (it lost its side): the old connection goes, the new one is used
    const again = new FakeDataConnection(peerIdOf(GROUP, 9), { clientId: 9 });
    mesh.incoming(again);
    assert.equal(good.closed, true);
    assert.equal(mesh.links.get(9)?.conn, again);
    assert.deepEqual(events, ['joined 9 ', 'left 9']);
  });

  test('a relay rejoin: a missing member with an open channel gets the grace period, one without is dropped', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const { mesh, peer, events, counters } = makeMesh(5);
    mesh.memberAppeared(2, 'open');
    mesh.memberAppeared(3, 'closed');
    mesh.memberAppeared(4, 'back');
    peer.dialled[0].channel?.open();
    peer.dialled[2].channel?.open();
    assert.equal(mesh.rejoined({ type: 2, clientId: 5, serverTime: 0, members: [{ id: 5, name: 'me' }, { id: 4, name: 'back' }] }), true);
    assert.equal(counters.membershipRejoins, 1);
    assert.deepEqual([...mesh.links.keys()], [2, 4]);
    assert.deepEqual([...mesh.members.keys()], [4]);
    t.mock.timers.tick(MEMBERSHIP_GRACE_MS - 1);
    assert.ok(mesh.links.has(2));
    t.mock.timers.tick(1);
    assert.ok(!mesh.links.has(2));
    assert.deepEqual(events, ['joined 2 open', 'joined 4 back', 'left 2']);
  });

  test('a member back within the grace period keeps its link', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const { mesh, peer } = makeMesh(5);
    mesh.memberAppeared(2, 'a');
    peer.dialled[0].channel?.open();
    mesh.rejoined({ type: 2, clientId: 5, serverTime: 0, members: [{ id: 5, name: 'me' }] });
    mesh.memberAppeared(2, 'a');
    t.mock.timers.tick(MEMBERSHIP_GRACE_MS);
    assert.equal(mesh.links.get(2)?.channel?.readyState, 'open');
    assert.equal(peer.dialled.length, 1);
  });

  test('a rejoin under another client id changes nothing and says so', () => {
    const { mesh } = makeMesh(5);
    mesh.memberAppeared(2, 'a');
    assert.equal(mesh.rejoined({ type: 2, clientId: 6, serverTime: 0, members: [] }), false);
    assert.equal(mesh.counters.membershipRejoins, 1);
    assert.ok(mesh.links.has(2));
  });

  test('a PeerJS error naming a peer fails that link', () => {
    const { mesh, counters } = makeMesh(5);
    mesh.memberAppeared(2, 'a');
    mesh.memberAppeared(3, 'b');
    mesh.failNamed(peerIdOf(GROUP, 3), 'peer-unavailable');
    assert.equal(counters.failures, 1);
    assert.equal(mesh.links.get(3)?.setup.lastError, 'peerjs: peer-unavailable');
  });

  test('close: links torn down, nothing reported, no redial', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const { mesh, peer, events } = makeMesh(5);
    mesh.memberAppeared(2, 'a');
    const conn = peer.dialled[0];
    conn.channel?.open();
    mesh.close();
    assert.equal(conn.closed, true);
    assert.equal(mesh.links.size, 0);
    conn.emit('close');
    t.mock.timers.tick(60000);
    assert.deepEqual(events, ['joined 2 a']);
    assert.equal(peer.dialled.length, 1);
  });
});

describe('P2PLink', () => {
  test('teardown closes channel and connection and stops the setup timer', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const link = new P2PLink(2, 'a', true);
    const conn = new FakeDataConnection('x', {});
    /** @type {string[]} */
    const failures = [];
    link.attach(conn, { mode: 'p2p-reliable', now: () => 0, onFailed: (w) => failures.push(w), onOpen() {}, onSetup() {}, onMessage() {} });
    const channel = conn.channel;
    assert.equal(channel?.ordered, true);
    assert.equal(channel?.maxRetransmits, null);
    link.teardown();
    assert.equal(channel?.readyState, 'closed');
    assert.equal(conn.closed, true);
    assert.equal(link.channel, null);
    assert.equal(link.conn, null);
    t.mock.timers.tick(SETUP_TIMEOUT_MS);
    assert.deepEqual(failures, []);
  });
});
