// The parts createRelay is composed of, each alone: flush scheduling, options,
// the shared context, the registry's timers, and the upgrade plumbing.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { FlushScheduler } from './flush.js';
import { RELAY_DEFAULTS, closeReason, relayContext, relayOptions, startGroupTimers } from './index.js';
import { RelayStats } from './stats.js';
import { groupOfRequestUrl, listenForUpgrades, pathnameOf, shutDownWebSockets } from './upgrade.js';

/** @typedef {import('./session.js').Outbox} Outbox */

/** @type {{ stop: () => void }[]} */
const toStop = [];
after(() => { for (const s of toStop) s.stop(); });

/**
 * An outbox as the scheduler sees it: counts its flushes.
 * @param {{ blocked?: boolean, bufferedAmount?: number }} [o]
 */
function fakeOutbox(o = {}) {
  const f = {
    blocked: o.blocked ?? false,
    active: true,
    session: { closed: false },
    socket: { bufferedAmount: o.bufferedAmount ?? 0 },
    flushes: 0,
    flush() { f.flushes++; },
  };
  // The scheduler reads only these fields.
  return { f, o: /** @type {Outbox} */ (/** @type {unknown} */ (f)) };
}

const turn = () => new Promise((r) => setImmediate(r));

describe('FlushScheduler', () => {
  test('an outbox scheduled many times in one turn is flushed once, at the end of the turn', async () => {
    const flusher = new FlushScheduler(100, 1000);
    toStop.push(flusher);
    const a = fakeOutbox();
    const b = fakeOutbox();
    flusher.schedule(a.o);
    flusher.schedule(a.o);
    flusher.schedule(b.o);
    assert.equal(a.f.flushes, 0, 'not before the turn ends');
    await turn();
    assert.deepEqual([a.f.flushes, b.f.flushes], [1, 1]);
    flusher.schedule(a.o);
    await turn();
    assert.equal(a.f.flushes, 2, 'the next turn flushes again');
  });

  test('a blocked outbox is not scheduled; it is retried once its socket drained', () => {
    const flusher = new FlushScheduler(100, 1000);
    toStop.push(flusher);
    const full = fakeOutbox({ blocked: true, bufferedAmount: 500 });
    flusher.schedule(full.o);
    assert.equal(flusher.queue.size, 0);
    flusher.markBlocked(full.o);
    flusher.retryBlocked();
    assert.equal(full.f.flushes, 0, 'still over the soft bound');
    full.f.socket.bufferedAmount = 100;
    flusher.retryBlocked();
    assert.equal(full.f.flushes, 1);
    assert.equal(flusher.blocked.size, 0);
  });

  test('gone outboxes are forgotten, not flushed', async () => {
    const flusher = new FlushScheduler(100, 1000);
    toStop.push(flusher);
    const closed = fakeOutbox({ blocked: true });
    closed.f.session.closed = true;
    flusher.markBlocked(closed.o);
    flusher.retryBlocked();
    assert.equal(closed.f.flushes, 0);
    assert.equal(flusher.blocked.size, 0);
    const forgotten = fakeOutbox();
    flusher.schedule(forgotten.o);
    flusher.markBlocked(forgotten.o);
    flusher.forget(forgotten.o);
    await turn();
    assert.equal(forgotten.f.flushes, 0);
    assert.equal(flusher.blocked.size, 0);
  });

  test('the retry timer runs by itself', async () => {
    const flusher = new FlushScheduler(100, 5);
    toStop.push(flusher);
    const x = fakeOutbox({ blocked: true });
    flusher.markBlocked(x.o);
    await new Promise((r) => setTimeout(r, 40));
    assert.equal(x.f.flushes, 1);
  });
});

describe('relayOptions', () => {
  test('defaults fill what is missing or undefined; plumbing options stay out', () => {
    const opts = relayOptions({ path: '/r', ackTimeoutMs: undefined, slowAckMs: 0, udp: {}, allowedOrigins: ['*'] });
    assert.equal(opts.path, '/r');
    assert.equal(opts.ackTimeoutMs, RELAY_DEFAULTS.ackTimeoutMs);
    assert.equal(opts.slowAckMs, 0);
    assert.deepEqual(opts.allowedOrigins, ['*']);
    assert.ok(!('udp' in opts));
  });
});

