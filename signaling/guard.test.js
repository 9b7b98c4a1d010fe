// The parts of createSignaling alone: config, the message guard on a fake
// socket, the upgrade guard with a fake PeerServer WebSocket server, and the
// quiet error handler. No PeerServer, no network.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { CloseCode } from '../core/protocol.js';
import { guardMessages, newSignalingCounters, peerParams, peerUpgradeHandler, sendTo } from './guard.js';
import { SIGNALING_DEFAULTS, isUnderPath, signalingConfig } from './index.js';
import { quietErrorHandler } from './peer-server.js';

/** A WebSocket as far as the guards use it: events, close, send. */
class FakeWs extends EventEmitter {
  constructor() {
    super();
    this.OPEN = /** @type {1} */ (1);
    /** @type {number} */
    this.readyState = 1;
    /** @type {string[]} */
    this.sent = [];
    /** @type {[number | undefined, string | undefined][]} */
    this.closes = [];
  }

  /** @param {string} data */
  send(data) { this.sent.push(data); }

  /** @param {number} [code] @param {string} [reason] */
  close(code, reason) { this.closes.push([code, reason]); }
}

/** @param {FakeWs} f */
const asWs = (f) => /** @type {import('ws').WebSocket} */ (/** @type {unknown} */ (f));
/** @type {import('./guard.js').SignalingLimits} */
const limits = { ...SIGNALING_DEFAULTS };

describe('signalingConfig', () => {
  test('normalises the path and derives the WebSocket path', () => {
    assert.deepEqual(signalingConfig({}), { path: '/peerjs', key: 'peerjs', wsPath: '/peerjs/peerjs', limits });
    const c = signalingConfig({ path: 'sig/', key: 'k', maxMessagesPerSecond: 5 });
    assert.deepEqual([c.path, c.key, c.wsPath, c.limits.maxMessagesPerSecond], ['/sig', 'k', '/sig/peerjs', 5]);
    assert.equal(signalingConfig({ path: '/' }).wsPath, '/peerjs');
  });

  test('isUnderPath: the path and below, not a longer name', () => {
    assert.ok(isUnderPath('/peerjs', '/peerjs'));
    assert.ok(isUnderPath('/peerjs/peerjs/id', '/peerjs'));
    assert.ok(!isUnderPath('/peerjsx', '/peerjs'));
    assert.ok(isUnderPath('/anything', '/'));
  });
});

describe('guardMessages', () => {
  /** @param {Partial<typeof limits>} [l] @param {import('./guard.js').GuardDirectory | null} [directory] */
  function guarded(l = {}, directory = null) {
    const ws = new FakeWs();
    /** @type {string[]} */
    const theirs = [];
    ws.on('message', (data) => theirs.push(String(data)));
    const counters = newSignalingCounters();
    guardMessages(asWs(ws), 'me', { limits: { ...limits, ...l }, counters, directory });
    return { ws, theirs, counters };
  }

  test('good messages reach the PeerServer\'s handler; a bad one closes and stops the rest', () => {
    const { ws, theirs, counters } = guarded();
    ws.emit('message', Buffer.from('{"type":"HEARTBEAT"}'), false);
    ws.emit('message', Buffer.from('{"type":"NOPE"}'), false);
    ws.emit('message', Buffer.from('{"type":"HEARTBEAT"}'), false);
    assert.deepEqual(theirs, ['{"type":"HEARTBEAT"}']);
    assert.equal(ws.closes[0][0], CloseCode.PROTOCOL_VIOLATION);
    assert.deepEqual(counters.closedByCode, { [CloseCode.PROTOCOL_VIOLATION]: 1 });
  });

  test('over the rate -> 4005', () => {
    const { ws, theirs, counters } = guarded({ maxMessagesPerSecond: 1, maxMessagesBurst: 2 });
    for (let i = 0; i < 3; i++) ws.emit('message', Buffer.from('{"type":"HEARTBEAT"}'), false);
    assert.equal(theirs.length, 2);
    assert.deepEqual(counters.closedByCode, { [CloseCode.RATE_LIMITED]: 1 });
  });

  test('in a cluster, a message the directory forwards does not reach the PeerServer', () => {
    /** @type {string[]} */
    const forwarded = [];
    const directory = {
      mayClaim: () => true,
      forward: (/** @type {string} */ src, /** @type {Record<string, unknown>} */ m) => {
        if (m.dst !== 'far') return false;
        forwarded.push(`${src}->${m.dst}`);
        return true;
      },
    };
    const { ws, theirs } = guarded({}, directory);
    ws.emit('message', Buffer.from('{"type":"OFFER","dst":"far"}'), false);
    ws.emit('message', Buffer.from('{"type":"OFFER","dst":"near"}'), false);
    assert.deepEqual(forwarded, ['me->far']);
    assert.deepEqual(theirs, ['{"type":"OFFER","dst":"near"}']);
  });
});

