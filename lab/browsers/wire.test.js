import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseSetCounters, wireDelta, wireRuleset, wireTraffic } from './wire.js';

/** nft's JSON listing of the given sets. @param {Record<string, Record<string, [packets: number, bytes: number]>>} sets */
const listing = (sets) => JSON.stringify({
  nftables: [
    { metainfo: { version: '1.0.6' } },
    ...Object.entries(sets).map(([name, elems]) => ({
      set: { family: 'inet', name, table: 't', elem: Object.entries(elems).map(([port, [packets, bytes]]) => ({ elem: { val: Number(port), counter: { packets, bytes } } })) },
    })),
  ],
});

test('the ruleset counts every UDP packet and STUN Binding requests/responses per source port', () => {
  const rules = wireRuleset('carlab_x');
  assert.match(rules, /table inet carlab_x/);
  assert.match(rules, /add @udpsrc \{ udp sport \}/);
  assert.match(rules, /@th,64,16 0x0001 add @stunreq/);
  assert.match(rules, /@th,64,16 0x0101 add @stunresp/);
  assert.doesNotMatch(rules, /drop|reject/);
});

test('nft -j listings parse into per-port counters of the three sets', () => {
  const snap = parseSetCounters(listing({ udpsrc: { 5000: [10, 1200], 5001: [1, 100] }, stunreq: { 5000: [3, 300] }, stunresp: {} }));
  assert.deepEqual(snap.all.get(5000), { packets: 10, bytes: 1200 });
  assert.equal(snap.all.size, 2);
  assert.deepEqual(snap.stunRequests.get(5000), { packets: 3, bytes: 300 });
  assert.equal(snap.stunResponses.size, 0);
});

test('deltas over a set of ports; new ports count from zero, restarted ones from their restart', () => {
  const before = new Map([[1, { packets: 5, bytes: 500 }], [2, { packets: 10, bytes: 1000 }]]);
  const now = new Map([[1, { packets: 8, bytes: 800 }], [2, { packets: 2, bytes: 150 }], [3, { packets: 1, bytes: 90 }], [4, { packets: 7, bytes: 7 }]]);
  assert.deepEqual(wireDelta(before, now, [1, 3]), { packets: 4, bytes: 390 });
  assert.deepEqual(wireDelta(before, now, [2]), { packets: 2, bytes: 150 }); // flushed in between
  assert.deepEqual(wireDelta(before, now, [1, 1]), { packets: 3, bytes: 300 }); // a port counts once
  assert.deepEqual(wireDelta(before, now, [9]), { packets: 0, bytes: 0 });
});

test('wireTraffic adds STUN requests and responses apart', () => {
  const a = parseSetCounters(listing({ udpsrc: { 7: [2, 200] }, stunreq: { 7: [1, 100] }, stunresp: {} }));
  const b = parseSetCounters(listing({ udpsrc: { 7: [12, 1400] }, stunreq: { 7: [4, 400] }, stunresp: { 7: [2, 180] } }));
  assert.deepEqual(wireTraffic(a, b, [7]), { packets: 10, bytes: 1200, stunRequests: 3, stunResponses: 2, stunBytes: 480 });
});