describe('relayContext', () => {
  test('closeSession counts the code, closes with a short reason and detaches once', () => {
    const stats = new RelayStats();
    toStop.push(stats);
    const flusher = new FlushScheduler(100, 1000);
    toStop.push(flusher);
    /** @type {unknown[]} */
    const detached = [];
    const ctx = relayContext(relayOptions({}), stats, flusher, {
      detach: (s) => { detached.push(s); s.closed = true; },
      dropDestination: () => {},
    });
    /** @type {[number, string][]} */
    const sent = [];
    const s = /** @type {import('./session.js').Session} */ (/** @type {unknown} */ ({
      closed: false, socket: { close: (/** @type {number} */ code, /** @type {string} */ reason) => sent.push([code, reason]) },
    }));
    ctx.closeSession(s, 4003, 'x'.repeat(300));
    ctx.closeSession(s, 4003, 'again');
    assert.equal(sent.length, 1);
    assert.equal(sent[0][1], closeReason('x'.repeat(300)));
    assert.ok(Buffer.byteLength(sent[0][1]) <= 123);
    assert.deepEqual(stats.closedByCode, { 4003: 1 });
    assert.deepEqual(detached, [s]);
  });
});

describe('startGroupTimers', () => {
  test('sweeps with the ACK timeout; checks lagging only when slowAckMs > 0', async () => {
    /** @type {string[]} */
    const calls = [];
    const groups = {
      sweep: (/** @type {number} */ ms) => { calls.push(`sweep ${ms}`); },
      checkLagging: (/** @type {number} */ ms) => { calls.push(`lag ${ms}`); },
    };
    const on = startGroupTimers(groups, { ackTimeoutMs: 10, slowAckMs: 100 });
    const off = startGroupTimers(groups, { ackTimeoutMs: 10, slowAckMs: 0 });
    await new Promise((r) => setTimeout(r, 80));
    on.stop();
    off.stop();
    assert.ok(calls.includes('sweep 10'));
    assert.equal(calls.filter((c) => c === 'lag 100').length >= 1, true, 'every 50 ms at 100 ms');
    const n = calls.length;
    await new Promise((r) => setTimeout(r, 40));
    assert.equal(calls.length, n, 'stop() stops both');
  });
});

describe('upgrade plumbing', () => {
  test('pathnameOf drops the query', () => {
    assert.equal(pathnameOf('/relay?x=1'), '/relay');
    assert.equal(pathnameOf('/relay'), '/relay');
    assert.equal(pathnameOf(undefined), '/');
  });

  test('groupOfRequestUrl reads ?g= decoded; none, empty or a fragment-only g is no group', () => {
    assert.equal(groupOfRequestUrl('/relay?g=lab'), 'lab');
    assert.equal(groupOfRequestUrl('/relay?x=1&g=a%20b%26c'), 'a b&c');
    assert.equal(groupOfRequestUrl('/relay?g=a+b'), 'a b', 'form encoding, as URLSearchParams writes it');
    assert.equal(groupOfRequestUrl('/relay?g=%F0%9F%9A%97'), '🚗');
    assert.equal(groupOfRequestUrl('/relay?g=first&g=second'), 'first');
    assert.equal(groupOfRequestUrl('/relay?g=x#frag'), 'x');
    assert.equal(groupOfRequestUrl('/relay#?g=x'), null);
    for (const none of ['/relay', '/relay?', '/relay?g=', '/relay?gg=x', undefined]) assert.equal(groupOfRequestUrl(none), null, String(none));
  });

  test('listenForUpgrades handles its own path only, until removed', () => {
    const server = new EventEmitter();
    /** @type {string[]} */
    const seen = [];
    // An EventEmitter is all of the server it uses.
    const unlisten = listenForUpgrades(/** @type {import('node:http').Server} */ (/** @type {unknown} */ (server)), '/relay',
      (req) => { seen.push(String(req.url)); });
    server.emit('upgrade', { url: '/relay?a=1' }, {}, Buffer.alloc(0));
    server.emit('upgrade', { url: '/peerjs/peerjs' }, {}, Buffer.alloc(0));
    unlisten();
    server.emit('upgrade', { url: '/relay' }, {}, Buffer.alloc(0));
    assert.deepEqual(seen, ['/relay?a=1']);
    assert.equal(server.listenerCount('upgrade'), 0);
  });

  test('shutDownWebSockets closes every client, terminates the silent ones after the timeout', async () => {
    /** @type {string[]} */
    const log = [];
    /** @type {(() => void) | null} */
    let closeServer = null;
    const client = {
      close: (/** @type {number} */ code, /** @type {string} */ reason) => log.push(`close ${code} ${reason}`),
      terminate: () => { log.push('terminate'); closeServer?.(); },
    };
    const wss = { clients: new Set([client]), close: (/** @type {() => void} */ cb) => { closeServer = cb; } };
    // Only clients and close() of the server are used.
    await shutDownWebSockets(/** @type {import('ws').WebSocketServer} */ (/** @type {unknown} */ (wss)), 1001, 'bye', 20);
    assert.deepEqual(log, ['close 1001 bye', 'terminate']);
  });
});
