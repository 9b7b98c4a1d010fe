// One writer and one reader per message type (protocol.js BODY_WRITERS /
// BODY_READERS): the exact bytes of each, as docs/protocol.md lays them out,
// and each reader's own refusals.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MsgType, ProtocolError, ackedAllBody, decode, encode } from './protocol.js';

/** @param {string} hex spaces allowed */
const bytes = (hex) => Uint8Array.from(Buffer.from(hex.replaceAll(' ', ''), 'hex'));
/** @param {Uint8Array} frame */
const hexOf = (frame) => Buffer.from(frame).toString('hex');
/** f32 1.0 and 0.0, big-endian */
const ONE = '3f800000';
const ZERO = '00000000';
const IDENTITY = `${ZERO.repeat(6)}${ONE}`;
const identity = () => /** @type {import('./protocol.js').Pose} */ ([0, 0, 0, 0, 0, 0, 1]);

/**
 * JSON.stringify replacer leaving out batched messages' `body`.
 *
 * @param {string} key
 * @param {unknown} value
 */
const withoutBodies = (key, value) => (key === 'body' ? undefined : value);

/** @type {[string, object, string][]} name, message, frame (version byte first) */
const layouts = [
  ['HELLO', { type: MsgType.HELLO, flags: 5, clientId: 258, group: 'g', name: 'n', token: '' },
    '01 01 05 00000102 01 67 01 6e 00'],
  ['HELLO defaults', { type: MsgType.HELLO, group: 'g' }, '01 01 00 00000000 01 67 00 00'],
  ['WELCOME', { type: MsgType.WELCOME, clientId: 7, serverTime: 1, members: [{ id: 2, name: 'ab' }] },
    '01 02 00000007 3ff0000000000000 0001 00000002 02 6162'],
  ['MEMBER_JOINED', { type: MsgType.MEMBER_JOINED, id: 9, name: 'é' }, '01 03 00000009 02 c3a9'],
  ['MEMBER_LEFT', { type: MsgType.MEMBER_LEFT, id: 0xffffffff }, '01 04 ffffffff'],
  ['UPDATE', { type: MsgType.UPDATE, sender: 1, seq: 2, sendTime: 0, pose: identity(), object: null },
    `01 05 00000001 00000002 0000000000000000 ${IDENTITY} 00`],
  ['UPDATE with object', { type: MsgType.UPDATE, sender: 1, seq: 2, sendTime: 0, pose: identity(), object: { pose: identity(), version: 3 } },
    `01 05 00000001 00000002 0000000000000000 ${IDENTITY} 01 ${IDENTITY} 00000003`],
  ['ACK', { type: MsgType.ACK, sender: 1, seq: 2, acker: 3 }, '01 06 00000001 00000002 00000003'],
  ['ACKED_ALL', { type: MsgType.ACKED_ALL, sender: 1, seq: 2, acked: 4, dropped: 1 }, '01 07 00000001 00000002 0004 0001'],
  ['ACKED_ALL defaults', { type: MsgType.ACKED_ALL, sender: 1, seq: 2 }, '01 07 00000001 00000002 0000 0000'],
  ['BATCH', { type: MsgType.BATCH, messages: [{ type: MsgType.MEMBER_LEFT, id: 1 }, { type: MsgType.MEMBER_LEFT, id: 2 }] },
    '01 08 0002 0005 04 00000001 0005 04 00000002'],
  ['ERROR', { type: MsgType.ERROR, code: 4003, reason: 'no' }, '01 09 0fa3 02 6e6f'],
  ['STATS', { type: MsgType.STATS, clientId: 7, stats: { a: 1 } }, `01 0a 00000007 00000007 ${hexOf(new TextEncoder().encode('{"a":1}'))}`],
  ['STATS defaults', { type: MsgType.STATS, clientId: 7 }, `01 0a 00000007 00000002 7b7d`],
  ['SIGNAL', { type: MsgType.SIGNAL, from: 1, to: 0, payload: 'x' }, '01 0b 00000001 00000000 0001 78'],
  ['LINK', { type: MsgType.LINK, peers: [2], message: { type: MsgType.ACK, sender: 2, seq: 1, acker: 1 } }, '01 0c 0001 00000002 06 00000002 00000001 00000001'],
  ['WELCOME with capabilities', { type: MsgType.WELCOME, clientId: 7, serverTime: 1, members: [], capabilities: 8 },
    '01 02 00000007 3ff0000000000000 0000 08'],
  ['SUPERSEDED', { type: MsgType.SUPERSEDED, sender: 3, seq: 9, ranges: [4, 5, 7, 8] }, '01 0d 00000003 00000009 02 00000004 00000005 00000007 00000008'],
  // flag MORE (128): a u32 of MoreFlag capabilities after the token, before a resume secret (§5.1)
  ['HELLO with more capabilities', { type: MsgType.HELLO, flags: 128 | 16, clientId: 0, group: 'g', name: '', token: '', more: 1, resume: 'ab' },
    '01 01 90 00000000 01 67 00 00 00000001 02 6162'],
  ['WELCOME with more capabilities', { type: MsgType.WELCOME, clientId: 7, serverTime: 1, members: [], capabilities: 0, more: 1 },
    '01 02 00000007 3ff0000000000000 0000 00 00000001'],
  ['KEPT_SCENE', { type: MsgType.KEPT_SCENE, records: [{ id: 9, version: 2, writer: 1, kind: 1, removed: true, pose: identity() }] },
    `01 0e 0001 00000009 00000002 00000001 01 01 ${IDENTITY}`],
];

