// Running carlab as a service: the Prometheus exposition moves with the
// traffic, a policy close is one structured log line, the first line of a
// logged run is JSON, HTTP timeouts cut a slowloris off, unsupported methods
// get a status and a closed connection, and SIGTERM drains within its bound
// with clients reconnecting to the restarted server.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { after, describe, test } from 'node:test';
import WebSocket from 'ws';

import { CloseCode, MsgType, decode, encode, unbatch } from '../core/protocol.js';
import { ReconnectPolicy, isReconnectable } from '../web/src/transport/relay-reconnect.js';
import { createLogger, formatReadable } from './log.js';
import { createCarlabServer } from './server.js';
import { waitFor as until } from '../lab/shared/loop-stall.js';

after(() => { setTimeout(() => process.exit(), 500).unref(); });
const webRoot = mkdtempSync(path.join(tmpdir(), 'carlab-ops-'));
after(() => rmSync(webRoot, { recursive: true, force: true }));
const BIN = fileURLToPath(new URL('../scripts/carlab.js', import.meta.url));
const POSE = /** @type {import('../core/protocol.js').Pose} */ ([0, 0, 0, 0, 0, 0, 1]);

/**
 * Parses a Prometheus text exposition into samples by `name{labels}`.
 * Checks the format on the way: every sample's family has a # TYPE line.
 *
 * @param {string} text
 * @returns {{ samples: Map<string, number>, types: Map<string, string> }}
 */
function parseExposition(text) {
  /** @type {Map<string, number>} */
  const samples = new Map();
  /** @type {Map<string, string>} */
  const types = new Map();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const type = /^# TYPE (\w+) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (type) { types.set(type[1], type[2]); continue; }
    if (line.startsWith('#')) continue;
    const sample = /^(\w+)(\{[^}]*\})? (\S+)$/.exec(line);
    assert.ok(sample, `not a sample line: ${line}`);
    const family = sample[1].replace(/_(bucket|sum|count)$/, '');
    assert.ok(types.has(sample[1]) || types.has(family), `no # TYPE for ${sample[1]}`);
    samples.set(`${sample[1]}${sample[2] ?? ''}`, Number(sample[3]));
  }
  return { samples, types };
}

/**
 * Joins a group; resolves once welcomed.
 *
 * @param {string} url
 * @param {string} group
 * @param {number} [clientId]
 * @returns {Promise<{ ws: WebSocket, id: number }>}
 */
function join(url, group, clientId = 0) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.on('error', reject);
    ws.on('open', () => ws.send(encode({ type: MsgType.HELLO, flags: 1, clientId, group, name: 'n', token: '' })));
    // A batched client's first frame may be a BATCH (WELCOME and a MEMBER_JOINED in one turn).
    ws.once('message', (d) => {
      const first = decode(/** @type {Buffer} */ (d));
      const welcome = first instanceof Error ? undefined : unbatch(first).find((m) => m.type === MsgType.WELCOME);
      if (welcome?.type === MsgType.WELCOME) resolve({ ws, id: welcome.clientId });
      else reject(new Error('the first frame held no WELCOME'));
    });
    ws.once('close', (code) => reject(new Error(`closed ${code} before WELCOME`)));
  });
}

/** @param {string} url */
async function scrape(url) {
  const res = await fetch(new URL('/metrics', url));
  assert.equal(res.status, 200);
  return parseExposition(await res.text());
}

/** A writable that keeps the lines written to it. */
function lineSink() {
  /** @type {string[]} */
  const lines = [];
  const stream = new Writable({ write(chunk, _enc, done) { lines.push(...String(chunk).split('\n').filter(Boolean)); done(); } });
  return { stream, lines };
}

