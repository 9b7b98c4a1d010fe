// The PeerServer as carlab mounts it: Origin checks on its WebSocket upgrade,
// carlab's checks in front of its message handler, quiet bad requests.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { createCarlabServer } from '../server/server.js';
import { checkPeerMessage } from './index.js';

// The `peer` package's timers never stop: leave once done.
after(() => { setTimeout(() => process.exit(), 500).unref(); });
const webRoot = mkdtempSync(path.join(tmpdir(), 'carlab-signaling-'));
after(() => rmSync(webRoot, { recursive: true, force: true }));

/**
 * Opens a PeerServer WebSocket; resolves 'open' (with the socket) or the HTTP status.
 * @param {string} url @param {string} [origin]
 * @returns {Promise<{ status: 'open', ws: WebSocket, first: Promise<any> } | { status: number }>}
 */
function connect(url, origin) {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, origin ? { origin } : {});
    const first = new Promise((r) => ws.once('message', (d) => r(JSON.parse(String(d)))));
    ws.on('open', () => resolve({ status: 'open', ws, first }));
    ws.on('unexpected-response', (_req, res) => { resolve({ status: res.statusCode ?? 0 }); res.resume(); });
    ws.on('error', () => {});
  });
}

/** @param {WebSocket} ws @returns {Promise<number>} */
const closeCode = (ws) => new Promise((r) => ws.once('close', (code) => r(code)));

describe('Origin allow-list on the signaling upgrade', () => {
  test('same origin by default; no Origin (Node) is fine; others get 403', async () => {
    const carlab = await createCarlabServer({ http: true, webRoot });
    try {
      const { host } = new URL(carlab.url);
      const url = (/** @type {string} */ id) => `ws://${host}/peerjs/peerjs?key=peerjs&id=${id}&token=t`;
      const same = await connect(url('a'), `http://${host}`);
      assert.equal(same.status, 'open');
      if (same.status === 'open') same.ws.terminate();
      const none = await connect(url('b'));
      assert.equal(none.status, 'open');
      if (none.status === 'open') none.ws.terminate();
      assert.equal((await connect(url('c'), 'http://evil.example')).status, 403);
      assert.equal((await connect(url('d'), 'null')).status, 403);
      assert.equal((await connect(url('e'), `http://${host.replace(/:\d+$/, ':1')}`)).status, 403, 'another port is another origin');
    } finally {
      await carlab.close();
    }
  });

  test('allowedOrigins lists the origins that may connect; * allows any', async () => {
    const listed = await createCarlabServer({ http: true, webRoot, allowedOrigins: ['https://phone.example'] });
    try {
      const { host } = new URL(listed.url);
      const url = `ws://${host}/peerjs/peerjs?key=peerjs&id=x1&token=t`;
      const ok = await connect(url, 'https://phone.example');
      assert.equal(ok.status, 'open');
      if (ok.status === 'open') ok.ws.terminate();
      assert.equal((await connect(url.replace('x1', 'x2'), 'https://other.example')).status, 403);
    } finally {
      await listed.close();
    }
    const any = await createCarlabServer({ http: true, webRoot, allowedOrigins: ['*'] });
    try {
      const { host } = new URL(any.url);
      const ok = await connect(`ws://${host}/peerjs/peerjs?key=peerjs&id=y&token=t`, 'https://anywhere.example');
      assert.equal(ok.status, 'open');
      if (ok.status === 'open') ok.ws.terminate();
    } finally {
      await any.close();
    }
  });
});

