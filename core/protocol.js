// The carlab wire protocol: a compact binary codec shared by the browser app,
// the Node clients and the relay. No DOM and no Node built-ins: only
// DataView, TextEncoder and TextDecoder, which both runtimes have.
//
// Byte layout (big-endian, "network order") is documented in docs/protocol.md;
// keep the two in step.

/** Protocol version carried in the first byte of every frame. */
export const VERSION = 1;

/** Message type codes (second byte of a frame, first byte of a batched body). */
export const MsgType = Object.freeze({
  HELLO: 1,
  WELCOME: 2,
  MEMBER_JOINED: 3,
  MEMBER_LEFT: 4,
  UPDATE: 5,
  ACK: 6,
  ACKED_ALL: 7,
  BATCH: 8,
  ERROR: 9,
  STATS: 10,
  SIGNAL: 11,
  LINK: 12,
  SUPERSEDED: 13,
  KEPT_SCENE: 14,
});

/** @type {Record<number, string>} */
export const MsgTypeName = Object.freeze(
  Object.fromEntries(Object.entries(MsgType).map(([k, v]) => [v, k])),
);

/** HELLO flag bits. */
export const HelloFlag = Object.freeze({
  /** The relay may coalesce frames into BATCH and aggregate ACKs (mode `relay`). */
  BATCHED: 1,
  /** Membership only: the client exchanges updates elsewhere (p2p), not via the relay. */
  MEMBERSHIP_ONLY: 2,
  /**
   * relay-udp: the client's UPDATEs and ACKs, and the relay's UPDATEs, ACKs and
   * ACKED_ALLs to it, go over an unreliable WebRTC data channel to the relay,
   * set up with SIGNAL on this WebSocket; the rest stays on the WebSocket.
   */
  UDP: 4,
  /**
   * Capability (docs/protocol.md §5.13): the client understands SUPERSEDED, and
   * a WELCOME that ends with the capabilities granted. A relay that grants it
   * marks every queued pose it replaces by a newer one for this client.
   */
  SUPERSEDED_MARKS: 8,
  /**
   * Capability (docs/protocol.md §5.1, §8.10): the relay gives the member a
   * resume secret in its WELCOME; a later HELLO with this flag, the member's
   * id and that secret takes its session over (a phone whose network changed)
   * without the group seeing it leave.
   */
  RESUME: 16,
  /**
   * Capability (docs/protocol.md §5.2, §5.3): WELCOME and MEMBER_JOINED say how
   * each member can be reached (ReachFlag), so a p2p member dials only those
   * that accept peer connections.
   */
  REACHABILITY: 32,
  /**
   * Capability (docs/protocol.md §5.11): a membership-only (p2p) member may send
   * SIGNAL to another such member of its group, and gets theirs: the path of an
   * ICE restart, which PeerJS's own server cannot carry.
   */
  PEER_SIGNAL: 64,
  /**
   * Not a capability of its own: a u32 of more capability bits (MoreFlag) follows the token, and
   * the WELCOME ends with a u32 of those granted (docs/protocol.md §5.1, §5.2). The one byte of
   * capability flags is full; capabilities go on in this word.
   */
  MORE: 128,
});

/** The HELLO's second word of capability bits (after flag MORE, docs/protocol.md §5.1). */
export const MoreFlag = Object.freeze({
  /**
   * Capability (docs/protocol.md §5.14): when this member is the first of a group that had emptied
   * and the server kept its scene, a KEPT_SCENE message with the scene's records follows its WELCOME.
   */
  KEPT_SCENE: 1,
});

/** The MoreFlag capabilities this version knows. */
export const KNOWN_MORE_CAPABILITIES = MoreFlag.KEPT_SCENE;

/** Most records a KEPT_SCENE carries: every live object a scene can reach and its kept tombstones (§5.14). */
export const KEPT_SCENE_RECORDS_MAX = 128 + 192;

/** How a member can be reached (WELCOME and MEMBER_JOINED to a client granted REACHABILITY). */
export const ReachFlag = Object.freeze({
  /** Through the relay: every member (a p2p member's updates reach it as LINK, §14.1). */
  RELAY: 1,
  /** It accepts peer-to-peer connections (a p2p member: PeerJS, its id from group and client id). */
  PEER: 2,
  /** Its updates and ACKs go over a relay-udp data channel to the relay. */
  UDP: 4,
});

/** Bits of WELCOME's capabilities byte that answer no HELLO flag (docs/protocol.md §5.2). */
export const WelcomeFlag = Object.freeze({
  /**
   * This WELCOME continues a session a resuming HELLO took over (§8.10): the
   * member kept its id and group, and the relay replays what the old
   * connection swallowed. Only ever set for a member that was granted RESUME.
   */
  RESUMED: 128,
});

/** The HELLO flag bits a client asks for capabilities with (3..7): the WELCOME to such a HELLO ends with those granted (§5.2). */
export const CAPABILITY_BITS = 0xf8;

/** The capabilities this version knows: a relay grants each one that is asked for. */
export const KNOWN_CAPABILITIES = HelloFlag.SUPERSEDED_MARKS | HelloFlag.RESUME | HelloFlag.REACHABILITY | HelloFlag.PEER_SIGNAL;

/** Most ranges one SUPERSEDED names (a chain of replacements with more gaps is marked in part). */
export const SUPERSEDED_RANGES_MAX = 32;

