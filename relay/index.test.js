import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { once } from 'node:events';
import WebSocket from 'ws';
import { createRelay } from './index.js';
import { Session } from './session.js';
import { CarClient } from '../core/client.js';
import { createRelayTransport } from '../web/src/transport/relay.js';
import { CloseCode, MsgType, VERSION, encode, decode } from '../core/protocol.js';
import { waitFor as until } from '../lab/shared/loop-stall.js';
import { socketBufferCeiling } from '../lab/shared/socket-buffers.js';

const pose = () => /** @type {any} */ ([0, 0, 0, 0, 0, 0, 1]);

/** @param {any} [relayOptions] */
async function startRelay(relayOptions = {}) {
  const server = http.createServer();
  const relay = createRelay({ server, path: '/relay', ...relayOptions });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = /** @type {any} */ (server.address());
  return {
    server, relay, url: `ws://127.0.0.1:${port}/relay`,
    async stop() { await relay.close(); server.closeAllConnections(); await new Promise((r) => server.close(r)); },
  };
}

/** A relay on a loopback server. @typedef {Awaited<ReturnType<typeof startRelay>>} RelayEnv */
/** @typedef {Awaited<ReturnType<typeof rawClient>>} RawClient */

/**
 * The receiver's stream from one sender (throws if it has none).
 * @param {CarClient} receiver @param {number} senderId
 */
function streamOf(receiver, senderId) {
  const stream = receiver.streams.get(senderId);
  if (!stream) throw new Error(`no stream from ${senderId}`);
  return stream;
}

/**
 * A member of one of the relay's groups that is a Session of this node (throws otherwise).
 * @param {import('./index.js').Relay} relay @param {string} key @param {number} id
 */
function localSession(relay, key, id) {
  const member = relay.groups.groups.get(key)?.members.get(id);
  if (!(member instanceof Session)) throw new Error(`no local session ${id} in ${key}`);
  return member;
}

/**
 * A raw protocol client: an independent implementation would look like this.
 * @param {string} url @param {string} group @param {string} name @param {number} [flags] @param {boolean} [autoAck]
 */
async function rawClient(url, group, name, flags = 1, autoAck = false) {
  const ws = new WebSocket(url);
  /** @type {any[]} */
  const inbox = [];
  /** @type {Map<number, number>} updates received per sender */
  const updatesFrom = new Map();
  let id = 0;
  ws.on('message', (data) => {
    const m = /** @type {any} */ (decode(/** @type {Buffer} */ (data)));
    const messages = m.type === MsgType.BATCH ? m.messages : [m];
    inbox.push(...messages);
    for (const u of messages) {
      if (u.type === MsgType.WELCOME) id = u.clientId;
      if (u.type === MsgType.UPDATE) updatesFrom.set(u.sender, (updatesFrom.get(u.sender) ?? 0) + 1);
      if (autoAck && u.type === MsgType.UPDATE && ws.readyState === 1) {
        ws.send(encode({ type: MsgType.ACK, sender: u.sender, seq: u.seq, acker: id }));
      }
    }
  });
  await once(ws, 'open');
  ws.send(encode({ type: MsgType.HELLO, flags, clientId: 0, group, name, token: '' }));
  await until(() => inbox.some((m) => m.type === MsgType.WELCOME));
  const welcome = inbox.find((m) => m.type === MsgType.WELCOME);
  const closed = new Promise((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: String(reason) })));
  return { ws, inbox, updatesFrom, id: welcome.clientId, closed };
}