describe('messages on the PeerServer WebSocket', () => {
  test('checkPeerMessage: what PeerJS clients send passes, anything else is refused', () => {
    assert.equal(checkPeerMessage(Buffer.from('{"type":"HEARTBEAT"}'), false), null);
    assert.equal(checkPeerMessage(Buffer.from('{"type":"OFFER","dst":"b","payload":{"sdp":"x"}}'), false), null);
    assert.deepEqual(checkPeerMessage(Buffer.from('{"type":"HEARTBEAT"}'), true)?.[0], 4000);
    assert.deepEqual(checkPeerMessage(Buffer.from('nope'), false)?.[0], 4000);
    assert.deepEqual(checkPeerMessage(Buffer.from('[1]'), false)?.[0], 4000);
    assert.deepEqual(checkPeerMessage(Buffer.from('{"type":"EXPIRE","dst":"b"}'), false)?.[0], 4008);
    assert.deepEqual(checkPeerMessage(Buffer.from('{"type":"OFFER","dst":{"x":1}}'), false)?.[0], 4008);
  });

  test('garbage closes only its own socket (4000/4008/4005/1009); offers between good peers still flow', async () => {
    const carlab = await createCarlabServer({ http: true, webRoot, peerjsKey: 'k1' });
    try {
      const base = `ws://${new URL(carlab.url).host}/peerjs/peerjs?key=k1`;
      const a = await connect(`${base}&id=good-a&token=ta`);
      const b = await connect(`${base}&id=good-b&token=tb`);
      assert.ok(a.status === 'open' && b.status === 'open');
      if (a.status !== 'open' || b.status !== 'open') return;
      assert.equal((await a.first).type, 'OPEN');
      assert.equal((await b.first).type, 'OPEN');
      const bad = async (/** @type {string} */ id, /** @type {(ws: WebSocket) => void} */ send) => {
        const c = await connect(`${base}&id=${id}&token=t`);
        assert.equal(c.status, 'open');
        if (c.status !== 'open') return 0;
        const closed = closeCode(c.ws);
        send(c.ws);
        return closed;
      };
      assert.equal(await bad('g1', (ws) => ws.send('not json')), 4000);
      assert.equal(await bad('g2', (ws) => ws.send(Buffer.from([1, 2, 3]), { binary: true })), 4000);
      assert.equal(await bad('g3', (ws) => ws.send('{"type":"OPEN"}')), 4008);
      assert.equal(await bad('g4', (ws) => ws.send('{"type":"OFFER","dst":7}')), 4008);
      assert.equal(await bad('g5', (ws) => ws.send(`{"type":"HEARTBEAT","x":"${'a'.repeat(70 * 1024)}"}`)), 1009);
      assert.equal(await bad('g6', (ws) => { for (let i = 0; i < 1500; i++) ws.send('{"type":"HEARTBEAT"}'); }), 4005);
      const got = new Promise((r) => b.ws.on('message', (d) => { const m = JSON.parse(String(d)); if (m.type === 'OFFER') r(m); }));
      a.ws.send(JSON.stringify({ type: 'OFFER', dst: 'good-b', payload: { sdp: 'v=0' } }));
      const offer = /** @type {any} */ (await got);
      assert.equal(offer.src, 'good-a', 'the PeerServer sets src itself: no spoofing');
      assert.equal(a.ws.readyState, WebSocket.OPEN);
      assert.equal(b.ws.readyState, WebSocket.OPEN);
      const m = carlab.signaling.metrics();
      assert.deepEqual(m.closedByCode, { 4000: 2, 4005: 1, 4008: 2 }, '1009 is the WebSocket library\'s');
      a.ws.terminate();
      b.ws.terminate();
    } finally {
      await carlab.close();
    }
  });

  test('a path that is not valid percent-encoding is a quiet 400, not a logged stack trace', async () => {
    const carlab = await createCarlabServer({ http: true, webRoot });
    /** @type {string[]} */
    const errors = [];
    const original = console.error;
    console.error = (/** @type {unknown[]} */ ...args) => { errors.push(args.join(' ')); };
    try {
      const res = await fetch(new URL('/peerjs/%zz/id', carlab.url));
      assert.equal(res.status, 400);
      assert.equal(errors.length, 0, errors.join('\n'));
      assert.equal(carlab.signaling.metrics().badRequests, 1);
    } finally {
      console.error = original;
      await carlab.close();
    }
  });
});