/** UPDATE flag bits. */
export const UpdateFlag = Object.freeze({
  /** The update also carries the legacy single shared object's pose and version (docs/protocol.md §10.3). */
  OBJECT: 1,
  /** The update carries the sender's scene digest and up to SCENE_RECORDS_MAX scene records (§15). */
  SCENE: 2,
});

/** Scene record flag bits (docs/protocol.md §15.1). */
export const SceneRecordFlag = Object.freeze({
  /** The object was removed: the record is a tombstone, its kind and pose are kept as they were. */
  REMOVED: 1,
});

/** Bytes of one scene record on the wire: id, version, writer, kind, flags, pose. */
export const SCENE_RECORD_BYTES = 42;
/** Most scene records one UPDATE carries: 7 + 16 x 42 bytes keep an UPDATE within one 1100-byte packet. */
export const SCENE_RECORDS_MAX = 16;
/** Object kinds a scene record may name (docs/protocol.md §15.1); the car is the legacy object's kind. */
export const SCENE_KINDS = Object.freeze(['car', 'cube', 'sphere', 'cone', 'torus']);

/**
 * WebSocket close codes the relay uses. 1009 (message too big) and 1001
 * (going away, on shutdown) are the standard ones; 4000-4099 are carlab's.
 */
export const CloseCode = Object.freeze({
  GOING_AWAY: 1001,
  TOO_BIG: 1009,
  BAD_FRAME: 4000,
  BAD_VERSION: 4001,
  NOT_JOINED: 4002,
  SPOOFED_SENDER: 4003,
  SLOW_CONSUMER: 4004,
  RATE_LIMITED: 4005,
  FORBIDDEN: 4006,
  ID_TAKEN: 4007,
  PROTOCOL_VIOLATION: 4008,
  GROUP_MISMATCH: 4009,
  /** Only in an ERROR, never a close: a client report sent as STATS was refused (the reason says why). */
  REPORT_REFUSED: 4010,
});

/** Limits of the codec itself (the relay may set tighter ones). */
export const Limits = Object.freeze({
  /** Longest string field in bytes (str8). */
  STR8: 255,
  /** Most messages in one BATCH. */
  BATCH_MAX: 65535,
  /** Largest STATS JSON in bytes. */
  STATS_MAX: 1 << 20,
});

/** Bytes of a pose: position xyz and orientation quaternion xyzw, float32 each. */
export const POSE_BYTES = 28;

/**
 * A decoding failure. `decode` returns (never throws) one of these.
 */
export class ProtocolError extends Error {
  /**
   * @param {string} code one of TRUNCATED, EMPTY, BAD_VERSION, UNKNOWN_TYPE,
   *   TRAILING_BYTES, BAD_STRING, NESTED_BATCH, BAD_VALUE
   * @param {string} message human-readable reason
   */
  constructor(code, message) {
    super(message);
    this.name = 'ProtocolError';
    this.code = code;
  }

  /** The WebSocket close code a relay uses when a peer sends this. */
  get closeCode() {
    return this.code === 'BAD_VERSION' ? CloseCode.BAD_VERSION : CloseCode.BAD_FRAME;
  }
}

/**
 * @typedef {[number, number, number, number, number, number, number]} Pose
 *   position x, y, z then orientation quaternion x, y, z, w
 * @typedef {{ id: number, name: string, reach?: number }} Member reach: ReachFlag bits, in a WELCOME to a
 *   client granted REACHABILITY
 * @typedef {{ type: 1, flags: number, clientId: number, group: string, name: string, token: string, resume?: string, more?: number }} HelloMsg
 *   resume: with flag RESUME, the secret of the session it takes over; more: with flag MORE, the MoreFlag capabilities asked for
 * @typedef {{ type: 2, clientId: number, serverTime: number, members: Member[], capabilities?: number, resume?: string, more?: number }} WelcomeMsg
 *   resume: when RESUME was granted, the secret a later HELLO resumes this session with
 *   `capabilities`: the HELLO's capability flags the relay granted, sent only to a HELLO that asked for one;
 *   `more`: the MoreFlag capabilities granted, sent only to a HELLO with flag MORE
 * @typedef {{ type: 3, id: number, name: string, reach?: number }} MemberJoinedMsg reach: ReachFlag bits, sent
 *   only to a client granted REACHABILITY
 * @typedef {{ type: 4, id: number }} MemberLeftMsg
 * @typedef {{ id: number, version: number, writer: number, kind: number, removed: boolean, pose: Pose }} SceneRecord
 *   one shared object's state (docs/protocol.md §15.1); a removed object is a tombstone
 * @typedef {{ digest: number, held: number, records: SceneRecord[] }} SceneBlock
 *   the sender's scene digest and record count, and the records it carries this time (§15.2)
 * @typedef {{ type: 5, sender: number, seq: number, sendTime: number, pose: Pose,
 *   object: null | { pose: Pose, version: number }, scene?: SceneBlock | null }} UpdateMsg
 * @typedef {{ type: 6, sender: number, seq: number, acker: number }} AckMsg
 * @typedef {{ type: 7, sender: number, seq: number, acked: number, dropped: number }} AckedAllMsg
 * @typedef {{ type: 8, messages: Message[] }} BatchMsg
 * @typedef {{ type: 9, code: number, reason: string }} ErrorMsg
 * @typedef {{ type: 10, clientId: number, stats: any }} StatsMsg
 * @typedef {{ type: 11, from: number, to: number, payload: string }} SignalMsg
 * @typedef {{ type: 14, records: SceneRecord[] }} KeptSceneMsg
 *   relay -> client granted MoreFlag.KEPT_SCENE: the kept scene of the group it is the first member of (§5.14)
 * @typedef {{ type: 13, sender: number, seq: number, ranges: number[] }} SupersededMsg
 *   relay -> client: the relay replaced the sender's queued updates `ranges` (flat [from, to, ...],
 *   sorted, below `seq`) by update `seq` (docs/protocol.md §5.13)
 * @typedef {{ type: 12, peers: number[], message: UpdateMsg | AckMsg }} LinkMsg
 *   client -> relay only: a p2p link's UPDATE or ACK for the members `peers` (docs/protocol.md
 *   §14.1); the relay hands each of them the carried message itself
 * @typedef {HelloMsg | WelcomeMsg | MemberJoinedMsg | MemberLeftMsg | UpdateMsg | AckMsg
 *   | AckedAllMsg | BatchMsg | ErrorMsg | StatsMsg | SignalMsg | LinkMsg | SupersededMsg | KeptSceneMsg} Message
 *   Decoded messages also carry `body`: a view of their bytes without the
 *   version byte (type + payload), so a relay can forward them unchanged.
 */

