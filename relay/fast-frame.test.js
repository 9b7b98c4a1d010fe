// The fast intake against the full decoder: for every frame, scanFrame
// accepts exactly the frames decode() accepts whose messages are all UPDATEs
// and ACKs, and reads the same sender, seq, acker and bytes from them. Fed the
// relay fuzz cases of many seeds and, because those rarely carry scene
// blocks, mutations of well-formed UPDATE, ACK and BATCH frames.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { MsgType, SCENE_RECORDS_MAX, SCENE_RECORD_BYTES, UpdateFlag, decode, encode, encodeBatchOfBodies } from '../core/protocol.js';
import { generateCase } from '../lab/fuzz/fuzz-cases.js';
import { makeWorld } from '../lab/fuzz/fuzz-world.js';
import { makeRng } from '../lab/shared/rng.js';
import { scanFrame } from './fast-frame.js';

/** @typedef {import('../lab/shared/rng.js').Rng} Rng */

/**
 * What decode() makes of a frame, in the fast path's terms: null when it
 * refuses it or when a message is neither UPDATE nor ACK.
 * @param {Uint8Array} bytes
 */
function decodedFields(bytes) {
  const m = decode(bytes);
  if (m instanceof Error) return { refused: true, fields: null };
  const messages = m.type === MsgType.BATCH ? m.messages : [m];
  if (!messages.every((x) => x.type === MsgType.UPDATE || x.type === MsgType.ACK)) return { refused: false, fields: null };
  return {
    refused: false,
    fields: messages.map((x) => {
      const body = /** @type {{ body: Uint8Array }} */ (/** @type {unknown} */ (x)).body;
      return x.type === MsgType.ACK
        ? { type: x.type, sender: x.sender, seq: x.seq, acker: x.acker, body: [...body] }
        : { type: x.type, sender: /** @type {import('../core/protocol.js').UpdateMsg} */ (x).sender, seq: x.seq, acker: 0, body: [...body] };
    }),
  };
}

/** What the fast path reads from a frame, or null. @param {Uint8Array} bytes */
function scannedFields(bytes) {
  const scan = scanFrame(bytes);
  if (!scan) return null;
  const fields = [];
  while (scan.next()) fields.push({ type: scan.type, sender: scan.sender, seq: scan.seq, acker: scan.acker, body: [...scan.body] });
  assert.equal(fields.length, scan.count);
  assert.equal(scan.acks + scan.updates, scan.count);
  return fields;
}

/**
 * Asserts the two agree on one frame; returns whether the fast path took it.
 * @param {Uint8Array} bytes @param {string} what
 */
function agree(bytes, what) {
  const full = decodedFields(bytes);
  const fast = scannedFields(bytes);
  assert.deepEqual(fast, full.fields, `${what}: fast path and decode() differ on ${Buffer.from(bytes).toString('hex')}`);
  return fast !== null;
}

/** @param {Rng} r */
const pose = (r) => Array.from({ length: 7 }, () => r.next() * 4 - 2);

/** A well-formed UPDATE, with an object block, a scene block, both or neither. @param {Rng} r */
function updateMsg(r) {
  const flags = r.int(0, 3);
  /** @type {any} */
  const m = { type: MsgType.UPDATE, sender: r.int(0, 2 ** 32 - 1), seq: r.int(0, 2 ** 32 - 1), sendTime: r.next() * 1e6, pose: pose(r), object: null };
  if (flags & UpdateFlag.OBJECT) m.object = { pose: pose(r), version: r.int(0, 1000) };
  if (flags & UpdateFlag.SCENE) {
    const records = Array.from({ length: r.int(0, SCENE_RECORDS_MAX) }, () => ({
      id: r.int(0, 2 ** 32 - 1), version: r.int(1, 1000), writer: r.int(0, 99), kind: r.int(0, 4), removed: r.next() < 0.2, pose: pose(r),
    }));
    m.scene = { digest: r.int(0, 2 ** 32 - 1), held: r.int(0, 65535), records };
  }
  return m;
}

