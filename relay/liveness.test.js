// The relay ends sessions nothing came from (no frame, no pong) for its
// liveness timeout, and keeps quiet ones that answer pings.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import http from 'node:http';
import WebSocket from 'ws';

import { MsgType, HelloFlag, decode, encode, unbatch } from '../core/protocol.js';
import { LivenessMonitor } from './liveness.js';
import { createRelay } from './index.js';

/** @type {(() => Promise<void>)[]} */
const cleanups = [];
after(async () => { for (const c of cleanups.reverse()) await c(); });

/** A relay with a short ping interval on a free port. @param {{ pingIntervalMs: number, livenessTimeoutMs: number }} liveness */
async function startRelay(liveness) {
  const server = http.createServer();
  const relay = createRelay({ server, ...liveness });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanups.push(async () => { await relay.close(); server.close(); });
  const port = /** @type {import('node:net').AddressInfo} */ (server.address()).port;
  return { relay, url: `ws://127.0.0.1:${port}/relay` };
}

/**
 * A member of group `g`; `autoPong: false` plays a phone whose network vanished
 * (nothing comes back from it, not even a pong).
 * @param {string} url @param {string} name @param {boolean} answersPings
 */
async function member(url, name, answersPings) {
  const ws = new WebSocket(url, { autoPong: answersPings });
  /** @type {import('../core/protocol.js').Message[]} */
  const got = [];
  ws.on('message', (data) => {
    const m = decode(/** @type {Buffer} */ (data));
    if (!(m instanceof Error)) got.push(...unbatch(m));
  });
  await once(ws, 'open');
  ws.send(encode({ type: MsgType.HELLO, flags: HelloFlag.BATCHED, clientId: 0, group: 'g', name, token: '' }));
  while (!got.some((m) => m.type === MsgType.WELCOME)) await new Promise((r) => setTimeout(r, 5));
  cleanups.push(async () => ws.terminate());
  return { ws, got };
}

/** @param {() => boolean} done @param {number} ms */
async function until(done, ms) {
  const end = Date.now() + ms;
  while (!done()) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

test('a member that answers nothing is ended after the liveness timeout; the others see it leave', async () => {
  const { relay, url } = await startRelay({ pingIntervalMs: 40, livenessTimeoutMs: 120 });
  const stays = await member(url, 'stays', true);
  const gone = await member(url, 'gone', false);
  const goneId = /** @type {any} */ (gone.got.find((m) => m.type === MsgType.WELCOME)).clientId;
  const closed = once(gone.ws, 'close');
  const startedAt = Date.now();
  await closed;
  const after = Date.now() - startedAt;
  assert.ok(after >= 110, `ended after ${after} ms, before the 120 ms timeout`);
  await until(() => stays.got.some((m) => m.type === MsgType.MEMBER_LEFT && /** @type {any} */ (m).id === goneId), 2000);
  assert.equal(relay.metrics().silentEnded, 1);
  // Quiet but answering pings: still there after many intervals.
  assert.equal(stays.ws.readyState, WebSocket.OPEN);
});

test('frames count as hearing from a member: one that sends but never pongs stays', async () => {
  const { relay, url } = await startRelay({ pingIntervalMs: 40, livenessTimeoutMs: 120 });
  const talker = await member(url, 'talker', false);
  const ack = encode({ type: MsgType.STATS, clientId: 0, stats: { note: 'alive' } });
  const timer = setInterval(() => talker.ws.send(ack), 30);
  await new Promise((r) => setTimeout(r, 400));
  clearInterval(timer);
  assert.equal(talker.ws.readyState, WebSocket.OPEN);
  assert.equal(relay.metrics().silentEnded, 0);
});

test('livenessTimeoutMs 0 turns the check off', () => {
  const m = new LivenessMonitor({ pingIntervalMs: 5000, livenessTimeoutMs: 0 }, () => assert.fail('ended'));
  assert.equal(m.active, false);
  m.stop();
});

test('a monitor round pings the quiet, ends the silent once, and never pings one heard in every interval', () => {
  /** @type {string[]} */
  const events = [];
  /** @param {string} name */
  const socket = (name) => ({ ping: () => events.push(`ping ${name}`), terminate: () => events.push(`end ${name}`), on: () => {} });
  /** @typedef {{ heardTick: number, name: string }} Named */
  /** @type {Named[]} */
  const ended = [];
  /** @type {LivenessMonitor<Named>} */
  const m = new LivenessMonitor({ pingIntervalMs: 1000, livenessTimeoutMs: 2000 }, (s) => { ended.push(s); });
  m.stop(); // rounds are driven by hand
  const busy = { heardTick: 0, name: 'busy' };
  const quiet = { heardTick: 0, name: 'quiet' };
  m.watched.set(busy, socket('busy'));
  m.watched.set(quiet, socket('quiet'));
  for (let i = 0; i < 4; i++) {
    m.round();
    m.heard(busy);
  }
  // Heard in every interval: never pinged. Silent: pinged once nothing came for a whole interval,
  // ended 2..3 intervals (the 2000 ms timeout .. one interval more) after it was last heard.
  assert.deepEqual(events, ['ping quiet', 'end quiet']);
  assert.deepEqual(ended.map((s) => s.name), ['quiet']);
  m.round();
  assert.deepEqual(events, ['ping quiet', 'end quiet'], 'an ended session is not watched any more');
  assert.equal(m.silentEnded, 1);
});