const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder('utf-8', { fatal: true });

// ---------------------------------------------------------------- encoding

/** Growable writer; most frames fit the initial buffer. */
class Writer {
  constructor(size = 64) {
    this.buf = new Uint8Array(size);
    this.view = new DataView(this.buf.buffer);
    this.pos = 0;
  }

  /** @param {number} n */
  ensure(n) {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.pos));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }

  /** @param {number} v */
  u8(v) { this.ensure(1); this.view.setUint8(this.pos, v); this.pos += 1; }
  /** @param {number} v */
  u16(v) { this.ensure(2); this.view.setUint16(this.pos, v); this.pos += 2; }
  /** @param {number} v */
  u32(v) { this.ensure(4); this.view.setUint32(this.pos, v >>> 0); this.pos += 4; }
  /** @param {number} v */
  f32(v) { this.ensure(4); this.view.setFloat32(this.pos, v); this.pos += 4; }
  /** @param {number} v */
  f64(v) { this.ensure(8); this.view.setFloat64(this.pos, v); this.pos += 8; }
  /** @param {Uint8Array} b */
  bytes(b) { this.ensure(b.length); this.buf.set(b, this.pos); this.pos += b.length; }

  /** @param {string} s @param {string} field */
  str8(s, field) {
    const b = utf8Encoder.encode(s ?? '');
    if (b.length > Limits.STR8) throw new RangeError(`${field} is longer than ${Limits.STR8} bytes`);
    this.u8(b.length);
    this.bytes(b);
  }

  /** @param {string} s @param {string} field */
  str16(s, field) {
    const b = utf8Encoder.encode(s ?? '');
    if (b.length > 0xffff) throw new RangeError(`${field} is longer than 65535 bytes`);
    this.u16(b.length);
    this.bytes(b);
  }

  /** @param {ArrayLike<number>} pose */
  pose(pose) {
    for (let i = 0; i < 7; i++) this.f32(pose[i]);
  }

  result() { return this.buf.slice(0, this.pos); }
}

const SCRATCH_BYTES = 1024;
/** A writer that grew past this (a big WELCOME or STATS) is not kept. */
const SCRATCH_KEEP_BYTES = 65536;
let scratch = new Writer(SCRATCH_BYTES);

/**
 * Writes one message type's payload (after the type byte).
 * @callback BodyWriter
 * @param {Writer} w
 * @param {Message} m
 * @returns {void}
 */

/** @param {Writer} w @param {HelloMsg} m */
function writeHello(w, m) {
  w.u8(m.flags ?? 0);
  w.u32(m.clientId ?? 0);
  w.str8(m.group, 'group');
  w.str8(m.name ?? '', 'name');
  w.str8(m.token ?? '', 'token');
  if ((m.flags ?? 0) & HelloFlag.MORE) w.u32(m.more ?? 0);
  else if (m.more) throw new RangeError('a HELLO that asks for MoreFlag capabilities sets MORE');
  if (m.resume) {
    if (!((m.flags ?? 0) & HelloFlag.RESUME)) throw new RangeError('a HELLO that carries a resume secret sets RESUME');
    w.str8(m.resume, 'resume secret');
  }
}

/** @param {Writer} w @param {WelcomeMsg} m */
function writeWelcome(w, m) {
  w.u32(m.clientId);
  w.f64(m.serverTime);
  w.u16(m.members.length);
  for (const member of m.members) {
    w.u32(member.id);
    w.str8(member.name, 'member name');
  }
  if (m.capabilities === undefined) return;
  w.u8(m.capabilities);
  if (m.capabilities & HelloFlag.RESUME) {
    if (!m.resume) throw new RangeError('a WELCOME that grants RESUME carries the resume secret');
    w.str8(m.resume, 'resume secret');
  }
  if (m.capabilities & HelloFlag.REACHABILITY) for (const member of m.members) w.u8(member.reach ?? ReachFlag.RELAY);
  if (m.more !== undefined) w.u32(m.more);
}

/** @param {Writer} w @param {KeptSceneMsg} m */
function writeKeptScene(w, m) {
  if (m.records.length > KEPT_SCENE_RECORDS_MAX) throw new RangeError(`KEPT_SCENE carries at most ${KEPT_SCENE_RECORDS_MAX} records`);
  w.u16(m.records.length);
  for (const record of m.records) writeSceneRecord(w, record);
}

