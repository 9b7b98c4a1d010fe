// LINK (12): a p2p link's UPDATE or ACK carried by the relay (docs/protocol.md §14.1).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MsgType, ProtocolError, decode, encode } from './protocol.js';

const pose = /** @type {import('./protocol.js').Pose} */ ([1, 2, 3, 0, 0, 0, 1]);
/** @type {import('./protocol.js').UpdateMsg} */
const update = { type: MsgType.UPDATE, sender: 7, seq: 3, sendTime: 12.5, pose, object: null };
/** @type {import('./protocol.js').AckMsg} */
const ack = { type: MsgType.ACK, sender: 9, seq: 3, acker: 7 };

test('LINK round-trips an UPDATE to several peers and an ACK to one', () => {
  for (const m of [{ type: MsgType.LINK, peers: [9, 11], message: update }, { type: MsgType.LINK, peers: [9], message: ack }]) {
    const frame = encode(m);
    assert.equal(frame[1], 12);
    const back = /** @type {import('./protocol.js').LinkMsg & { body: Uint8Array }} */ (decode(frame));
    assert.ok(!(back instanceof ProtocolError));
    assert.deepEqual(back.peers, m.peers);
    const { body, ...inner } = /** @type {any} */ (back.message);
    assert.deepEqual(inner, m.message);
    // The carried body is the plain message's body: the relay can forward it unchanged.
    assert.deepEqual([...body], [...encode(m.message).subarray(1)]);
  }
});

test('LINK layout: u16 count, u32 peers, then the carried body (UPDATE: 4 + 4n + 46 bytes)', () => {
  const frame = encode({ type: MsgType.LINK, peers: [9], message: update });
  assert.equal(frame.length, 2 + 2 + 4 + 46);
  assert.deepEqual([...frame.subarray(0, 9)], [1, 12, 0, 1, 0, 0, 0, 9, 5]);
});

test('LINK refuses no peers, other carried types, nesting and truncation', () => {
  assert.throws(() => encode({ type: MsgType.LINK, peers: [], message: update }), RangeError);
  assert.throws(() => encode({ type: MsgType.LINK, peers: [1], message: { type: MsgType.MEMBER_LEFT, id: 1 } }), TypeError);
  const noPeers = Uint8Array.of(1, 12, 0, 0, ...encode(ack).subarray(1));
  assert.equal(/** @type {ProtocolError} */ (decode(noPeers)).code, 'BAD_VALUE');
  const carriesLeft = Uint8Array.of(1, 12, 0, 1, 0, 0, 0, 9, 4, 0, 0, 0, 1);
  assert.equal(/** @type {ProtocolError} */ (decode(carriesLeft)).code, 'BAD_VALUE');
  const nested = Uint8Array.of(1, 12, 0, 1, 0, 0, 0, 9, 8, 0, 0);
  assert.equal(/** @type {ProtocolError} */ (decode(nested)).code, 'NESTED_BATCH');
  const full = encode({ type: MsgType.LINK, peers: [9], message: ack });
  for (let n = 2; n < full.length; n++) assert.ok(decode(full.subarray(0, n)) instanceof ProtocolError, `cut at ${n}`);
  assert.ok(decode(Uint8Array.of(...full, 0)) instanceof ProtocolError, 'trailing byte');
});
