// The relay connection alone, over a hand-driven fake WebSocket: the join, a
// close before WELCOME, rejoining with the same id, final closes, and close()
// between two attempts.
import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { CloseCode, HelloFlag, MoreFlag, MsgType, WelcomeFlag, unbatch } from '../../../core/protocol.js';
import { RelayConnection } from './relay-connection.js';
import { fakeWebSocketClass, settle } from './relay-fakes.js';

/** Every test's connections: closed after it, so that none goes on rejoining (each attempt times out and tries again). @type {RelayConnection[]} */
const made = [];
afterEach(() => { for (const c of made.splice(0)) c.close(); });

/** @param {import('./relay-reconnect.js').ReconnectOptions | boolean} [reconnect] @param {number} [rejoinTimeoutMs] */
function setup(reconnect, rejoinTimeoutMs) {
  const fake = fakeWebSocketClass();
  const connection = new RelayConnection({
    url: 'ws://relay', batched: true, WebSocket: fake.WebSocket, now: () => 7, reconnect, rejoinTimeoutMs,
  });
  made.push(connection);
  /** @type {string[]} */
  const events = [];
  /** @type {import('../../../core/client.js').TransportHandlers} */
  const handlers = {
    onUpdate: (m, at) => events.push(`update ${m.seq} @${at}`),
    onAck: () => events.push('ack'),
    onAckedAll: () => events.push('ackedAll'),
    onMemberJoined: (m) => events.push(`joined ${m.id}`),
    onMemberLeft: (id) => events.push(`left ${id}`),
    onClose: (code, reason) => events.push(`close ${code} ${reason}`),
    onWelcome: (m) => events.push(`welcome ${m.clientId}`),
    onReconnecting: (i) => events.push(`reconnecting ${i.code}`),
    onReconnected: (m) => events.push(`reconnected ${m.clientId}`),
    onConnectionStatus: (s) => events.push(`status ${s.state}${s.attempt ? ` ${s.attempt}` : ''}`),
  };
  return { fake, connection, events, handlers };
}

/** @param {number} clientId */
const welcome = (clientId) => ({ type: MsgType.WELCOME, clientId, serverTime: 0, members: [] });

/**
 * An UPDATE of `sender`.
 * @param {number} sender @param {number} seq
 * @returns {import('../../../core/protocol.js').UpdateMsg}
 */
const updateOf = (sender, seq) => ({ type: MsgType.UPDATE, sender, seq, sendTime: seq, pose: [0, 0, 0, 0, 0, 0, 1], object: null });

/** @param {import('./relay-fakes.js').FakeWebSocket} ws */
function hello(ws) {
  const [m] = ws.messages();
  assert.ok(!(m instanceof Error) && m.type === MsgType.HELLO);
  const { body: _body, ...fields } = /** @type {typeof m & { body?: Uint8Array }} */ (m); // decode adds the bytes
  return fields;
}

test('joins with a HELLO on open and resolves on WELCOME', async () => {
  const { fake, connection, events, handlers } = setup();
  const joined = connection.connect({ group: 'g', name: 'n', token: 't' }, handlers);
  const [ws] = fake.instances;
  assert.equal(ws.url, 'ws://relay/?g=g', 'the URL carries the group');
  ws.open();
  assert.deepEqual(hello(ws), { type: MsgType.HELLO, flags: HelloFlag.BATCHED | HelloFlag.SUPERSEDED_MARKS | HelloFlag.RESUME | HelloFlag.MORE, clientId: 0, group: 'g', name: 'n', token: 't', more: MoreFlag.KEPT_SCENE });
  /** @type {any} */
  const update = { type: MsgType.UPDATE, sender: 2, seq: 1, sendTime: 0, pose: [0, 0, 0, 0, 0, 0, 1], object: null };
  ws.receive({ type: MsgType.BATCH, messages: [welcome(5), update] });
  assert.equal((await joined).clientId, 5);
  assert.equal(connection.myId, 5);
  assert.deepEqual(events, ['welcome 5', 'status connected', 'update 1 @7']);
});