for (const [name, message, frame] of layouts) {
  test(`${name}: written byte for byte, read back to the same fields`, () => {
    assert.equal(hexOf(encode(message)), hexOf(bytes(frame)));
    const back = decode(bytes(frame));
    assert.ok(!(back instanceof ProtocolError), String(back));
    const { body, ...fields } = /** @type {import('./protocol.js').Message & { body: Uint8Array }} */ (back);
    if (!name.endsWith('defaults')) assert.deepEqual(JSON.parse(JSON.stringify(fields, withoutBodies)), message);
    assert.equal(hexOf(body), hexOf(bytes(frame).subarray(1)));
    assert.equal(hexOf(encode(fields)), hexOf(bytes(frame)), 'what was read writes the same bytes');
  });
}

test('every type code has a writer and a reader', () => {
  const covered = new Set(layouts.map(([, message]) => /** @type {{ type: number }} */ (message).type));
  assert.deepEqual([...covered].sort((a, b) => a - b), Object.values(MsgType).sort((a, b) => a - b));
});

test('a type with no writer is a TypeError, matched exactly as a switch would', () => {
  for (const type of [0, 15, 255, '5', 'constructor', undefined]) {
    assert.throws(() => encode({ type, id: 1 }), { name: 'TypeError', message: `unknown message type ${type}` });
  }
});

test('a type with no reader is UNKNOWN_TYPE', () => {
  for (const type of [0, 15, 255]) {
    const error = decode(Uint8Array.of(1, type));
    assert.ok(error instanceof ProtocolError);
    assert.equal(error.code, 'UNKNOWN_TYPE');
    assert.equal(error.message, `unknown message type ${type}`);
  }
});

/**
 * @param {string} hex
 * @returns {ProtocolError}
 */
function refusal(hex) {
  const result = decode(bytes(hex));
  assert.ok(result instanceof ProtocolError, `expected a ProtocolError for ${hex}`);
  return result;
}

