// A group's shared scene: up to SCENE_OBJECTS_MAX objects, each a
// last-writer-wins register, and the anti-entropy that makes every member
// hold the same scene whatever was lost, reordered, duplicated or missed
// while away (docs/protocol.md §15). No DOM, no Node built-ins.
//
// Why a register of our own and not a CRDT library: per edit it costs 42 bytes
// on the wire and about 1.5 µs to apply, against 53 bytes and 16 µs for Yjs and
// 157-186 bytes and 30-641 µs for Loro and Automerge (measured, see the issue
// 36 note), and a scene of a few dozen poses needs nothing but a register.
import { SCENE_KINDS, SCENE_RECORDS_MAX, SCENE_RECORD_BYTES, writeSceneRecordBytes } from './protocol.js';

/** Live objects a member may add up to: its own adds beyond it are refused. */
export const SCENE_OBJECTS_MAX = 64;
/**
 * Live objects a member holds at most, whatever it is sent: concurrent adds of members that each
 * saw fewer than SCENE_OBJECTS_MAX can pass that bound; a record beyond this one is a flood.
 */
export const SCENE_OBJECTS_HARD_MAX = 2 * SCENE_OBJECTS_MAX;
/** Tombstones kept: the oldest goes beyond this (a member away for more removals may see one come back). */
export const SCENE_TOMBSTONES_MAX = 192;
/** The legacy single object (the toy car of old links) is the record with this id. */
export const CAR_ID = 0;
/** Consecutive UPDATEs whose digest differs from ours (over IN_FLIGHT_MS at least) before a neighbour counts as out of step. */
export const MISMATCHES_BEFORE_REPAIR = 2;
/**
 * A neighbour's digest that equals one we held this recently is behind by what is still in
 * flight, not out of step (ms): two cycles of the product (167 ms) and some.
 */
export const IN_FLIGHT_MS = 400;

/** @typedef {import('./protocol.js').SceneRecord} SceneRecord */
/** @typedef {import('./protocol.js').Pose} Pose */

/**
 * A record as held: the record, its digest hash and when it last changed here (for repair order).
 * @typedef {{ record: SceneRecord, hash: number, changedAt: number }} Held
 */

/**
 * Why a local edit was refused.
 */
export class SceneError extends Error {
  /**
   * @param {'SCENE_FULL' | 'NO_SUCH_OBJECT' | 'BAD_KIND' | 'BAD_POSE'} code
   * @param {string} message
   */
  constructor(code, message) {
    super(message);
    this.name = 'SceneError';
    this.code = code;
  }
}

/**
 * FNV-1a, 32 bits, of a record's wire bytes: the digest sums these, so it is independent of order.
 * @param {SceneRecord} record
 */
export function recordHash(record) {
  writeSceneRecordBytes(HASH_VIEW, 0, record);
  let h = 0x811c9dc5;
  for (let i = 0; i < SCENE_RECORD_BYTES; i++) h = Math.imul(h ^ HASH_BYTES[i], 0x01000193) >>> 0;
  return h;
}

/** Scratch for recordHash: a record's bytes without a buffer per hash (every apply hashes). */
const HASH_BYTES = new Uint8Array(SCENE_RECORD_BYTES);
const HASH_VIEW = new DataView(HASH_BYTES.buffer);


/**
 * The last-writer-wins order: higher version, then higher writer id, then the higher hash (two
 * members that reused one client id after a restart cannot tie on different content).
 * @param {{ version: number, writer: number }} a @param {number} aHash
 * @param {{ version: number, writer: number }} b @param {number} bHash
 * @returns {boolean} a wins over b
 */
export function wins(a, aHash, b, bHash) {
  if (a.version !== b.version) return a.version > b.version;
  if (a.writer !== b.writer) return a.writer > b.writer;
  return aHash > bHash;
}