/** @param {Writer} w @param {MemberJoinedMsg} m */
function writeMemberJoined(w, m) {
  w.u32(m.id);
  w.str8(m.name, 'name');
  if (m.reach !== undefined) w.u8(m.reach);
}

/** @param {Writer} w @param {MemberLeftMsg} m */
function writeMemberLeft(w, m) {
  w.u32(m.id);
}

/** @param {Writer} w @param {UpdateMsg} m */
function writeUpdate(w, m) {
  w.u32(m.sender);
  w.u32(m.seq);
  w.f64(m.sendTime);
  w.pose(m.pose);
  w.u8((m.object ? UpdateFlag.OBJECT : 0) | (m.scene ? UpdateFlag.SCENE : 0));
  if (m.object) {
    w.pose(m.object.pose);
    w.u32(m.object.version);
  }
  if (m.scene) writeSceneBlock(w, m.scene);
}

/** @param {Writer} w @param {SceneBlock} scene */
function writeSceneBlock(w, scene) {
  if (scene.records.length > SCENE_RECORDS_MAX) throw new RangeError(`an UPDATE carries at most ${SCENE_RECORDS_MAX} scene records`);
  w.u32(scene.digest);
  w.u16(scene.held);
  w.u8(scene.records.length);
  for (const record of scene.records) writeSceneRecord(w, record);
}

/** @param {Writer} w @param {SceneRecord} record */
function writeSceneRecord(w, record) {
  w.ensure(SCENE_RECORD_BYTES);
  writeSceneRecordBytes(w.view, w.pos, record);
  w.pos += SCENE_RECORD_BYTES;
}

/**
 * One scene record's 42 wire bytes (§15.1) at `offset` of a view: the codec writes them, and a
 * scene's digest hashes them (core/scene.js recordHash).
 * @param {DataView} view @param {number} offset @param {SceneRecord} record
 */
export function writeSceneRecordBytes(view, offset, record) {
  view.setUint32(offset, record.id >>> 0);
  view.setUint32(offset + 4, record.version >>> 0);
  view.setUint32(offset + 8, record.writer >>> 0);
  view.setUint8(offset + 12, record.kind);
  view.setUint8(offset + 13, record.removed ? SceneRecordFlag.REMOVED : 0);
  for (let i = 0; i < 7; i++) view.setFloat32(offset + 14 + 4 * i, record.pose[i]);
}

/** @param {Writer} w @param {AckMsg} m */
function writeAck(w, m) {
  w.u32(m.sender);
  w.u32(m.seq);
  w.u32(m.acker);
}

/** @param {Writer} w @param {AckedAllMsg} m */
function writeAckedAll(w, m) {
  w.u32(m.sender);
  w.u32(m.seq);
  w.u16(m.acked ?? 0);
  w.u16(m.dropped ?? 0);
}

/** @param {Writer} w @param {SupersededMsg} m */
function writeSuperseded(w, m) {
  const n = m.ranges.length / 2;
  if (!Number.isInteger(n) || n < 1 || n > SUPERSEDED_RANGES_MAX) throw new RangeError(`SUPERSEDED names 1..${SUPERSEDED_RANGES_MAX} ranges`);
  w.u32(m.sender);
  w.u32(m.seq);
  w.u8(n);
  for (const seq of m.ranges) w.u32(seq);
}

/** @param {Writer} w @param {BatchMsg} m */
function writeBatch(w, m) {
  if (m.messages.length > Limits.BATCH_MAX) throw new RangeError('batch has too many messages');
  w.u16(m.messages.length);
  for (const sub of m.messages) {
    if (sub.type === MsgType.BATCH) throw new TypeError('a BATCH cannot contain a BATCH');
    // Write in place and backfill the length: no buffer per message (hot on the client's ACK path).
    const lengthAt = w.pos;
    w.u16(0);
    writeBody(w, sub);
    const length = w.pos - lengthAt - 2;
    if (length > 0xffff) throw new RangeError('batched message is longer than 65535 bytes');
    w.view.setUint16(lengthAt, length);
  }
}

/** @param {Writer} w @param {ErrorMsg} m */
function writeError(w, m) {
  w.u16(m.code);
  w.str8(truncateUtf8(m.reason ?? '', Limits.STR8), 'reason');
}

/** @param {Writer} w @param {StatsMsg} m */
function writeStats(w, m) {
  w.u32(m.clientId);
  const json = utf8Encoder.encode(JSON.stringify(m.stats ?? {}));
  if (json.length > Limits.STATS_MAX) throw new RangeError('stats are too large');
  w.u32(json.length);
  w.bytes(json);
}

/** @param {Writer} w @param {SignalMsg} m */
function writeSignal(w, m) {
  w.u32(m.from);
  w.u32(m.to);
  w.str16(m.payload, 'payload');
}

/** @param {Writer} w @param {LinkMsg} m */
function writeLink(w, m) {
  if (m.peers.length === 0 || m.peers.length > 0xffff) throw new RangeError('LINK needs 1..65535 peers');
  if (m.message.type !== MsgType.UPDATE && m.message.type !== MsgType.ACK) throw new TypeError('LINK carries an UPDATE or an ACK');
  w.u16(m.peers.length);
  for (const id of m.peers) w.u32(id);
  writeBody(w, m.message);
}