describe('peerUpgradeHandler', () => {
  function setup(mayClaim = true) {
    const counters = newSignalingCounters();
    /** @type {Map<string, import('ws').WebSocket>} */
    const sockets = new Map();
    const ws = new FakeWs();
    /** @type {string[]} */
    const emitted = [];
    const wss = {
      handleUpgrade: (/** @type {unknown} */ _req, /** @type {unknown} */ _socket, /** @type {unknown} */ _head,
        /** @type {(ws: import('ws').WebSocket) => void} */ cb) => cb(asWs(ws)),
      emit: (/** @type {string} */ event) => { emitted.push(event); return true; },
    };
    const directory = { mayClaim: () => mayClaim, forward: () => false };
    const handle = peerUpgradeHandler({
      allowedOrigins: undefined,
      // handleUpgrade and emit are all the handler uses of the server.
      wss: () => /** @type {import('ws').WebSocketServer} */ (/** @type {unknown} */ (wss)),
      directory, sockets, counters, limits,
    });
    /** @param {Record<string, string>} headers */
    const upgrade = (headers) => {
      /** @type {string[]} */
      const written = [];
      const socket = { writable: true, end: (/** @type {string} */ text) => { written.push(text); }, destroy: () => {} };
      // Only headers and url of the request, and writable/end/destroy of the socket, are read.
      handle(/** @type {import('node:http').IncomingMessage} */ (/** @type {unknown} */ ({ url: '/peerjs/peerjs?key=k&id=p1&token=t', headers })),
        /** @type {import('node:stream').Duplex} */ (/** @type {unknown} */ (socket)), Buffer.alloc(0));
      return written;
    };
    return { counters, sockets, ws, emitted, upgrade };
  }

  test('a foreign Origin gets 403 and no socket', () => {
    const { counters, emitted, upgrade } = setup();
    const written = upgrade({ host: 'a.example', origin: 'http://evil.example' });
    assert.match(written[0], /^HTTP\/1.1 403/);
    assert.deepEqual(emitted, []);
    assert.equal(counters.sockets, 0);
  });

  test('an accepted socket is counted, known by its id, guarded and handed to the PeerServer', () => {
    const { counters, sockets, ws, emitted, upgrade } = setup();
    upgrade({ host: 'a.example' });
    assert.deepEqual(emitted, ['connection']);
    assert.equal(counters.sockets, 1);
    assert.equal(sockets.get('p1'), asWs(ws));
    assert.equal(ws.listenerCount('message'), 1, 'the guard');
    ws.emit('close');
    assert.equal(counters.sockets, 0);
    assert.equal(sockets.size, 0);
  });

  test('an id held elsewhere with another token: ID-TAKEN, closed, never reaches the PeerServer', () => {
    const { counters, ws, emitted, upgrade } = setup(false);
    upgrade({ host: 'a.example' });
    assert.deepEqual(ws.sent.map((s) => JSON.parse(s).type), ['ID-TAKEN']);
    assert.equal(ws.closes.length, 1);
    assert.deepEqual(emitted, []);
    assert.equal(counters.sockets, 0);
  });
});

describe('small helpers', () => {
  test('peerParams reads id and token; missing ones are empty', () => {
    assert.deepEqual(peerParams('/peerjs?key=k&id=a&token=b'), { id: 'a', token: 'b' });
    assert.deepEqual(peerParams(undefined), { id: '', token: '' });
  });

  test('sendTo sends JSON on open sockets only', () => {
    const ws = new FakeWs();
    assert.equal(sendTo(asWs(ws), { a: 1 }), true);
    ws.readyState = 3;
    assert.equal(sendTo(asWs(ws), { a: 2 }), false);
    assert.equal(sendTo(undefined, { a: 3 }), false);
    assert.deepEqual(ws.sent, ['{"a":1}']);
  });

  test('quietErrorHandler answers with the error\'s 4xx, 500 otherwise, and counts', () => {
    const counters = newSignalingCounters();
    const handler = quietErrorHandler(counters);
    /** @param {unknown} err */
    const run = (err) => {
      const res = {
        headersSent: false, statusCode: 0, body: '',
        status(/** @type {number} */ s) { res.statusCode = s; return res; },
        type() { return res; },
        send(/** @type {string} */ b) { res.body = b; return res; },
        destroy() {},
      };
      // status/type/send/destroy and headersSent are all it uses of the response.
      handler(err, /** @type {import('express').Request} */ (/** @type {unknown} */ ({})),
        /** @type {import('express').Response} */ (/** @type {unknown} */ (res)), () => {});
      return [res.statusCode, res.body];
    };
    assert.deepEqual(run({ status: 400 }), [400, 'Bad Request']);
    assert.deepEqual(run(new Error('boom')), [500, 'Internal Server Error']);
    assert.equal(counters.badRequests, 2);
  });
});
