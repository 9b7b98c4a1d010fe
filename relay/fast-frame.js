// The relay's fast intake: a frame of UPDATEs and ACKs — the traffic of every
// delivery — is checked in place, byte for byte as decode() checks it, and
// read without building message objects: the relay only needs an update's
// sender, seq and bytes, an ACK's three ids. Anything else (another type, a
// defect of any kind) is not this module's business: scanFrame says null and
// the caller decodes the frame in full, so every bad frame gets its close
// code and reason from one place, core/protocol.js. relay/fast-frame.test.js
// holds the two to the same verdicts over the fuzz cases of many seeds.

import { MsgType, SCENE_KINDS, SCENE_RECORDS_MAX, SCENE_RECORD_BYTES, SceneRecordFlag, UpdateFlag, VERSION } from '../core/protocol.js';

/** Bytes of an ACK body: type, sender, seq, acker. */
export const ACK_BODY_BYTES = 13;
/** Bytes of an UPDATE body up to its flags: type, sender, seq, sendTime, pose. */
const UPDATE_HEAD_BYTES = 1 + 4 + 4 + 8 + 28;
/** The legacy object block: pose and version. */
const OBJECT_BYTES = 28 + 4;
/** A scene block's head: digest, held, record count. */
const SCENE_HEAD_BYTES = 4 + 2 + 1;
const KNOWN_UPDATE_FLAGS = UpdateFlag.OBJECT | UpdateFlag.SCENE;

/**
 * What scanFrame found: the frame's message count and kinds, and where the
 * bodies start (1 for a lone message, 4 for a BATCH).
 * @typedef {{ count: number, acks: number, updates: number, batched: boolean }} FrameScan
 */

/** The big-endian u16 at `at`. @param {Uint8Array} b @param {number} at */
export const u16At = (b, at) => (b[at] << 8) | b[at + 1];
/** The big-endian u32 at `at`. @param {Uint8Array} b @param {number} at */
export const u32At = (b, at) => ((b[at] << 24) | (b[at + 1] << 16) | (b[at + 2] << 8) | b[at + 3]) >>> 0;

/**
 * Whether the float32 at `at` is finite: its exponent bits are not all set.
 * @param {Uint8Array} b @param {number} at
 */
function finiteF32At(b, at) {
  return (b[at] & 0x7f) !== 0x7f || (b[at + 1] & 0x80) === 0;
}

/**
 * Whether bytes [start, end) are one UPDATE body decode() accepts: known
 * flags, the blocks they announce, scene records of known kind and flags,
 * non-zero versions and finite poses, and nothing after.
 * @param {Uint8Array} b @param {number} start at the type byte @param {number} end
 */
export function validUpdateBody(b, start, end) {
  if (start + UPDATE_HEAD_BYTES + 1 > end) return false;
  const flags = b[start + UPDATE_HEAD_BYTES];
  if ((flags & ~KNOWN_UPDATE_FLAGS) !== 0) return false;
  let pos = start + UPDATE_HEAD_BYTES + 1;
  if (flags & UpdateFlag.OBJECT) pos += OBJECT_BYTES;
  if (flags & UpdateFlag.SCENE) {
    if (pos + SCENE_HEAD_BYTES > end) return false;
    const count = b[pos + 6];
    if (count > SCENE_RECORDS_MAX) return false;
    pos += SCENE_HEAD_BYTES;
    for (let i = 0; i < count; i++, pos += SCENE_RECORD_BYTES) {
      if (pos + SCENE_RECORD_BYTES > end || !validSceneRecord(b, pos)) return false;
    }
  }
  return pos === end;
}

/**
 * One scene record at `at` (id, version, writer, kind, flags, pose), as readSceneBlock checks it.
 * @param {Uint8Array} b @param {number} at
 */
function validSceneRecord(b, at) {
  if (u32At(b, at + 4) === 0) return false;
  if (b[at + 12] >= SCENE_KINDS.length) return false;
  if ((b[at + 13] & ~SceneRecordFlag.REMOVED) !== 0) return false;
  for (let f = at + 14; f < at + SCENE_RECORD_BYTES; f += 4) if (!finiteF32At(b, f)) return false;
  return true;
}

/**
 * Whether [start, end) is one ACK or UPDATE body decode() accepts; counts it into `into`.
 * @param {Uint8Array} b @param {number} start @param {number} end @param {FrameScan} into
 */
function scanBody(b, start, end, into) {
  const type = b[start];
  if (type === MsgType.ACK) {
    if (end - start !== ACK_BODY_BYTES) return false;
    into.acks++;
    return true;
  }
  if (type === MsgType.UPDATE && validUpdateBody(b, start, end)) {
    into.updates++;
    return true;
  }
  return false;
}

/**
 * Checks a frame that holds only UPDATEs and ACKs, alone or in one BATCH.
 * @param {Uint8Array} b the frame
 * @param {FrameScan} into filled in (reused by the caller: nothing is allocated)
 * @returns {FrameScan | null} null: the frame is anything else, decode() it
 */
export function scanFrame(b, into) {
  const n = b.length;
  if (n < 2 || b[0] !== VERSION) return null;
  into.acks = 0;
  into.updates = 0;
  if (b[1] !== MsgType.BATCH) {
    into.count = 1;
    into.batched = false;
    return scanBody(b, 1, n, into) ? into : null;
  }
  if (n < 4) return null;
  const count = u16At(b, 2);
  let pos = 4;
  for (let i = 0; i < count; i++) {
    if (pos + 2 > n) return null;
    const end = pos + 2 + u16At(b, pos);
    if (end === pos + 2 || end > n || !scanBody(b, pos + 2, end, into)) return null;
    pos = end;
  }
  if (pos !== n) return null;
  into.count = count;
  into.batched = true;
  return into;
}

/**
 * Walks the messages of a frame scanFrame accepted, in place. The intake
 * reuses one cursor for every frame: a handler keeps what it needs (numbers,
 * `body`), never the cursor itself.
 */
export class FrameCursor {
  constructor() {
    /** @type {Uint8Array} */
    this.bytes = new Uint8Array(0);
    /** Messages not yet walked. */
    this.left = 0;
    this.batched = false;
    /** The current body: where it starts (its type byte) and ends. */
    this.start = 0;
    this.end = 0;
    this.type = 0;
    this.sender = 0;
    this.seq = 0;
    /** An ACK's acker (0 for an UPDATE). */
    this.acker = 0;
  }

  /** The body's bytes (type + payload), a view of the frame: what the relay forwards. */
  get body() { return this.bytes.subarray(this.start, this.end); }

  /**
   * Starts on a scanned frame, before its first message.
   * @param {Uint8Array} bytes @param {FrameScan} scan
   */
  open(bytes, scan) {
    this.bytes = bytes;
    this.left = scan.count;
    this.batched = scan.batched;
    this.end = scan.batched ? 4 : 1;
    return this;
  }

  /** Moves to the next message; false when there is none. */
  next() {
    if (this.left === 0) return false;
    this.left--;
    const b = this.bytes;
    this.start = this.batched ? this.end + 2 : 1;
    this.end = this.batched ? this.start + u16At(b, this.end) : b.length;
    this.type = b[this.start];
    this.sender = u32At(b, this.start + 1);
    this.seq = u32At(b, this.start + 5);
    this.acker = this.type === MsgType.ACK ? u32At(b, this.start + 9) : 0;
    return true;
  }
}
