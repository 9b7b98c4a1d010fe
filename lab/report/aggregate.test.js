import { test } from 'node:test';
import assert from 'node:assert/strict';
import { aggregateChannel, aggregateRun, aggregateSetup, assignGroups, byBrowserOf, cycleModeOf } from './aggregate.js';

/**
 * A client record as CarClient.stats() gives it; `extra` replaces fields.
 * @param {number} id
 * @param {Record<string, unknown>} [extra]
 */
const client = (id, extra = {}) => ({
  id, group: 'g', rt: [], rtWarmup: [], sentTo: {}, acksFrom: {}, recv: {},
  updatesSent: 0, completed: 0, ackTimeouts: 0, skippedCycles: 0, channel: null, setup: null, ...extra,
});

test('a run record has the schema docs/architecture.md fixes, with RT over every client', () => {
  const clients = [
    client(1, { rt: [10, 20], rtWarmup: [99], sentTo: { 2: 2 }, acksFrom: { 2: 2 }, updatesSent: 2, completed: 2 }),
    client(2, { rt: [30], sentTo: { 1: 1 }, acksFrom: { 1: 1 }, updatesSent: 1, completed: 1,
      recv: { 1: { received: 2, duplicates: 0, reorders: 0, jitterMs: 1, acksSent: 2 } } }),
  ];
  clients[0].recv = { 2: { received: 0, duplicates: 0, reorders: 0, jitterMs: 3, acksSent: 0 } };
  const run = aggregateRun({
    point: { transport: 'relay', clients: 2, group: 2, cycleMs: 167 },
    clients,
    relay: { rts: { mean: 1.5, max: 4, n: 3 }, droppedUpdates: 0, silentEnded: 2, resumed: 1 },
    cpu: { server: 12, clients: 30 },
    extra: { sim: { workers: 1 } },
  });
  // Sessions the relay ended as silent, and those taken over by a resume, are in the record.
  assert.deepEqual([run.relay?.silentEnded, run.relay?.resumed], [2, 1]);
  for (const key of ['transport', 'clients', 'group', 'cycleMs', 'rt', 'rts', 'cpu', 'lossPct', 'ackLossPct', 'dups', 'reorders', 'jitterMs', 'setupMs', 'channel']) {
    assert.ok(key in run, key);
  }
  assert.equal(run.rt.mean, 20);
  assert.equal(run.rt.n, 3);
  assert.equal(run.rtWarmup.n, 1, 'warm-up RTs are reported apart');
  assert.deepEqual(run.rts, { mean: 1.5, max: 4, n: 3 });
  // stream 2->1 lost its one update: 1 of 3 expected
  assert.equal(run.updates.expected, 3);
  assert.equal(run.updates.lost, 1);
  assert.ok(Math.abs(run.lossPct - 100 / 3) < 1e-9);
  assert.equal(run.jitterMs, 2);
  assert.equal(run.setupMs, null);
  assert.equal(run.channel, null);
});

test('setup delays and channel parameters aggregate over clients', () => {
  const peer = (/** @type {number} */ ms, /** @type {string} */ type) => ({ channelOpenMs: ms, offerAnswerMs: ms / 2, iceConnectedMs: ms - 5, dtlsConnectedMs: ms - 2, candidateType: type, setupBytesSent: 3000, setupBytesReceived: 4000 });
  const a = client(1, {
    setup: { signalingMs: 20, peers: [peer(100, 'host/host'), peer(120, 'host/host')] },
    channel: { kind: 'rtcdatachannel', ordered: false, maxRetransmits: 0, maxPacketLifeTime: null, channels: 2, uniform: true },
  });
  const b = client(2, {
    setup: { signalingMs: 40, peers: [peer(140, 'srflx/host')] },
    channel: { kind: 'rtcdatachannel', ordered: false, maxRetransmits: 0, maxPacketLifeTime: null, channels: 1, uniform: true },
  });
  const setup = /** @type {any} */ (aggregateSetup([a, b]));
  assert.equal(setup.signaling.mean, 30);
  assert.equal(setup.peer.mean, 120);
  assert.equal(setup.peer.n, 3);
  assert.deepEqual(setup.candidateTypes, { 'host/host': 2, 'srflx/host': 1 });
  assert.equal(setup.setupBytes.sent.mean, 3000);
  assert.deepEqual(aggregateChannel([a, b]), { ordered: false, maxRetransmits: 0, maxPacketLifeTime: null, uniform: true, clients: 2 });
  const c = client(3, { channel: { kind: 'rtcdatachannel', ordered: true, maxRetransmits: null, maxPacketLifeTime: null, channels: 1, uniform: true } });
  assert.equal(/** @type {any} */ (aggregateChannel([a, c])).mixed.length, 2, 'disagreeing channels are not hidden');
  assert.equal(aggregateChannel([client(4, { channel: { kind: 'websocket', ordered: true } })]), null);
});

