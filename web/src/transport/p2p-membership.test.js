// The p2p transports' membership socket goes to the relay with the group in
// its URL, like the relay transport's, and joins membership-only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HelloFlag, MsgType } from '../../../core/protocol.js';
import { createMembership } from './p2p-membership.js';
import { fakeWebSocketClass } from './relay-fakes.js';

test('the membership socket carries the group in its URL and joins membership-only', async () => {
  const fake = fakeWebSocketClass();
  const membership = createMembership({ relayUrl: 'ws://h/relay', WebSocket: fake.WebSocket, now: () => 0, reconnect: false });
  const noop = () => {};
  const joined = membership.connect({ group: 'lab 2&x', name: 'n' }, {
    onUpdate: noop, onAck: noop, onAckedAll: noop, onMemberJoined: noop, onMemberLeft: noop, onClose: noop,
  });
  const [ws] = fake.instances;
  assert.equal(new URL(ws.url).searchParams.get('g'), 'lab 2&x');
  assert.equal(new URL(ws.url).pathname, '/relay');
  ws.open();
  const [hello] = ws.messages();
  assert.ok(!(hello instanceof Error) && hello.type === MsgType.HELLO);
  assert.equal(hello.flags, HelloFlag.MEMBERSHIP_ONLY | HelloFlag.REACHABILITY | HelloFlag.PEER_SIGNAL | HelloFlag.RESUME | HelloFlag.MORE);
  assert.equal(hello.group, 'lab 2&x');
  ws.receive({ type: MsgType.WELCOME, clientId: 3, serverTime: 0, members: [] });
  assert.equal((await joined).clientId, 3);
  membership.close();
});