for (const batched of [true, false]) {
  const mode = batched ? 'relay' : 'relay-faithful';
  describe(`mode ${mode}: 3 groups x 5 clients x 20 updates`, () => {
    /** @type {RelayEnv} */
    let env;
    /** @type {CarClient[]} */
    let clients = [];
    before(async () => {
      env = await startRelay();
      for (let g = 0; g < 3; g++) {
        for (let i = 0; i < 5; i++) {
          const c = new CarClient({
            transport: createRelayTransport({ url: env.url, batched, WebSocket }),
            group: `g${g}`, name: `c${g}.${i}`, cycleMs: 25, ackTimeoutMs: 5000, maxUpdates: 20, pose,
          });
          await c.connect();
          clients.push(c);
        }
      }
      await until(() => clients.every((c) => c.members.size === 4));
      env.relay.resetWindow();
      for (const c of clients) c.start();
      await until(() => clients.every((c) => c.cycle.completed === 20));
    });
    after(async () => {
      for (const c of clients) c.close();
      await env.stop();
    });

    test('every update reaches every neighbour once, in order', () => {
      for (const sender of clients) {
        assert.equal(sender.cycle.updatesSent, 20);
        for (const receiver of clients) {
          if (receiver === sender) continue;
          const stream = receiver.streams.get(sender.id);
          if (receiver.options.group !== sender.options.group) {
            assert.equal(stream, undefined, 'no update crosses groups');
            continue;
          }
          assert.equal(sender.cycle.sentTo[receiver.id], 20);
          assert.equal(streamOf(receiver, sender.id).received, 20);
          assert.equal(streamOf(receiver, sender.id).duplicates, 0);
          assert.equal(streamOf(receiver, sender.id).reorders, 0);
        }
      }
    });

    test('every sender sees completion and RT', () => {
      for (const c of clients) {
        assert.equal(c.rt.length, 20);
        assert.equal(c.cycle.ackTimeouts, 0);
        assert.ok(c.rt.every((v) => v >= 0 && v < 5000));
      }
    });

    test('relay counters and RTS match the traffic', () => {
      const m = /** @type {any} */ (env.relay.metrics());
      assert.equal(m.clients, 15);
      assert.equal(m.groups, 3);
      assert.equal(m.updatesIn, 300);
      assert.equal(m.updatesForwarded, 1200);
      assert.equal(m.acksIn, 1200);
      assert.equal(m.rts.n, 1200);
      assert.ok(m.rts.mean >= 0 && m.rts.max >= m.rts.mean);
      assert.equal(m.unexpectedAcks, 0);
      if (batched) {
        assert.equal(m.ackedAllSent, 300);
        assert.equal(m.acksForwarded, 0);
        assert.ok(m.framesOut < m.messagesOut, 'frames are coalesced');
      } else {
        assert.equal(m.ackedAllSent, 0);
        assert.equal(m.acksForwarded, 1200);
        assert.equal(m.framesOut, m.messagesOut, 'one frame per message');
      }
    });
  });
}