test('populations split into working groups of G; the last may be smaller', () => {
  assert.deepEqual(assignGroups(7, 3), [0, 0, 0, 1, 1, 1, 2]);
});

test('a mixed fleet is split per browser: RT as sender, loss and jitter as receiver', () => {
  const recv = (/** @type {number} */ received, /** @type {number} */ jitterMs) => ({ received, duplicates: 0, reorders: 0, jitterMs, acksSent: received });
  const clients = [
    // chromium 1 sends 4 to firefox 2, which got 3; firefox 2 sends 2 to chromium 1, which got both
    client(1, { browser: 'chromium', rt: [10, 30], sentTo: { 2: 4 }, recv: { 2: recv(2, 1) } }),
    client(2, { browser: 'firefox', rt: [50], sentTo: { 1: 2 }, recv: { 1: recv(3, 5) } }),
  ];
  const { byBrowser } = /** @type {any} */ (byBrowserOf(clients));
  assert.deepEqual(Object.keys(byBrowser), ['chromium', 'firefox']);
  assert.equal(byBrowser.chromium.rt.mean, 20);
  assert.equal(byBrowser.chromium.lossPct, 0, 'chromium received everything sent to it');
  assert.equal(byBrowser.chromium.jitterMs, 1);
  assert.equal(byBrowser.firefox.rt.mean, 50);
  assert.equal(byBrowser.firefox.lossPct, 25, 'firefox missed 1 of 4');
  assert.equal(byBrowser.firefox.jitterMs, 5);
  assert.deepEqual(byBrowserOf(clients.map((c) => ({ ...c, browser: 'chromium' }))), {}, 'one browser: no split');
  const run = aggregateRun({ point: { transport: 'p2p', clients: 2, group: 2, cycleMs: 167 }, clients, relay: null, cpu: { server: null, clients: 50 } });
  assert.equal(/** @type {any} */ (run).byBrowser.firefox.clients, 1);
});

test('every run carries its cycle mode and the receivers\' freshness over all streams', () => {
  const fresh = (/** @type {number[]} */ arrivals) => {
    const gaps = /** @type {Record<string, number>} */ ({});
    let frozenMs = 0; let maxGapMs = 0;
    for (let i = 1; i < arrivals.length; i++) {
      const g = arrivals[i] - arrivals[i - 1];
      gaps[g] = (gaps[g] ?? 0) + 1;
      if (g > 1000) frozenMs += g;
      maxGapMs = Math.max(maxGapMs, g);
    }
    return { n: arrivals.length, spanMs: arrivals[arrivals.length - 1] - arrivals[0], frozenMs, maxGapMs, gaps };
  };
  const stream = (/** @type {number[]} */ arrivals) => ({ received: arrivals.length, duplicates: 0, reorders: 0, jitterMs: 0, acksSent: arrivals.length, fresh: fresh(arrivals) });
  const clients = [
    client(1, { cycleMode: 'gated', recv: { 2: stream([0, 200, 400, 600, 800, 1000]) } }),
    client(2, { cycleMode: 'gated', recv: { 1: stream([0, 3000]) } }),
  ];
  const point = { transport: 'relay-udp', clients: 2, group: 2, cycleMs: 167, cycleMode: /** @type {const} */ ('gated'), relays: 0, placement: /** @type {const} */ ('spread') };
  const run = aggregateRun({ point, clients, relay: null, cpu: { server: null, clients: null } });
  assert.equal(run.cycleMode, 'gated');
  assert.equal(run.freshness.updatesPerStreamPerS, 8 / 4, '8 fresh updates over 4 s of streams');
  assert.deepEqual(run.freshness.freezeMs, { p50: 200, p99: 3000, max: 3000 });
  assert.equal(run.freshness.frozenPct, 75);
  assert.equal(cycleModeOf({}, clients), 'gated', 'from the clients when the point has none');
  assert.equal(cycleModeOf({}, [client(1)]), null);
  const none = aggregateRun({ point, clients: [client(1)], relay: null, cpu: { server: null, clients: null } });
  assert.deepEqual(none.freshness.freezeMs, { p50: null, p99: null, max: null });
});