/** @param {Pose} pose @returns {Pose} the pose as it will read back from the wire (float32) */
function wirePose(pose) {
  if (!Array.isArray(pose) || pose.length !== 7 || !pose.every(Number.isFinite)) throw new SceneError('BAD_POSE', 'a pose is 7 finite numbers');
  return /** @type {Pose} */ (pose.map((v) => Math.fround(v)));
}

/**
 * @typedef {object} SceneOptions
 * @property {() => number} [now] ms, any monotonic clock (repair order, digests in flight)
 * @property {number} [inFlightMs] how long a digest we held counts as in flight (IN_FLIGHT_MS)
 * @property {() => number} [randomId] a fresh u32 object id (default: crypto.getRandomValues)
 * @property {(record: SceneRecord, local: boolean) => void} [onChange] a record this member holds changed
 */

/** @returns {number} a random u32 id, never CAR_ID */
function randomObjectId() {
  const a = new Uint32Array(1);
  do crypto.getRandomValues(a); while (a[0] === CAR_ID);
  return a[0];
}

/**
 * One member's copy of its group's scene, with what it must send next.
 */
export class SharedScene {
  /** @param {SceneOptions} [options] */
  constructor(options = {}) {
    this.now = options.now ?? (() => performance.now());
    this.randomId = options.randomId ?? randomObjectId;
    this.onChange = options.onChange ?? (() => {});
    this.inFlightMs = options.inFlightMs ?? IN_FLIGHT_MS;
    /** @type {{ digest: number, until: number }[]} digests we held until lately, oldest first */
    this.recentDigests = [];
    /** @type {Map<number, Held>} by object id, tombstones included */
    this.held = new Map();
    this.digest = 0;
    this.live = 0;
    /** @type {Map<number, SceneRecord>} local edits not sent yet, by object id (a drag's moves coalesce) */
    this.pending = new Map();
    /** @type {Map<number, { count: number, since: number }>} by neighbour id: consecutive UPDATEs whose digest was not ours, since when (our clock) */
    this.mismatches = new Map();
    /** @type {Map<number, number>} by neighbour id: the digest of its latest UPDATE */
    this.lastDigests = new Map();
    /** @type {number[] | null} ids still to push in the repair going on, most recently changed first */
    this.repairQueue = null;
    /** Records sent to repair, and repairs started: what anti-entropy costs. */
    this.repairRecordsSent = 0;
    this.repairs = 0;
    // The legacy car: at the origin, version 0, so that a move of it (version 1) wins everywhere.
    this.put({ id: CAR_ID, version: 0, writer: 0, kind: 0, removed: false, pose: [0, 0, 0, 0, 0, 0, 1] }, -Infinity);
  }

  /** @param {SceneRecord} record @param {number} changedAt @param {number} [hash] recordHash(record), when known */
  put(record, changedAt, hash = recordHash(record)) {
    this.recentDigests.push({ digest: this.digest, until: this.now() + this.inFlightMs });
    if (this.recentDigests.length > 64) this.recentDigests.shift();
    const before = this.held.get(record.id);
    if (before) {
      this.digest = (this.digest - before.hash) >>> 0;
      if (!before.record.removed) this.live--;
    }
    this.held.set(record.id, { record, hash, changedAt });
    this.digest = (this.digest + hash) >>> 0;
    if (!record.removed) this.live++;
    else this.dropOldTombstones();
  }

  dropOldTombstones() {
    const tombs = [...this.held.values()].filter((h) => h.record.removed);
    if (tombs.length <= SCENE_TOMBSTONES_MAX) return;
    tombs.sort((a, b) => a.changedAt - b.changedAt);
    for (const h of tombs.slice(0, tombs.length - SCENE_TOMBSTONES_MAX)) {
      this.held.delete(h.record.id);
      this.digest = (this.digest - h.hash) >>> 0;
    }
  }

  /** @returns {SceneRecord[]} the live objects, by id */
  objects() {
    return [...this.held.values()].filter((h) => !h.record.removed).map((h) => h.record).sort((a, b) => a.id - b.id);
  }

