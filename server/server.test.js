import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { WebSocket } from 'ws';

import { listLanAddresses } from './net.js';
import { belongsToServices, createCarlabServer, createCpuMeter } from './server.js';

// The `peer` package keeps self-rescheduling timers it offers no way to
// stop, so a process that created a PeerServer never exits on its own. Once
// every test here has run, exit if something still holds the loop open.
after(() => {
  setTimeout(() => process.exit(), 500).unref();
});

const base = mkdtempSync(path.join(tmpdir(), 'carlab-server-'));
const webRoot = path.join(base, 'dist');
const { mkdirSync } = await import('node:fs');
mkdirSync(webRoot);
writeFileSync(path.join(webRoot, 'index.html'), '<!doctype html><title>carlab test page</title>');
after(() => rmSync(base, { recursive: true, force: true }));

/**
 * Try a WebSocket handshake and report how it ended.
 *
 * @param {string} url
 * @param {import('ws').ClientOptions} [options]
 * @returns {Promise<{ opened: true, ws: WebSocket, firstMessage: Promise<string> } | { opened: false, status: number }>}
 */
function handshake(url, options = {}) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, options);
    // Frames can arrive in the same chunk as the 101: listen from the start.
    const firstMessage = new Promise((resolveMessage) => ws.once('message', (data) => resolveMessage(String(data))));
    ws.once('open', () => resolve({ opened: true, ws, firstMessage }));
    ws.once('unexpected-response', (_req, res) => {
      resolve({ opened: false, status: res.statusCode ?? 0 });
      res.resume();
      ws.terminate();
    });
    ws.once('error', reject);
  });
}

