import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CarClient } from './client.js';

/** A transport that delivers a scripted frame's messages synchronously, as a real one does. */
function scriptedTransport(script) {
  const sent = [];
  return {
    sent,
    transport: {
      name: 'scripted',
      connect(_join, h) { return Promise.resolve(script(h)); },
      sendUpdate: (u) => sent.push(u),
      sendAck: (sender, seq, acker) => sent.push({ ack: [sender, seq, acker] }),
      channelInfo: () => null,
      close() {},
    },
  };
}

const pose = () => /** @type {any} */ ([0, 0, 0, 0, 0, 0, 1]);

test('a MEMBER_LEFT batched right behind the WELCOME removes the member it names', async () => {
  const { transport } = scriptedTransport((h) => {
    const welcome = { type: 2, clientId: 3, serverTime: 0, members: [{ id: 1, name: 'a' }, { id: 2, name: 'b' }, { id: 3, name: 'me' }] };
    h.onWelcome(welcome);
    h.onMemberLeft(2);
    return welcome;
  });
  const c = new CarClient({ transport, group: 'g', name: 'me', pose });
  await c.connect();
  assert.deepEqual([...c.members.keys()], [1]);
});

test('every received update is ACKed, stale ones too; only the newest is applied; object LWW', async () => {
  const t = scriptedTransport(() => ({ type: 2, clientId: 9, serverTime: 0, members: [{ id: 1, name: 'a' }, { id: 9, name: 'me' }] }));
  const c = new CarClient({ transport: t.transport, group: 'g', name: 'me', pose });
  await c.connect();
  const up = (seq, object = null) => ({ type: 5, sender: 1, seq, sendTime: 0, pose: [seq, 0, 0, 0, 0, 0, 1], object });
  c.receiveUpdate(/** @type {any} */ (up(2, { pose: [5, 0, 0, 0, 0, 0, 1], version: 4 })), 10);
  c.receiveUpdate(/** @type {any} */ (up(1, { pose: [9, 9, 9, 0, 0, 0, 1], version: 9 })), 11);
  assert.deepEqual(t.sent.map((s) => s.ack), [[1, 2, 9], [1, 1, 9]]);
  assert.equal(c.members.get(1).pose[0], 2, 'the older update is not applied');
  assert.equal(c.object.version, 4, 'nor is its object');
  c.moveObject(/** @type {any} */ ([1, 0, 0, 0, 0, 0, 1]));
  assert.equal(c.object.version, 5);
  c.mergeObject(/** @type {any} */ ({ pose: [2, 0, 0, 0, 0, 0, 1], version: 5 }), 1);
  assert.equal(c.object.owner, 9, 'a tie on version goes to the larger client id');
  c.mergeObject(/** @type {any} */ ({ pose: [2, 0, 0, 0, 0, 0, 1], version: 6 }), 1);
  assert.equal(c.object.owner, 1);
});
