// The cluster primary's routing, the pure parts: the rendezvous pick and
// reading a request head.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hash32, parseRequestHead, pickRendezvous } from './route.js';

const GROUPS = Array.from({ length: 10_000 }, (_, i) => `group-${i}`);

/** @param {string[]} keys @returns {Map<string, string>} group -> key */
function placement(keys) {
  return new Map(GROUPS.map((g) => [g, /** @type {string} */ (pickRendezvous(g, keys))]));
}

/** @param {Map<string, string>} placed @returns {Map<string, number>} */
function counts(placed) {
  /** @type {Map<string, number>} */
  const out = new Map();
  for (const key of placed.values()) out.set(key, (out.get(key) ?? 0) + 1);
  return out;
}

test('10 000 groups over 3 workers: each within ±5 % of a third', () => {
  const per = counts(placement(['0', '1', '2']));
  assert.equal(per.size, 3);
  for (const [key, n] of per) assert.ok(Math.abs(n - GROUPS.length / 3) <= 0.05 * GROUPS.length / 3, `worker ${key}: ${n}`);
});

test('a worker that dies gives away only its own groups, evenly; back in its slot, it gets them back', () => {
  const all = placement(['0', '1', '2']);
  const without1 = placement(['0', '2']);
  let moved = 0;
  /** @type {Map<string, number>} */
  const heirs = new Map();
  for (const [g, key] of all) {
    if (key === '1') {
      moved++;
      const heir = /** @type {string} */ (without1.get(g));
      heirs.set(heir, (heirs.get(heir) ?? 0) + 1);
    } else {
      assert.equal(without1.get(g), key, `${g} stays where it was`);
    }
  }
  assert.equal(moved, counts(all).get('1'));
  for (const [heir, n] of heirs) assert.ok(Math.abs(n - moved / 2) <= 0.1 * moved / 2, `heir ${heir} took ${n} of ${moved}`);
  assert.deepEqual(placement(['2', '0', '1']), all, 'the same slots, in any order, place every group as before');
});

test('rendezvous: no keys -> null; one key takes everything; deterministic', () => {
  assert.equal(pickRendezvous('g', []), null);
  assert.equal(pickRendezvous('g', ['7']), '7');
  assert.equal(pickRendezvous('g', ['0', '1', '2', '3']), pickRendezvous('g', ['3', '2', '1', '0']));
  assert.equal(hash32('lab'), hash32('lab'));
  assert.notEqual(hash32('lab'), hash32('lab2'));
});

test('a request head: incomplete until the blank line; upgrades carry their ?g= group, plain HTTP none', () => {
  const upgrade = 'GET /relay?g=lab%202 HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\r\n';
  assert.deepEqual(parseRequestHead(Buffer.from(upgrade.slice(0, 40))), { complete: false });
  assert.deepEqual(parseRequestHead(Buffer.from(upgrade.slice(0, -2))), { complete: false });
  assert.deepEqual(parseRequestHead(Buffer.from(upgrade)), { complete: true, upgrade: true, group: 'lab 2' });
  assert.deepEqual(parseRequestHead(Buffer.from(upgrade.replace('Upgrade: websocket', 'UPGRADE:  WebSocket'))),
    { complete: true, upgrade: true, group: 'lab 2' }, 'names and tokens case-insensitive');
  assert.deepEqual(parseRequestHead(Buffer.from(`${upgrade}\x81\x05hello`)), { complete: true, upgrade: true, group: 'lab 2' },
    'bytes after the head do not matter');
  assert.deepEqual(parseRequestHead(Buffer.from('GET /relay HTTP/1.1\r\nUpgrade: websocket\r\n\r\n')), { complete: true, upgrade: true, group: null });
  assert.deepEqual(parseRequestHead(Buffer.from('GET /readyz?g=lab HTTP/1.1\r\nHost: h\r\n\r\n')), { complete: true, upgrade: false, group: null },
    'plain HTTP is spread, even with a g');
  assert.deepEqual(parseRequestHead(Buffer.from('GET /x?g=a HTTP/1.1\r\nX-Upgrade: websocket\r\nUpgrade: h2c\r\n\r\n')), { complete: true, upgrade: false, group: null });
  assert.deepEqual(parseRequestHead(Buffer.from('\r\n\r\n')), { complete: true, upgrade: false, group: null }, 'garbage: the worker answers it');
});
