// The PeerServer connection: the Peer's options, open and its failure, and
// reconnecting with the same id after the server went away.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { P2PSignaling, SIGNALING_RECONNECT } from './p2p-signaling.js';
import { FakeDataConnection, FakeNetwork, FakePeer } from './p2p-fakes.js';

// Compile-time: the real PeerJS classes fit the narrow shapes the transport declares.
/** @type {import('./p2p-signaling.js').PeerClass} */
export const peerJsFits = /** @type {typeof import('peerjs').Peer} */ (/** @type {unknown} */ (null));
/** @type {import('./p2p-link.js').DataConnectionLike | null} */
export const dataConnectionFits = /** @type {import('peerjs').DataConnection | null} */ (null);

const PEERJS = { host: 'h', port: 8443, path: '/peerjs', key: 'k', secure: true };

/** @param {{ openPeers?: boolean }} [o] */
function makeSignaling(o = {}) {
  const network = new FakeNetwork();
  network.openPeers = o.openPeers ?? true;
  const counters = { signalingLost: 0, signalingAttempts: 0, signalingReconnects: 0 };
  let t = 0;
  const signaling = new P2PSignaling({
    Peer: network.Peer, peerjs: PEERJS, iceServers: [{ urls: 'stun:x' }], counters, now: () => (t += 5), random: () => 1 - 1e-9,
  });
  /** @type {any[]} */
  const status = [];
  /** @type {any[]} */
  const seen = [];
  const events = {
    onConnection: (/** @type {any} */ c) => seen.push(['connection', c]),
    onPeerError: (/** @type {string} */ id, /** @type {string | undefined} */ type) => seen.push(['error', id, type]),
    onStatus: (/** @type {any} */ s) => status.push(s),
  };
  return { network, signaling, counters, status, seen, events };
}

/** @param {P2PSignaling} s */
const fakePeer = (s) => /** @type {FakePeer} */ (/** @type {unknown} */ (s.peer));

test('open: a Peer with our id, the server\'s ICE servers and no debug output; resolves on open with the time it took', async () => {
  const { signaling, events } = makeSignaling();
  const ms = await signaling.open('carlab-x-3', events);
  const peer = fakePeer(signaling);
  assert.equal(peer.id, 'carlab-x-3');
  assert.deepEqual(peer.options, { ...PEERJS, config: { iceServers: [{ urls: 'stun:x' }] }, debug: 0 });
  assert.equal(ms, 5);
  signaling.close();
  assert.equal(peer.destroyed, true);
});

test('open rejects on a PeerJS error before open', async () => {
  const { signaling, events } = makeSignaling({ openPeers: false });
  const opening = signaling.open('carlab-x-3', events);
  fakePeer(signaling).emit('error', { type: 'unavailable-id' });
  await assert.rejects(opening, /signaling: unavailable-id/);
});

test('after open: incoming connections and errors naming a peer are passed on', async () => {
  const { signaling, events, seen } = makeSignaling();
  await signaling.open('carlab-x-3', events);
  const peer = fakePeer(signaling);
  const conn = new FakeDataConnection('carlab-x-4', { clientId: 4 });
  peer.emit('connection', conn);
  peer.emit('error', { type: 'peer-unavailable', message: 'Could not connect to peer carlab-x-9' });
  peer.emit('error', { type: 'network', message: 'Lost connection to server.' });
  assert.deepEqual(seen, [['connection', conn], ['error', 'carlab-x-9', 'peer-unavailable']]);
  signaling.close();
});

test('reconnect: after "disconnected", reconnect() with the same id after a growing backoff until the server re-opens us', async (t) => {
  const { signaling, events, counters, status } = makeSignaling();
  await signaling.open('carlab-x-3', events);
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const peer = fakePeer(signaling);
  peer.disconnected = true;
  peer.emit('disconnected');
  peer.emit('disconnected'); // while a retry is pending: no second timer
  assert.equal(counters.signalingLost, 1);
  assert.deepEqual(status.map((s) => [s.state, s.part, s.attempt, Math.round(s.delayMs)]), [['reconnecting', 'signaling', 1, SIGNALING_RECONNECT.baseMs]]);
  t.mock.timers.tick(SIGNALING_RECONNECT.baseMs);
  assert.equal(peer.reconnects, 1);
  assert.equal(counters.signalingAttempts, 1);
  peer.emit('disconnected'); // the attempt failed: the next waits twice as long
  assert.equal(counters.signalingLost, 1, 'the same outage');
  assert.equal(Math.round(status[1].delayMs), 2 * SIGNALING_RECONNECT.baseMs);
  t.mock.timers.tick(2 * SIGNALING_RECONNECT.baseMs);
  assert.equal(peer.reconnects, 2);
  peer.disconnected = false;
  peer.emit('open', 'carlab-x-3');
  assert.equal(counters.signalingReconnects, 1);
  assert.deepEqual(status.at(-1), { state: 'connected', part: 'signaling' });
  // the next outage starts again from the first delay
  peer.disconnected = true;
  peer.emit('disconnected');
  assert.equal(counters.signalingLost, 2);
  assert.equal(status.at(-1).attempt, 1);
  signaling.close();
  t.mock.timers.tick(60000);
  assert.equal(peer.reconnects, 2, 'closed: no more attempts');
});

test('reconnect: a reconnect() that throws schedules the next attempt; a destroyed Peer is left alone', async (t) => {
  const { signaling, events, counters } = makeSignaling();
  await signaling.open('carlab-x-3', events);
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const peer = fakePeer(signaling);
  peer.reconnect = () => { peer.reconnects++; throw new Error('cannot reconnect'); };
  peer.disconnected = true;
  peer.emit('disconnected');
  t.mock.timers.tick(SIGNALING_RECONNECT.baseMs);
  t.mock.timers.tick(2 * SIGNALING_RECONNECT.baseMs);
  assert.equal(peer.reconnects, 2);
  assert.equal(counters.signalingAttempts, 2);
  peer.destroyed = true;
  t.mock.timers.tick(60000);
  assert.equal(peer.reconnects, 2);
  signaling.close();
});
