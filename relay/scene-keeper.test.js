// Kept scenes at the relay (relay/scene-keeper.js, docs/protocol.md §5.14): the
// records of relayed UPDATEs make the relay's copy of a group's scene; the last
// member's leaving keeps it; the next first member that asks gets it in a
// KEPT_SCENE after its WELCOME, a token-protected group's only with its token;
// a client that did not ask never gets the message.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import http from 'node:http';

import { CloseCode, HelloFlag, MoreFlag, MsgType, decode, encode, sceneRecordsOfUpdate as sceneRecordsOf, unbatch } from '../core/protocol.js';
import { MemorySceneStore } from '../server/scene-store.js';
import { createRelay } from './index.js';
import { keptRecordsOf } from './scene-keeper.js';
import { rawClient } from './raw-client-harness.js';
import { waitFor } from '../lab/shared/loop-stall.js';
import { SharedScene } from '../core/scene.js';

/** @type {(() => Promise<void>)[]} */
const cleanups = [];
after(async () => { for (const c of cleanups.reverse()) await c(); });

const ASKS = { flags: HelloFlag.BATCHED | HelloFlag.MORE, more: MoreFlag.KEPT_SCENE };

/** @type {import('../core/protocol.js').Pose} */
const POSE = [0, 0, 0, 0, 0, 0, 1];
/** @type {import('../core/scene.js').SceneRecord} */
const CUBE = { id: 42, version: 1, writer: 0, kind: 1, removed: false, pose: [0.25, 0, -0.5, 0, 0, 0, 1] };

async function startRelay() {
  const server = http.createServer();
  const store = new MemorySceneStore();
  const relay = createRelay({ server, sceneStore: store });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanups.push(async () => { await relay.close(); server.close(); });
  return { relay, store, url: `ws://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (server.address()).port}/relay` };
}

/**
 * A raw client of group 'kept' (relay/raw-client-harness.js), with its WELCOME and the KEPT_SCENE it got.
 * @param {string} url @param {Partial<import('../core/protocol.js').HelloMsg>} hello
 */
async function connect(url, hello) {
  const c = await rawClient(url, 'kept', hello.flags ?? 0, hello);
  cleanups.push(async () => c.ws.terminate());
  /** @type {any} */
  const welcome = c.got.find((m) => m.type === MsgType.WELCOME);
  return Object.assign(c, { welcome, kept: () => /** @type {any} */ (c.got.find((m) => m.type === MsgType.KEPT_SCENE)) });
}

/**
 * An UPDATE of `sender` carrying scene records.
 * @param {number} sender @param {number} seq @param {import('../core/scene.js').SceneRecord[]} records
 */
const updateWith = (sender, seq, records) => encode({
  type: MsgType.UPDATE, sender, seq, sendTime: 0, pose: POSE, object: null, scene: { digest: 0, held: records.length, records },
});

/** @param {import('./raw-client-harness.js').RawClient} c */
async function leave(c) {
  c.ws.close();
  await once(c.ws, 'close');
}

test('an UPDATE\'s scene records are read where they are, after the legacy object block too', () => {
  const records = [CUBE, { ...CUBE, id: 7, version: 3, writer: 9, kind: 4, removed: true }];
  for (const object of [null, { pose: POSE, version: 2 }]) {
    const frame = encode({ type: MsgType.UPDATE, sender: 1, seq: 1, sendTime: 0, pose: POSE, object, scene: { digest: 5, held: 2, records } });
    assert.deepEqual(sceneRecordsOf(frame.subarray(1)), records);
  }
  assert.deepEqual(sceneRecordsOf(encode({ type: MsgType.UPDATE, sender: 1, seq: 1, sendTime: 0, pose: POSE, object: null }).subarray(1)), []);
  const fresh = new SharedScene();
  assert.deepEqual(keptRecordsOf(fresh), [], 'the car nobody moved is nothing to keep');
});

test('the last member leaves: the scene is kept; the first member back that asks gets it after its WELCOME', async () => {
  const { url, store, relay } = await startRelay();
  const a = await connect(url, { ...ASKS, name: 'a' });
  const b = await connect(url, { ...ASKS, name: 'b' });
  assert.equal(a.kept(), undefined, 'a new group has no kept scene');
  const aId = a.welcome.clientId;
  const cube = { ...CUBE, writer: aId };
  a.ws.send(updateWith(aId, 1, [cube]));
  a.ws.send(updateWith(aId, 2, [{ ...cube, version: 2, pose: [1, 0, 0, 0, 0, 0, 1] }]));
  await waitFor(() => b.got.filter((m) => m.type === MsgType.UPDATE).length === 2, 2000);
  await leave(a);
  await leave(b);
  await waitFor(() => store.get('kept') !== null);
  assert.deepEqual(store.get('kept')?.records, [{ ...cube, version: 2, pose: [1, 0, 0, 0, 0, 0, 1] }]);

  const c = await connect(url, { ...ASKS, name: 'c' });
  assert.deepEqual(c.welcome.more, MoreFlag.KEPT_SCENE, 'granted');
  assert.deepEqual(c.kept()?.records, [{ ...cube, version: 2, pose: [1, 0, 0, 0, 0, 0, 1] }]);
  assert.ok(c.got.indexOf(c.kept()) > c.got.indexOf(c.welcome), 'after the WELCOME');
  // only the first member back gets it; the next hears it from the members (§15.3)
  const d = await connect(url, { ...ASKS, name: 'd' });
  assert.equal(d.kept(), undefined);
  assert.equal(relay.groups.scenes?.counters.restored, 1);
});