test('the readers\' own refusals', () => {
  assert.deepEqual({ ...refusal('01 01 00 00000000 00 00 00') }, { name: 'ProtocolError', code: 'BAD_VALUE' });
  assert.equal(refusal('01 01 00 00000000 00 00 00').message, 'HELLO has an empty group');
  assert.equal(refusal(`01 05 00000001 00000002 0000000000000000 ${IDENTITY} 04`).message, 'UPDATE has unknown flags 4');
  // the scene block (docs/protocol.md §15): digest, held, count, then 42-byte records
  const update = `01 05 00000001 00000002 0000000000000000 ${IDENTITY} 02 00000000 0001`;
  const record = (/** @type {string} */ kind, /** @type {string} */ flags, version = '00000001') => `00000009 ${version} 00000001 ${kind} ${flags} ${IDENTITY}`;
  assert.equal(refusal(`${update} 11`).message, 'UPDATE carries 17 scene records, at most 16');
  assert.equal(refusal(`${update} 01 ${record('05', '00')}`).message, 'scene record of unknown kind 5');
  assert.equal(refusal(`${update} 01 ${record('01', '02')}`).message, 'scene record has unknown flags 2');
  assert.equal(refusal(`${update} 01 ${record('01', '00', '00000000')}`).message, 'scene record with version 0');
  assert.equal(refusal(`${update} 01 00000009 00000001 00000001 01 00 7fc00000 ${ZERO.repeat(5)}${ONE}`).message, 'scene record pose is not finite');
  assert.equal(refusal(`${update} 02 ${record('01', '00')}`).code, 'TRUNCATED');
  assert.equal(refusal(`${update} 01 ${record('01', '00')} 00`).code, 'TRAILING_BYTES');
  assert.equal(refusal('01 08 0001 0000').message, 'batched message 0 is empty');
  assert.equal(refusal('01 08 0001 0003 08 0000').code, 'NESTED_BATCH');
  assert.equal(refusal('01 0a 00000007 00100001').message, 'STATS is too large');
  assert.equal(refusal('01 0a 00000007 00000001 7b').message, 'STATS is not valid JSON');
  // SUPERSEDED (§5.13): 1..32 ranges, sorted, disjoint, below the seq that replaced them
  assert.equal(refusal('01 0d 00000003 00000009 00').message, 'SUPERSEDED names 0 ranges, 1..32');
  assert.equal(refusal('01 0d 00000003 00000009 21').message, 'SUPERSEDED names 33 ranges, 1..32');
  for (const ranges of ['00000005 00000004', '00000004 00000009', '00000004 00000005 00000006 00000007', '00000006 00000007 00000001 00000002']) {
    assert.equal(refusal(`01 0d 00000003 00000009 0${ranges.split(' ').length / 2} ${ranges}`).message, 'SUPERSEDED ranges are not sorted, disjoint and below its seq');
  }
  assert.equal(refusal('01 02 00000007 3ff0000000000000 0000 08 00000001 00').code, 'TRAILING_BYTES', 'a WELCOME\'s capabilities are one byte and one word');
  assert.equal(refusal('01 01 80 00000000 01 67 00 00 000001').code, 'TRUNCATED', 'flag MORE without its word');
  assert.equal(refusal('01 0e 0141').message, 'KEPT_SCENE carries 321 records, at most 320');
  assert.equal(refusal(`01 0e 0001 00000009 00000000 00000001 01 00 ${IDENTITY}`).message, 'scene record with version 0');
  assert.throws(() => encode({ type: MsgType.HELLO, flags: 0, group: 'g', more: 1 }), /sets MORE/);
});

test('running out of bytes, bad UTF-8 and extra bytes are caught around every reader', () => {
  assert.equal(refusal('01 06 00000001 000000').code, 'TRUNCATED');
  assert.equal(refusal('01 03 00000009 01 ff').code, 'BAD_STRING');
  assert.equal(refusal('01 04 00000001 00').message, '1 bytes after the end of the message');
});

test('a decoded message carries its body: the bytes after the version, for forwarding', () => {
  const frame = bytes('01 06 00000001 00000002 00000003');
  const back = /** @type {import('./protocol.js').AckMsg & { body: Uint8Array }} */ (decode(frame));
  assert.equal(hexOf(back.body), hexOf(frame.subarray(1)));
  const batch = /** @type {import('./protocol.js').BatchMsg & { body: Uint8Array }} */ (decode(bytes('01 08 0001 0005 04 00000001')));
  assert.equal(hexOf(/** @type {{ body: Uint8Array }} */ (/** @type {unknown} */ (batch.messages[0])).body), '0400000001');
});

test('ackedAllBody writes what encode() writes after the version byte, into the bytes it is given', () => {
  for (const [sender, seq, acked, dropped] of [[0, 0, 0, 0], [1, 2, 3, 4], [2 ** 32 - 1, 2 ** 32 - 2, 65535, 65534], [77, 2 ** 31, 256, 255]]) {
    const expected = encode({ type: MsgType.ACKED_ALL, sender, seq, acked, dropped }).subarray(1);
    assert.deepEqual(ackedAllBody(sender, seq, acked, dropped), expected);
    assert.deepEqual(new Uint8Array(ackedAllBody(sender, seq, acked, dropped, (n) => Buffer.alloc(n))), expected);
  }
});