/**
 * A table entry: the type code and the writer for exactly that message type.
 * @template {Message} M
 * @param {M['type']} type
 * @param {(w: Writer, m: M) => void} write
 * @returns {[number, BodyWriter]}
 */
function writerEntry(type, write) {
  // Sound: writeBody calls a writer only for messages of the type it is keyed by.
  return [type, /** @type {BodyWriter} */ (write)];
}

/**
 * One writer per message type. A Map, not an object: `get` matches type codes
 * exactly as a switch did (no '5' for 5, no inherited keys such as 'constructor').
 * @type {ReadonlyMap<number, BodyWriter>}
 */
const BODY_WRITERS = new Map([
  writerEntry(MsgType.HELLO, writeHello),
  writerEntry(MsgType.WELCOME, writeWelcome),
  writerEntry(MsgType.MEMBER_JOINED, writeMemberJoined),
  writerEntry(MsgType.MEMBER_LEFT, writeMemberLeft),
  writerEntry(MsgType.UPDATE, writeUpdate),
  writerEntry(MsgType.ACK, writeAck),
  writerEntry(MsgType.ACKED_ALL, writeAckedAll),
  writerEntry(MsgType.BATCH, writeBatch),
  writerEntry(MsgType.ERROR, writeError),
  writerEntry(MsgType.STATS, writeStats),
  writerEntry(MsgType.SIGNAL, writeSignal),
  writerEntry(MsgType.LINK, writeLink),
  writerEntry(MsgType.SUPERSEDED, writeSuperseded),
  writerEntry(MsgType.KEPT_SCENE, writeKeptScene),
]);

/**
 * Writes the type and payload of one message (no version byte).
 * @param {Writer} w
 * @param {Message} m
 */
function writeBody(w, m) {
  w.u8(m.type);
  const write = BODY_WRITERS.get(m.type);
  if (!write) throw new TypeError(`unknown message type ${m.type}`);
  write(w, m);
}

/**
 * Cuts a string so its UTF-8 form fits in `max` bytes, on a character boundary.
 * @param {string} s
 * @param {number} max
 */
function truncateUtf8(s, max) {
  let b = utf8Encoder.encode(s);
  if (b.length <= max) return s;
  while (b.length > max) {
    s = s.slice(0, -1);
    b = utf8Encoder.encode(s);
  }
  return s;
}

/**
 * Encodes one message as a frame (version byte, type, payload).
 * Throws TypeError/RangeError on a message the protocol cannot carry
 * (programming errors on the sending side; decoding never throws).
 * @param {any} msg a Message without `body`
 * @returns {Uint8Array}
 */
export function encode(msg) {
  // One writer for every frame (encode is synchronous and never re-entered):
  // the frame is the only allocation, which matters at thousands of frames a second.
  const w = scratch;
  w.pos = 0;
  w.u8(VERSION);
  writeBody(w, msg);
  const frame = w.result();
  if (w.buf.length > SCRATCH_KEEP_BYTES) scratch = new Writer(SCRATCH_BYTES);
  return frame;
}

/**
 * Where a relay's frames are built: a fresh array by default; the relay
 * passes Node's pooled Buffer.allocUnsafe, which spares a backing store per frame.
 * @callback ByteAlloc
 * @param {number} size
 * @returns {Uint8Array}
 */

/** @type {ByteAlloc} */
const newBytes = (size) => new Uint8Array(size);

/**
 * Builds a BATCH frame from message bodies that are already encoded
 * (type + payload, as found in a decoded message's `body`). This is the
 * relay's fan-out path: it forwards bytes without re-encoding them.
 * @param {readonly Uint8Array[]} bodies
 * @param {ByteAlloc} [alloc]
 * @returns {Uint8Array}
 */
export function encodeBatchOfBodies(bodies, alloc = newBytes) {
  let size = 4;
  for (const b of bodies) size += 2 + b.length;
  const out = alloc(size);
  out[0] = VERSION;
  out[1] = MsgType.BATCH;
  out[2] = bodies.length >>> 8;
  out[3] = bodies.length & 0xff;
  let pos = 4;
  for (const b of bodies) {
    out[pos] = b.length >>> 8;
    out[pos + 1] = b.length & 0xff;
    out.set(b, pos + 2);
    pos += 2 + b.length;
  }
  return out;
}

/**
 * Turns a message body (type + payload) back into a stand-alone frame.
 * @param {Uint8Array} body
 * @param {ByteAlloc} [alloc]
 * @returns {Uint8Array}
 */
export function frameOfBody(body, alloc = newBytes) {
  const out = alloc(body.length + 1);
  out[0] = VERSION;
  out.set(body, 1);
  return out;
}

/** Bytes of an ACKED_ALL body: type, sender, seq, acked, dropped. */
const ACKED_ALL_BODY_BYTES = 13;

/**
 * An ACKED_ALL body (type + payload), as encode() would write it after the
 * version byte, built straight into its own bytes: a relay sends one per update.
 * @param {number} sender @param {number} seq
 * @param {number} acked @param {number} dropped each at most 65535
 * @param {ByteAlloc} [alloc]
 */
export function ackedAllBody(sender, seq, acked, dropped, alloc = newBytes) {
  const b = alloc(ACKED_ALL_BODY_BYTES);
  b[0] = MsgType.ACKED_ALL;
  putU32(b, 1, sender);
  putU32(b, 5, seq);
  b[9] = acked >>> 8;
  b[10] = acked & 0xff;
  b[11] = dropped >>> 8;
  b[12] = dropped & 0xff;
  return b;
}

