// The relay transport's reconnection: backoff with full jitter, when it
// reconnects and when it must not, and the client core resuming its cycle.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { once } from 'node:events';
import WebSocket from 'ws';
import { createRelay } from '../../../relay/index.js';
import { CarClient } from '../../../core/client.js';
import { MsgType, encode } from '../../../core/protocol.js';
import { RECONNECT_DEFAULTS, backoffDelay, createRelayTransport, isReconnectable } from './relay.js';
import { waitFor as until } from '../../../lab/shared/loop-stall.js';

const pose = () => /** @type {any} */ ([0, 0, 0, 0, 0, 0, 1]);

/** A relay on `port` (0: any free one). @param {number} [port] */
async function startRelay(port = 0) {
  const server = http.createServer();
  const relay = createRelay({ server, path: '/relay' });
  server.listen(port, '127.0.0.1');
  await once(server, 'listening');
  const actual = /** @type {any} */ (server.address()).port;
  return {
    relay, port: actual, url: `ws://127.0.0.1:${actual}/relay`,
    async stop() { await relay.close(); server.closeAllConnections(); await new Promise((r) => server.close(r)); },
  };
}

const FAST = { baseMs: 20, maxMs: 200 };

describe('backoff', () => {
  test('full jitter: uniform in [0, min(max, base * 2^n))', () => {
    const top = () => 1 - 1e-12;
    assert.deepEqual([0, 1, 2, 3, 4, 5, 6, 7, 8].map((n) => Math.round(backoffDelay(n, RECONNECT_DEFAULTS, top))),
      [250, 500, 1000, 2000, 4000, 8000, 10000, 10000, 10000]);
    assert.equal(backoffDelay(5, RECONNECT_DEFAULTS, () => 0), 0);
    assert.equal(backoffDelay(1, RECONNECT_DEFAULTS, () => 0.5), 250);
    assert.ok(Number.isFinite(backoffDelay(5000, RECONNECT_DEFAULTS, top)), 'huge attempt counts stay finite');
  });

  test('reconnect after the relay went away or the line dropped, never after a policy close', () => {
    for (const code of [1001, 1005, 1006, 1011, 1012, 1013, 1014]) assert.equal(isReconnectable(code), true, String(code));
    for (const code of [1000, 1002, 1003, 1007, 1008, 1009, 4000, 4001, 4003, 4004, 4005, 4006, 4007, 4008]) {
      assert.equal(isReconnectable(code), false, String(code));
    }
  });
});

