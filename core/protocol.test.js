import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  VERSION, MsgType, CloseCode, ProtocolError, encode, decode, encodeBatchOfBodies, frameOfBody, unbatch,
} from './protocol.js';

const pose = [1.5, -2.25, 0.125, 0, 0, 0.5, 1];

/** Every message type, as a sender would write it. */
const samples = [
  { type: MsgType.HELLO, flags: 1, clientId: 7, group: 'g-ü', name: 'Ana', token: 'tok' },
  { type: MsgType.WELCOME, clientId: 7, serverTime: 1732280000123.5, members: [{ id: 1, name: 'x' }, { id: 7, name: 'Ana' }] },
  { type: MsgType.MEMBER_JOINED, id: 9, name: 'Bo' },
  { type: MsgType.MEMBER_LEFT, id: 9 },
  { type: MsgType.UPDATE, sender: 7, seq: 42, sendTime: 12345.678, pose, object: null },
  { type: MsgType.UPDATE, sender: 7, seq: 43, sendTime: 1, pose, object: { pose: [0, 0, 0, 0, 0, 0, 1], version: 5 } },
  { type: MsgType.ACK, sender: 7, seq: 42, acker: 9 },
  { type: MsgType.ACKED_ALL, sender: 7, seq: 42, acked: 4, dropped: 0 },
  { type: MsgType.ERROR, code: CloseCode.SPOOFED_SENDER, reason: 'no' },
  { type: MsgType.STATS, clientId: 7, stats: { sent: 3, rt: [1, 2] } },
  { type: MsgType.SIGNAL, from: 7, to: 0, payload: '{"sdp":"v=0"}' },
];

/** @param {any} m */
function strip(m) {
  const { body, ...rest } = m;
  if (rest.messages) rest.messages = rest.messages.map(strip);
  return rest;
}

test('every message type round-trips', () => {
  for (const m of samples) {
    const frame = encode(m);
    assert.equal(frame[0], VERSION);
    assert.equal(frame[1], m.type);
    const back = decode(frame);
    assert.ok(!(back instanceof ProtocolError), `${m.type}: ${back instanceof Error && back.message}`);
    assert.deepEqual(strip(back), m);
  }
});

test('BATCH round-trips and nests no BATCH', () => {
  const m = { type: MsgType.BATCH, messages: samples };
  const back = decode(encode(m));
  assert.ok(!(back instanceof ProtocolError));
  assert.deepEqual(strip(back), m);
  assert.deepEqual(unbatch(/** @type {any} */ (back)).length, samples.length);
  assert.throws(() => encode({ type: MsgType.BATCH, messages: [m] }), TypeError);
});

test('bodies forward unchanged: encodeBatchOfBodies and frameOfBody', () => {
  const decoded = samples.map((m) => /** @type {any} */ (decode(encode(m))));
  const batch = /** @type {any} */ (decode(encodeBatchOfBodies(decoded.map((d) => d.body))));
  assert.deepEqual(batch.messages.map(strip), samples);
  for (const d of decoded) assert.deepEqual(frameOfBody(d.body), encode(strip(d)));
});

test('a frame truncated at every byte is an error, never a throw', () => {
  const frames = [...samples.map(encode), encode({ type: MsgType.BATCH, messages: samples })];
  for (const frame of frames) {
    for (let cut = 0; cut < frame.length; cut++) {
      const r = decode(frame.subarray(0, cut));
      assert.ok(r instanceof ProtocolError, `type ${frame[1]} cut at ${cut} decoded`);
      assert.ok(['EMPTY', 'TRUNCATED'].includes(r.code), `cut at ${cut}: ${r.code}`);
    }
  }
});

