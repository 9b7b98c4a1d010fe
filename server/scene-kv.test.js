// The cluster's kept scenes in a JetStream bucket on a real nats-server: what
// one node keeps, another reads; two nodes' parts of one group merge; a scene
// outlives a restart of the nats-server; a server without JetStream is named.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { connectNatsBroker, ERR_NO_JETSTREAM } from '../relay/broker.js';
import { startNatsServer } from './nats-process.js';
import { KvSceneStore, SCENE_BUCKET, mergeRecords } from './scene-kv.js';
import { waitFor } from '../lab/shared/loop-stall.js';

/** @type {(() => Promise<void> | void)[]} */
const cleanups = [];
after(async () => { for (const c of cleanups.reverse()) await c(); });

/** @param {number} id @param {number} version @param {number} writer */
const rec = (id, version, writer) => ({ id, version, writer, kind: 1, removed: false, pose: /** @type {import('../core/protocol.js').Pose} */ ([id / 10, 0, 0, 0, 0, 0, 1]) });

/** A store on its own connection to `url`, as a node has. @param {string} url */
async function node(url) {
  const broker = await connectNatsBroker({ url });
  cleanups.push(() => broker.close());
  const kv = await /** @type {NonNullable<typeof broker.keyValue>} */ (broker.keyValue)(SCENE_BUCKET, { ttlMs: 3600_000 });
  const store = await new KvSceneStore({ kv, ttlMs: 3600_000 }).open();
  cleanups.push(() => store.close());
  return store;
}

test('merging two copies of a scene keeps the winner of every object', () => {
  assert.deepEqual(mergeRecords([rec(1, 2, 5), rec(2, 1, 5)], [rec(1, 1, 9), rec(3, 1, 9)]).sort((a, b) => a.id - b.id),
    [rec(1, 2, 5), rec(2, 1, 5), rec(3, 1, 9)]);
});

test('one node keeps a scene, another reads it; parts merge; a scene outlives a nats-server restart', { timeout: 60_000 }, async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'carlab-js-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  let nats = await startNatsServer({ jetstreamDir: dir });
  cleanups.push(() => nats.stop());
  const a = await node(nats.url);
  const b = await node(nats.url);
  await a.put({ group: 'g', tokenHash: 'h', records: [rec(1, 1, 5)] });
  await waitFor(() => b.get('g') !== null, 5000, 'B sees what A kept');
  // the group was spread: B saw another object; its put merges with A's instead of replacing it
  await b.put({ group: 'g', tokenHash: 'h', records: [rec(2, 1, 9)] });
  await waitFor(() => a.get('g')?.records.length === 2, 5000, 'A sees the merge');
  assert.deepEqual(a.get('g')?.records.map((r) => r.id).sort(), [1, 2]);

  const port = nats.port;
  await nats.stop();
  nats = await startNatsServer({ port, jetstreamDir: dir });
  const c = await node(nats.url);
  assert.deepEqual(c.get('g')?.records.map((r) => r.id).sort(), [1, 2], 'read back from the JetStream store on disk');
  await c.remove('g');
  await waitFor(() => c.get('g') === null, 5000);
});

test('a NATS without JetStream is named, with what to do', { timeout: 30_000 }, async () => {
  const plain = await startNatsServer();
  cleanups.push(() => plain.stop());
  const broker = await connectNatsBroker({ url: plain.url });
  cleanups.push(() => broker.close());
  await assert.rejects(/** @type {NonNullable<typeof broker.keyValue>} */ (broker.keyValue)(SCENE_BUCKET, { ttlMs: 1000 }),
    (err) => /** @type {any} */ (err).code === ERR_NO_JETSTREAM && /has no JetStream.*-js/.test(/** @type {Error} */ (err).message));
});
