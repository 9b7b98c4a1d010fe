// The relay cases and their oracle (fuzz-relay-cases.js), without a server.
import test from 'node:test';
import assert from 'node:assert/strict';
import { expectRelay } from './fuzz-relay-cases.js';
import { generateCase } from './fuzz-cases.js';
import { makeWorld } from './fuzz-world.js';
import { CloseCode, HelloFlag, MsgType, encode } from '../../core/protocol.js';

test('every relay case kind is drawn, and each one the oracle can judge', () => {
  const w = makeWorld(3);
  const names = new Set();
  for (let i = 0; i < 3000; i++) {
    const c = generateCase(w, i);
    if (c.target !== 'relay') continue;
    names.add(c.name);
    const { codes } = expectRelay(c.frames, w);
    assert.ok(codes.length > 0, c.name);
  }
  for (const name of ['random-bytes', 'truncated', 'oversized', 'text-frame', 'flood', 'tolerated', 'mutated', 'udp-signal', 'wrong-token', 'nested-batch']) {
    assert.ok(names.has(name), `${name} drawn`);
  }
});

test('relay oracle: relay-udp offers past the tenth are rate-limited, a refused offer is a possibility', () => {
  const w = makeWorld(1);
  const hello = { bytes: encode({ type: MsgType.HELLO, flags: HelloFlag.UDP | HelloFlag.BATCHED, clientId: 5, group: 'g', name: 'n', token: '' }) };
  const offer = (/** @type {number} */ attempt) => ({ bytes: encode({ type: MsgType.SIGNAL, from: 5, to: 0, payload: JSON.stringify({ type: 'offer', attempt, sdp: 'v=0' }) }) });
  assert.deepEqual(expectRelay([hello, offer(1)], w), { codes: [CloseCode.BAD_VERSION, CloseCode.PROTOCOL_VIOLATION].sort(), probe: true });
  const eleven = Array.from({ length: 11 }, (_, i) => offer(i + 1));
  assert.ok(expectRelay([hello, ...eleven], w).codes.includes(CloseCode.RATE_LIMITED));
  // an UPDATE on a relay-udp connection's WebSocket is a violation
  const update = { bytes: encode({ type: MsgType.UPDATE, sender: 5, seq: 1, sendTime: 0, pose: [0, 0, 0, 0, 0, 0, 1], object: null }) };
  assert.deepEqual(expectRelay([hello, update], w), { codes: [CloseCode.PROTOCOL_VIOLATION], probe: false });
});
