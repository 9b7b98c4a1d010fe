// Kept scenes on disk (`carlab start`, docs/operations.md "Kept scenes"): one
// file per group under the store directory, holding the group's latest scene
// records and its token hash. Every write goes to a temporary file that is
// fsynced and renamed over the old one (write-file-atomic), so a crash leaves
// the old scene or the new one, never a torn file; a file that does not read
// back as a scene (damaged by hand, another program, a disk fault) is reported,
// set aside as `<name>.corrupt` and skipped: the server starts without it.

import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import writeFileAtomic from 'write-file-atomic';
import { sceneRecordProblem } from '../core/protocol.js';
import { SCENE_OBJECTS_HARD_MAX, SCENE_TOMBSTONES_MAX } from '../core/scene.js';

/** A kept scene is dropped after this long without a member (`--scene-ttl`, default 7 days). */
export const SCENE_TTL_DEFAULT_MS = 7 * 24 * 3600 * 1000;

/** The store's files say which format they are in; a file of another is skipped as unreadable. */
export const SCENE_FILE_FORMAT = 1;

/** Most records a kept scene holds: every live object a scene can reach plus its tombstones. */
const RECORDS_MAX = SCENE_OBJECTS_HARD_MAX + SCENE_TOMBSTONES_MAX;

/**
 * A group's scene as kept: its records (tombstones included) and the hash of its access token
 * ('' for an open group), and when it was last written (ms since the epoch).
 * @typedef {object} KeptScene
 * @property {string} group the group's name
 * @property {string} tokenHash
 * @property {number} savedAt
 * @property {import('../core/scene.js').SceneRecord[]} records
 */

/**
 * @typedef {object} SceneStoreLog
 * @property {(obj: object, msg: string) => void} warn
 */

/**
 * The file a group's scene is kept in: named by a hash of the group's name (a name is whatever
 * people typed: no path, no length to worry about).
 * @param {string} dir @param {string} group
 */
export function sceneFile(dir, group) {
  return path.join(dir, `${sceneKey(group)}.json`);
}

/**
 * A group's key in a store: 32 hex digits of a hash of its name (a file name, a NATS key).
 * @param {string} group
 */
export function sceneKey(group) {
  return createHash('sha256').update(group).digest('hex').slice(0, 32);
}

/**
 * What is wrong with a kept scene read back, or null.
 * @param {any} data parsed JSON
 * @returns {string | null}
 */
export function keptSceneProblem(data) {
  if (!data || typeof data !== 'object') return 'not an object';
  if (data.format !== SCENE_FILE_FORMAT) return `format ${data.format}, this server reads ${SCENE_FILE_FORMAT}`;
  if (typeof data.group !== 'string' || data.group.length === 0) return 'no group name';
  if (typeof data.tokenHash !== 'string') return 'no token hash';
  if (!Number.isFinite(data.savedAt)) return 'no time it was saved';
  if (!Array.isArray(data.records) || data.records.length > RECORDS_MAX) return `records are not a list of at most ${RECORDS_MAX}`;
  for (const r of data.records) {
    if (!r || !Number.isInteger(r.id) || r.id < 0 || r.id > 0xffffffff || !Number.isInteger(r.writer) || r.writer < 0 || r.writer > 0xffffffff) return 'a record without id or writer';
    if (typeof r.removed !== 'boolean' || !Array.isArray(r.pose)) return 'a record without removed or pose';
    const problem = sceneRecordProblem(r.kind, r.removed ? 1 : 0, r.version, r.pose);
    if (problem) return problem;
  }
  return null;
}

/**
 * What every store of kept scenes has: the scenes in memory (reads never wait), their time to
 * live, the counters; the stores differ in where they write (a directory, a JetStream bucket).
 */
export class KeptScenes {
  /** @param {{ ttlMs?: number, log?: SceneStoreLog, now?: () => number }} options */
  constructor({ ttlMs = SCENE_TTL_DEFAULT_MS, log, now = Date.now } = {}) {
    this.ttlMs = ttlMs;
    this.log = log ?? { warn: () => {} };
    this.now = now;
    /** @type {Map<string, KeptScene>} by group name */
    this.scenes = new Map();
    /** Scenes that did not read back (set aside or skipped), scenes expired, writes done and failed. */
    this.counters = { corrupt: 0, expired: 0, writeErrors: 0, written: 0 };
  }

  /** @param {{ savedAt: number }} kept */
  expired(kept) {
    return this.now() - kept.savedAt > this.ttlMs;
  }

  /**
   * The kept scene of a group, or null (none, or expired: then it is removed).
   * @param {string} group
   * @returns {KeptScene | null}
   */
  get(group) {
    const kept = this.scenes.get(group);
    if (!kept) return null;
    if (this.expired(kept)) {
      this.counters.expired++;
      void this.remove(group);
      return null;
    }
    return kept;
  }

