// Resuming a session (capability RESUME): a member that comes back on a new
// connection with its secret keeps its id and its place, and its group sees
// nothing; a wrong or used secret gets nothing.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import http from 'node:http';
import WebSocket from 'ws';

import { CloseCode, HelloFlag, MsgType, decode, encode, unbatch } from '../core/protocol.js';
import { createRelay } from './index.js';

/** @type {(() => Promise<void>)[]} */
const cleanups = [];
after(async () => { for (const c of cleanups.reverse()) await c(); });

const FLAGS = HelloFlag.BATCHED | HelloFlag.SUPERSEDED_MARKS | HelloFlag.RESUME;

/** @param {Partial<import('./index.js').RelayOptions>} [options] */
async function startRelay(options = {}) {
  const server = http.createServer();
  const relay = createRelay({ server, ...options });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanups.push(async () => { await relay.close(); server.close(); });
  return { relay, url: `ws://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (server.address()).port}/relay` };
}

/** @param {() => boolean} done */
async function until(done, ms = 2000) {
  const end = Date.now() + ms;
  while (!done()) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/**
 * A connection that sends one HELLO and records everything it gets.
 * @param {string} url @param {Partial<import('../core/protocol.js').HelloMsg>} hello
 */
async function connect(url, hello) {
  const ws = new WebSocket(url);
  /** @type {any[]} */
  const got = [];
  /** @type {{ code: number } | null} */
  const closed = { code: 0 };
  ws.on('message', (data) => {
    const m = decode(/** @type {Buffer} */ (data));
    if (!(m instanceof Error)) got.push(...unbatch(m));
  });
  ws.on('close', (code, reason) => { closed.code = code; /** @type {any} */ (closed).reason = String(reason); });
  await once(ws, 'open');
  ws.send(encode({ type: MsgType.HELLO, flags: FLAGS, clientId: 0, group: 'g', name: 'n', token: '', ...hello }));
  cleanups.push(async () => ws.terminate());
  return { ws, got, closed, welcome: () => got.find((m) => m.type === MsgType.WELCOME) };
}

test('a member resumes on a new connection: same id, a new secret, and its group sees nothing', async () => {
  const { relay, url } = await startRelay();
  const a = await connect(url, { name: 'a' });
  const b = await connect(url, { name: 'b' });
  await until(() => Boolean(a.welcome() && b.welcome()));
  const { clientId: bId, resume: secret } = b.welcome();
  assert.equal(typeof secret, 'string');
  assert.ok(secret.length >= 20);
  await until(() => a.got.some((m) => m.type === MsgType.MEMBER_JOINED));

  const b2 = await connect(url, { name: 'b', clientId: bId, resume: secret });
  await until(() => Boolean(b2.welcome()));
  assert.equal(b2.welcome().clientId, bId);
  assert.notEqual(b2.welcome().resume, secret, 'every WELCOME gives a new secret');
  assert.deepEqual(b2.welcome().members.map((/** @type {{ id: number }} */ m) => m.id).sort(), [a.welcome().clientId, bId].sort());
  await until(() => b.closed.code !== 0);
  assert.equal(b.closed.code, 1006, 'the old connection is terminated');

  // The group saw nothing, and updates flow to the new connection.
  a.ws.send(encode({ type: MsgType.UPDATE, sender: a.welcome().clientId, seq: 1, sendTime: 0, pose: [0, 0, 0, 0, 0, 0, 1], object: null }));
  await until(() => b2.got.some((m) => m.type === MsgType.UPDATE));
  b2.ws.send(encode({ type: MsgType.ACK, sender: a.welcome().clientId, seq: 1, acker: bId }));
  await until(() => a.got.some((m) => m.type === MsgType.ACKED_ALL));
  assert.deepEqual(a.got.filter((m) => m.type === MsgType.MEMBER_LEFT || m.type === MsgType.MEMBER_JOINED).map((m) => m.type), [MsgType.MEMBER_JOINED]);
  assert.equal(relay.metrics().resumed, 1);
  assert.equal(relay.metrics().clients, 2);
});

test('a wrong secret, or one a resume already replaced, takes nothing over: the id is taken (4007)', async () => {
  const { relay, url } = await startRelay();
  const b = await connect(url, { name: 'b' });
  await until(() => Boolean(b.welcome()));
  const { clientId, resume: secret } = b.welcome();
  const wrong = await connect(url, { clientId, resume: `${secret}x` });
  await until(() => wrong.closed.code !== 0);
  assert.equal(wrong.closed.code, CloseCode.ID_TAKEN);
  const b2 = await connect(url, { clientId, resume: secret });
  await until(() => Boolean(b2.welcome()));
  const replay = await connect(url, { clientId, resume: secret });
  await until(() => replay.closed.code !== 0);
  assert.equal(replay.closed.code, CloseCode.ID_TAKEN);
  assert.equal(relay.metrics().resumed, 1);
  assert.equal(b2.ws.readyState, WebSocket.OPEN);
});

test('once the old session is gone, a resuming HELLO joins again with its id', async () => {
  const { relay, url } = await startRelay();
  const a = await connect(url, { name: 'a' });
  const b = await connect(url, { name: 'b' });
  await until(() => Boolean(a.welcome() && b.welcome()));
  const { clientId, resume } = b.welcome();
  b.ws.close();
  await until(() => a.got.some((m) => m.type === MsgType.MEMBER_LEFT));
  const back = await connect(url, { name: 'b', clientId, resume });
  await until(() => Boolean(back.welcome()));
  assert.equal(back.welcome().clientId, clientId);
  await until(() => a.got.filter((m) => m.type === MsgType.MEMBER_JOINED).length === 2);
  assert.equal(relay.metrics().resumed, 0);
});

test('HELLO and WELCOME carry the secret only with RESUME; other trailing bytes stay an error', () => {
  const hello = { type: MsgType.HELLO, flags: HelloFlag.RESUME, clientId: 9, group: 'g', name: 'n', token: 't', resume: 'secret' };
  assert.deepEqual(decode(encode(hello)), { ...hello, body: /** @type {any} */ (decode(encode(hello))).body });
  const plain = encode({ ...hello, flags: 0, resume: undefined });
  const trailing = Uint8Array.from([...plain, 1, 65]);
  assert.equal(/** @type {any} */ (decode(trailing)).code, 'TRAILING_BYTES');
  assert.throws(() => encode({ ...hello, flags: 0 }), RangeError);
  const welcome = { type: MsgType.WELCOME, clientId: 9, serverTime: 1, members: [{ id: 9, name: 'n' }], capabilities: HelloFlag.RESUME, resume: 'abc' };
  const back = /** @type {any} */ (decode(encode(welcome)));
  assert.equal(back.resume, 'abc');
  assert.equal(back.capabilities, HelloFlag.RESUME);
  assert.throws(() => encode({ ...welcome, resume: undefined }), RangeError);
});

test('a resume makes good what the old connection swallowed: unanswered copies are written again, the member\'s replays dropped', async () => {
  const { relay, url } = await startRelay();
  const a = await connect(url, { name: 'a' });
  const b = await connect(url, { name: 'b' });
  await until(() => Boolean(a.welcome() && b.welcome()) && a.got.some((m) => m.type === MsgType.MEMBER_JOINED));
  const aId = a.welcome().clientId;
  const { clientId: bId, resume: secret } = b.welcome();
  const pose = /** @type {import('../core/protocol.js').Pose} */ ([0, 0, 0, 0, 0, 0, 1]);
  const update = (/** @type {number} */ sender, /** @type {number} */ seq) => encode({ type: MsgType.UPDATE, sender, seq, sendTime: seq, pose, object: null });
  // a's 1 and 2 reach b, which ACKs 1 only (its ACK of 2 is what the dead path swallows); b's 1 and 2 reach a
  a.ws.send(update(aId, 1));
  a.ws.send(update(aId, 2));
  b.ws.send(update(bId, 1));
  b.ws.send(update(bId, 2));
  await until(() => b.got.filter((m) => m.type === MsgType.UPDATE).length === 2 && a.got.filter((m) => m.type === MsgType.UPDATE).length === 2);
  b.ws.send(encode({ type: MsgType.ACK, sender: aId, seq: 1, acker: bId }));
  await until(() => a.got.some((m) => m.type === MsgType.ACKED_ALL && m.seq === 1));

  const b2 = await connect(url, { name: 'b', clientId: bId, resume: secret });
  await until(() => Boolean(b2.welcome()));
  assert.equal(b2.welcome().capabilities, FLAGS & 0xf8 | 128, 'the WELCOME says the session was resumed (RESUMED, 128)');
  await until(() => b2.got.some((m) => m.type === MsgType.UPDATE));
  assert.deepEqual(b2.got.filter((m) => m.type === MsgType.UPDATE).map((m) => [m.sender, m.seq]), [[aId, 2]], 'the unanswered copy, once');
  // b sends its recent updates again and a new one: only the new one reaches a
  for (const seq of [1, 2, 3]) b2.ws.send(update(bId, seq));
  await until(() => a.got.filter((m) => m.type === MsgType.UPDATE).length >= 3);
  await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(a.got.filter((m) => m.type === MsgType.UPDATE).map((m) => m.seq), [1, 2, 3]);
  assert.equal(relay.stats.replayed, 1);
  assert.equal(relay.stats.replaysDropped, 2);
  assert.ok(!a.got.some((m) => m.type === MsgType.MEMBER_LEFT), 'the group saw nothing');
});

test('a member that lagged before it resumed gets what it was handed meanwhile, though nobody waited on it', async () => {
  const { relay, url } = await startRelay({ slowAckMs: 200 });
  const a = await connect(url, { name: 'a' });
  const b = await connect(url, { name: 'b' });
  await until(() => Boolean(a.welcome() && b.welcome()) && a.got.some((m) => m.type === MsgType.MEMBER_JOINED));
  const aId = a.welcome().clientId;
  const { clientId: bId, resume: secret } = b.welcome();
  const pose = /** @type {import('../core/protocol.js').Pose} */ ([0, 0, 0, 0, 0, 0, 1]);
  const update = (/** @type {number} */ seq) => encode({ type: MsgType.UPDATE, sender: aId, seq, sendTime: seq, pose, object: null });
  // b's path is dead: it ACKs nothing; after 200 ms it is lagging, and a's updates go on without waiting for it
  a.ws.send(update(1));
  await until(() => relay.stats.slowConsumers === 1);
  for (const seq of [2, 3]) a.ws.send(update(seq));
  await until(() => a.got.filter((m) => m.type === MsgType.ACKED_ALL).length === 3, 3000);
  const b2 = await connect(url, { name: 'b', clientId: bId, resume: secret });
  await until(() => b2.got.filter((m) => m.type === MsgType.UPDATE).length === 3);
  assert.deepEqual(b2.got.filter((m) => m.type === MsgType.UPDATE).map((m) => m.seq), [1, 2, 3], 'in order, each once');
  assert.equal(relay.stats.replayed, 3);
  assert.equal(relay.stats.replayOverflow, 0);
});