test('a client that does not ask never gets KEPT_SCENE; the scene waits for one that does', async () => {
  const { url, store } = await startRelay();
  const a = await connect(url, ASKS);
  a.ws.send(updateWith(a.welcome.clientId, 1, [{ ...CUBE, writer: a.welcome.clientId }]));
  await new Promise((r) => setTimeout(r, 50));
  await leave(a);
  await waitFor(() => store.get('kept') !== null);
  const old = await connect(url, { flags: HelloFlag.BATCHED });
  assert.equal(old.welcome.more, undefined, 'no word it did not ask for');
  assert.equal(old.kept(), undefined);
  const asks = await connect(url, ASKS);
  assert.equal(asks.kept()?.records.length, 1, 'the first member that asks gets it');
});

test('a kept token-protected scene keeps its token: without it no member gets in, with it the scene comes back', async () => {
  const { url, store } = await startRelay();
  const a = await connect(url, { ...ASKS, token: 'secret' });
  a.ws.send(updateWith(a.welcome.clientId, 1, [{ ...CUBE, writer: a.welcome.clientId }]));
  await new Promise((r) => setTimeout(r, 50));
  await leave(a);
  await waitFor(() => store.get('kept') !== null);
  const open = await connect(url, { ...ASKS, token: '' });
  assert.equal(open.closed?.code, CloseCode.FORBIDDEN);
  const wrong = await connect(url, { ...ASKS, token: 'guess' });
  assert.equal(wrong.closed?.code, CloseCode.FORBIDDEN);
  assert.ok(store.get('kept'), 'a refused member leaves the kept scene as it was');
  const right = await connect(url, { ...ASKS, token: 'secret' });
  assert.equal(right.kept()?.records.length, 1);
});

test('a group nobody changed keeps nothing, and empties the store of what it had', async () => {
  const { url, store } = await startRelay();
  await store.put({ group: 'kept', tokenHash: '', records: [CUBE] });
  const a = await connect(url, ASKS);
  assert.equal(a.kept()?.records.length, 1);
  // a removal is a record too (a tombstone): kept, so a late copy cannot bring the cube back
  a.ws.send(updateWith(a.welcome.clientId, 1, [{ ...CUBE, version: 2, writer: a.welcome.clientId, removed: true }]));
  await new Promise((r) => setTimeout(r, 50));
  await leave(a);
  await waitFor(() => store.get('kept')?.records[0].removed === true);
  await store.remove('kept');
  const b = await connect(url, ASKS);
  await leave(b);
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(store.get('kept'), null);
});

test('a p2p member hands the server its own edits (KEPT_SCENE); nobody else may, nor for another writer', async () => {
  const { url, store } = await startRelay();
  const p2p = await connect(url, { ...ASKS, flags: HelloFlag.MEMBERSHIP_ONLY | HelloFlag.MORE, name: 'p2p' });
  const id = p2p.welcome.clientId;
  const relayed = await connect(url, { ...ASKS, name: 'relayed' });
  const spoofer = await connect(url, { ...ASKS, flags: HelloFlag.MEMBERSHIP_ONLY | HelloFlag.MORE, name: 'spoofer' });
  p2p.ws.send(encode({ type: MsgType.KEPT_SCENE, records: [{ ...CUBE, writer: id }] }));
  relayed.ws.send(encode({ type: MsgType.KEPT_SCENE, records: [{ ...CUBE, writer: relayed.welcome.clientId }] }));
  spoofer.ws.send(encode({ type: MsgType.KEPT_SCENE, records: [{ ...CUBE, version: 9, writer: id }] }));
  await waitFor(() => relayed.closed !== null && spoofer.closed !== null);
  assert.equal(relayed.closed?.code, CloseCode.PROTOCOL_VIOLATION, 'a relayed member\'s records travel in its UPDATEs');
  assert.equal(spoofer.closed?.code, CloseCode.SPOOFED_SENDER);
  assert.equal(p2p.closed, null, 'the sender of good records stays');
  assert.equal(p2p.got.filter((m) => m.type === MsgType.KEPT_SCENE).length, 0, 'forwarded to nobody');
  await leave(p2p);
  await waitFor(() => store.get('kept') !== null);
  assert.deepEqual(store.get('kept')?.records, [{ ...CUBE, writer: id }]);
});