describe('bad input closes only its sender', () => {
  /** @type {RelayEnv} */
  let env;
  before(async () => { env = await startRelay({ maxPayload: 1024 }); });
  after(async () => { await env.stop(); });

  /** @type {[string, (c: RawClient) => void, number][]} */
  const cases = [
    ['truncated frame', (c) => c.ws.send(encode({ type: MsgType.ACK, sender: 1, seq: 1, acker: c.id }).subarray(0, 9)), CloseCode.BAD_FRAME],
    ['unknown type', (c) => c.ws.send(new Uint8Array([VERSION, 99])), CloseCode.BAD_FRAME],
    ['wrong version', (c) => c.ws.send(new Uint8Array([7, MsgType.ACK])), CloseCode.BAD_VERSION],
    ['text frame', (c) => c.ws.send('hello'), CloseCode.BAD_FRAME],
    ['spoofed sender', (c) => c.ws.send(encode({ type: MsgType.UPDATE, sender: c.id + 1000, seq: 1, sendTime: 0, pose: pose(), object: null })), CloseCode.SPOOFED_SENDER],
    ['spoofed acker', (c) => c.ws.send(encode({ type: MsgType.ACK, sender: 1, seq: 1, acker: c.id + 1000 })), CloseCode.SPOOFED_SENDER],
    ['second HELLO', (c) => c.ws.send(encode({ type: MsgType.HELLO, flags: 0, clientId: 0, group: 'x', name: '', token: '' })), CloseCode.PROTOCOL_VIOLATION],
    ['server-only message', (c) => c.ws.send(encode({ type: MsgType.MEMBER_LEFT, id: 1 })), CloseCode.PROTOCOL_VIOLATION],
    ['reused seq', (c) => {
      const u = { type: MsgType.UPDATE, sender: c.id, seq: 5, sendTime: 0, pose: pose(), object: null };
      c.ws.send(encode({ type: MsgType.BATCH, messages: [u, u] }));
    }, CloseCode.PROTOCOL_VIOLATION],
    ['oversized frame', (c) => c.ws.send(new Uint8Array(4096)), CloseCode.TOO_BIG],
  ];

  for (const [what, misbehave, code] of cases) {
    test(`${what} -> close ${code}, the group's stream goes on without a gap`, async () => {
      const group = `bad-${what}`;
      /** @type {CarClient[]} */
      const good = [];
      for (let i = 0; i < 3; i++) {
        const c = new CarClient({
          transport: createRelayTransport({ url: env.url, batched: i % 2 === 0, WebSocket }),
          group, name: `good${i}`, cycleMs: 20, ackTimeoutMs: 5000, maxUpdates: 30, pose,
        });
        await c.connect();
        good.push(c);
      }
      const bad = await rawClient(env.url, group, 'bad', 1, true);
      await until(() => good.every((c) => c.members.size === 3));
      for (const c of good) c.start();
      await until(() => good.every((c) => c.cycle.updatesSent >= 10));
      misbehave(bad);
      const closed = /** @type {any} */ (await bad.closed);
      assert.equal(closed.code, code);
      if (code !== CloseCode.TOO_BIG) assert.ok(closed.reason.length > 0, 'close carries a reason');
      await until(() => good.every((c) => c.cycle.completed === 30));
      for (const s of good) {
        for (const r of good) {
          if (r === s) continue;
          const stream = streamOf(r, s.id);
          assert.equal(stream.received, 30);
          assert.equal(stream.duplicates + stream.reorders, 0);
        }
        assert.equal(s.cycle.ackTimeouts, 0);
      }
      for (const c of good) c.close();
    });
  }

  test('UPDATE before HELLO -> close 4002', async () => {
    const ws = new WebSocket(env.url);
    await once(ws, 'open');
    ws.send(encode({ type: MsgType.UPDATE, sender: 1, seq: 1, sendTime: 0, pose: pose(), object: null }));
    const [code] = await once(ws, 'close');
    assert.equal(code, CloseCode.NOT_JOINED);
  });

  test('a HELLO for another group than the URL\'s ?g= -> close 4009; the URL\'s own group or none joins', async () => {
    const wrong = new WebSocket(`${env.url}?g=${encodeURIComponent('other group')}`);
    await once(wrong, 'open');
    wrong.send(encode({ type: MsgType.HELLO, flags: 0, clientId: 0, group: 'mine', name: 'x', token: '' }));
    const [code, reason] = await once(wrong, 'close');
    assert.equal(code, CloseCode.GROUP_MISMATCH);
    assert.match(String(reason), /HELLO for group "mine" on a connection opened for group "other group"/);
    const right = await rawClient(`${env.url}?g=${encodeURIComponent('mine & yours')}`, 'mine & yours', 'r');
    const legacy = await rawClient(env.url, 'mine & yours', 'l');
    assert.ok(right.id > 0 && legacy.id > 0, 'both joined');
    right.ws.close();
    legacy.ws.close();
  });

  test('a taken client id -> close 4007, with a reason cut to fit the close frame', async () => {
    const group = 'ü'.repeat(127); // 254 bytes: the reason naming it would not fit in 123
    const a = new WebSocket(env.url);
    await once(a, 'open');
    a.send(encode({ type: MsgType.HELLO, flags: 0, clientId: 77, group, name: 'a', token: '' }));
    await once(a, 'message');
    const b = new WebSocket(env.url);
    await once(b, 'open');
    b.send(encode({ type: MsgType.HELLO, flags: 0, clientId: 77, group, name: 'b', token: '' }));
    const [code, reason] = await once(b, 'close');
    assert.equal(code, CloseCode.ID_TAKEN);
    assert.ok(Buffer.byteLength(String(reason)) <= 123);
    assert.equal(a.readyState, WebSocket.OPEN, 'the holder of the id is untouched');
    a.close();
  });
});