test('a close before WELCOME rejects connect() with the code, and is final', async () => {
  const { fake, connection, events, handlers } = setup({ random: () => 0 });
  const joined = connection.connect({ group: 'g', name: 'n' }, handlers);
  fake.instances[0].drop(1006, 'gone');
  await assert.rejects(joined, (/** @type {any} */ err) => err.code === 1006 && /before WELCOME: 1006 gone/.test(err.message));
  assert.deepEqual(events, ['close 1006 gone']);
  await settle();
  assert.equal(fake.instances.length, 1, 'no retry for the first join');
});

test('a garbage frame closes the socket with the codec close code', () => {
  const { fake, connection, handlers } = setup();
  connection.connect({ group: 'g', name: 'n' }, handlers).catch(() => {});
  const [ws] = fake.instances;
  ws.open();
  ws.receiveRaw(new Uint8Array([99, 1]).buffer);
  assert.equal(ws.closedWith?.code, CloseCode.BAD_VERSION);
});

test('after the relay went away it rejoins with the same id, then reports the rejoin', async () => {
  const { fake, connection, events, handlers } = setup({ random: () => 0 });
  const joined = connection.connect({ group: 'g', name: 'n' }, handlers);
  fake.instances[0].open();
  fake.instances[0].receive(welcome(5));
  await joined;
  fake.instances[0].drop(1001, 'restart');
  assert.equal(connection.retryTimer !== null, true, 'waiting before the attempt');
  await settle();
  assert.equal(fake.instances.length, 2);
  const ws = fake.instances[1];
  ws.open();
  assert.equal(hello(ws).clientId, 5, 'asks for its old id');
  ws.receive(welcome(5));
  assert.deepEqual(events.slice(2), ['reconnecting 1001', 'status reconnecting 1', 'reconnected 5', 'status connected']);
  assert.deepEqual(connection.counters, { reconnects: 1, attempts: 1, lastCloseCode: 1001 });
});

test('a rejoin resumes its session with the secret of its last WELCOME, and keeps the new one', async () => {
  const { fake, connection, handlers } = setup({ random: () => 0 });
  const joined = connection.connect({ group: 'g', name: 'n' }, handlers);
  fake.instances[0].open();
  assert.equal(hello(fake.instances[0]).resume, undefined, 'a first join has nothing to resume');
  fake.instances[0].receive({ ...welcome(5), capabilities: HelloFlag.SUPERSEDED_MARKS | HelloFlag.RESUME, resume: 'first-secret' });
  await joined;
  fake.instances[0].drop(1006, '');
  await settle();
  const ws = fake.instances[1];
  ws.open();
  assert.deepEqual([hello(ws).clientId, hello(ws).resume, (hello(ws).flags & HelloFlag.RESUME) !== 0], [5, 'first-secret', true]);
  ws.receive({ ...welcome(5), capabilities: HelloFlag.RESUME, resume: 'second-secret' });
  assert.equal(connection.resumeSecret, 'second-secret');
  // A relay that gave no secret (one that predates RESUME): the next rejoin sends none.
  ws.drop(1006, '');
  await settle();
  fake.instances[2].open();
  fake.instances[2].receive(welcome(5));
  assert.equal(connection.resumeSecret, '');
});