  /** @param {number} id @returns {SceneRecord | undefined} the live object */
  get(id) {
    const h = this.held.get(id);
    return h && !h.record.removed ? h.record : undefined;
  }

  /**
   * A local edit: it wins over what we hold (version + 1) and goes out on the next UPDATE.
   * @param {SceneRecord} record
   */
  edit(record) {
    this.put(record, this.now());
    this.pending.set(record.id, record);
    this.onChange(record, true);
    return record;
  }

  /**
   * Adds an object of a palette kind.
   * @param {string} kindName one of SCENE_KINDS
   * @param {Pose} pose
   * @param {number} writer our client id
   */
  add(kindName, pose, writer) {
    const kind = SCENE_KINDS.indexOf(kindName);
    if (kind < 0) throw new SceneError('BAD_KIND', `unknown kind "${kindName}" (one of ${SCENE_KINDS.join(', ')})`);
    if (this.live >= SCENE_OBJECTS_MAX) throw new SceneError('SCENE_FULL', `the scene holds ${SCENE_OBJECTS_MAX} objects, its limit: remove one first`);
    let id = this.randomId();
    while (this.held.has(id) || id === CAR_ID) id = this.randomId();
    return this.edit({ id, version: 1, writer, kind, removed: false, pose: wirePose(pose) });
  }

  /**
   * Moves (and turns) a live object.
   * @param {number} id @param {Pose} pose @param {number} writer
   */
  move(id, pose, writer) {
    const current = this.get(id);
    if (!current) throw new SceneError('NO_SUCH_OBJECT', `no object ${id} in the scene`);
    return this.edit({ ...current, version: current.version + 1, writer, pose: wirePose(pose) });
  }

  /** @param {number} id @param {number} writer */
  remove(id, writer) {
    const current = this.get(id);
    if (!current) throw new SceneError('NO_SUCH_OBJECT', `no object ${id} in the scene`);
    return this.edit({ ...current, version: current.version + 1, writer, removed: true });
  }

  /**
   * A record from a neighbour: kept if it wins over ours (last writer wins).
   * @param {SceneRecord} record
   * @returns {boolean} it changed what we hold
   */
  apply(record) {
    const mine = this.held.get(record.id);
    // Most records lose or win on version alone (a repeat, an older copy): no hash needed for that.
    if (mine && (record.version < mine.record.version || (record.version === mine.record.version && record.writer < mine.record.writer))) return false;
    const hash = recordHash(record);
    if (mine && !wins(record, hash, mine.record, mine.hash)) return false;
    if (!mine && !record.removed && this.live >= SCENE_OBJECTS_HARD_MAX) return false;
    this.put(record, this.now(), hash);
    this.onChange(record, false);
    return true;
  }

  /**
   * A neighbour's UPDATE said its digest: two in a row that differ from ours, over at least
   * inFlightMs, start a repair. While
   * we hold edits not sent yet, or when its digest is one we held less than inFlightMs ago, the
   * neighbour may just not have had what is in flight yet: such a comparison counts for nothing.
   * @param {number} from neighbour id
   * @param {number} digest
   */
  noteDigest(from, digest) {
    this.lastDigests.set(from, digest);
    if (digest === this.digest) {
      this.mismatches.delete(from);
      return;
    }
    if (this.pending.size > 0 || this.heldLately(digest)) return;
    const now = this.now();
    let m = this.mismatches.get(from);
    if (!m) this.mismatches.set(from, (m = { count: 0, since: now }));
    m.count++;
    // Under load, members hold different sets of the edits in flight for a while: a difference
    // that lasts longer than anything in flight does is a loss.
    if (m.count >= MISMATCHES_BEFORE_REPAIR && now - m.since >= this.inFlightMs) this.startRepair();
  }