  /** Forgets a group's kept scene (the stores also delete where they wrote it). @param {string} group @returns {Promise<void>} */
  remove(group) {
    this.scenes.delete(group);
    return Promise.resolve();
  }

  /** A scene could not be read back: reported, and skipped. @param {string} where @param {string} why */
  reportCorrupt(where, why) {
    this.counters.corrupt++;
    this.log.warn({ event: 'scene-store-corrupt', where, why }, `kept scene ${where} skipped: ${why}`);
  }
}

/**
 * The kept scenes of one server, in a directory: read once at open(), then every change written
 * through at once (put, remove). Reads are from memory.
 */
export class DirSceneStore extends KeptScenes {
  /**
   * @param {{ dir: string, ttlMs?: number, log?: SceneStoreLog, now?: () => number }} options
   */
  constructor({ dir, ...options }) {
    super(options);
    this.dir = dir;
    /** The writes under way, one chain per group, so a later one never lands before an earlier. @type {Map<string, Promise<void>>} */
    this.writing = new Map();
  }

  /** Creates the directory and reads every kept scene; damaged files are set aside, expired ones removed. */
  async open() {
    await mkdir(this.dir, { recursive: true });
    for (const name of await readdir(this.dir)) {
      if (!name.endsWith('.json')) continue;
      await this.readOne(path.join(this.dir, name));
    }
    return this;
  }

  /** @param {string} file */
  async readOne(file) {
    let data;
    try {
      data = JSON.parse(await readFile(file, 'utf8'));
    } catch (err) {
      await this.setAside(file, `unreadable: ${/** @type {Error} */ (err).message}`);
      return;
    }
    const problem = keptSceneProblem(data);
    if (problem || sceneFile(this.dir, data.group) !== file) {
      await this.setAside(file, problem ?? 'its name is not its group\'s');
      return;
    }
    if (this.expired(data)) {
      this.counters.expired++;
      await unlink(file).catch(() => {});
      return;
    }
    this.scenes.set(data.group, { group: data.group, tokenHash: data.tokenHash, savedAt: data.savedAt, records: data.records });
  }

  /** @param {string} file @param {string} why */
  async setAside(file, why) {
    this.reportCorrupt(file, why);
    await rename(file, `${file}.corrupt`).catch(() => {});
  }

  /**
   * Keeps a group's scene (replacing what was kept), on disk before the returned promise resolves.
   * @param {Omit<KeptScene, 'savedAt'>} scene
   */
  put(scene) {
    const kept = { ...scene, savedAt: this.now() };
    this.scenes.set(scene.group, kept);
    return this.chain(scene.group, () => writeFileAtomic(sceneFile(this.dir, scene.group), `${JSON.stringify({ format: SCENE_FILE_FORMAT, ...kept })}\n`, { fsync: true })
      .then(() => { this.counters.written++; }));
  }

  /** Forgets a group's kept scene (its file too). @param {string} group */
  remove(group) {
    void super.remove(group);
    return this.chain(group, () => unlink(sceneFile(this.dir, group)).catch((err) => { if (err.code !== 'ENOENT') throw err; }));
  }

  /**
   * Runs a write after the group's writes before it; a failure is counted and logged, never thrown
   * at the relay (the scene stays in memory and is written again on its next change).
   * @param {string} group @param {() => Promise<void>} write
   */
  chain(group, write) {
    const before = this.writing.get(group) ?? Promise.resolve();
    const next = before.then(write).catch((err) => {
      this.counters.writeErrors++;
      this.log.warn({ event: 'scene-store-write-failed', group, err: String(err?.message ?? err) }, 'a kept scene could not be written');
    });
    this.writing.set(group, next);
    void next.then(() => { if (this.writing.get(group) === next) this.writing.delete(group); });
    return next;
  }

  /** Resolves when every write begun so far is on disk (a draining server waits for it). */
  async flush() {
    await Promise.all([...this.writing.values()]);
  }

  /** Removes every kept scene past its time to live. */
  sweep() {
    for (const kept of [...this.scenes.values()]) {
      if (this.expired(kept)) { this.counters.expired++; void this.remove(kept.group); }
    }
  }
}

/**
 * The same store kept in memory only (a lab server, tests): scenes outlive their group, not the process.
 */
export class MemorySceneStore extends KeptScenes {
  async open() { return this; }

  /** @param {Omit<KeptScene, 'savedAt'>} scene */
  put(scene) {
    this.scenes.set(scene.group, { ...scene, savedAt: this.now() });
    return Promise.resolve();
  }

  async flush() {}

  sweep() {
    for (const kept of [...this.scenes.values()]) if (this.expired(kept)) { this.counters.expired++; this.scenes.delete(kept.group); }
  }
}
