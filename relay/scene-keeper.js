// Kept scenes, the relay's side (docs/operations.md "Kept scenes"): the relay
// holds each live group's scene as a member of it would (core/scene.js, last
// writer wins), from the scene records of every UPDATE it relays; when the
// group's last member leaves, the scene goes to the store; when a group is made
// again, the store's scene seeds it and its first member gets it in a
// KEPT_SCENE (docs/protocol.md §5.14). Reading a relayed UPDATE's records (the
// codec's sceneRecordsOfUpdate) costs one byte test for the common UPDATE, which carries none.

import { sceneRecordsOfUpdate } from '../core/protocol.js';
import { CAR_ID, SharedScene } from '../core/scene.js';

/**
 * What a scene holds worth keeping: every record but the car nobody moved (version 0, which every
 * member holds from the start).
 * @param {SharedScene} scene
 */
export function keptRecordsOf(scene) {
  return [...scene.held.values()].map((h) => h.record).filter((r) => !(r.id === CAR_ID && r.version === 0));
}

/**
 * @typedef {object} SceneStore the part of server/scene-store.js the relay uses
 * @property {(group: string) => import('../server/scene-store.js').KeptScene | null} get
 * @property {(scene: Omit<import('../server/scene-store.js').KeptScene, 'savedAt'>) => Promise<void>} put
 * @property {(group: string) => Promise<void>} remove
 */

/**
 * The live groups' scenes as the relay sees them, and their way into and out of the store.
 */
export class SceneKeeper {
  /** @param {SceneStore} store */
  constructor(store) {
    this.store = store;
    /** By group key: the scene the relay holds of it. @type {Map<string, SharedScene>} */
    this.scenes = new Map();
    /** Groups a kept scene was given back to; records from relayed UPDATEs; scenes stored on emptying. */
    this.counters = { restored: 0, recordsSeen: 0, kept: 0 };
  }

  /** @param {string} key */
  sceneOf(key) {
    let scene = this.scenes.get(key);
    if (!scene) {
      // Object ids are the members' to pick; the relay never adds one.
      scene = new SharedScene({ randomId: () => 1 });
      this.scenes.set(key, scene);
    }
    return scene;
  }

  /**
   * A group is made: its kept scene, if the store has one, seeds the relay's copy of it.
   * @param {{ key: string, name: string }} group
   * @returns {import('../server/scene-store.js').KeptScene | null}
   */
  groupMade(group) {
    const kept = this.store.get(group.name);
    if (!kept) return null;
    const scene = this.sceneOf(group.key);
    for (const record of kept.records) scene.apply(record);
    return kept;
  }

  /** A group made for a HELLO that was refused: nobody joined it, its seeded copy goes. @param {string} key */
  groupDropped(key) {
    this.scenes.delete(key);
  }

  /**
   * A relayed UPDATE: its scene records, if any, are applied to the group's scene.
   * @param {string} key the group's key @param {Uint8Array} body
   */
  observe(key, body) {
    const records = sceneRecordsOfUpdate(body);
    if (records.length > 0) this.observeRecords(key, records);
  }

  /**
   * Records of a group's scene (a relayed UPDATE's, or those a p2p member sent of its own edits).
   * @param {string} key @param {import('../core/scene.js').SceneRecord[]} records
   */
  observeRecords(key, records) {
    this.counters.recordsSeen += records.length;
    const scene = this.sceneOf(key);
    for (const record of records) scene.apply(record);
  }

  /**
   * The group's last member left: its scene is kept (with its token hash), or, when nothing in it
   * was ever changed, whatever the store held of it is dropped.
   * @param {{ key: string, name: string, tokenHash: string }} group
   * @returns {Promise<void>}
   */
  groupEmptied(group) {
    const scene = this.scenes.get(group.key);
    this.scenes.delete(group.key);
    const records = scene ? keptRecordsOf(scene) : [];
    if (records.length === 0) return this.store.get(group.name) ? this.store.remove(group.name) : Promise.resolve();
    this.counters.kept++;
    return this.store.put({ group: group.name, tokenHash: group.tokenHash, records });
  }

  /**
   * The records a group's first member is given (KEPT_SCENE): the relay's copy, kept records and
   * anything relayed since.
   * @param {string} key
   */
  recordsFor(key) {
    this.counters.restored++;
    return keptRecordsOf(this.sceneOf(key));
  }
}
