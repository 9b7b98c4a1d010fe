import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CarClient, parseCycleMode } from './client.js';

/** @typedef {import('./client.js').TransportHandlers} TransportHandlers */
/** @typedef {import('./protocol.js').WelcomeMsg} WelcomeMsg */

/**
 * A transport that delivers a scripted frame's messages synchronously, as a real one does.
 *
 * @param {(h: TransportHandlers) => WelcomeMsg} script
 */
function scriptedTransport(script) {
  /** @type {(Partial<import('./protocol.js').UpdateMsg> & { ack?: number[] })[]} */
  const sent = [];
  /** @type {import('./client.js').Transport} */
  const transport = {
    name: 'scripted',
    connect(_join, h) { return Promise.resolve(script(h)); },
    sendUpdate: (u) => { sent.push(u); },
    sendAck: (sender, seq, acker) => { sent.push({ ack: [sender, seq, acker] }); },
    channelInfo: () => null,
    close() {},
  };
  return { sent, transport };
}

/** @typedef {import('./protocol.js').Pose} Pose */

const pose = () => /** @type {Pose} */ ([0, 0, 0, 0, 0, 0, 1]);

test('a MEMBER_LEFT batched right behind the WELCOME removes the member it names', async () => {
  const { transport } = scriptedTransport((h) => {
    /** @type {WelcomeMsg} */
    const welcome = { type: 2, clientId: 3, serverTime: 0, members: [{ id: 1, name: 'a' }, { id: 2, name: 'b' }, { id: 3, name: 'me' }] };
    h.onWelcome?.(welcome);
    h.onMemberLeft(2);
    return welcome;
  });
  const c = new CarClient({ transport, group: 'g', name: 'me', pose });
  await c.connect();
  assert.deepEqual([...c.members.keys()], [1]);
});

test('every received update is ACKed, stale ones too; only the newest pose is applied; the legacy object is last writer wins in any order', async () => {
  const t = scriptedTransport(() => /** @type {WelcomeMsg} */ ({ type: 2, clientId: 9, serverTime: 0, members: [{ id: 1, name: 'a' }, { id: 9, name: 'me' }] }));
  const c = new CarClient({ transport: t.transport, group: 'g', name: 'me', pose });
  await c.connect();
  /**
   * @param {number} seq
   * @param {{ pose: Pose, version: number } | null} [object]
   * @param {number} [sender]
   * @returns {import('./protocol.js').UpdateMsg}
   */
  const up = (seq, object = null, sender = 1) => ({ type: 5, sender, seq, sendTime: 0, pose: [seq, 0, 0, 0, 0, 0, 1], object });
  c.receiveUpdate(up(2, { pose: [5, 0, 0, 0, 0, 0, 1], version: 4 }), 10);
  c.receiveUpdate(up(1, { pose: [9, 9, 9, 0, 0, 0, 1], version: 3 }), 11);
  assert.deepEqual(t.sent.map((s) => s.ack), [[1, 2, 9], [1, 1, 9]]);
  assert.equal(c.members.get(1)?.pose?.[0], 2, 'the older update\'s pose is not applied');
  assert.equal(c.object.version, 4, 'its older object loses on version, not on arrival order');
  c.receiveUpdate(up(1, { pose: [7, 0, 0, 0, 0, 0, 1], version: 6 }, 2), 12);
  assert.equal(c.object.version, 6, 'a late update carrying a newer object still counts (last writer wins)');
  c.moveObject([1, 0, 0, 0, 0, 0, 1]);
  assert.equal(c.object.version, 7);
  assert.equal(c.object.owner, 9);
  c.mergeLegacyObject({ pose: [2, 0, 0, 0, 0, 0, 1], version: 7 }, 1);
  assert.equal(c.object.owner, 9, 'a tie on version goes to the larger client id');
  c.mergeLegacyObject({ pose: [2, 0, 0, 0, 0, 0, 1], version: 8 }, 1);
  assert.equal(c.object.owner, 1);
});

test('pipelined client: a late or reordered update is ACKed but not applied and not fresh; ages mark a stale neighbour', async () => {
  let clock = 0;
  const t = scriptedTransport(() => /** @type {WelcomeMsg} */ ({ type: 2, clientId: 9, serverTime: 0, members: [{ id: 1, name: 'a' }, { id: 2, name: 'b' }, { id: 9, name: 'me' }] }));
  const c = new CarClient({ transport: t.transport, group: 'g', name: 'me', pose, cycleMode: 'pipelined', now: () => clock });
  assert.equal(c.cycle.mode, 'pipelined');
  await c.connect();
  /** @param {number} sender @param {number} seq @returns {import('./protocol.js').UpdateMsg} */
  const up = (sender, seq) => ({ type: 5, sender, seq, sendTime: 0, pose: [seq, 0, 0, 0, 0, 0, 1], object: null });
  c.receiveUpdate(up(1, 1), 100);
  c.receiveUpdate(up(1, 3), 267);
  c.receiveUpdate(up(1, 2), 300); // overtaken on an unordered channel: stale
  c.receiveUpdate(up(1, 4), 434);
  assert.equal(t.sent.filter((s) => s.ack).length, 4, 'every update ACKed, the stale one too');
  assert.equal(c.members.get(1)?.seq, 4);
  clock = 1000;
  const fresh = /** @type {import('./metrics.js').FreshRecord} */ (c.stats().recv[1].fresh);
  assert.equal(fresh.n, 3);
  assert.deepEqual(fresh.gaps, { 167: 2, 566: 1 }, 'never started: from the first update, the open gap until now');
  let ages = c.freshnessAges();
  assert.deepEqual(ages.get(1), { ageMs: 566, stale: false });
  assert.deepEqual(ages.get(2), { ageMs: null, stale: false }, 'nothing yet is not a freeze');
  clock = 1500;
  ages = c.freshnessAges();
  assert.deepEqual(ages.get(1), { ageMs: 1066, stale: true });
  const stats = c.stats();
  assert.equal(stats.cycleMode, 'pipelined');
  assert.equal(stats.freshness.updatesPerStreamPerS, (1000 * 3) / 1400, 'stream 1: 3 fresh updates from 100 to now (1500)');
  c.start(0); // the window starts at our cycle's start (no warm-up): counts start over
  c.receiveUpdate(up(1, 5), 1600);
  clock = 2000;
  c.stop();
  clock = 9000; // stats taken later: the window ended at stop()
  assert.deepEqual(c.stats().recv[1].fresh, { n: 1, spanMs: 500, frozenMs: 100, maxGapMs: 1166, gaps: { 1170: 1, 400: 1 } });
  assert.deepEqual([parseCycleMode('Gated'), parseCycleMode('pipelined'), parseCycleMode('167'), parseCycleMode(null)], ['gated', 'pipelined', null, null]);
});
