// Kept scenes in a cluster (`carlab start --cluster`, `--nats`): one JetStream
// key-value bucket holds every group's kept scene, so whichever node a group
// is made on again restores it, and it outlives any node and a restart of the
// nats-server (carlab's own runs JetStream with a store on disk). Every node
// watches the bucket and keeps it in memory: a group is made in the middle of
// a HELLO, which cannot wait for NATS. A group whose members were spread over
// several nodes empties on each of them, each with the records it saw: a put
// merges with what the bucket holds (last writer wins per object), so no
// node's part is lost to another's.

import { KeptScenes, keptSceneProblem, SCENE_FILE_FORMAT, sceneKey } from './scene-store.js';
import { recordHash, wins } from '../core/scene.js';

/** The bucket's name. */
export const SCENE_BUCKET = 'carlab-scenes';

/**
 * Records of two copies of one scene, merged object by object (last writer wins, core/scene.js).
 * @param {import('../core/scene.js').SceneRecord[]} a @param {import('../core/scene.js').SceneRecord[]} b
 */
export function mergeRecords(a, b) {
  /** @type {Map<number, import('../core/scene.js').SceneRecord>} */
  const byId = new Map(a.map((r) => [r.id, r]));
  for (const r of b) {
    const mine = byId.get(r.id);
    if (!mine || wins(r, recordHash(r), mine, recordHash(mine))) byId.set(r.id, r);
  }
  return [...byId.values()];
}

/**
 * The kept scenes of a cluster, in a JetStream key-value bucket, read through a watched copy.
 */
export class KvSceneStore extends KeptScenes {
  /**
   * @param {{ kv: import('nats').KV, ttlMs?: number, log?: import('./scene-store.js').SceneStoreLog, now?: () => number }} options
   */
  constructor({ kv, ...options }) {
    super(options);
    this.kv = kv;
    /** Which group a key is (deletions name only the key). @type {Map<string, string>} */
    this.groupOfKey = new Map();
    /** @type {Set<Promise<void>>} */
    this.writing = new Set();
    /** @type {{ stop(): void } | null} */
    this.watcher = null;
  }

  /** Reads the bucket and keeps watching it; resolves once every kept scene is read. */
  async open() {
    /** @type {() => void} */
    let initialized = () => {};
    const ready = new Promise((resolve) => { initialized = () => resolve(undefined); });
    const watcher = await this.kv.watch({ initializedFn: () => initialized() });
    this.watcher = watcher;
    void (async () => {
      for await (const entry of watcher) this.take(entry);
    })().catch((err) => this.log.warn({ event: 'scene-kv-watch-ended', err: String(err?.message ?? err) }, 'kept scenes: the bucket watch ended'));
    await ready;
    return this;
  }

  /** One entry of the bucket, as the watch delivers it. @param {import('nats').KvEntry} entry */
  take(entry) {
    if (entry.operation !== 'PUT') {
      const group = this.groupOfKey.get(entry.key);
      if (group !== undefined) this.scenes.delete(group);
      this.groupOfKey.delete(entry.key);
      return;
    }
    let data;
    try { data = entry.json(); } catch { data = null; }
    const problem = keptSceneProblem(data) ?? (sceneKey(data.group) !== entry.key ? 'its key is not its group\'s' : null);
    if (problem) {
      this.reportCorrupt(entry.key, problem);
      return;
    }
    this.groupOfKey.set(entry.key, data.group);
    this.scenes.set(data.group, { group: data.group, tokenHash: data.tokenHash, savedAt: data.savedAt, records: data.records });
  }

  /**
   * Keeps a group's scene, merged with what the bucket holds of it (another node's part).
   * @param {Omit<import('./scene-store.js').KeptScene, 'savedAt'>} scene
   */
  put(scene) {
    const before = this.scenes.get(scene.group);
    const records = before && before.tokenHash === scene.tokenHash ? mergeRecords(before.records, scene.records) : scene.records;
    const kept = { ...scene, records, savedAt: this.now() };
    this.scenes.set(scene.group, kept);
    this.groupOfKey.set(sceneKey(scene.group), scene.group);
    const body = new TextEncoder().encode(JSON.stringify({ format: SCENE_FILE_FORMAT, ...kept }));
    return this.track(this.kv.put(sceneKey(scene.group), body).then(() => { this.counters.written++; }));
  }

  /** @param {string} group */
  remove(group) {
    void super.remove(group);
    return this.track(this.kv.delete(sceneKey(group)).then(() => {}));
  }

  /**
   * A write under way: counted and logged if it fails, never thrown at the relay.
   * @param {Promise<void>} write
   */
  track(write) {
    const done = write.catch((err) => {
      this.counters.writeErrors++;
      this.log.warn({ event: 'scene-store-write-failed', err: String(err?.message ?? err) }, 'a kept scene could not be written to NATS');
    });
    this.writing.add(done);
    void done.then(() => this.writing.delete(done));
    return done;
  }

  async flush() {
    await Promise.all([...this.writing]);
  }

  /** The bucket's own age limit removes old scenes; the copy here follows. */
  sweep() {
    for (const kept of [...this.scenes.values()]) if (this.expired(kept)) this.scenes.delete(kept.group);
  }

  close() {
    this.watcher?.stop();
  }
}