/** @param {Uint8Array} b @param {number} at @param {number} v */
function putU32(b, at, v) {
  b[at] = v >>> 24;
  b[at + 1] = (v >>> 16) & 0xff;
  b[at + 2] = (v >>> 8) & 0xff;
  b[at + 3] = v & 0xff;
}

// ---------------------------------------------------------------- decoding

/** The big-endian u16 at `at`, read without a DataView (a relay reads ids in place). @param {Uint8Array} b @param {number} at */
export const u16At = (b, at) => (b[at] << 8) | b[at + 1];
/** The big-endian u32 at `at`. @param {Uint8Array} b @param {number} at */
export const u32At = (b, at) => ((b[at] << 24) | (b[at + 1] << 16) | (b[at + 2] << 8) | b[at + 3]) >>> 0;

class Truncated extends Error {}
const TRUNCATED = new Truncated();

/** Bounds-checked reader; running past the end throws TRUNCATED internally. */
class Reader {
  /** @param {Uint8Array} bytes @param {number} start @param {number} end */
  constructor(bytes, start, end) {
    this.bytes = bytes;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.pos = start;
    this.end = end;
  }

  /** @param {number} n */
  need(n) { if (this.pos + n > this.end) throw TRUNCATED; }
  u8() { this.need(1); return this.view.getUint8(this.pos++); }
  u16() { this.need(2); const v = this.view.getUint16(this.pos); this.pos += 2; return v; }
  u32() { this.need(4); const v = this.view.getUint32(this.pos); this.pos += 4; return v; }
  f32() { this.need(4); const v = this.view.getFloat32(this.pos); this.pos += 4; return v; }
  f64() { this.need(8); const v = this.view.getFloat64(this.pos); this.pos += 8; return v; }
  /** @param {number} n */
  take(n) { this.need(n); const b = this.bytes.subarray(this.pos, this.pos + n); this.pos += n; return b; }
  str8() { return utf8Decoder.decode(this.take(this.u8())); }
  str16() { return utf8Decoder.decode(this.take(this.u16())); }
  /** @returns {Pose} */
  pose() {
    this.need(POSE_BYTES);
    return [this.f32(), this.f32(), this.f32(), this.f32(), this.f32(), this.f32(), this.f32()];
  }
}

/**
 * Reads one message type's payload (after the type byte); returns a
 * ProtocolError for a value the type does not allow. Running out of bytes
 * or bad UTF-8 throw, and readBody turns that into a ProtocolError.
 * @callback BodyReader
 * @param {Reader} r
 * @param {boolean} inBatch the message is inside a BATCH
 * @returns {Message | ProtocolError}
 */

/** @type {BodyReader} */
function readHello(r) {
  /** @type {HelloMsg} */
  const m = { type: MsgType.HELLO, flags: r.u8(), clientId: r.u32(), group: r.str8(), name: r.str8(), token: r.str8() };
  if (m.group.length === 0) return new ProtocolError('BAD_VALUE', 'HELLO has an empty group');
  if (m.flags & HelloFlag.MORE) m.more = r.u32();
  // Only a HELLO that sets RESUME may carry a secret; other trailing bytes stay an error.
  if ((m.flags & HelloFlag.RESUME) && r.pos < r.end) m.resume = r.str8();
  return m;
}

/** @type {BodyReader} */
function readWelcome(r) {
  /** @type {WelcomeMsg} */
  const m = { type: MsgType.WELCOME, clientId: r.u32(), serverTime: r.f64(), members: [] };
  const count = r.u16();
  for (let i = 0; i < count; i++) m.members.push({ id: r.u32(), name: r.str8() });
  if (r.pos < r.end) m.capabilities = r.u8();
  if (m.capabilities !== undefined && (m.capabilities & HelloFlag.RESUME)) m.resume = r.str8();
  if (m.capabilities !== undefined && (m.capabilities & HelloFlag.REACHABILITY)) for (const member of m.members) member.reach = r.u8();
  if (m.capabilities !== undefined && r.pos < r.end) m.more = r.u32(); // only to a HELLO with flag MORE
  return m;
}

/** @type {BodyReader} */
function readMemberJoined(r) {
  /** @type {MemberJoinedMsg} */
  const m = { type: MsgType.MEMBER_JOINED, id: r.u32(), name: r.str8() };
  if (r.pos < r.end) m.reach = r.u8(); // only to a client granted REACHABILITY (§5.3)
  return m;
}

/** @type {BodyReader} */
function readMemberLeft(r) {
  return { type: MsgType.MEMBER_LEFT, id: r.u32() };
}

/** @type {BodyReader} */
function readUpdate(r) {
  /** @type {UpdateMsg} */
  const m = { type: MsgType.UPDATE, sender: r.u32(), seq: r.u32(), sendTime: r.f64(), pose: r.pose(), object: null };
  const flags = r.u8();
  if (flags & ~(UpdateFlag.OBJECT | UpdateFlag.SCENE)) return new ProtocolError('BAD_VALUE', `UPDATE has unknown flags ${flags}`);
  if (flags & UpdateFlag.OBJECT) m.object = { pose: r.pose(), version: r.u32() };
  if (flags & UpdateFlag.SCENE) {
    const scene = readSceneBlock(r);
    if (scene instanceof ProtocolError) return scene;
    m.scene = scene;
  }
  return m;
}

