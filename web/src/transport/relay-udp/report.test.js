// What relay-udp reports, alone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newUdpCounters } from './constants.js';
import { FAILURES_KEPT, SetupLog, channelInfoOf } from './report.js';
import { FakeDataChannel } from '../relay-fakes.js';

test('the log keeps every opened setup and the last failures, and hands out copies', () => {
  const log = new SetupLog();
  log.signalingMs = 4;
  log.opened({ attempt: 1 });
  for (let i = 1; i <= FAILURES_KEPT + 5; i++) log.failed({ attempt: i, afterMs: 1, wasOpen: false, error: 'x' });
  const counters = newUdpCounters();
  counters.offers = 3;
  const snap = log.snapshot(counters, '');
  assert.equal(snap.failures.length, FAILURES_KEPT);
  assert.equal(snap.failures[0].attempt, 6);
  assert.deepEqual([snap.signalingMs, snap.peers, snap.lastError, snap.counters.offers], [4, [{ attempt: 1 }], null, 3]);
  counters.offers = 9;
  snap.peers.push({ attempt: 2 });
  assert.equal(log.snapshot(counters, 'boom').counters.offers, 9);
  assert.equal(log.peers.length, 1);
  assert.equal(log.snapshot(counters, 'boom').lastError, 'boom');
});

test('channelInfo: the live channel, else the last one read, else the parameters asked for', () => {
  const ch = new FakeDataChannel('carlab-udp', { negotiated: true, id: 0, ordered: false, maxRetransmits: 0 });
  const live = channelInfoOf(/** @type {RTCDataChannel} */ (/** @type {unknown} */ (ch)), null);
  assert.deepEqual(live, {
    kind: 'rtcdatachannel', ordered: false, maxRetransmits: 0, maxPacketLifeTime: null, protocol: '',
    negotiated: true, channelId: 0, label: 'carlab-udp', channels: 1, uniform: true,
  });
  assert.deepEqual(channelInfoOf(null, null),
    { kind: 'rtcdatachannel', ordered: false, maxRetransmits: 0, maxPacketLifeTime: null, protocol: '', channels: 0, uniform: true });
  const { channels: _c, kind: _k, uniform: _u, ...read } = live;
  assert.deepEqual(channelInfoOf(null, read), { ...live, channels: 0 });
});