test('a rejoin that is never answered is given up after its timeout and tried again; a welcomed one keeps its socket', async (t) => {
  // On the test's own clock: with real timers a loaded machine ran the 30 ms timeout (and the
  // next attempt) between any two of the test's steps, so no count or socket was known for sure.
  t.mock.timers.enable({ apis: ['setTimeout'] });
  /** Lets the fake's close event (a microtask) arrive. */
  const closeEvents = async () => { for (let i = 0; i < 5; i++) await Promise.resolve(); };
  const { fake, connection, events, handlers } = setup({ random: () => 0 }, 30);
  const joined = connection.connect({ group: 'g', name: 'n' }, handlers);
  fake.instances[0].open();
  fake.instances[0].receive(welcome(5));
  await joined;
  t.mock.timers.tick(60);
  assert.equal(fake.instances[0].closedWith, null, 'the first join is not timed out once welcomed');
  fake.instances[0].drop(1006, 'worker died');
  t.mock.timers.tick(1); // the backoff: 0 ms with random() = 0
  assert.equal(fake.instances.length, 2, 'a rejoin is attempted');
  // accepted and then silent (a server process that died holding the connection): closed, and another made
  fake.instances[1].open();
  t.mock.timers.tick(29);
  assert.equal(fake.instances[1].closedWith, null, 'not before its timeout');
  t.mock.timers.tick(1);
  assert.notEqual(fake.instances[1].closedWith, null, 'the silent attempt was closed at its timeout');
  await closeEvents();
  t.mock.timers.tick(1);
  assert.equal(fake.instances.length, 3, 'and another attempt made');
  const ws = fake.instances[2];
  ws.open();
  ws.receive(welcome(5));
  t.mock.timers.tick(60);
  await closeEvents();
  assert.equal(ws.closedWith, null, 'a welcomed rejoin keeps its socket');
  assert.equal(fake.instances.length, 3, 'and no attempt follows it');
  assert.deepEqual(connection.counters, { reconnects: 1, attempts: 2, lastCloseCode: 1005 });
  assert.equal(events.at(-1), 'status connected');
});

test('policy closes, and closes without the option, are reported at once', async () => {
  for (const [reconnect, code] of /** @type {const} */ ([[{ random: () => 0 }, CloseCode.RATE_LIMITED], [false, 1001]])) {
    const { fake, connection, events, handlers } = setup(reconnect);
    const joined = connection.connect({ group: 'g', name: 'n' }, handlers);
    fake.instances[0].open();
    fake.instances[0].receive(welcome(5));
    await joined;
    fake.instances[0].drop(code, 'x');
    await settle();
    assert.deepEqual(events.slice(2), [`close ${code} x`]);
    assert.equal(fake.instances.length, 1);
  }
});

test('close() sends what is queued and says bye; between attempts it reports the close itself', async () => {
  const { fake, connection, events, handlers } = setup({ baseMs: 60000, random: () => 0.5 });
  const joined = connection.connect({ group: 'g', name: 'n' }, handlers);
  const ws = fake.instances[0];
  ws.open();
  ws.receive(welcome(5));
  await joined;
  connection.outbox.send({ type: MsgType.ACK, sender: 1, seq: 1, acker: 5 });
  connection.close();
  assert.equal(ws.sent.length, 2, 'HELLO, then the queued ACK');
  assert.deepEqual(ws.closedWith, { code: 1000, reason: 'bye' });
  await settle();
  assert.equal(events.at(-1), 'close 1000 bye', 'our own close is final');

  const other = setup({ baseMs: 60000, random: () => 0.5 });
  const joined2 = other.connection.connect({ group: 'g', name: 'n' }, other.handlers);
  other.fake.instances[0].open();
  other.fake.instances[0].receive(welcome(6));
  await joined2;
  other.fake.instances[0].drop(1006);
  assert.notEqual(other.connection.retryTimer, null);
  other.connection.close();
  assert.equal(other.connection.retryTimer, null);
  assert.equal(other.events.at(-1), 'close 1000 closed while reconnecting');
  assert.equal(other.fake.instances.length, 1);
});