/**
 * @param {Reader} r
 * @returns {SceneBlock | ProtocolError}
 */
function readSceneBlock(r) {
  const digest = r.u32();
  const held = r.u16();
  const count = r.u8();
  if (count > SCENE_RECORDS_MAX) return new ProtocolError('BAD_VALUE', `UPDATE carries ${count} scene records, at most ${SCENE_RECORDS_MAX}`);
  const records = readSceneRecords(r, count);
  if (records instanceof ProtocolError) return records;
  return { digest, held, records };
}

/**
 * `count` scene records (§15.1), each checked.
 * @param {Reader} r @param {number} count
 * @returns {SceneRecord[] | ProtocolError}
 */
function readSceneRecords(r, count) {
  /** @type {SceneRecord[]} */
  const records = [];
  for (let i = 0; i < count; i++) {
    const record = { id: r.u32(), version: r.u32(), writer: r.u32(), kind: r.u8(), removed: false, pose: /** @type {Pose} */ ([0, 0, 0, 0, 0, 0, 1]) };
    const flags = r.u8();
    record.pose = r.pose();
    const problem = sceneRecordProblem(record.kind, flags, record.version, record.pose);
    if (problem) return new ProtocolError('BAD_VALUE', problem);
    record.removed = (flags & SceneRecordFlag.REMOVED) !== 0;
    records.push(record);
  }
  return records;
}

/** Where an UPDATE body's flags byte is: after type, sender, seq, sendTime and pose. */
const UPDATE_FLAGS_AT = 1 + 4 + 4 + 8 + 28;

/**
 * The scene records of an UPDATE body (type byte first) that passed the checks (decode() or the
 * relay's fast path), read where they stand: what the relay keeps of a relayed UPDATE's scene.
 * @param {Uint8Array} body
 * @returns {SceneRecord[]}
 */
export function sceneRecordsOfUpdate(body) {
  const flags = body[UPDATE_FLAGS_AT];
  if ((flags & UpdateFlag.SCENE) === 0) return [];
  const head = UPDATE_FLAGS_AT + 1 + ((flags & UpdateFlag.OBJECT) ? 32 : 0);
  const count = body[head + 6];
  if (!count) return [];
  const records = readSceneRecords(new Reader(body, head + 7, body.length), count);
  return records instanceof ProtocolError ? [] : records;
}

/** @type {BodyReader} */
function readKeptScene(r) {
  const count = r.u16();
  if (count > KEPT_SCENE_RECORDS_MAX) return new ProtocolError('BAD_VALUE', `KEPT_SCENE carries ${count} records, at most ${KEPT_SCENE_RECORDS_MAX}`);
  const records = readSceneRecords(r, count);
  if (records instanceof ProtocolError) return records;
  return { type: MsgType.KEPT_SCENE, records };
}

/**
 * What is wrong with a scene record's fields (§15.1), or null: wherever records come from (a frame,
 * a kept scene read from disk), they are held to the same rules.
 * @param {number} kind @param {number} flags @param {number} version @param {readonly number[]} pose
 * @returns {string | null}
 */
export function sceneRecordProblem(kind, flags, version, pose) {
  if (!Number.isInteger(kind) || kind < 0 || kind >= SCENE_KINDS.length) return `scene record of unknown kind ${kind}`;
  if (flags & ~SceneRecordFlag.REMOVED) return `scene record has unknown flags ${flags}`;
  if (!Number.isInteger(version) || version < 1 || version > 0xffffffff) return `scene record with version ${version}`;
  if (pose.length !== 7 || !pose.every(Number.isFinite)) return 'scene record pose is not finite';
  return null;
}

/** @type {BodyReader} */
function readAck(r) {
  return { type: MsgType.ACK, sender: r.u32(), seq: r.u32(), acker: r.u32() };
}

/** @type {BodyReader} */
function readAckedAll(r) {
  return { type: MsgType.ACKED_ALL, sender: r.u32(), seq: r.u32(), acked: r.u16(), dropped: r.u16() };
}

/** @type {BodyReader} */
function readSuperseded(r) {
  const sender = r.u32();
  const seq = r.u32();
  const n = r.u8();
  if (n < 1 || n > SUPERSEDED_RANGES_MAX) return new ProtocolError('BAD_VALUE', `SUPERSEDED names ${n} ranges, 1..${SUPERSEDED_RANGES_MAX}`);
  /** @type {number[]} */
  const ranges = [];
  for (let i = 0; i < 2 * n; i++) ranges.push(r.u32());
  for (let i = 0; i < ranges.length; i += 2) {
    const ordered = ranges[i] <= ranges[i + 1] && (i === 0 || ranges[i] > ranges[i - 1] + 1);
    if (!ordered || ranges[i + 1] >= seq) return new ProtocolError('BAD_VALUE', 'SUPERSEDED ranges are not sorted, disjoint and below its seq');
  }
  return { type: MsgType.SUPERSEDED, sender, seq, ranges };
}

/** @type {BodyReader} */
function readBatch(r, inBatch) {
  if (inBatch) return new ProtocolError('NESTED_BATCH', 'a BATCH cannot contain a BATCH');
  const count = r.u16();
  /** @type {BatchMsg} */
  const m = { type: MsgType.BATCH, messages: [] };
  for (let i = 0; i < count; i++) {
    const len = r.u16();
    if (len === 0) return new ProtocolError('TRUNCATED', `batched message ${i} is empty`);
    r.need(len);
    const sub = readBody(r.bytes, r.pos, r.pos + len, true);
    if (sub instanceof ProtocolError) return sub;
    m.messages.push(sub);
    r.pos += len;
  }
  return m;
}