test('bad version, unknown type, trailing bytes, bad UTF-8, bad flags, nested batch', () => {
  const update = encode(samples[4]);
  const wrongVersion = update.slice(); wrongVersion[0] = 2;
  assert.equal(/** @type {ProtocolError} */ (decode(wrongVersion)).code, 'BAD_VERSION');
  assert.equal(/** @type {ProtocolError} */ (decode(wrongVersion)).closeCode, CloseCode.BAD_VERSION);
  assert.equal(/** @type {ProtocolError} */ (decode(new Uint8Array([VERSION, 200]))).code, 'UNKNOWN_TYPE');
  assert.equal(/** @type {ProtocolError} */ (decode(new Uint8Array([...update, 0]))).code, 'TRAILING_BYTES');
  const badFlags = update.slice(); badFlags[badFlags.length - 1] = 0x80;
  assert.equal(/** @type {ProtocolError} */ (decode(badFlags)).code, 'BAD_VALUE');
  const joined = encode(samples[2]);
  const badUtf8 = joined.slice(); badUtf8[badUtf8.length - 1] = 0xff;
  assert.equal(/** @type {ProtocolError} */ (decode(badUtf8)).code, 'BAD_STRING');
  const nested = new Uint8Array([VERSION, MsgType.BATCH, 0, 1, 0, 3, MsgType.BATCH, 0, 0]);
  assert.equal(/** @type {ProtocolError} */ (decode(nested)).code, 'NESTED_BATCH');
  assert.equal(/** @type {ProtocolError} */ (decode(/** @type {any} */ ('text'))).code, 'BAD_VALUE');
  assert.equal(/** @type {ProtocolError} */ (decode(new Uint8Array(0))).code, 'EMPTY');
  const stats = encode({ type: MsgType.STATS, clientId: 1, stats: {} });
  const badJson = stats.slice(); badJson[badJson.length - 1] = 0x41;
  assert.equal(/** @type {ProtocolError} */ (decode(badJson)).code, 'BAD_VALUE');
});

test('oversized fields are refused on encode and decode', () => {
  assert.throws(() => encode({ type: MsgType.HELLO, group: 'g'.repeat(256) }), RangeError);
  // a STATS frame announcing 2 MiB of JSON
  const frame = new Uint8Array([VERSION, MsgType.STATS, 0, 0, 0, 1, 0, 0x20, 0, 0]);
  assert.equal(/** @type {ProtocolError} */ (decode(frame)).code, 'BAD_VALUE');
  // ERROR reasons are cut to fit, on a character boundary
  const back = /** @type {import('./protocol.js').ErrorMsg} */ (decode(encode({ type: MsgType.ERROR, code: 1, reason: 'é'.repeat(200) })));
  assert.equal(back.reason, 'é'.repeat(127));
});

test('random bytes never throw out of decode', () => {
  let seed = 12345;
  const rand = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
  for (let i = 0; i < 20000; i++) {
    const len = Math.floor(rand() * 64);
    const b = new Uint8Array(len);
    for (let j = 0; j < len; j++) b[j] = Math.floor(rand() * 256);
    if (len > 0 && rand() < 0.8) b[0] = VERSION;
    if (len > 1 && rand() < 0.8) b[1] = 1 + Math.floor(rand() * 11);
    const r = decode(b);
    assert.ok(r instanceof ProtocolError || typeof r.type === 'number');
  }
});

test('UPDATE without object is 47 bytes on the wire', () => {
  assert.equal(encode(samples[4]).length, 47);
  assert.equal(encode(samples[6]).length, 14);
});

test('capability fields round-trip (each ends in an optional tail, so a cut there decodes as without it)', () => {
  for (const m of [
    { type: MsgType.MEMBER_JOINED, id: 9, name: 'Bo', reach: 3 },
    { type: MsgType.WELCOME, clientId: 7, serverTime: 1, members: [{ id: 5, name: 'a', reach: 1 }, { id: 7, name: 'b', reach: 3 }], capabilities: 48, resume: 's3cret' },
  ]) assert.deepEqual(strip(decode(encode(/** @type {any} */ (m)))), m);
});

test('REACHABILITY: one reach byte per WELCOME member after the secret, one after MEMBER_JOINED\'s name (§5.2, §5.3)', () => {
  const welcome = encode({ type: MsgType.WELCOME, clientId: 7, serverTime: 0, members: [{ id: 5, name: 'a', reach: 1 }, { id: 7, name: 'b', reach: 3 }], capabilities: 48, resume: 's' });
  assert.deepEqual([...welcome.subarray(-5)], [0x30, 1, 0x73, 1, 3], 'capabilities, the secret (str8), then the reach bytes');
  const joined = encode({ type: MsgType.MEMBER_JOINED, id: 9, name: 'Bo', reach: 4 | 1 });
  assert.equal(joined.length, 8 + 2, 'the doc\'s 8 + n');
  assert.equal(/** @type {any} */ (decode(joined)).reach, 5);
  assert.equal(/** @type {any} */ (decode(encode({ type: MsgType.MEMBER_JOINED, id: 9, name: 'Bo' }))).reach, undefined);
  // a WELCOME granting REACHABILITY that lacks a member's byte is truncated, not short
  assert.ok(decode(welcome.subarray(0, welcome.length - 1)) instanceof ProtocolError);
});