describe('/metrics (Prometheus)', () => {
  test('counters move when updates flow, survive a window reset, and RTS lands in the histogram', async () => {
    const carlab = await createCarlabServer({ http: true, webRoot });
    try {
      const relayUrl = `ws://${new URL(carlab.url).host}/relay`;
      const before = await scrape(carlab.url);
      assert.equal(before.types.get('process_cpu_seconds_total'), 'counter');
      assert.equal(before.types.get('carlab_relay_rts_seconds'), 'histogram');
      assert.equal(before.samples.get('carlab_relay_updates_received_total'), 0);

      const a = await join(relayUrl, 'g1');
      const b = await join(relayUrl, 'g1');
      const acked = new Promise((resolve) => a.ws.on('message', (d) => {
        const m = /** @type {import('../core/protocol.js').Message} */ (decode(/** @type {Buffer} */ (d)));
        const all = m.type === MsgType.BATCH ? m.messages : [m];
        if (all.some((x) => x.type === MsgType.ACKED_ALL)) resolve(undefined);
      }));
      b.ws.on('message', (d) => {
        const m = /** @type {import('../core/protocol.js').Message} */ (decode(/** @type {Buffer} */ (d)));
        for (const x of m.type === MsgType.BATCH ? m.messages : [m]) {
          if (x.type === MsgType.UPDATE) b.ws.send(encode({ type: MsgType.ACK, sender: x.sender, seq: x.seq, acker: b.id }));
        }
      });
      a.ws.send(encode({ type: MsgType.UPDATE, sender: a.id, seq: 1, sendTime: 1, pose: POSE, object: null }));
      await acked;

      const during = await scrape(carlab.url);
      assert.equal(during.samples.get('carlab_relay_updates_received_total'), 1);
      assert.equal(during.samples.get('carlab_relay_updates_forwarded_total'), 1);
      assert.equal(during.samples.get('carlab_relay_acks_received_total'), 1);
      assert.equal(during.samples.get('carlab_relay_connections{transport="relay"}'), 2);
      assert.equal(during.samples.get('carlab_relay_groups{transport="relay"}'), 1);
      assert.equal(during.samples.get('carlab_relay_rts_seconds_count'), 1);

      // The lab's window reset zeroes the JSON counters, never a Prometheus one.
      carlab.relay.resetWindow();
      a.ws.send(encode({ type: MsgType.UPDATE, sender: a.id, seq: 2, sendTime: 2, pose: POSE, object: null }));
      await until(() => carlab.relay.metrics().updatesIn === 1, 5000); // read by the relay
      const after = await scrape(carlab.url);
      assert.equal(after.samples.get('carlab_relay_updates_received_total'), 2);
      assert.equal(carlab.relay.metrics().updatesIn, 1);

      // A protocol violation: counted by code.
      const closed = new Promise((r) => b.ws.once('close', (code) => r(code)));
      b.ws.send(Buffer.from([99, 1, 2]));
      assert.equal(await closed, CloseCode.BAD_VERSION);
      const last = await scrape(carlab.url);
      assert.equal(last.samples.get(`carlab_relay_closes_total{code="${CloseCode.BAD_VERSION}"}`), 1);
      a.ws.close();
    } finally {
      await carlab.close();
    }
  });
});

