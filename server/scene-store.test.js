// The kept-scene store on disk: what it writes reads back, a damaged file is
// set aside and skipped, a scene past its time to live is gone, and writes
// land in order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DirSceneStore, MemorySceneStore, SCENE_FILE_FORMAT, keptSceneProblem, sceneFile } from './scene-store.js';

/** @type {import('../core/scene.js').SceneRecord} */
const CUBE = { id: 42, version: 3, writer: 7, kind: 1, removed: false, pose: [0.25, 0, -0.5, 0, 0, 0, 1] };
/** @type {import('../core/scene.js').SceneRecord} */
const GONE = { id: 9, version: 2, writer: 7, kind: 2, removed: true, pose: [0, 0, 0, 0, 0, 0, 1] };

/** @param {import('node:test').TestContext} t */
async function tempDir(t) {
  const dir = await mkdtemp(path.join(tmpdir(), 'carlab-scenes-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

test('a kept scene reads back after the store is opened again, token hash and tombstones with it', async (t) => {
  const dir = await tempDir(t);
  const store = await new DirSceneStore({ dir }).open();
  await store.put({ group: 'class 4b', tokenHash: 'abc', records: [CUBE, GONE] });
  assert.equal(store.counters.written, 1);
  const again = await new DirSceneStore({ dir }).open();
  assert.deepEqual(again.get('class 4b')?.records, [CUBE, GONE]);
  assert.equal(again.get('class 4b')?.tokenHash, 'abc');
  assert.equal(again.get('other'), null);
  // the file is named by a hash of the group: no name people typed reaches the file system
  assert.deepEqual(await readdir(dir), [path.basename(sceneFile(dir, 'class 4b'))]);
  await again.remove('class 4b');
  assert.deepEqual(await readdir(dir), []);
});

test('a damaged or foreign file is reported, set aside and skipped; the others load', async (t) => {
  const dir = await tempDir(t);
  const good = await new DirSceneStore({ dir }).open();
  await good.put({ group: 'kept', tokenHash: '', records: [CUBE] });
  const torn = sceneFile(dir, 'torn');
  await writeFile(torn, '{"format":1,"group":"torn","tokenHash":"","savedAt":1,"rec');
  const bad = sceneFile(dir, 'bad');
  await writeFile(bad, JSON.stringify({ format: SCENE_FILE_FORMAT, group: 'bad', tokenHash: '', savedAt: Date.now(), records: [{ ...CUBE, kind: 99 }] }));
  // a well-formed scene in a file named for another group (copied by hand) is not trusted either
  const moved = sceneFile(dir, 'moved');
  await writeFile(moved, await readFile(sceneFile(dir, 'kept'), 'utf8'));
  /** @type {string[]} */
  const warned = [];
  const store = await new DirSceneStore({ dir, log: { warn: (_o, msg) => warned.push(msg) } }).open();
  assert.deepEqual(store.get('kept')?.records, [CUBE]);
  assert.equal(store.counters.corrupt, 3);
  assert.equal(warned.length, 3);
  assert.match(warned.join('\n'), /unknown kind 99/);
  const names = (await readdir(dir)).sort();
  assert.deepEqual(names, [torn, bad, moved].map((f) => `${path.basename(f)}.corrupt`).concat(path.basename(sceneFile(dir, 'kept'))).sort());
});

test('a scene past its time to live is gone, on open and when asked for', async (t) => {
  const dir = await tempDir(t);
  let now = 1_000_000;
  const store = await new DirSceneStore({ dir, ttlMs: 60_000, now: () => now }).open();
  await store.put({ group: 'old', tokenHash: '', records: [CUBE] });
  await store.put({ group: 'older', tokenHash: '', records: [CUBE] });
  now += 61_000;
  assert.equal(store.get('old'), null);
  await store.flush();
  const reopened = await new DirSceneStore({ dir, ttlMs: 60_000, now: () => now }).open();
  assert.equal(reopened.scenes.size, 0);
  assert.equal(reopened.counters.expired, 1, 'the other expired on open');
  assert.deepEqual(await readdir(dir), []);
});

test('writes of one group land in the order they were made', async (t) => {
  const dir = await tempDir(t);
  const store = await new DirSceneStore({ dir }).open();
  for (let v = 1; v <= 20; v++) void store.put({ group: 'g', tokenHash: '', records: [{ ...CUBE, version: v }] });
  await store.flush();
  const reopened = await new DirSceneStore({ dir }).open();
  assert.equal(reopened.get('g')?.records[0].version, 20);
});

test('a write that fails is counted and logged, never thrown; the scene stays in memory', async (t) => {
  const dir = await tempDir(t);
  /** @type {string[]} */
  const warned = [];
  const store = await new DirSceneStore({ dir, log: { warn: (_o, msg) => warned.push(msg) } }).open();
  store.dir = path.join(dir, 'gone', 'deeper'); // a directory that is not there
  await store.put({ group: 'g', tokenHash: '', records: [CUBE] });
  assert.equal(store.counters.writeErrors, 1);
  assert.equal(warned.length, 1);
  assert.deepEqual(store.get('g')?.records, [CUBE]);
});

test('the memory store keeps scenes for the process only', async () => {
  const store = await new MemorySceneStore().open();
  await store.put({ group: 'g', tokenHash: '', records: [CUBE] });
  assert.deepEqual(store.get('g')?.records, [CUBE]);
  await store.remove('g');
  assert.equal(store.get('g'), null);
});

test('keptSceneProblem holds records to the protocol\'s rules', () => {
  const ok = { format: SCENE_FILE_FORMAT, group: 'g', tokenHash: '', savedAt: 1, records: [CUBE] };
  assert.equal(keptSceneProblem(ok), null);
  assert.match(String(keptSceneProblem({ ...ok, format: 2 })), /format 2/);
  assert.match(String(keptSceneProblem({ ...ok, records: [{ ...CUBE, version: 0 }] })), /version 0/);
  assert.match(String(keptSceneProblem({ ...ok, records: [{ ...CUBE, pose: [0, 0, 0, 0, 0, 0, null] }] })), /not finite/);
  assert.match(String(keptSceneProblem({ ...ok, records: [{ ...CUBE, id: -1 }] })), /id or writer/);
  assert.match(String(keptSceneProblem(null)), /not an object/);
});
