/**
 * What relay nodes say to each other through the broker (relay/cluster.js):
 * subject names, and the binary envelopes of the data path (updates, ACKs,
 * drops), several per broker message. Membership travels as JSON: it is rare.
 *
 * Subjects:
 * - `carlab.u.<group>`  one UPDATE to every node with members of the group
 * - `carlab.n.<node>`   data for one node (ACKs, drops) and its membership sync
 * - `carlab.m`          membership events (joined, ready, left) of every node
 * - `carlab.hb`         heartbeats: who is alive
 *
 * @module relay/cluster-wire
 */

/** Subject prefix of every carlab message on the broker. */
export const SUBJECT_PREFIX = 'carlab';

/** Membership events. */
export const MEMBERSHIP_SUBJECT = `${SUBJECT_PREFIX}.m`;

/** Heartbeats. */
export const HEARTBEAT_SUBJECT = `${SUBJECT_PREFIX}.hb`;

/** Envelope kinds on the data path. */
export const EnvelopeKind = Object.freeze({
  /** an UPDATE body for the group's members on this node */
  UPDATE: 1,
  /** an ACK for the update's sender, who lives on this node: 12 bytes (sender, seq, acker) */
  ACK: 2,
  /** a destination here will never ACK an update of a sender there */
  DROP: 3,
  /** a JSON membership message addressed to this node (sync) */
  MEMBERSHIP: 4,
  /** a p2p member's LINK'd UPDATE or ACK for members on this node: u16 count, u32 ids, the carried body */
  LINK: 5,
});

const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder();

/**
 * The broker subject of a group's updates. Group names are any UTF-8: the
 * subject token is their base64url, which NATS accepts as one token.
 *
 * @param {string} groupKey the relay's group key (`g:name`, relay/groups.js GROUP_KEY_PREFIX)
 * @returns {string}
 */
export function groupSubject(groupKey) {
  return `${SUBJECT_PREFIX}.u.${Buffer.from(groupKey, 'utf8').toString('base64url')}`;
}

/**
 * The subject of one node's inbox.
 *
 * @param {string} nodeId
 * @returns {string}
 */
export function nodeSubject(nodeId) {
  return `${SUBJECT_PREFIX}.n.${nodeId}`;
}

/**
 * @typedef {object} Envelope
 * @property {number} kind one of EnvelopeKind
 * @property {string} groupKey
 * @property {Uint8Array} payload UPDATE/ACK: the message body; DROP: 12 bytes (sender, seq, dest);
 *   MEMBERSHIP: UTF-8 JSON
 */

/**
 * Encodes one envelope: kind u8, group key length u16, group key, payload.
 *
 * @param {number} kind
 * @param {string} groupKey
 * @param {Uint8Array} payload
 * @returns {Uint8Array}
 */
export function encodeEnvelope(kind, groupKey, payload) {
  const key = utf8Encoder.encode(groupKey);
  const out = new Uint8Array(3 + key.length + payload.length);
  out[0] = kind;
  out[1] = key.length >>> 8;
  out[2] = key.length & 0xff;
  out.set(key, 3);
  out.set(payload, 3 + key.length);
  return out;
}

/**
 * The payload of a DROP envelope.
 *
 * @param {number} senderId @param {number} seq @param {number} destId
 * @returns {Uint8Array}
 */
export function dropPayload(senderId, seq, destId) {
  const out = new Uint8Array(12);
  const view = new DataView(out.buffer);
  view.setUint32(0, senderId);
  view.setUint32(4, seq);
  view.setUint32(8, destId);
  return out;
}

/**
 * The payload of an ACK envelope: the three ids, not the protocol body, so
 * the sender's node reads them without decoding a frame per ACK.
 *
 * @param {number} senderId @param {number} seq @param {number} ackerId
 * @returns {Uint8Array}
 */
export function ackPayload(senderId, seq, ackerId) {
  return dropPayload(senderId, seq, ackerId); // same layout: three u32
}

/**
 * Reads an ACK payload.
 *
 * @param {Uint8Array} payload
 * @returns {{ senderId: number, seq: number, ackerId: number } | null}
 */
export function readAckPayload(payload) {
  const ids = readDropPayload(payload);
  return ids && { senderId: ids.senderId, seq: ids.seq, ackerId: ids.destId };
}

/**
 * Reads a DROP payload.
 *
 * @param {Uint8Array} payload
 * @returns {{ senderId: number, seq: number, destId: number } | null}
 */