describe('structured logs', () => {
  test('a policy close is one warn line with code, reason, transport and group', async () => {
    const sink = lineSink();
    const logger = createLogger({ stream: sink.stream, pretty: false, level: 'info' });
    const carlab = await createCarlabServer({ http: true, webRoot, logger });
    try {
      const a = await join(`ws://${new URL(carlab.url).host}/relay`, 'logged-group');
      const closed = new Promise((r) => a.ws.once('close', r));
      a.ws.send(Buffer.from([1, 200]));
      await closed;
      const closes = sink.lines.map((l) => JSON.parse(l)).filter((e) => e.event === 'close');
      assert.equal(closes.length, 1);
      assert.equal(closes[0].level, 'warn');
      assert.equal(closes[0].code, CloseCode.BAD_FRAME);
      assert.equal(typeof closes[0].reason, 'string');
      assert.equal(closes[0].transport, 'relay');
      assert.equal(closes[0].group, 'logged-group');
    } finally {
      await carlab.close();
    }
  });

  test('secret-looking fields are redacted; the terminal format is one readable line', () => {
    const sink = lineSink();
    createLogger({ stream: sink.stream, pretty: false }).info({ token: 'hunter2', nested: { credential: 'x' } }, 'm');
    assert.doesNotMatch(sink.lines[0], /hunter2|"x"/);
    const line = formatReadable('{"level":"warn","time":"2026-01-02T03:04:05.678Z","pid":1,"msg":"closed","code":4005,"reason":"over 50/s"}\n');
    assert.equal(line, '03:04:05.678 WARN  closed code=4005 reason="over 50/s"\n');
  });

  test('the first line carlab start writes to a file is JSON', { timeout: 30_000 }, async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'carlab-log-'));
    const file = path.join(dir, 'out.log');
    const fd = openSync(file, 'w');
    const child = spawn(process.execPath, [BIN, 'start', '--http', '--port', '0', '--host', '127.0.0.1', '--no-build', '--no-scene-store'], {
      stdio: ['ignore', fd, 'ignore'], env: { ...process.env, CARLAB_LOG_LEVEL: 'info' },
    });
    closeSync(fd);
    const exited = new Promise((r) => child.once('exit', (code) => r(code)));
    try {
      await until(() => readFileSync(file, 'utf8').includes('Press Ctrl+C'), 20_000);
      const lines = readFileSync(file, 'utf8').trim().split('\n');
      // The first line is JSON, whatever it says (on a fresh clone: a warning that web/dist is not built yet).
      const first = JSON.parse(lines[0]);
      assert.equal(typeof first.level, 'string');
      assert.equal(typeof first.time, 'string');
      const listening = lines.map((l) => JSON.parse(l)).find((e) => /local: http:/.test(e.msg ?? ''));
      assert.ok(listening, 'the listening line is JSON too');
      assert.equal(listening.level, 'info');
      assert.match(listening.msg, /local: http:\/\/127\.0\.0\.1:\d+\//);
      child.kill('SIGTERM');
      assert.equal(await exited, 0);
      const all = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      assert.ok(all.some((e) => e.event === 'closed'), 'the drain logs its end');
    } finally {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('HTTP hardening', () => {
  test('a slowloris (headers never finished) is cut off at headersTimeout', { timeout: 60_000 }, async () => {
    const carlab = await createCarlabServer({ http: true, webRoot, httpTimeouts: { headersTimeoutMs: 400, requestTimeoutMs: 800, checkIntervalMs: 50 } });
    try {
      const port = Number(new URL(carlab.url).port);
      const socket = net.connect(port, '127.0.0.1');
      socket.on('error', () => {});
      let answer = '';
      socket.on('data', (d) => { answer += d; });
      socket.write('GET / HTTP/1.1\r\nHost: x\r\n');
      const drip = setInterval(() => socket.write('X-Slow: 1\r\n'), 100);
      // It drips forever: only the server's headers timeout closes it, with a 408.
      await new Promise((r) => socket.once('close', r));
      clearInterval(drip);
      assert.match(answer, /^HTTP\/1\.1 408/);
    } finally {
      await carlab.close();
    }
  });

  test('CONNECT gets 405 and a closed socket; other methods 405 with Connection: close; garbage 400', async () => {
    const carlab = await createCarlabServer({ http: true, webRoot });
    try {
      const port = Number(new URL(carlab.url).port);
      const connect = await rawExchange(port, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
      assert.match(connect, /^HTTP\/1\.1 405 Method Not Allowed\r\n/);
      for (const method of ['PUT', 'DELETE', 'TRACE', 'PATCH', 'OPTIONS']) {
        const answer = await rawExchange(port, `${method} /index.html HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n`);
        assert.match(answer, /^HTTP\/1\.1 405 /, method);
        assert.match(answer, /\r\nconnection: close\r\n/i, method);
      }
      assert.match(await rawExchange(port, 'FOO / HTTP/1.1\r\nHost: x\r\n\r\n'), /^HTTP\/1\.1 400 /);
    } finally {
      await carlab.close();
    }
  });

  test('the timeouts are set on the server', async () => {
    const carlab = await createCarlabServer({ http: true, webRoot });
    try {
      assert.equal(carlab.server.headersTimeout, 10_000);
      assert.equal(carlab.server.requestTimeout, 30_000);
      assert.equal(carlab.server.keepAliveTimeout, 5_000);
    } finally {
      await carlab.close();
    }
  });
});

describe('drain', () => {
  test('SIGTERM with clients connected: 1001 to each, exit by the bound though one never answers; clients reconnect to the restarted server', { timeout: 60_000 }, async () => {
    const port = await freePort();
    const drainS = 2;
    const first = startCarlab(port, drainS);
    try {
      await first.ready;
      const relayUrl = `ws://127.0.0.1:${port}/relay`;
      const clients = await Promise.all([join(relayUrl, 'd'), join(relayUrl, 'd'), join(relayUrl, 'd')]);
      // One client that completed the upgrade but never answers a close: only the bound ends it.
      const stuck = await rawUpgrade(port);
      const codes = clients.map((c) => new Promise((r) => c.ws.once('close', (code) => r(code))));
      first.child.kill('SIGTERM');
      assert.equal(await first.exited, 0);
      const closeCodes = await Promise.all(codes);
      assert.deepEqual(closeCodes, [CloseCode.GOING_AWAY, CloseCode.GOING_AWAY, CloseCode.GOING_AWAY]);
      assert.ok(closeCodes.every((code) => isReconnectable(/** @type {number} */ (code))), 'the client policy reconnects after 1001');
      stuck.destroy();

      // The clients' own policy: back off, retry until the restarted server welcomes them with their old ids.
      const second = startCarlab(port, drainS);
      try {
        const rejoined = await Promise.all(clients.map((c) => reconnect(relayUrl, 'd', c.id)));
        assert.deepEqual(rejoined.map((r) => r.id), clients.map((c) => c.id));
        for (const r of rejoined) r.ws.close();
      } finally {
        second.child.kill('SIGTERM');
        await second.exited;
      }
    } finally {
      first.child.kill('SIGKILL');
    }
  });
});

/**
 * Rejoins with the reference client's reconnect policy until welcomed.
 *
 * @param {string} url
 * @param {string} group
 * @param {number} id
 */
async function reconnect(url, group, id) {
  const policy = new ReconnectPolicy({ baseMs: 100, maxMs: 500 });
  for (;;) {
    try {
      const joined = await join(url, group, policy.rejoinId(id));
      policy.welcomed();
      return joined;
    } catch {
      const plan = policy.afterClose(1006, false);
      assert.ok(plan, 'the policy keeps trying');
      await new Promise((r) => setTimeout(r, plan.delayMs));
    }
  }
}

/**
 * `carlab start` on `port` with JSON logs on a pipe.
 *
 * @param {number} port
 * @param {number} drainS
 */
function startCarlab(port, drainS) {
  const child = spawn(process.execPath, [BIN, 'start', '--http', '--port', String(port), '--host', '127.0.0.1', '--no-build', '--no-scene-store',
    '--drain-timeout', String(drainS)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { out += d; });
  const exited = new Promise((r) => child.once('exit', (code) => r(code)));
  const ready = until(() => out.includes('"event":"listening"'), 20_000).catch((err) => { throw new Error(`${err.message}: ${out}`); });
  return { child, exited, ready };
}

/**
 * A WebSocket upgrade done by hand on a raw socket that then never reads or answers.
 *
 * @param {number} port
 * @returns {Promise<net.Socket>}
 */
function rawUpgrade(port) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.on('error', () => {});
    socket.once('data', (d) => (String(d).startsWith('HTTP/1.1 101') ? resolve(socket) : reject(new Error(String(d)))));
    socket.write('GET /relay HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n'
      + 'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n');
  });
}

/**
 * Writes `request`, returns all the server wrote until it closed the socket.
 *
 * @param {number} port
 * @param {string} request
 * @returns {Promise<string>}
 */
function rawExchange(port, request) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    const timer = setTimeout(() => { socket.destroy(); reject(new Error(`socket left open: ${text}`)); }, 3000);
    socket.on('data', (d) => { text += d; });
    socket.once('close', () => { clearTimeout(timer); resolve(text); });
    socket.on('error', () => {});
    socket.write(request);
  });
}

/** @returns {Promise<number>} */
function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = /** @type {net.AddressInfo} */ (s.address());
      s.close(() => resolve(port));
    });
  });
}