describe('membership', () => {
  test('a restarted relay hands out ids away from the old process\'s, never 0', async () => {
    // Two relays stand for one process before and after a restart: each
    // starts its counter at a random point, so the second's newcomers do not
    // take the ids of members still on their way back (chance ~ 1 in 2^31).
    const first = await startRelay();
    const second = await startRelay();
    const a = await rawClient(first.url, 'r', 'a', 0);
    const b = await rawClient(second.url, 'r', 'b', 0);
    assert.notEqual(a.id, 0);
    assert.notEqual(b.id, 0);
    assert.notEqual(a.id, b.id);
    a.ws.close(); b.ws.close();
    await first.stop(); await second.stop();
  });

  test('a member that leaves leaves every ACK set at once', async () => {
    const env = await startRelay();
    const a = await rawClient(env.url, 'm', 'a', 0);
    const b = await rawClient(env.url, 'm', 'b', 0);
    const c = await rawClient(env.url, 'm', 'c', 1); // batched sender
    // c sends an update; a ACKs, b never does but leaves.
    c.ws.send(encode({ type: MsgType.UPDATE, sender: c.id, seq: 1, sendTime: 0, pose: pose(), object: null }));
    await until(() => a.inbox.some((m) => m.type === MsgType.UPDATE) && b.inbox.some((m) => m.type === MsgType.UPDATE));
    a.ws.send(encode({ type: MsgType.ACK, sender: c.id, seq: 1, acker: a.id }));
    await until(() => env.relay.stats.acksIn === 1);
    assert.ok(!c.inbox.some((m) => m.type === MsgType.ACKED_ALL));
    b.ws.close();
    await until(() => c.inbox.some((m) => m.type === MsgType.ACKED_ALL));
    const done = c.inbox.find((m) => m.type === MsgType.ACKED_ALL);
    assert.deepEqual([done.seq, done.acked, done.dropped], [1, 1, 1]);
    assert.ok(a.inbox.some((m) => m.type === MsgType.MEMBER_LEFT && m.id === b.id));
    a.ws.close(); c.ws.close();
    await until(() => env.relay.groups.groups.size === 0);
    await env.stop();
  });
});

describe('slow consumers', () => {
  test('a client that stops reading gets its stale poses replaced, then is closed past the hard limit', async () => {
    // floods far past the default rate limit on purpose
    const env = await startRelay({
      queueSoftBytes: 4096, queueHardBytes: 256 * 1024, maxMessagesPerSecond: 1e9, maxMessagesBurst: 1e9,
      maxUpdatesPerSecond: 1e9, maxUpdatesBurst: 1e9, maxGroupForwardsPerSecond: 1e12, // the flood is on purpose
    });
    const slow = await rawClient(env.url, 's', 'slow', 1); // mode relay: stale poses of mode-relay senders are replaced for it
    const senders = [await rawClient(env.url, 's', 'a', 1, true), await rawClient(env.url, 's', 'b', 1, true)];
    /** @type {any} */ (slow.ws)._socket.pause(); // stops reading: the kernel buffers fill up
    let seq = 0;
    const burst = () => {
      for (const s of senders) {
        const msgs = [];
        for (let i = 0; i < 500; i++) msgs.push({ type: MsgType.UPDATE, sender: s.id, seq: ++seq, sendTime: 0, pose: pose(), object: null });
        s.ws.send(encode({ type: MsgType.BATCH, messages: msgs }));
      }
    };
    // The relay sees the client as slow only once the kernel's buffers for the socket are full:
    // its send buffer and the paused reader's receive buffer, up to tcp_wmem + tcp_rmem (36 MB
    // here; the first pose was replaced after 8 MB). The flood is bounded by what the relay has
    // written, not by a stopwatch: on a loaded machine the same bytes took CI more than 20 s.
    const floodBytes = 2 * socketBufferCeiling();
    const deadline = Date.now() + 150_000; // only so that the loop is bounded in time as well
    while (env.relay.stats.droppedUpdates === 0 && env.relay.stats.bytesOut < floodBytes && Date.now() < deadline) {
      burst();
      await new Promise((r) => setTimeout(r, 5));
    }
    assert.ok(env.relay.stats.droppedUpdates > 0, `stale poses were replaced (${env.relay.stats.bytesOut} bytes written, ${floodBytes} allowed)`);
    const session = localSession(env.relay, [...env.relay.groups.groups.keys()][0], slow.id);
    assert.ok(session.queue.length <= 2, `queue holds one pose per sender, not ${session.queue.length}`);
    // The slow client now floods updates: its neighbours' ACKs pile up for it
    // (ACKs are never replaced) until the hard limit closes it.
    /** @type {any} */ (slow.ws)._socket.resume();
    /** @type {any} */ (slow.ws)._socket.pause();
    assert.equal(env.relay.stats.closedByCode[CloseCode.SLOW_CONSUMER], undefined, 'not closed while only poses queue up');
    // The slow client now sends updates: a and b ACK each, and the relay
    // answers it with an ACKED_ALL for each. Those are never replaced, so
    // they pile up until the hard limit closes it.
    for (let k = 0; k < 100 && !env.relay.stats.closedByCode[CloseCode.SLOW_CONSUMER]; k++) {
      const msgs = [];
      for (let i = 1; i <= 500; i++) msgs.push({ type: MsgType.UPDATE, sender: slow.id, seq: k * 500 + i, sendTime: 0, pose: pose(), object: null });
      slow.ws.send(encode({ type: MsgType.BATCH, messages: msgs }));
      await new Promise((r) => setTimeout(r, 5));
    }
    await until(() => (env.relay.stats.closedByCode[CloseCode.SLOW_CONSUMER] ?? 0) >= 1, 20000);
    assert.equal(env.relay.stats.closedByCode[CloseCode.SLOW_CONSUMER], 1, 'only the slow client was closed');
    assert.ok(senders.every((s) => s.ws.readyState === WebSocket.OPEN));
    for (const s of senders) s.ws.close();
    slow.ws.terminate();
    await env.stop();
  });
});

