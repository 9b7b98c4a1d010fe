// PeerServer ids: one live socket per id (a same-token claim takes it over
// and closes the older socket with 4007), peersConnected always true, the key
// checked on the WebSocket and on the REST API, ids and tokens of bounded
// length and charset, each refusal with its own words and close code.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { once } from 'node:events';
import WebSocket from 'ws';
import { CloseCode } from '../core/protocol.js';
import { createSignaling } from './index.js';
import { MAX_PEER_ID_LENGTH, checkPeerParams } from './guard.js';
import { until } from '../lab/shared/loop-stall.js';

// The `peer` package's timers never stop: leave once done.
after(() => { setTimeout(() => process.exit(), 500).unref(); });

async function start() {
  const server = http.createServer();
  const signaling = createSignaling({ server, path: '/peerjs', key: 'k1' });
  server.on('request', (req, res) => { if (!signaling.handleRequest(req, res)) { res.statusCode = 404; res.end(); } });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
  after(async () => { await signaling.close(); server.closeAllConnections(); server.close(); });
  return { signaling, base: `127.0.0.1:${port}` };
}

/**
 * A PeerServer socket with its messages and close recorded.
 * @param {string} base @param {Record<string, string>} query
 */
async function peer(base, query) {
  const ws = new WebSocket(`ws://${base}/peerjs/peerjs?${new URLSearchParams(query)}`);
  /** @type {any[]} */
  const messages = [];
  /** @type {{ code: number, reason: string } | null} */
  let closed = null;
  const closing = new Promise((r) => ws.once('close', (code, reason) => { closed = { code, reason: reason.toString() }; r(closed); }));
  ws.on('message', (d) => messages.push(JSON.parse(String(d))));
  ws.on('error', () => {});
  await once(ws, 'open');
  return {
    ws, messages, closing,
    get closed() { return closed; },
    /** @param {string} type */
    async next(type) {
      // until(): a deadline checked after a stall would come before the socket's waiting message is read
      if (!(await until(() => messages.some((m) => m.type === type), 5000, 5))) throw new Error(`no ${type}: ${JSON.stringify(messages)}`);
      return messages.find((m) => m.type === type);
    },
  };
}

describe('one live socket per PeerJS id', () => {
  test('a same-token second claim closes the older socket (4007) and messages to the id reach the newer one', async () => {
    const { signaling, base } = await start();
    const first = await peer(base, { key: 'k1', id: 'car-1', token: 'tok1' });
    await first.next('OPEN');
    assert.equal(signaling.metrics().peersConnected, 1);
    const second = await peer(base, { key: 'k1', id: 'car-1', token: 'tok1' });
    // At once, not after a timeout: exactly one live socket for the id, and it is counted.
    assert.equal(signaling.metrics().peersConnected, 1);
    // The newer socket hears OPEN like a new peer does (PeerJS waits for it to report 'open').
    await second.next('OPEN');
    const closed = await first.closing;
    assert.deepEqual(closed, { code: CloseCode.ID_TAKEN, reason: 'id claimed again by a newer connection' });
    assert.equal(signaling.metrics().peersConnected, 1);
    const other = await peer(base, { key: 'k1', id: 'car-2', token: 'tok2' });
    await other.next('OPEN');
    other.ws.send(JSON.stringify({ type: 'OFFER', dst: 'car-1', payload: { sdp: 'x' } }));
    const offer = await second.next('OFFER');
    assert.equal(offer.src, 'car-2');
    assert.equal(second.closed, null);
    assert.equal(signaling.metrics().peersConnected, 2);
    second.ws.close();
    await second.closing;
    // the server hears the close after the client does: wait for it (a fixed 50 ms lost to a stall)
    await until(() => signaling.metrics().peersConnected === 1, 5000);
    assert.equal(signaling.metrics().peersConnected, 1);
    other.ws.close();
  });

  test('another token is refused with ID-TAKEN and 4007; the holder stays', async () => {
    const { signaling, base } = await start();
    const holder = await peer(base, { key: 'k1', id: 'car-3', token: 'mine' });
    await holder.next('OPEN');
    const thief = await peer(base, { key: 'k1', id: 'car-3', token: 'theirs' });
    assert.equal((await thief.next('ID-TAKEN')).payload.msg, 'ID is taken');
    assert.equal((await thief.closing).code, CloseCode.ID_TAKEN);
    assert.equal(holder.closed, null);
    assert.equal(signaling.metrics().peersConnected, 1);
    holder.ws.close();
  });
});

describe('ids, tokens and the key', () => {
  test(`an id over ${MAX_PEER_ID_LENGTH} characters is refused; ${MAX_PEER_ID_LENGTH} is fine`, async () => {
    const { base } = await start();
    const long = await peer(base, { key: 'k1', id: 'a'.repeat(MAX_PEER_ID_LENGTH + 1), token: 't' });
    assert.match((await long.next('ERROR')).payload.msg, /id longer than 256 characters/);
    assert.equal((await long.closing).code, CloseCode.PROTOCOL_VIOLATION);
    const ok = await peer(base, { key: 'k1', id: 'a'.repeat(MAX_PEER_ID_LENGTH), token: 't' });
    await ok.next('OPEN');
    ok.ws.close();
  });

  test('bad key, charset and missing parameters: each its own words and close code', async () => {
    const { base } = await start();
    const cases = /** @type {const} */ ([
      [{ key: 'nope', id: 'x', token: 't' }, /Invalid key provided/, CloseCode.FORBIDDEN],
      [{ key: 'k1', id: 'a/b', token: 't' }, /id has characters/, CloseCode.PROTOCOL_VIOLATION],
      [{ key: 'k1', id: 'ab', token: 't t' }, /token has characters/, CloseCode.PROTOCOL_VIOLATION],
      [{ key: 'k1', id: 'ab', token: 'x'.repeat(129) }, /token longer than 128/, CloseCode.PROTOCOL_VIOLATION],
      [{ key: 'k1', id: 'ab' }, /No token supplied/, CloseCode.PROTOCOL_VIOLATION],
    ]);
    for (const [query, words, code] of cases) {
      const p = await peer(base, query);
      assert.match((await p.next('ERROR')).payload.msg, words);
      assert.equal((await p.closing).code, code);
    }
  });

  test('GET <path>/<key>/id checks the key: 401 for another, an id for the right one', async () => {
    const { base } = await start();
    const bad = await fetch(`http://${base}/peerjs/peerjs/id`);
    assert.equal(bad.status, 401);
    assert.equal(await bad.text(), 'Invalid key provided');
    const good = await fetch(`http://${base}/peerjs/k1/id`);
    assert.equal(good.status, 200);
    assert.match(await good.text(), /^[0-9a-f-]{36}$/);
    assert.equal((await fetch(`http://${base}/peerjs/nope/peers`)).status, 401);
  });

  test('checkPeerParams alone', () => {
    assert.equal(checkPeerParams({ key: 'k', id: 'carlab-1x-5', token: 'abc123' }, 'k'), null);
    assert.equal(checkPeerParams({ key: 'k', id: 'two words', token: 'abc' }, 'k'), null, 'PeerJS allows single spaces');
    assert.equal(checkPeerParams({ key: 'k', id: ' lead', token: 'abc' }, 'k')?.code, CloseCode.PROTOCOL_VIOLATION);
    assert.equal(checkPeerParams({ key: null, id: 'a', token: 'b' }, 'k')?.reason, 'No key supplied to the PeerServer WebSocket');
  });
});