describe('HTTP server', () => {
  /** @type {import('./server.js').CarlabServer} */
  let carlab;
  before(async () => {
    carlab = await createCarlabServer({ http: true, webRoot, iceServers: [{ urls: 'stun:127.0.0.1:3478' }] });
  });
  after(() => carlab.close());

  test('listens on a real port and reports its URL', () => {
    const { port } = /** @type {import('node:net').AddressInfo} */ (carlab.server.address());
    assert.ok(port > 0);
    assert.equal(carlab.url, `http://127.0.0.1:${port}/`);
    assert.deepEqual(carlab.urls, [carlab.url]);
    assert.equal(carlab.tls, null);
  });

  test('GET /healthz', async () => {
    const res = await fetch(new URL('/healthz', carlab.url));
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    const body = await res.json();
    const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
    assert.equal(body.status, 'ok');
    assert.equal(body.version, version);
    assert.equal(typeof body.uptimeS, 'number');
    assert.ok(body.uptimeS >= 0);
  });

  test('GET /metrics with Accept: application/json: the JSON snapshot', async () => {
    const res = await fetch(new URL('/metrics', carlab.url), { headers: { Accept: 'application/json' } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('cache-control'), 'no-store');
    const body = await res.json();
    assert.equal(typeof body.relay, 'object');
    assert.equal(typeof body.signaling, 'object');
    assert.ok(body.process.rssBytes > 0);
    assert.equal(typeof body.process.cpuPct, 'number');
    assert.deepEqual(Object.keys(body).sort(), ['process', 'relay', 'signaling']);
  });

  test('GET /metrics: the Prometheus exposition by default', async () => {
    const res = await fetch(new URL('/metrics', carlab.url));
    assert.equal(res.status, 200);
    assert.match(String(res.headers.get('content-type')), /^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    assert.match(text, /^# TYPE process_cpu_seconds_total counter$/m);
    assert.match(text, /^# TYPE carlab_relay_updates_forwarded_total counter$/m);
    assert.match(text, /^carlab_relay_connections\{transport="relay"\} 0$/m);
  });

  test('GET /config.json: ICE servers, paths, how often to report and whether the server records; never the dashboard token', async () => {
    const res = await fetch(new URL('/config.json', carlab.url));
    assert.equal(res.status, 200);
    const text = await res.text();
    assert.deepEqual(JSON.parse(text), {
      iceServers: [{ urls: 'stun:127.0.0.1:3478' }],
      relayPath: '/relay',
      peerjs: { path: '/peerjs', key: 'peerjs' },
      reports: { intervalMs: 5000, recording: false },
    });
    assert.ok(!text.includes(carlab.study.dashboardToken));
  });

  test('the dashboard needs its token; the URL the server gives has it', async () => {
    assert.equal((await fetch(new URL('/dashboard', carlab.url))).status, 401);
    assert.equal((await fetch(new URL('/dashboard/feed', carlab.url))).status, 401);
    const page = await fetch(carlab.dashboardUrl);
    assert.equal(page.status, 200);
    assert.ok(!(await page.text()).includes(carlab.study.dashboardToken), 'the page never carries the token');
  });

  test('JSON routes allow GET and HEAD only', async () => {
    const res = await fetch(new URL('/healthz', carlab.url), { method: 'POST' });
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('allow'), 'GET, HEAD');
  });

  test('GET /peerjs/peerjs/id returns an id from PeerServer', async () => {
    const res = await fetch(new URL('/peerjs/peerjs/id', carlab.url));
    assert.equal(res.status, 200);
    const id = (await res.text()).trim();
    assert.match(id, /^[\w-]{8,}$/);
  });

  test('the index page is served at /', async () => {
    const res = await fetch(carlab.url);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.match(await res.text(), /carlab test page/);
  });

  test('an unknown path is 404', async () => {
    assert.equal((await fetch(new URL('/no/such/page', carlab.url))).status, 404);
  });

  test('an unknown WebSocket path gets 404', async () => {
    const base = carlab.url.replace(/^http/, 'ws');
    for (const target of ['/nope', '/', '/relay/extra', '/peerjs/other', '/peerjs/peerjs/x']) {
      const result = await handshake(new URL(target, base).href);
      assert.equal(result.opened, false, target);
      assert.equal(result.opened === false && result.status, 404, target);
    }
  });

  test('an upgrade whose raw path only normalises to a service path gets 404, never silence', async () => {
    const net = await import('node:net');
    const { port } = /** @type {import('node:net').AddressInfo} */ (carlab.server.address());
    for (const target of ['/./relay', '/relay/../relay', '/relay#x', `http://127.0.0.1:${port}/relay`, '/peerjs/./peerjs?key=peerjs&id=z&token=t']) {
      const status = await new Promise((resolve) => {
        const socket = net.connect(port, '127.0.0.1');
        let text = '';
        const timer = setTimeout(() => { socket.destroy(); resolve('no answer'); }, 3000);
        socket.on('data', (d) => {
          text += d;
          const m = /^HTTP\/1\.1 (\d+)/.exec(text);
          if (m) { clearTimeout(timer); socket.destroy(); resolve(Number(m[1])); }
        });
        socket.on('error', () => {});
        socket.write(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n`
          + 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n');
      });
      assert.equal(status, 404, target);
    }
  });

  test('the relay path accepts WebSockets', async () => {
    const result = await handshake(new URL('/relay', carlab.url.replace(/^http/, 'ws')).href);
    assert.equal(result.opened, true);
    if (result.opened) result.ws.terminate();
  });

  test('the PeerJS WebSocket path accepts a peer', async () => {
    const url = new URL('/peerjs/peerjs?key=peerjs&id=peer-a&token=t1', carlab.url.replace(/^http/, 'ws'));
    const result = await handshake(url.href);
    assert.equal(result.opened, true);
    if (!result.opened) return;
    const first = JSON.parse(await result.firstMessage);
    assert.equal(first.type, 'OPEN');
    result.ws.terminate();
  });
});

describe('HTTPS with the generated certificate', () => {
  const certDir = path.join(base, 'certs');
  /** @type {import('./server.js').CarlabServer} */
  let carlab;
  before(async () => {
    carlab = await createCarlabServer({ certDir, webRoot });
  });
  after(() => carlab.close());

  test('the certificate covers localhost, 127.0.0.1 and every LAN IPv4', () => {
    assert.equal(carlab.tls?.source, 'generated');
    assert.equal(carlab.tls?.certPath, path.join(certDir, 'cert.pem'));
    const x509 = new X509Certificate(readFileSync(path.join(certDir, 'cert.pem')));
    assert.equal(x509.checkHost('localhost'), 'localhost');
    for (const ip of ['127.0.0.1', ...listLanAddresses()]) assert.equal(x509.checkIP(ip), ip);
  });

  test('a client trusting the certificate connects with servername localhost', async () => {
    const ca = readFileSync(path.join(certDir, 'cert.pem'));
    const { port } = /** @type {import('node:net').AddressInfo} */ (carlab.server.address());
    assert.equal(carlab.url, `https://127.0.0.1:${port}/`);
    const body = await new Promise((resolve, reject) => {
      const req = https.get({ host: '127.0.0.1', port, path: '/healthz', ca, servername: 'localhost', agent: false }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => { text += chunk; });
        res.on('end', () => resolve({ status: res.statusCode, json: JSON.parse(text) }));
      });
      req.on('error', reject);
    });
    assert.deepEqual({ status: body.status, ok: body.json.status }, { status: 200, ok: 'ok' });
  });

  test('a client not trusting it is refused', async () => {
    const { port } = /** @type {import('node:net').AddressInfo} */ (carlab.server.address());
    await assert.rejects(new Promise((resolve, reject) => {
      https.get({ host: '127.0.0.1', port, path: '/healthz', servername: 'localhost', agent: false }, resolve).on('error', reject);
    }), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
  });

  test('wss:// on the relay works with the certificate', async () => {
    const ca = readFileSync(path.join(certDir, 'cert.pem'));
    const { port } = /** @type {import('node:net').AddressInfo} */ (carlab.server.address());
    const result = await handshake(`wss://127.0.0.1:${port}/relay`, /** @type {any} */ ({ ca, servername: 'localhost' }));
    assert.equal(result.opened, true);
    if (result.opened) result.ws.terminate();
  });

  test('a second server reuses the stored certificate', async () => {
    const again = await createCarlabServer({ certDir, webRoot });
    try {
      assert.equal(again.tls?.source, 'reused');
    } finally {
      await again.close();
    }
  });
});

describe('lifecycle', () => {
  test('a busy port rejects with EADDRINUSE', async () => {
    const first = await createCarlabServer({ http: true, webRoot });
    try {
      const { port } = /** @type {import('node:net').AddressInfo} */ (first.server.address());
      await assert.rejects(createCarlabServer({ http: true, webRoot, port }), { code: 'EADDRINUSE' });
    } finally {
      await first.close();
    }
  });

  test('close() is bounded, disconnects WebSocket clients and is idempotent', async () => {
    const carlab = await createCarlabServer({ http: true, webRoot, closeTimeoutMs: 1500 });
    const wsBase = carlab.url.replace(/^http/, 'ws');
    const relayClient = await handshake(new URL('/relay', wsBase).href);
    const peerClient = await handshake(new URL('/peerjs/peerjs?key=peerjs&id=p1&token=t', wsBase).href);
    assert.ok(relayClient.opened && peerClient.opened);
    const closed = Promise.all([relayClient, peerClient].map((c) => c.opened && new Promise((resolve) => c.ws.once('close', resolve))));

    await Promise.all([carlab.close(), carlab.close()]);
    await closed;
    assert.equal(carlab.server.listening, false);
    await assert.rejects(fetch(carlab.url));
  });

  test('close() cuts off a client that ignores the shutdown', async () => {
    const carlab = await createCarlabServer({ http: true, webRoot, closeTimeoutMs: 300 });
    const { port } = /** @type {import('node:net').AddressInfo} */ (carlab.server.address());
    // A raw TCP client holding a half-sent request open.
    const net = await import('node:net');
    const socket = net.connect(port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
    const ended = new Promise((resolve) => socket.once('close', resolve));
    await carlab.close(); // returns at all only because its bound cuts the socket off
    await ended;
  });
});

test('belongsToServices', () => {
  assert.equal(belongsToServices('/relay', '/relay', '/peerjs/peerjs'), true);
  assert.equal(belongsToServices('/relay?x=1', '/relay', '/peerjs/peerjs'), true);
  assert.equal(belongsToServices('/peerjs/peerjs?key=k', '/relay', '/peerjs/peerjs'), true);
  assert.equal(belongsToServices('/peerjs/other', '/relay', '/peerjs/peerjs'), false);
  assert.equal(belongsToServices('/peerjs/other', '/relay', '/peerjs'), true);
  assert.equal(belongsToServices('/peerjs/peerjs/x', '/relay', '/peerjs/peerjs', true), false);
  assert.equal(belongsToServices('/peerjs/peerjs?key=k', '/relay', '/peerjs/peerjs', true), true);
  // read as the services read it: nothing normalised, or the request would hang unanswered
  for (const target of ['/./relay', '/relay/../relay', '/relay#x', 'http://127.0.0.1/relay', '//relay']) {
    assert.equal(belongsToServices(target, '/relay', '/peerjs/peerjs', true), false, target);
  }
  assert.equal(belongsToServices('/relayx', '/relay', '/peerjs'), false);
  assert.equal(belongsToServices('/', '/relay', '/peerjs'), false);
});

test('createCpuMeter reports percent of one core since the last call', async () => {
  // Each reading is bracketed by this process's own CPU and clock read just before and just after
  // the meter's call: the meter's span lies between the inner and the outer span, so its percent
  // lies between inner CPU / outer time and outer CPU / inner time, however long the machine kept
  // the process off its core between the readings (an unbracketed span once read 20.2 % against
  // the meter's 13 % on a loaded machine: the process waited for a core between the two calls).
  const sample = () => { const u = process.cpuUsage(); return { cpuMicros: u.user + u.system, ms: performance.now() }; };
  /** @param {number} got @param {{ cpuMicros: number, ms: number }[]} samples before and after each of the two calls @param {string} what */
  const within = (got, [before0, after0, before1, after1], what) => {
    const percent = (/** @type {number} */ cpuMicros, /** @type {number} */ ms) => (100 * cpuMicros) / 1000 / ms;
    const low = percent(before1.cpuMicros - after0.cpuMicros, after1.ms - before0.ms);
    const high = percent(after1.cpuMicros - before0.cpuMicros, before1.ms - after0.ms);
    // 0.05: the meter rounds to one decimal
    assert.ok(got >= low - 0.05 && got <= high + 0.05, `${what}: ${got} %, outside ${low.toFixed(1)}..${high.toFixed(1)} %`);
  };
  const s0 = sample();
  const meter = createCpuMeter();
  const s1 = sample();
  const burnedFrom = process.cpuUsage();
  while ((process.cpuUsage(burnedFrom).user + process.cpuUsage(burnedFrom).system) < 30_000) { /* burn 30 ms of CPU */ }
  const s2 = sample();
  const busy = meter();
  const s3 = sample();
  await new Promise((resolve) => setTimeout(resolve, 50));
  const s4 = sample();
  const rested = meter();
  const s5 = sample();
  assert.ok(busy > 0 && busy < 400, `busy ${busy}`);
  within(busy, [s0, s1, s2, s3], 'the burn');
  // the burn counted again would put this reading far above its bracket
  within(rested, [s2, s3, s4, s5], 'since the last call');
});