test('with several relay URLs, a rejoin moves on to the next one (failover), round and round', async () => {
  const fake = fakeWebSocketClass();
  const connection = new RelayConnection({
    url: ['ws://home/relay', 'ws://other/relay'], batched: true, WebSocket: fake.WebSocket, now: () => 0, reconnect: { random: () => 0 },
  });
  const { handlers } = setup();
  const joined = connection.connect({ group: 'g', name: 'n' }, handlers);
  assert.equal(fake.instances[0].url, 'ws://home/relay?g=g', 'the first join goes home');
  fake.instances[0].open();
  fake.instances[0].receive(welcome(5));
  await joined;
  fake.instances[0].drop(1006, 'killed');
  await settle();
  assert.equal(fake.instances[1].url, 'ws://other/relay?g=g', 'the rejoin goes to the next relay, with the group');
  fake.instances[1].drop(1006, 'refused');
  await settle();
  await settle();
  assert.equal(fake.instances[2].url, 'ws://home/relay?g=g', 'and back round');
  connection.close();
});

test('the server clock: estimated from HELLO to WELCOME, the shortest round trip kept', async () => {
  const fake = fakeWebSocketClass();
  let epoch = 1_000_000;
  const connection = new RelayConnection({
    url: 'ws://relay', batched: true, WebSocket: fake.WebSocket, now: () => 7, reconnect: { random: () => 0 }, epochNow: () => epoch,
  });
  made.push(connection);
  const { handlers } = setup();
  const joined = connection.connect({ group: 'g', name: 'n' }, handlers);
  const clock = () => connection.serverClock;
  assert.equal(clock(), null, 'none before a WELCOME');
  fake.instances[0].open(); // HELLO at 1 000 000
  epoch += 80; // WELCOME 80 ms later, stamped 1 500 040 by the server
  fake.instances[0].receive({ type: MsgType.WELCOME, clientId: 5, serverTime: 1_500_040, members: [] });
  await joined;
  assert.deepEqual(clock(), { offsetMs: 1_500_040 + 40 - 1_000_080, errorMs: 40 });
  // a rejoin with a longer round trip is not kept; one with a shorter one is
  for (const [rtt, serverTime] of [[200, 2_000_000], [20, 1_700_000]]) {
    fake.instances.at(-1)?.drop(1001, 'restart');
    await settle();
    const ws = /** @type {import('./relay-fakes.js').FakeWebSocket} */ (fake.instances.at(-1));
    ws.open();
    const sentAt = epoch;
    epoch += rtt;
    ws.receive({ type: MsgType.WELCOME, clientId: 5, serverTime, members: [] });
    if (rtt === 20) assert.deepEqual(clock(), { offsetMs: serverTime + 10 - (sentAt + 20), errorMs: 10 });
    else assert.equal(clock()?.errorMs, 40);
  }
});

/**
 * A welcomed connection on a clock the test sets, recording closes and reconnections.
 * @param {Partial<import('./relay-connection.js').RelayConnectionOptions>} options
 */
async function welcomedOnClock(options) {
  const fake = fakeWebSocketClass();
  const clock = { now: 0 };
  const connection = new RelayConnection({ url: 'ws://relay', batched: true, WebSocket: fake.WebSocket, now: () => clock.now, ...options });
  made.push(connection);
  /** @type {string[]} */
  const events = [];
  const joined = connection.connect({ group: 'g', name: 'n' }, {
    onUpdate: () => {}, onAck: () => {}, onAckedAll: () => {}, onMemberJoined: () => {}, onMemberLeft: () => {},
    onClose: (code) => events.push(`close ${code}`),
    onReconnecting: (i) => events.push(`reconnecting ${i.reason}`),
  });
  fake.instances[0].open();
  fake.instances[0].receive(welcome(5));
  await joined;
  return { fake, clock, connection, events };
}

