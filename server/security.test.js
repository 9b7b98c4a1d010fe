// Security settings end to end: the message-rate limit from the command line
// (burst twice the rate), and no secrets in what `carlab start` prints.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import https from 'node:https';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { createCarlabServer } from './server.js';
import { MsgType, decode, encode } from '../core/protocol.js';

after(() => { setTimeout(() => process.exit(), 500).unref(); });
const webRoot = mkdtempSync(path.join(tmpdir(), 'carlab-security-'));
after(() => rmSync(webRoot, { recursive: true, force: true }));
const BIN = fileURLToPath(new URL('../scripts/carlab.js', import.meta.url));

/**
 * Joins a group; resolves with the socket once welcomed, or the close code.
 * @param {string} url @param {string} group @param {string} token @param {object} [options]
 * @returns {Promise<{ ws: WebSocket, id: number } | number>}
 */
function join(url, group, token, options = {}) {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, options);
    ws.on('error', () => {});
    ws.on('open', () => ws.send(encode({ type: MsgType.HELLO, flags: 1, clientId: 0, group, name: 'n', token })));
    ws.once('message', (d) => {
      const m = /** @type {import('../core/protocol.js').WelcomeMsg} */ (decode(/** @type {Buffer} */ (d)));
      resolve({ ws, id: m.clientId });
    });
    ws.once('close', (code) => resolve(code));
  });
}

/** @param {WebSocket} ws @param {number} id @param {number} n a BATCH of n ACKs */
function sendAcks(ws, id, n) {
  ws.send(encode({ type: MsgType.BATCH, messages: Array.from({ length: n }, (_, i) => ({ type: MsgType.ACK, sender: 1, seq: i + 1, acker: id })) }));
}

describe('--max-messages-per-second', () => {
  test('the relay takes a burst of twice the rate, and closes a client beyond it with 4005', { timeout: 30_000 }, async () => {
    const carlab = await createCarlabServer({ http: true, webRoot, maxMessagesPerSecond: 50 });
    try {
      const url = `ws://${new URL(carlab.url).host}/relay`;
      const fine = await join(url, 'rate', '');
      const flood = await join(url, 'rate', '');
      assert.ok(typeof fine === 'object' && typeof flood === 'object');
      if (typeof fine !== 'object' || typeof flood !== 'object') return;
      const fineClosed = new Promise((r) => fine.ws.once('close', (code) => r(code)));
      const floodClosed = new Promise((r) => flood.ws.once('close', (code) => r(code)));
      sendAcks(fine.ws, fine.id, 99); // HELLO + 99 = the burst of 100
      // HELLO + 150: over the burst by the 50 tokens a second refills, so a second may pass between
      // its HELLO and this batch on a starved machine (HELLO + 100, one over, then was not).
      sendAcks(flood.ws, flood.id, 150);
      assert.equal(await floodClosed, 4005);
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(fine.ws.readyState, WebSocket.OPEN);
      fine.ws.close();
      await fineClosed;
    } finally {
      await carlab.close();
    }
  });
});

describe('no secrets in logs', () => {
  test('carlab start prints no certificate, key, PeerServer key, TURN credential or token', { timeout: 60_000 }, async () => {
    const SECRETS = ['SeCrEtPeErKeY42', 'TuRnPaSs-73', 'GrOuPtOkEn-19', 'PeErToKeN-55'];
    const child = spawn(process.execPath, [BIN, 'start', '--port', '0', '--host', '127.0.0.1', '--no-build', '--no-qr',
      '--peerjs-key', SECRETS[0], '--max-messages-per-second', '1000',
      '--ice-servers', JSON.stringify([{ urls: 'turn:127.0.0.1:3478', username: 'u', credential: SECRETS[1] }])], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('CARLAB_'))),
    });
    let out = '';
    child.stdout.on('data', (c) => { out += c; });
    child.stderr.on('data', (c) => { out += c; });
    const exited = new Promise((r) => child.once('exit', (code) => r(code)));
    try {
      const url = await new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no URL: ${out}`)), 30_000);
        child.stdout.on('data', () => {
          const m = /local: +(https:\/\/127\.0\.0\.1:\d+\/)/.exec(out);
          if (m) { clearTimeout(timer); resolve(m[1]); }
        });
      });
      const host = new URL(url).host;
      const tls = { rejectUnauthorized: false };
      // Use every secret: a locked group, a wrong token, the PeerServer key, a wrong key, garbage.
      const owner = await join(`wss://${host}/relay`, 'locked', SECRETS[2], tls);
      assert.equal(typeof owner, 'object');
      assert.equal(await join(`wss://${host}/relay`, 'locked', 'wrong', tls), 4006);
      const peer = new WebSocket(`wss://${host}/peerjs/peerjs?key=${SECRETS[0]}&id=p1&token=${SECRETS[3]}`, tls);
      peer.on('error', () => {});
      assert.equal(JSON.parse(String(await new Promise((r) => peer.once('message', r)))).type, 'OPEN');
      const wrongKey = new WebSocket(`wss://${host}/peerjs/peerjs?key=nope&id=p2&token=${SECRETS[3]}`, tls);
      wrongKey.on('error', () => {});
      assert.equal(JSON.parse(String(await new Promise((r) => wrongKey.once('message', r)))).type, 'ERROR');
      peer.send('garbage');
      await new Promise((r) => peer.once('close', r));
      // a bad request under the PeerServer's path (express would log its stack trace)
      const status = await new Promise((resolve) => {
        https.get({ host: '127.0.0.1', port: Number(new URL(url).port), path: `/peerjs/%zz${SECRETS[0]}/id`, rejectUnauthorized: false },
          (res) => { res.resume(); resolve(res.statusCode); }).on('error', () => resolve(0));
      });
      assert.equal(status, 400);
      if (typeof owner === 'object') owner.ws.close();
      child.kill('SIGTERM');
      assert.equal(await exited, 0);
    } finally {
      child.kill('SIGKILL');
    }
    assert.match(out, /carlab is running/);
    for (const secret of SECRETS) assert.ok(!out.includes(secret), `output contains ${secret}:\n${out}`);
    assert.doesNotMatch(out, /-----BEGIN|PRIVATE KEY|CERTIFICATE-----/);
    const certDir = fileURLToPath(new URL('../.carlab/certs/', import.meta.url));
    for (const file of ['cert.pem', 'key.pem']) {
      const body = readFileSync(path.join(certDir, file), 'utf8').split('\n').filter((l) => l && !l.startsWith('-----'));
      assert.ok(body.every((line) => !out.includes(line)), `output contains a line of ${file}`);
    }
  });
});
