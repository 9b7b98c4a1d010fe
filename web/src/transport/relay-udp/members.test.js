// relay-udp's view of the group alone: events before WELCOME, live or not,
// and the WELCOME the core starts with.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MsgType } from '../../../../core/protocol.js';
import { UdpMembers } from './members.js';

function setup() {
  const members = new UdpMembers();
  /** @type {string[]} */
  const calls = [];
  members.handlers = {
    onUpdate: () => {}, onAck: () => {}, onAckedAll: () => {}, onClose: () => {},
    onMemberJoined: (m) => calls.push(`joined ${m.id} ${m.name}`),
    onMemberLeft: (id) => calls.push(`left ${id}`),
  };
  return { members, calls };
}

/** @param {number} clientId @param {{ id: number, name: string }[]} list */
const welcome = (clientId, list) => ({ type: /** @type {2} */ (MsgType.WELCOME), clientId, serverTime: 0, members: list });

test('events before the WELCOME wait for it; we are never our own member', () => {
  const { members, calls } = setup();
  members.announced(7, 'g');
  members.departed(3);
  members.announced(5, 'me');
  assert.equal(members.members.size, 0);
  members.welcome(welcome(5, [{ id: 5, name: 'me' }, { id: 3, name: 'c' }]));
  assert.deepEqual([...members.members], [[7, 'g']]);
  assert.deepEqual(calls, [], 'not live: the core is not told');
});

test('live: the core hears of joins and leaves; goDown says everyone left', () => {
  const { members, calls } = setup();
  members.welcome(welcome(5, [{ id: 5, name: 'me' }, { id: 3, name: 'c' }]));
  members.goLive(true);
  members.announced(7, 'g');
  members.announced(7, 'g');
  members.departed(8);
  members.departed(3);
  members.goDown();
  assert.deepEqual(calls, ['joined 3 c', 'joined 7 g', 'left 3', 'left 7']);
  assert.equal(members.live, false);
  members.goLive(false);
  assert.equal(calls.length, 4, 'goLive(false) announces nobody');
});

test('the WELCOME for the core lists the members then us', () => {
  const { members } = setup();
  const w = welcome(5, [{ id: 3, name: 'c' }, { id: 5, name: 'me' }]);
  members.welcome(w);
  members.announced(7, 'g');
  assert.deepEqual(members.welcomeForCore(w), { ...w, members: [{ id: 3, name: 'c' }, { id: 7, name: 'g' }, { id: 5, name: 'me' }] });
  const nameless = setup().members;
  nameless.welcome(welcome(9, []));
  assert.deepEqual(nameless.welcomeForCore(welcome(9, [])).members, [{ id: 9, name: '' }]);
});