/** @type {BodyReader} */
function readError(r) {
  return { type: MsgType.ERROR, code: r.u16(), reason: r.str8() };
}

/** @type {BodyReader} */
function readStats(r) {
  const clientId = r.u32();
  const len = r.u32();
  if (len > Limits.STATS_MAX) return new ProtocolError('BAD_VALUE', 'STATS is too large');
  const text = utf8Decoder.decode(r.take(len));
  let stats;
  try {
    stats = JSON.parse(text);
  } catch {
    return new ProtocolError('BAD_VALUE', 'STATS is not valid JSON');
  }
  return { type: MsgType.STATS, clientId, stats };
}

/** @type {BodyReader} */
function readSignal(r) {
  return { type: MsgType.SIGNAL, from: r.u32(), to: r.u32(), payload: r.str16() };
}

/** @type {BodyReader} */
function readLink(r) {
  const count = r.u16();
  if (count === 0) return new ProtocolError('BAD_VALUE', 'LINK names no peer');
  /** @type {number[]} */
  const peers = [];
  for (let i = 0; i < count; i++) peers.push(r.u32());
  // The carried message is the rest of the body, read like a batched one (no nesting).
  const inner = readBody(r.bytes, r.pos, r.end, true);
  if (inner instanceof ProtocolError) return inner;
  if (inner.type !== MsgType.UPDATE && inner.type !== MsgType.ACK) {
    return new ProtocolError('BAD_VALUE', `LINK carries ${MsgTypeName[inner.type]}, not an UPDATE or ACK`);
  }
  r.pos = r.end;
  return { type: MsgType.LINK, peers, message: inner };
}

/**
 * One reader per message type (a Map, like BODY_WRITERS).
 * @type {ReadonlyMap<number, BodyReader>}
 */
const BODY_READERS = new Map([
  [MsgType.HELLO, readHello],
  [MsgType.WELCOME, readWelcome],
  [MsgType.MEMBER_JOINED, readMemberJoined],
  [MsgType.MEMBER_LEFT, readMemberLeft],
  [MsgType.UPDATE, readUpdate],
  [MsgType.ACK, readAck],
  [MsgType.ACKED_ALL, readAckedAll],
  [MsgType.BATCH, readBatch],
  [MsgType.ERROR, readError],
  [MsgType.STATS, readStats],
  [MsgType.SIGNAL, readSignal],
  [MsgType.LINK, readLink],
  [MsgType.SUPERSEDED, readSuperseded],
  [MsgType.KEPT_SCENE, readKeptScene],
]);

/**
 * Reads one body (type + payload) spanning exactly [start, end).
 * @param {Uint8Array} bytes
 * @param {number} start
 * @param {number} end
 * @param {boolean} inBatch
 * @returns {Message | ProtocolError}
 */
function readBody(bytes, start, end, inBatch) {
  const r = new Reader(bytes, start, end);
  /** @type {Message | ProtocolError} */
  let m;
  try {
    const type = r.u8();
    const read = BODY_READERS.get(type);
    if (!read) return new ProtocolError('UNKNOWN_TYPE', `unknown message type ${type}`);
    m = read(r, inBatch);
  } catch (err) {
    if (err === TRUNCATED) return new ProtocolError('TRUNCATED', 'frame ends before its message does');
    if (err instanceof TypeError) return new ProtocolError('BAD_STRING', 'string is not valid UTF-8');
    return new ProtocolError('BAD_VALUE', String(err && /** @type {{ message?: unknown }} */ (err).message));
  }
  if (m instanceof ProtocolError) return m;
  if (r.pos !== end) {
    return new ProtocolError('TRAILING_BYTES', `${end - r.pos} bytes after the end of the message`);
  }
  // Set here, not in the readers: a relay forwards these bytes unchanged.
  /** @type {Message & { body?: Uint8Array }} */ (m).body = bytes.subarray(start, end);
  return m;
}

/**
 * Decodes one frame. Never throws: malformed input yields a ProtocolError.
 * @param {Uint8Array | ArrayBuffer | ArrayBufferView} input
 * @returns {Message | ProtocolError}
 */
export function decode(input) {
  let bytes;
  if (input instanceof Uint8Array) bytes = input;
  else if (input instanceof ArrayBuffer) bytes = new Uint8Array(input);
  else if (input && ArrayBuffer.isView(input)) bytes = new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
  else return new ProtocolError('BAD_VALUE', 'frame is not binary');
  if (bytes.length === 0) return new ProtocolError('EMPTY', 'empty frame');
  if (bytes[0] !== VERSION) {
    return new ProtocolError('BAD_VERSION', `protocol version ${bytes[0]}, expected ${VERSION}`);
  }
  if (bytes.length < 2) return new ProtocolError('TRUNCATED', 'frame has no message type');
  return readBody(bytes, 1, bytes.length, false);
}

/**
 * Yields the messages of a decoded frame: the BATCH's members, or the message itself.
 * @param {Message} msg
 * @returns {Message[]}
 */
export function unbatch(msg) {
  return msg.type === MsgType.BATCH ? msg.messages : [msg];
}