test('clients that carry RT histograms (client reports) instead of RT arrays: exact n, mean, Dev, max; percentiles to the bucket', async () => {
  const { RtHistogram, rtBucket } = await import('../../core/report.js');
  const { summarize } = await import('../../core/metrics.js');
  const values = [[12.34, 15.5, 101.7, 250.2], [8.06, 9.9, 1234.5]];
  const hist = (/** @type {number[]} */ list) => { const h = new RtHistogram(); for (const v of list) h.add(v); return h.toJSON(); };
  const clients = values.map((list, i) => client(i + 1, { rt: undefined, rtHist: hist(list) }));
  const run = aggregateRun({ point: { transport: 'relay', clients: 2, group: 2, cycleMs: 167 }, clients, relay: null, cpu: { server: null, clients: null } });
  const exact = summarize(values.flat());
  assert.equal(run.rt.n, exact.n);
  assert.equal(run.rt.max, exact.max);
  assert.ok(Math.abs(/** @type {number} */ (run.rt.mean) - /** @type {number} */ (exact.mean)) < 1e-9);
  assert.ok(Math.abs(/** @type {number} */ (run.rt.dev) - /** @type {number} */ (exact.dev)) < 1e-9);
  for (const k of /** @type {const} */ (['p50', 'p95', 'p99'])) assert.equal(run.rt[k], Math.min(/** @type {number} */ (exact.max), rtBucket(/** @type {number} */ (exact[k]))), k);
  // An array client among histogram clients counts value by value.
  const mixed = aggregateRun({ point: { transport: 'relay', clients: 2, group: 2, cycleMs: 167 }, clients: [clients[0], client(3, { rt: values[1] })], relay: null, cpu: { server: null, clients: null } });
  assert.equal(mixed.rt.n, 7);
  assert.equal(mixed.rt.max, 1234.5);
});

test('only: a part of a population — its senders\' RT, the streams into its receivers from any sender', () => {
  const recv = (/** @type {number} */ received, /** @type {number} */ jitterMs) => ({ received, duplicates: 0, reorders: 0, jitterMs, acksSent: received });
  const clients = [
    client(1, { family: 'a', browser: 'a', rt: [10, 30], sentTo: { 2: 4, 3: 4 }, updatesSent: 4, recv: { 2: recv(2, 1), 3: recv(1, 2) } }),
    client(2, { family: 'b', browser: 'b', rt: [50], sentTo: { 1: 2, 3: 2 }, updatesSent: 2, recv: { 1: recv(3, 5), 3: recv(1, 3) } }),
    client(3, { family: 'b', browser: 'b', rt: [70], sentTo: { 1: 1, 2: 1 }, updatesSent: 1, recv: { 1: recv(4, 7), 2: recv(2, 9) } }),
  ];
  const point = { transport: 'p2p', clients: 3, group: 3, cycleMs: 167 };
  const { byBrowser } = /** @type {any} */ (byBrowserOf(clients));
  for (const f of ['a', 'b']) {
    const part = aggregateRun({ point, clients, relay: null, cpu: { server: null, clients: null }, only: (c) => c.family === f });
    assert.deepEqual(part.rt, byBrowser[f].rt, `${f}: RT of its own senders`);
    for (const k of ['lossPct', 'dups', 'reorders', 'jitterMs']) assert.equal(/** @type {any} */ (part)[k], byBrowser[f][k], `${f}: ${k}`);
    assert.equal(part.connected, byBrowser[f].clients);
    assert.equal('byBrowser' in part, false, 'one family: no split');
  }
  const b = aggregateRun({ point, clients, relay: null, cpu: { server: null, clients: null }, only: (c) => c.family === 'b' });
  assert.equal(b.updates.sent, 3);
  assert.equal(b.updates.expected, 4 + 4 + 2 + 1, 'every stream into 2 and 3, from any sender');
  const whole = aggregateRun({ point, clients, relay: null, cpu: { server: null, clients: null } });
  assert.deepEqual(aggregateRun({ point, clients, relay: null, cpu: { server: null, clients: null }, only: () => true }), whole, 'only everyone: the run');
});
