// Capability REACHABILITY (docs/protocol.md §5.2, §5.3): a client that asks is
// told how each member can be reached, in its WELCOME and in every
// MEMBER_JOINED; a client that does not ask gets the messages as before.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import http from 'node:http';
import WebSocket from 'ws';
import { HelloFlag, MsgType, ReachFlag, decode, encode, unbatch } from '../core/protocol.js';
import { createRelay } from './index.js';

/** @type {(() => Promise<void>)[]} */
const cleanups = [];
after(async () => { for (const c of cleanups.reverse()) await c(); });

/** @param {() => boolean} done */
async function until(done, ms = 3000) {
  const end = Date.now() + ms;
  while (!done()) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/**
 * A raw connection that records what it gets, and the bytes of each MEMBER_JOINED.
 * @param {string} url @param {number} flags @param {string} name
 */
async function join(url, flags, name) {
  const ws = new WebSocket(url);
  /** @type {any[]} */
  const got = [];
  ws.on('message', (data) => {
    const m = decode(/** @type {Buffer} */ (data));
    if (!(m instanceof Error)) got.push(...unbatch(m));
  });
  await once(ws, 'open');
  ws.send(encode({ type: MsgType.HELLO, flags, clientId: 0, group: 'reach', name, token: '' }));
  cleanups.push(async () => ws.terminate());
  await until(() => got.some((m) => m.type === MsgType.WELCOME));
  return { ws, got, welcome: got.find((m) => m.type === MsgType.WELCOME) };
}

async function startRelay() {
  const server = http.createServer();
  const relay = createRelay({ server });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanups.push(async () => { await relay.close(); server.close(); });
  return { relay, url: `ws://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (server.address()).port}/relay` };
}

test('a p2p member asking REACHABILITY learns who takes peer connections; others see nothing new', async () => {
  const { relay, url } = await startRelay();

  const relayMember = await join(url, HelloFlag.BATCHED, 'on-relay');
  const p2p = await join(url, HelloFlag.MEMBERSHIP_ONLY | HelloFlag.REACHABILITY | HelloFlag.RESUME, 'on-p2p');
  assert.equal(p2p.welcome.capabilities & HelloFlag.REACHABILITY, HelloFlag.REACHABILITY, 'granted');
  assert.deepEqual(p2p.welcome.members.map((/** @type {any} */ m) => [m.name, m.reach]), [
    ['on-relay', ReachFlag.RELAY], ['on-p2p', ReachFlag.RELAY | ReachFlag.PEER],
  ]);
  // the relay member never asked: its MEMBER_JOINED has no reach byte
  await until(() => relayMember.got.some((m) => m.type === MsgType.MEMBER_JOINED));
  assert.equal(relayMember.got.find((m) => m.type === MsgType.MEMBER_JOINED).reach, undefined);
  assert.equal(relayMember.welcome.capabilities, undefined, 'a HELLO that asked for no capability gets no capabilities byte');

  // a relay-udp member and a second p2p member join: the p2p member hears how to reach each
  await join(url, HelloFlag.MEMBERSHIP_ONLY | HelloFlag.REACHABILITY, 'p2p-2');
  await until(() => p2p.got.filter((m) => m.type === MsgType.MEMBER_JOINED).length === 1);
  assert.deepEqual(p2p.got.filter((m) => m.type === MsgType.MEMBER_JOINED).map((m) => [m.name, m.reach]), [['p2p-2', ReachFlag.RELAY | ReachFlag.PEER]]);
});

test('PEER_SIGNAL: a p2p member\'s SIGNAL reaches another p2p member of its group unchanged; a spoofed or unasked one closes', async () => {
  const { relay, url } = await startRelay();
  const P2P = HelloFlag.MEMBERSHIP_ONLY | HelloFlag.REACHABILITY | HelloFlag.PEER_SIGNAL;
  const a = await join(url, P2P, 'a');
  const b = await join(url, P2P, 'b');
  const plain = await join(url, HelloFlag.MEMBERSHIP_ONLY, 'old-p2p');
  const [aId, bId] = [a.welcome.clientId, b.welcome.clientId];
  assert.equal(b.welcome.capabilities & HelloFlag.PEER_SIGNAL, HelloFlag.PEER_SIGNAL);
  const payload = JSON.stringify({ kind: 'ice-restart', type: 'offer', sdp: 'v=0', attempt: 1 });
  a.ws.send(encode({ type: MsgType.SIGNAL, from: aId, to: bId, payload }));
  await until(() => b.got.some((m) => m.type === MsgType.SIGNAL));
  const got = b.got.find((m) => m.type === MsgType.SIGNAL);
  assert.deepEqual([got.from, got.to, got.payload], [aId, bId, payload]);
  // to a member that did not ask: dropped and counted, the sender stays
  a.ws.send(encode({ type: MsgType.SIGNAL, from: aId, to: plain.welcome.clientId, payload }));
  await until(() => relay.stats.peerSignalsDropped === 1);
  // spoofed: 4003; from a member that did not ask: 4008
  const closes = await Promise.all([
    (async () => { b.ws.send(encode({ type: MsgType.SIGNAL, from: aId, to: aId, payload })); const [code] = await once(b.ws, 'close'); return code; })(),
    (async () => { plain.ws.send(encode({ type: MsgType.SIGNAL, from: plain.welcome.clientId, to: aId, payload })); const [code] = await once(plain.ws, 'close'); return code; })(),
  ]);
  assert.deepEqual(closes, [4003, 4008]);
  assert.equal(a.ws.readyState, WebSocket.OPEN, 'the sender of the good ones stays');
});