describe('security', () => {
  test('a client over the message-rate limit is closed with 4005; its group goes on', async () => {
    const env = await startRelay({ maxMessagesPerSecond: 100, maxMessagesBurst: 200 });
    const good = await rawClient(env.url, 'rate', 'good', 1, true);
    const flooder = await rawClient(env.url, 'rate', 'flood', 1, true);
    const acks = [];
    for (let i = 0; i < 300; i++) acks.push({ type: MsgType.ACK, sender: good.id, seq: i + 1, acker: flooder.id });
    flooder.ws.send(encode({ type: MsgType.BATCH, messages: acks }));
    const closed = /** @type {any} */ (await flooder.closed);
    assert.equal(closed.code, CloseCode.RATE_LIMITED);
    assert.equal(good.ws.readyState, WebSocket.OPEN);
    good.ws.close();
    await env.stop();
  });

  test('the first member sets the group token; a wrong or missing token gets 4006', async () => {
    const env = await startRelay();
    const hello = (/** @type {string} */ token) => encode({ type: MsgType.HELLO, flags: 1, clientId: 0, group: 'locked', name: 'x', token });
    const join = async (/** @type {string} */ token) => {
      const ws = new WebSocket(env.url);
      await once(ws, 'open');
      ws.send(hello(token));
      const first = await Promise.race([once(ws, 'message').then(([d]) => decode(/** @type {Buffer} */ (d))), once(ws, 'close').then(([code]) => code)]);
      return { ws, first };
    };
    const owner = await join('s3cret');
    assert.equal(/** @type {any} */ (owner.first).type, MsgType.WELCOME);
    assert.equal((await join('wrong')).first, CloseCode.FORBIDDEN);
    assert.equal((await join('')).first, CloseCode.FORBIDDEN);
    const friend = await join('s3cret');
    assert.equal(/** @type {any} */ (friend.first).type, MsgType.WELCOME);
    owner.ws.close(); friend.ws.close();
    await until(() => env.relay.groups.groups.size === 0);
    // an emptied group forgets its token
    const next = await join('');
    assert.equal(/** @type {any} */ (next.first).type, MsgType.WELCOME);
    next.ws.close();
    await env.stop();
  });

  test('browser Origins: same-origin by default, an allow-list, 403 otherwise; no Origin (Node) is fine', async () => {
    /** @param {string} url @param {string} [origin] */
    const open = (url, origin) => new Promise((resolve) => {
      const ws = new WebSocket(url, origin ? { origin } : {});
      ws.on('open', () => { ws.close(); resolve('open'); });
      ws.on('unexpected-response', (_req, res) => resolve(res.statusCode));
      ws.on('error', () => {});
    });
    const env = await startRelay();
    const host = new URL(env.url).host;
    assert.equal(await open(env.url, `http://${host}`), 'open');
    assert.equal(await open(env.url, 'http://evil.example'), 403);
    assert.equal(await open(env.url, 'null'), 403);
    assert.equal(await open(env.url), 'open');
    await env.stop();
    const listed = await startRelay({ allowedOrigins: ['https://phone.example'] });
    assert.equal(await open(listed.url, 'https://phone.example'), 'open');
    assert.equal(await open(listed.url, 'https://other.example'), 403);
    await listed.stop();
  });
});