/** A well-formed frame of UPDATEs and ACKs, a lone message or a BATCH. @param {Rng} r */
function goodFrame(r) {
  const one = () => (r.next() < 0.5
    ? encode(updateMsg(r))
    : encode({ type: MsgType.ACK, sender: r.int(0, 2 ** 32 - 1), seq: r.int(0, 2 ** 32 - 1), acker: r.int(0, 2 ** 32 - 1) }));
  if (r.next() < 0.4) return one();
  return encodeBatchOfBodies(Array.from({ length: r.int(0, 6) }, () => one().subarray(1)));
}

/** One random defect: a flipped bit, a cut, an added byte, a non-finite float or a zeroed word. @param {Rng} r @param {Uint8Array} frame */
function mutate(r, frame) {
  const b = Uint8Array.from(frame);
  const at = r.int(0, Math.max(0, b.length - 1));
  switch (r.int(0, 4)) {
    case 0: b[at] ^= 1 << r.int(0, 7); return b;
    case 1: return b.subarray(0, at);
    case 2: return Uint8Array.from([...b, r.int(0, 255)]);
    case 3: b.fill(0, at, at + 4); return b;
    default:
      if (at + 1 < b.length) { b[at] = r.next() < 0.5 ? 0x7f : 0xff; b[at + 1] |= 0x80; }
      return b;
  }
}

test('the fast path and decode() agree on the relay fuzz cases of 40 seeds', () => {
  let frames = 0;
  let fast = 0;
  for (let seed = 1; seed <= 40; seed++) {
    const w = makeWorld(seed);
    for (let index = 0; index < 400; index++) {
      const c = generateCase(w, index);
      if (c.target !== 'relay') continue;
      for (const f of c.frames) {
        if (!('bytes' in f)) continue;
        frames++;
        if (agree(f.bytes, `seed ${seed} case ${index} (${c.name})`)) fast++;
      }
    }
  }
  assert.ok(frames > 5000, `${frames} frames`);
  assert.ok(fast > 500, `the fast path took ${fast} of ${frames} frames`);
});

test('the fast path and decode() agree on well-formed UPDATE and ACK frames and their mutations', () => {
  const r = makeRng(17);
  let refused = 0;
  let taken = 0;
  for (let i = 0; i < 20000; i++) {
    const frame = goodFrame(r);
    assert.equal(agree(frame, `good frame ${i}`), true);
    const bad = mutate(r, frame);
    if (agree(bad, `mutation ${i}`)) taken++;
    else refused++;
  }
  // Both outcomes occur often: the mutations reach the checks, not only the lengths.
  assert.ok(refused > 5000 && taken > 2000, `refused ${refused}, taken ${taken}`);
});

test('scanFrame leaves every other message type to decode()', () => {
  for (const m of [
    { type: MsgType.HELLO, flags: 1, clientId: 0, group: 'g', name: 'n', token: '' },
    { type: MsgType.STATS, clientId: 1, stats: { v: 1 } },
    { type: MsgType.ACKED_ALL, sender: 1, seq: 2, acked: 3, dropped: 0 },
  ]) {
    assert.equal(scanFrame(encode(m)), null);
    assert.equal(scanFrame(encodeBatchOfBodies([encode(m).subarray(1)])), null);
  }
});

test('an UPDATE with one scene record over the most is refused by both', () => {
  const r = makeRng(5);
  const m = updateMsg(r);
  m.object = null;
  m.scene = { digest: 1, held: 0, records: Array.from({ length: SCENE_RECORDS_MAX }, (_, i) => ({ id: i, version: 1, writer: 0, kind: 0, removed: false, pose: pose(r) })) };
  const full = encode(m);
  const lastRecord = full.subarray(full.length - SCENE_RECORD_BYTES);
  const over = Uint8Array.from([...full, ...lastRecord]);
  over[1 + 45] = UpdateFlag.SCENE; // flags: scene block only
  over[1 + 46 + 6] = SCENE_RECORDS_MAX + 1;
  assert.equal(agree(full, 'the most records'), true);
  assert.equal(agree(over, 'one record over'), false);
  assert.ok(decode(over) instanceof Error);
});