  /** @param {number} digest @returns {boolean} we held this digest less than inFlightMs ago */
  heldLately(digest) {
    const now = this.now();
    while (this.recentDigests.length > 0 && this.recentDigests[0].until < now) this.recentDigests.shift();
    return this.recentDigests.some((d) => d.digest === digest);
  }

  /**
   * Pushes what we hold, a block per UPDATE: live objects first (what a member sees), then
   * tombstones, each most recently changed first (what a neighbour most likely missed).
   */
  startRepair() {
    if (this.repairQueue) return;
    this.repairs++;
    // The car at version 0 is everyone's from the start: never sent (the wire refuses version 0).
    const order = [...this.held.values()].filter((h) => h.record.version > 0).sort((a, b) => Number(a.record.removed) - Number(b.record.removed) || b.changedAt - a.changedAt);
    this.repairQueue = order.map((h) => h.record.id);
  }

  /** @param {number} id a neighbour that joined: it gets what we hold without waiting for a mismatch */
  joined(id) {
    this.lastDigests.delete(id);
    this.mismatches.delete(id);
    this.startRepair();
  }

  /** @param {number} id a neighbour that left */
  forget(id) {
    this.mismatches.delete(id);
    this.lastDigests.delete(id);
  }

  /** @returns {boolean} some neighbour's digest differs from ours, two UPDATEs running */
  outOfStep() {
    for (const m of this.mismatches.values()) if (m.count >= MISMATCHES_BEFORE_REPAIR) return true;
    return false;
  }

  /**
   * @param {Iterable<number>} neighbours
   * @returns {boolean} each of them said our digest last (a repair going on can stop)
   */
  agreedBy(neighbours) {
    for (const id of neighbours) if (this.lastDigests.get(id) !== this.digest) return false;
    return true;
  }

  /**
   * The scene block of our next UPDATE: our digest, our pending edits, then what the repair going
   * on still has to push, at most SCENE_RECORDS_MAX records in all. The repair stops when it has
   * pushed everything, or early when every neighbour's latest digest is ours.
   * @param {Iterable<number>} neighbours the members this UPDATE goes to
   * @returns {import('./protocol.js').SceneBlock}
   */
  nextBlock(neighbours) {
    if (this.repairQueue && this.agreedBy(neighbours)) this.repairQueue = null;
    /** @type {SceneRecord[]} */
    const records = [];
    for (const [id, record] of this.pending) {
      if (records.length === SCENE_RECORDS_MAX) break;
      records.push(record);
      this.pending.delete(id);
    }
    while (this.repairQueue && this.repairQueue.length > 0 && records.length < SCENE_RECORDS_MAX) {
      const h = this.held.get(/** @type {number} */ (this.repairQueue.shift()));
      if (h && !records.includes(h.record)) {
        records.push(h.record);
        this.repairRecordsSent++;
      }
    }
    if (this.repairQueue?.length === 0) this.repairQueue = null;
    return { digest: this.digest, held: this.held.size, records };
  }

  /**
   * Takes in a neighbour's scene block: its records, then its digest. The records of a late
   * (reordered) UPDATE still count, last writer wins whatever the order; its digest is old news.
   * @param {number} from
   * @param {import('./protocol.js').SceneBlock} block
   * @param {boolean} [newest] the UPDATE is the newest from its sender so far
   */
  receive(from, block, newest = true) {
    for (const record of block.records) this.apply(record);
    if (newest) this.noteDigest(from, block.digest);
  }

  /**
   * @param {Iterable<number>} neighbours
   * @returns {number[]} those whose latest digest is not ours (or who said none yet)
   */
  notAgreeing(neighbours) {
    return [...neighbours].filter((id) => this.lastDigests.get(id) !== this.digest);
  }

  /** @returns {{ objects: number, held: number, digest: number, repairs: number, repairRecordsSent: number, inStep: boolean }} */
  summary() {
    return { objects: this.live, held: this.held.size, digest: this.digest, repairs: this.repairs, repairRecordsSent: this.repairRecordsSent, inStep: !this.outOfStep() };
  }
}