test('a welcomed connection whose UPDATEs go unanswered is given up and rejoined; so is one whose network came back', async () => {
  const network = new EventTarget();
  const { fake, clock, connection, events } = await welcomedOnClock({ reconnect: { random: () => 0 }, silenceMs: 1000, network });
  connection.sentUpdate(updateOf(5, 1));
  clock.now = 900;
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(fake.instances.length, 1, 'not yet: 900 ms without an answer');
  clock.now = 1100;
  await new Promise((r) => setTimeout(r, 300));
  assert.deepEqual(events, ['reconnecting no answer for 1000 ms']);
  assert.equal(fake.instances.length, 2, 'a new connection');
  fake.instances[1].open();
  fake.instances[1].receive(welcome(5));
  network.dispatchEvent(new Event('online'));
  await settle();
  assert.deepEqual(events, ['reconnecting no answer for 1000 ms', 'reconnecting the network changed']);
  assert.equal(fake.instances.length, 3);
});

test('without reconnection a silent connection is left alone: giving it up would only end it', async () => {
  const { fake, clock, connection, events } = await welcomedOnClock({ silenceMs: 100 });
  connection.sentUpdate(updateOf(5, 1));
  clock.now = 10_000;
  await new Promise((r) => setTimeout(r, 250));
  assert.deepEqual(events, []);
  assert.equal(fake.instances.length, 1);
});

/**
 * A member with three UPDATEs out and two of sender 7's in loses its connection and rejoins.
 * @param {number} capabilities of the rejoin's WELCOME
 */
async function rejoinAfterUpdates(capabilities) {
  const { fake, connection, events, handlers } = setup({ random: () => 0 });
  const joined = connection.connect({ group: 'g', name: 'n' }, handlers);
  fake.instances[0].open();
  fake.instances[0].receive({ type: MsgType.WELCOME, clientId: 5, serverTime: 0, members: [], capabilities: HelloFlag.RESUME, resume: 's1' });
  await joined;
  for (const seq of [1, 2, 3]) { connection.outbox.send(updateOf(5, seq)); connection.sentUpdate(updateOf(5, seq)); }
  fake.instances[0].receive({ type: MsgType.BATCH, messages: [updateOf(7, 1), updateOf(7, 2)] });
  fake.instances[0].drop(1006, '');
  await settle();
  const ws = /** @type {import('./relay-fakes.js').FakeWebSocket} */ (fake.instances[1]);
  ws.open();
  ws.receive({ type: MsgType.WELCOME, clientId: 5, serverTime: 0, members: [], capabilities, resume: 's2' });
  await settle();
  // the relay's copies: 7/1 and 7/2 had arrived (their ACKs were lost), 7/3 had not
  ws.receive({ type: MsgType.BATCH, messages: [updateOf(7, 1), updateOf(7, 2), updateOf(7, 3)] });
  const resent = ws.messages().slice(1).flatMap((m) => (m instanceof Error ? [] : unbatch(m)))
    .filter((m) => m.type === MsgType.UPDATE).map((m) => /** @type {import('../../../core/protocol.js').UpdateMsg} */ (m).seq);
  return { events: events.filter((e) => e.startsWith('update')), resent, counters: connection.replay.counters };
}

test('a resumed session makes good what the dead connection swallowed: our UPDATEs go again, copies we had are skipped', async () => {
  const r = await rejoinAfterUpdates(HelloFlag.RESUME | WelcomeFlag.RESUMED);
  assert.deepEqual(r.resent, [1, 2, 3], 'the relay drops those it had');
  assert.deepEqual(r.events, ['update 1 @7', 'update 2 @7', 'update 3 @7']);
  assert.deepEqual(r.counters, { resent: 3, skipped: 2 });
});

test('a rejoin that did not resume is a new session: nothing is sent again or skipped', async () => {
  const r = await rejoinAfterUpdates(HelloFlag.RESUME);
  assert.deepEqual(r.resent, []);
  assert.deepEqual(r.events, ['update 1 @7', 'update 2 @7', 'update 1 @7', 'update 2 @7', 'update 3 @7']);
  assert.deepEqual(r.counters, { resent: 0, skipped: 0 });
});
