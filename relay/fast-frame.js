// The relay's fast intake: a frame of UPDATEs and ACKs — the traffic of every
// delivery — is checked in place, byte for byte as decode() checks it, and
// read through one cursor per frame, no object per message: the relay only needs an update's
// sender, seq and bytes, an ACK's three ids. Anything else (another type, a
// defect of any kind) is not this module's business: scanFrame says null and
// the caller decodes the frame in full, so every bad frame gets its close
// code and reason from one place, core/protocol.js. relay/fast-frame.test.js
// holds the two to the same verdicts over the fuzz cases of many seeds.

import { MsgType, SCENE_KINDS, SCENE_RECORDS_MAX, SCENE_RECORD_BYTES, SceneRecordFlag, UpdateFlag, VERSION, u16At, u32At } from '../core/protocol.js';

/** Bytes of an ACK body: type, sender, seq, acker. */
const ACK_BODY_BYTES = 13;
/** Bytes of an UPDATE body up to its flags: type, sender, seq, sendTime, pose. */
const UPDATE_HEAD_BYTES = 1 + 4 + 4 + 8 + 28;
/** The legacy object block: pose and version. */
const OBJECT_BYTES = 28 + 4;
/** A scene block's head: digest, held, record count. */
const SCENE_HEAD_BYTES = 4 + 2 + 1;
const KNOWN_UPDATE_FLAGS = UpdateFlag.OBJECT | UpdateFlag.SCENE;

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
function validUpdateBody(b, start, end) {
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
 * Which of the two a body [start, end) is, if decode() accepts it as such.
 * @param {Uint8Array} b @param {number} start @param {number} end
 * @returns {number} MsgType.ACK, MsgType.UPDATE, or 0: neither (or not valid)
 */
function kindOfBody(b, start, end) {
  const type = b[start];
  if (type === MsgType.ACK) return end - start === ACK_BODY_BYTES ? type : 0;
  if (type === MsgType.UPDATE) return validUpdateBody(b, start, end) ? type : 0;
  return 0;
}

/**
 * Checks a frame that holds only UPDATEs and ACKs, alone or in one BATCH.
 * @param {Uint8Array} b the frame
 * @returns {ScannedFrame | null} null: the frame is anything else, decode() it
 */
export function scanFrame(b) {
  const n = b.length;
  if (n < 2 || b[0] !== VERSION) return null;
  if (b[1] !== MsgType.BATCH) {
    const kind = kindOfBody(b, 1, n);
    return kind === 0 ? null : new ScannedFrame(b, 1, kind === MsgType.ACK ? 1 : 0, false);
  }
  if (n < 4) return null;
  const count = u16At(b, 2);
  let acks = 0;
  let pos = 4;
  for (let i = 0; i < count; i++) {
    if (pos + 2 > n) return null;
    const end = pos + 2 + u16At(b, pos);
    const kind = end === pos + 2 || end > n ? 0 : kindOfBody(b, pos + 2, end);
    if (kind === 0) return null;
    if (kind === MsgType.ACK) acks++;
    pos = end;
  }
  return pos === n ? new ScannedFrame(b, count, acks, true) : null;
}

/**
 * A frame scanFrame accepted: its counts (what the budgets charge,
 * relay/budget.js FrameCounts) and a cursor over its messages, read in
 * place. A handler keeps what it needs (numbers, `body`), never the cursor.
 */
export class ScannedFrame {
  /**
   * @param {Uint8Array} bytes @param {number} count @param {number} acks
   * @param {boolean} batched a BATCH (bodies after a length each) or one lone message
   */
  constructor(bytes, count, acks, batched) {
    this.bytes = bytes;
    this.count = count;
    this.acks = acks;
    this.updates = count - acks;
    this.batched = batched;
    /** Messages not yet walked. */
    this.left = count;
    /** The current body: where it starts (its type byte) and ends. */
    this.start = 0;
    this.end = batched ? 4 : 1;
    this.type = 0;
    this.sender = 0;
    this.seq = 0;
    /** An ACK's acker (0 for an UPDATE). */
    this.acker = 0;
  }

  /** The body's bytes (type + payload), a view of the frame: what the relay forwards. */
  get body() { return this.bytes.subarray(this.start, this.end); }

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
