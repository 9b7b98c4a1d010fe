// The relay socket's parts alone: the HELLO, taking frames from either kind
// of WebSocket, and which handler each message goes to.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HelloFlag, MoreFlag, MsgType } from '../../../core/protocol.js';
import { dispatchRelayMessage, helloMessage, listenForFrames, relayUrlForGroup } from './relay-socket.js';
import { FakeWebSocket } from './relay-fakes.js';

const join = { group: 'g', name: 'n' };

test('HELLO: flags by mode, token default empty', () => {
  assert.deepEqual(helloMessage({ batched: true }, join, 0),
    { type: MsgType.HELLO, flags: HelloFlag.BATCHED | HelloFlag.SUPERSEDED_MARKS | HelloFlag.RESUME | HelloFlag.MORE, clientId: 0, group: 'g', name: 'n', token: '', more: MoreFlag.KEPT_SCENE });
  assert.equal(helloMessage({ batched: false, membershipOnly: true }, join, 0).flags, HelloFlag.MEMBERSHIP_ONLY | HelloFlag.REACHABILITY | HelloFlag.PEER_SIGNAL | HelloFlag.RESUME | HelloFlag.MORE);
  assert.equal(helloMessage({ batched: true, extraFlags: HelloFlag.UDP }, join, 0).flags, HelloFlag.BATCHED | HelloFlag.SUPERSEDED_MARKS | HelloFlag.RESUME | HelloFlag.MORE | HelloFlag.UDP);
  const h = helloMessage({ batched: false }, { ...join, token: 't' }, 9);
  assert.equal(h.clientId, 9);
  assert.equal(h.token, 't');
});

test('browser WebSocket: ArrayBuffers through onmessage', () => {
  const ws = new FakeWebSocket('ws://x');
  /** @type {unknown[]} */
  const got = [];
  listenForFrames(ws, (d) => got.push(d));
  assert.equal(ws.binaryType, 'arraybuffer');
  ws.receiveRaw('frame');
  assert.deepEqual(got, ['frame']);
});

test("Node's ws: Buffers through on('message'), text as a string", () => {
  /** @type {((data: unknown, isBinary: boolean) => void) | null} */
  let listener = null;
  const ws = Object.assign(new FakeWebSocket('ws://x'), {
    on: (/** @type {string} */ event, /** @type {(data: unknown, isBinary: boolean) => void} */ fn) => {
      assert.equal(event, 'message');
      listener = fn;
    },
  });
  /** @type {unknown[]} */
  const got = [];
  listenForFrames(ws, (d) => got.push(d));
  assert.equal(ws.binaryType, 'nodebuffer');
  assert.equal(ws.onmessage, null);
  const buf = Buffer.from([1, 2]);
  /** @type {(data: unknown, isBinary: boolean) => void} */ (/** @type {unknown} */ (listener))(buf, true);
  /** @type {(data: unknown, isBinary: boolean) => void} */ (/** @type {unknown} */ (listener))(Buffer.from('hi'), false);
  assert.deepEqual(got, [buf, 'hi']);
});

test('every message type reaches its handler', () => {
  /** @type {string[]} */
  const calls = [];
  const handlers = {
    onUpdate: (/** @type {any} */ m, /** @type {number} */ at) => calls.push(`update ${m.seq} @${at}`),
    onAck: (/** @type {any} */ m) => calls.push(`ack ${m.seq}`),
    onAckedAll: (/** @type {any} */ m) => calls.push(`ackedAll ${m.seq}`),
    onMemberJoined: (/** @type {any} */ m) => calls.push(`joined ${m.id} ${m.name}`),
    onMemberLeft: (/** @type {number} */ id) => calls.push(`left ${id}`),
    onClose: () => calls.push('close'),
  };
  const sinks = {
    handlers,
    onWelcome: (/** @type {any} */ m) => calls.push(`welcome ${m.clientId}`),
    onSignal: (/** @type {any} */ m) => calls.push(`signal ${m.payload}`),
  };
  /** @type {any[]} */
  const messages = [
    { type: MsgType.WELCOME, clientId: 3, serverTime: 0, members: [] },
    { type: MsgType.UPDATE, sender: 1, seq: 5, sendTime: 0, pose: [0, 0, 0, 0, 0, 0, 1], object: null },
    { type: MsgType.ACK, sender: 3, seq: 6, acker: 1 },
    { type: MsgType.ACKED_ALL, sender: 3, seq: 7, acked: 1, dropped: 0 },
    { type: MsgType.MEMBER_JOINED, id: 4, name: 'd' },
    { type: MsgType.MEMBER_LEFT, id: 4 },
    { type: MsgType.SIGNAL, from: 0, to: 3, payload: 'p' },
    { type: MsgType.ERROR, code: 1, reason: 'ignored' },
  ];
  for (const m of messages) dispatchRelayMessage(m, 12, sinks);
  assert.deepEqual(calls, ['welcome 3', 'update 5 @12', 'ack 6', 'ackedAll 7', 'joined 4 d', 'left 4', 'signal p']);
  dispatchRelayMessage(messages[6], 0, { ...sinks, onSignal: undefined }); // no SIGNAL sink: dropped
});

test('the relay URL carries the group, URL-encoded, replacing any g it had', () => {
  assert.equal(relayUrlForGroup('ws://h:8080/relay', 'lab'), 'ws://h:8080/relay?g=lab');
  assert.equal(relayUrlForGroup('wss://h/relay?x=1&g=old', 'new'), 'wss://h/relay?x=1&g=new', 'other parameters kept');
  for (const group of ['a b', 'x&g=y', '100%', 'Bö/ü?#', 'plus+sign', '🚗', ' ']) {
    const url = new URL(relayUrlForGroup('ws://h/relay', group));
    assert.equal(url.pathname, '/relay');
    assert.match(url.search, /^\?g=[\x21-\x7e]+$/, `${group}: one parameter, printable ASCII`);
    // What the relay reads back (relay/upgrade.js groupOfRequestUrl parses it the same way).
    assert.equal(new URLSearchParams(url.search.slice(1)).get('g'), group, `${group}: round trip`);
  }
  assert.equal(relayUrlForGroup('relay', 'g'), 'relay', 'not absolute: left to the WebSocket constructor');
});