export function readDropPayload(payload) {
  if (payload.length !== 12) return null;
  const view = new DataView(payload.buffer, payload.byteOffset, 12);
  return { senderId: view.getUint32(0), seq: view.getUint32(4), destId: view.getUint32(8) };
}

/**
 * Packs envelopes into one broker message: u32 length, envelope, repeated.
 * One message per subject per event-loop turn keeps the broker's per-message
 * cost off the per-update path.
 *
 * @param {Uint8Array[]} envelopes
 * @returns {Uint8Array}
 */
export function packEnvelopes(envelopes) {
  let size = 0;
  for (const e of envelopes) size += 4 + e.length;
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  let pos = 0;
  for (const e of envelopes) {
    view.setUint32(pos, e.length);
    out.set(e, pos + 4);
    pos += 4 + e.length;
  }
  return out;
}

/**
 * Unpacks a broker message into its envelopes; a malformed one ends the
 * list (a node never trusts its peers' bytes to be well formed).
 *
 * @param {Uint8Array} data
 * @returns {Envelope[]}
 */
export function unpackEnvelopes(data) {
  /** @type {Envelope[]} */
  const out = [];
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  let pos = 0;
  while (pos + 4 <= data.length) {
    const length = view.getUint32(pos);
    const start = pos + 4;
    const end = start + length;
    if (length < 3 || end > data.length) break;
    const keyLength = (data[start + 1] << 8) | data[start + 2];
    if (3 + keyLength > length) break;
    out.push({
      kind: data[start],
      groupKey: utf8Decoder.decode(data.subarray(start + 3, start + 3 + keyLength)),
      payload: data.subarray(start + 3 + keyLength, end),
    });
    pos = end;
  }
  return out;
}

/**
 * Collects envelopes per subject and publishes each subject's envelopes as
 * one message at the end of the event-loop turn.
 */
export class EnvelopeBatcher {
  /** @param {(subject: string, data: Uint8Array) => void} publish */
  constructor(publish) {
    this.publish = publish;
    /** @type {Map<string, Uint8Array[]>} */
    this.pending = new Map();
    this.scheduled = false;
    /** broker messages published */
    this.messages = 0;
    /** envelopes published */
    this.envelopes = 0;
  }

  /** @param {string} subject @param {Uint8Array} envelope */
  add(subject, envelope) {
    let list = this.pending.get(subject);
    if (!list) this.pending.set(subject, (list = []));
    list.push(envelope);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  /** Publishes everything collected so far. */
  flush() {
    this.scheduled = false;
    const pending = this.pending;
    this.pending = new Map();
    for (const [subject, envelopes] of pending) {
      this.messages++;
      this.envelopes += envelopes.length;
      this.publish(subject, packEnvelopes(envelopes));
    }
  }
}

/**
 * JSON to bytes for the membership messages.
 *
 * @param {unknown} value
 * @returns {Uint8Array}
 */
export function jsonBytes(value) {
  return utf8Encoder.encode(JSON.stringify(value));
}

/**
 * Bytes to JSON; null for anything that is not a JSON object.
 *
 * @param {Uint8Array} bytes
 * @returns {Record<string, unknown> | null}
 */
export function parseJsonBytes(bytes) {
  try {
    const value = JSON.parse(utf8Decoder.decode(bytes));
    return value && typeof value === 'object' && !Array.isArray(value) ? value : null;
  } catch {
    return null;
  }
}

/**
 * The payload of a LINK envelope: the destinations on the receiving node and the carried body
 * (docs/protocol.md §14.1), which that node hands to each of them unchanged.
 *
 * @param {number[]} ids
 * @param {Uint8Array} body
 * @returns {Uint8Array}
 */
export function linkPayload(ids, body) {
  const out = new Uint8Array(2 + 4 * ids.length + body.length);
  const view = new DataView(out.buffer);
  view.setUint16(0, ids.length);
  ids.forEach((id, i) => view.setUint32(2 + 4 * i, id));
  out.set(body, 2 + 4 * ids.length);
  return out;
}

/**
 * Reads a LINK payload.
 *
 * @param {Uint8Array} payload
 * @returns {{ ids: number[], body: Uint8Array } | null}
 */
export function readLinkPayload(payload) {
  if (payload.length < 2) return null;
  const view = new DataView(payload.buffer, payload.byteOffset, payload.length);
  const count = view.getUint16(0);
  const start = 2 + 4 * count;
  if (count === 0 || payload.length <= start) return null;
  const ids = Array.from({ length: count }, (_, i) => view.getUint32(2 + 4 * i));
  return { ids, body: payload.subarray(start) };
}