describe('reconnecting clients', () => {
  test('a relay restart: clients rejoin with their ids, the cycle resumes, members are re-learned', async () => {
    let env = await startRelay();
    const port = env.port;
    const make = (/** @type {string} */ name, /** @type {boolean | object} */ reconnect) => new CarClient({
      transport: createRelayTransport({ url: env.url, batched: true, WebSocket, reconnect }),
      group: 'restart', name, cycleMs: 30, ackTimeoutMs: 2000, pose,
    });
    const a = make('a', FAST);
    const b = make('b', FAST);
    const gone = make('gone', false); // does not reconnect: must leave the others' ACK sets
    /** @type {string[]} */
    const events = [];
    a.options.onEvent = (e, d) => { if (e === 'reconnecting' || e === 'reconnected' || e === 'closed') events.push(`${e}:${d?.code ?? ''}`); };
    for (const c of [a, b, gone]) await c.connect();
    await until(() => a.members.size === 2 && b.members.size === 2);
    for (const c of [a, b, gone]) c.start();
    await until(() => a.cycle.completed >= 5 && b.cycle.completed >= 5);
    const ids = [a.id, b.id];
    const seqBefore = a.cycle.seq;

    await env.stop(); // the relay goes away (1001)
    await until(() => !a.connected && !b.connected && gone.closedWith !== null);
    assert.equal(gone.closedWith?.code, 1001, 'without reconnect the close is final');
    await new Promise((r) => setTimeout(r, 300)); // down for a while: cycles pass meanwhile
    env = await startRelay(port);
    await until(() => a.reconnects === 1 && b.reconnects === 1);
    await until(() => a.members.size === 1 && b.members.size === 1);
    assert.deepEqual([a.id, b.id], ids, 'rejoined with the same ids');
    assert.ok(!a.members.has(gone.id) && !b.members.has(gone.id), 'a member that did not come back left');
    const completed = a.cycle.completed;
    await until(() => a.cycle.completed >= completed + 5 && (b.streams.get(a.id)?.newestSeq ?? 0) > seqBefore + 3);
    assert.ok(a.cycle.seq > seqBefore, 'sequence numbers go on');
    for (const [r, s] of [[a, b], [b, a]]) {
      const stream = r.streams.get(s.id);
      assert.ok(stream, 'a stream from each neighbour');
      assert.equal(stream.duplicates + stream.reorders, 0);
    }
    const st = a.stats();
    assert.equal(st.reconnects, 1);
    assert.ok(st.outageMs > 0, 'the outage is measured');
    assert.equal(st.outages.length, 1);
    assert.equal(st.outages[0].code, 1001);
    assert.ok(st.pausedCycles > 0, 'nothing was sent while disconnected');
    assert.deepEqual(events, ['reconnecting:1001', 'reconnected:']);
    a.close(); b.close();
    await until(() => a.closedWith !== null && b.closedWith !== null);
    assert.equal(a.closedWith?.code, 1000);
    assert.equal(/** @type {any} */ (a.transport).reconnectInfo().reconnects, 1);
    await env.stop();
  });

  test('no reconnection after a policy close (4xxx) or after our own close', async () => {
    const env = await startRelay();
    const spoofer = new CarClient({
      transport: createRelayTransport({ url: env.url, batched: true, WebSocket, reconnect: FAST }),
      group: 'policy', name: 's', pose,
    });
    await spoofer.connect();
    const t = /** @type {any} */ (spoofer.transport);
    t.ws.send(encode({ type: MsgType.ACK, sender: 1, seq: 1, acker: spoofer.id + 1 }));
    await until(() => spoofer.closedWith !== null);
    assert.equal(spoofer.closedWith?.code, 4003);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(t.reconnectInfo().attempts, 0);

    const leaver = new CarClient({
      transport: createRelayTransport({ url: env.url, batched: true, WebSocket, reconnect: FAST }),
      group: 'policy', name: 'l', pose,
    });
    await leaver.connect();
    leaver.close();
    await until(() => leaver.closedWith !== null);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(leaver.closedWith?.code, 1000);
    assert.equal(/** @type {any} */ (leaver.transport).reconnectInfo().attempts, 0);
    await env.stop();
  });

  test('every attempt is reported for display (attempt N, its wait), then connected', async () => {
    let env = await startRelay();
    const port = env.port;
    /** @type {any[]} */
    const seen = [];
    const c = new CarClient({
      transport: createRelayTransport({ url: env.url, batched: true, WebSocket, reconnect: { baseMs: 40, maxMs: 80 } }),
      group: 'status', name: 'c', pose, onEvent: (e, d) => { if (e === 'connection') seen.push(d); },
    });
    await c.connect();
    assert.deepEqual(seen.map((s) => s.state), ['connected']);
    await env.stop();
    await until(() => seen.filter((s) => s.state === 'reconnecting').length >= 3);
    env = await startRelay(port);
    await until(() => seen.at(-1).state === 'connected');
    const attempts = seen.slice(1, -1);
    assert.deepEqual(attempts.map((s) => s.attempt), attempts.map((_, i) => i + 1), 'numbered 1, 2, 3, ...');
    for (const s of attempts) {
      assert.equal(s.part, 'relay');
      assert.ok(s.delayMs >= 0 && s.delayMs < 80, `wait within the ceiling: ${s.delayMs}`);
      assert.equal(typeof s.at, 'number');
    }
    assert.equal(attempts[0].code, 1001, 'the first names the close that started it');
    c.close();
    await env.stop();
  });

  test('closing while the relay is down ends the retries and reports the close', async () => {
    const env = await startRelay();
    const c = new CarClient({
      transport: createRelayTransport({ url: env.url, batched: true, WebSocket, reconnect: { baseMs: 50, maxMs: 100 } }),
      group: 'down', name: 'c', pose,
    });
    await c.connect();
    await env.stop();
    await until(() => /** @type {any} */ (c.transport).reconnectInfo().attempts >= 2); // refused, refused, ...
    assert.equal(c.closedWith, null, 'still trying');
    c.close();
    await until(() => c.closedWith !== null);
    const attempts = /** @type {any} */ (c.transport).reconnectInfo().attempts;
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(/** @type {any} */ (c.transport).reconnectInfo().attempts, attempts, 'no attempt after close()');
  });
});
