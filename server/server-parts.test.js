// The parts createCarlabServer is composed of, each on its own: a fake
// relay/signaling or a bare node:http server stands in for the rest.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';

import {
  closeGracefully, createHttpServer, createJsonRoutes, createRequestHandler, createRequestListener,
  createStaticChain, createUpgradeFallback, trackSockets, urlsFor,
} from './server.js';
import { generateCertificate } from './tls.js';

/** @typedef {import('./server.js').RequestHandler} RequestHandler */

const base = mkdtempSync(path.join(tmpdir(), 'carlab-server-parts-'));
after(() => rmSync(base, { recursive: true, force: true }));

/**
 * Serve `listener` on a free loopback port for the length of `body`.
 *
 * @param {(server: http.Server) => void} attach adds the listeners under test
 * @param {(port: number, server: http.Server) => Promise<void>} body
 */
async function withServer(attach, body) {
  const server = http.createServer();
  // Upgraded sockets a listener left alone outlive closeAllConnections().
  const sockets = trackSockets(server);
  attach(server);
  await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
  const { port } = /** @type {net.AddressInfo} */ (server.address());
  try {
    await body(port, server);
  } finally {
    server.closeAllConnections();
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(() => resolve(undefined)));
  }
}

/** How long an upgrade left to a service must stay unanswered (a negative needs a wait). */
const LEFT_OPEN_MS = 200;
/** How long an answer may take: it ends the wait when it comes (200 ms was too short on a starved machine). */
const ANSWER_WAIT_MS = 5000;

/**
 * Send a raw upgrade request and return everything the server wrote before
 * closing, or `null` when it left the socket open for `quietMs`.
 *
 * @param {number} port
 * @param {string} target
 * @param {number} [quietMs]
 * @returns {Promise<string | null>}
 */
function rawUpgrade(port, target, quietMs = ANSWER_WAIT_MS) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(null);
    }, quietMs);
    socket.on('data', (chunk) => { text += chunk; });
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(text);
    });
    socket.once('error', reject);
    socket.write(`GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n`);
  });
}

describe('createHttpServer', () => {
  test('plain HTTP has no TLS info', async () => {
    const { server, tls } = await createHttpServer({ http: true });
    assert.ok(server instanceof http.Server);
    assert.ok(!(server instanceof https.Server));
    assert.equal(tls, null);
  });

  test('a pair in memory serves HTTPS and reports its source, never a path', async () => {
    const pair = await generateCertificate(['localhost']);
    const { server, tls } = await createHttpServer({ tls: { cert: pair.cert, key: pair.key } });
    assert.ok(server instanceof https.Server);
    assert.deepEqual(tls, { certPath: '', source: 'memory' });
  });

  test('http wins over a pair in memory', async () => {
    const { server, tls } = await createHttpServer({ http: true, tls: { cert: 'x', key: 'y' } });
    assert.ok(!(server instanceof https.Server));
    assert.equal(tls, null);
  });
});

test('trackSockets holds open sockets and forgets closed ones', async () => {
  /** @type {Set<net.Socket>} */
  let sockets = new Set();
  await withServer((server) => { sockets = trackSockets(server); }, async (port) => {
    const client = net.connect(port, '127.0.0.1');
    await new Promise((resolve) => client.once('connect', resolve));
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(sockets.size, 1);
    const [serverSide] = sockets;
    const gone = new Promise((resolve) => serverSide.once('close', resolve));
    client.destroy();
    await gone;
    assert.equal(sockets.size, 0);
  });
});

describe('createStaticChain', () => {
  const first = path.join(base, 'first');
  const second = path.join(base, 'second');
  mkdirSync(first);
  mkdirSync(second);
  writeFileSync(path.join(first, 'both.txt'), 'from first');
  writeFileSync(path.join(second, 'both.txt'), 'from second');
  writeFileSync(path.join(second, 'only-second.txt'), 'second only');

  test('the first root with the file answers; a file in none is 404', async () => {
    const serve = createStaticChain([first, second]);
    await withServer((server) => server.on('request', (req, res) => void serve(req, res)), async (port) => {
      const url = (/** @type {string} */ p) => `http://127.0.0.1:${port}${p}`;
      assert.equal(await (await fetch(url('/both.txt'))).text(), 'from first');
      assert.equal(await (await fetch(url('/only-second.txt'))).text(), 'second only');
      assert.equal((await fetch(url('/nowhere.txt'))).status, 404);
    });
  });

  test('one root serves alone', async () => {
    const serve = createStaticChain([second]);
    await withServer((server) => server.on('request', (req, res) => void serve(req, res)), async (port) => {
      assert.equal(await (await fetch(`http://127.0.0.1:${port}/both.txt`)).text(), 'from second');
    });
  });
});

describe('createJsonRoutes', () => {
  const relay = { path: '/r', metrics: () => ({ relayed: 3 }) };
  const signaling = { path: '/p', key: 'k', metrics: () => ({ peers: 2 }) };
  const iceServers = [{ urls: 'stun:s.test' }];

  test('/config.json hands out the ICE servers and where the services are', () => {
    const routes = createJsonRoutes({ relay, signaling, iceServers, startedAt: 0, cpuMeter: () => 0 });
    assert.deepEqual(routes['/config.json'](), { iceServers, relayPath: '/r', peerjs: { path: '/p', key: 'k' } });
  });

  test('/healthz counts uptime from startedAt, in seconds', () => {
    const routes = createJsonRoutes({ relay, signaling, iceServers, startedAt: performance.now() - 2500, cpuMeter: () => 0 });
    const health = /** @type {{ status: string, version: string, uptimeS: number }} */ (routes['/healthz']());
    assert.equal(health.status, 'ok');
    assert.match(health.version, /^\d+\.\d+\.\d+/);
    assert.ok(health.uptimeS >= 2.5 && health.uptimeS < 60, `uptime ${health.uptimeS}`);
  });

  test('/metrics asks the services and the CPU meter on every call', () => {
    let calls = 0;
    const routes = createJsonRoutes({ relay, signaling, iceServers, startedAt: 0, cpuMeter: () => ++calls });
    const metrics = /** @type {{ relay: object, signaling: object, process: { rssBytes: number, cpuPct: number } }} */ (routes['/metrics']());
    assert.deepEqual(metrics.relay, { relayed: 3 });
    assert.deepEqual(metrics.signaling, { peers: 2 });
    assert.equal(metrics.process.cpuPct, 1);
    assert.ok(metrics.process.rssBytes > 0);
    routes['/metrics']();
    assert.equal(calls, 2);
  });

  test('exactly these three paths', () => {
    const routes = createJsonRoutes({ relay, signaling, iceServers, startedAt: 0, cpuMeter: () => 0 });
    assert.deepEqual(Object.keys(routes).sort(), ['/config.json', '/healthz', '/metrics', '/readyz']);
  });
});

describe('createRequestHandler', () => {
  /** @type {string[]} */
  const seen = [];
  const signaling = {
    path: '/peerjs',
    /** @param {http.IncomingMessage} req @param {http.ServerResponse} res */
    handleRequest(req, res) {
      seen.push(`signaling ${req.url}`);
      if (req.url !== '/peerjs/peerjs/id') return false;
      res.end('an-id');
      return true;
    },
  };
  /** @type {RequestHandler} */
  const serveStatic = async (req, res) => {
    seen.push(`static ${req.url}`);
    res.end('static');
  };
  const handle = createRequestHandler({ signaling, jsonRoutes: { '/ping': () => ({ pong: true }) }, serveStatic });

  /**
   * @param {string} target
   * @param {RequestInit} [init]
   */
  async function request(target, init) {
    seen.length = 0;
    /** @type {Response | undefined} */
    let response;
    await withServer((server) => server.on('request', (req, res) => void handle(req, res)), async (port) => {
      response = await fetch(`http://127.0.0.1:${port}${target}`, init);
      await response.clone().text();
    });
    return /** @type {Response} */ (response);
  }

  test('signaling answers under its path', async () => {
    const res = await request('/peerjs/peerjs/id');
    assert.equal(await res.text(), 'an-id');
    assert.deepEqual(seen, ['signaling /peerjs/peerjs/id']);
  });

  test('a path under signaling it does not take is a JSON 404, not a static file', async () => {
    const res = await request('/peerjs/nothing');
    assert.equal(res.status, 404);
    assert.deepEqual(await res.json(), { error: 'not found' });
    assert.deepEqual(seen, ['signaling /peerjs/nothing']);
  });

  test('a JSON route answers GET with its body, uncached', async () => {
    const res = await request('/ping');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.equal(res.headers.get('cache-control'), 'no-store');
    assert.deepEqual(await res.json(), { pong: true });
    assert.deepEqual(seen, []);
  });

  test('a JSON route refuses POST with 405 and Allow', async () => {
    const res = await request('/ping', { method: 'POST' });
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('allow'), 'GET, HEAD');
  });

  test('everything else, inherited names too, goes to the static files', async () => {
    for (const target of ['/index.html', '/peerjsx', '/constructor', '/ping/']) {
      const res = await request(target);
      assert.equal(await res.text(), 'static', target);
      assert.deepEqual(seen, [`static ${target}`]);
    }
  });
});

describe('createRequestListener', () => {
  test('a rejected handler costs a 500 carrying the error code, and the server lives on', async () => {
    let calls = 0;
    const listener = createRequestListener(async (req, res) => {
      calls += 1;
      if (calls === 1) throw Object.assign(new Error('boom'), { code: 'ERR_BOOM' });
      if (calls === 2) throw new Error('no code');
      res.end('fine');
    });
    await withServer((server) => server.on('request', listener), async (port) => {
      const url = `http://127.0.0.1:${port}/`;
      const first = await fetch(url);
      assert.equal(first.status, 500);
      assert.deepEqual(await first.json(), { error: 'internal error', code: 'ERR_BOOM' });
      assert.deepEqual(await (await fetch(url)).json(), { error: 'internal error', code: 'ERR_INTERNAL' });
      assert.equal(await (await fetch(url)).text(), 'fine');
    });
  });

  test('a failure after the headers went out destroys the response', async () => {
    const listener = createRequestListener(async (req, res) => {
      res.writeHead(200, { 'Content-Length': '100' });
      res.write('partial');
      throw new Error('late');
    });
    await withServer((server) => server.on('request', listener), async (port) => {
      const res = await fetch(`http://127.0.0.1:${port}/`);
      assert.equal(res.status, 200);
      await assert.rejects(res.text());
    });
  });
});

describe('createUpgradeFallback', () => {
  /**
   * @param {Parameters<typeof createUpgradeFallback>[0]} parts
   * @param {(port: number) => Promise<void>} body
   */
  const withFallback = (parts, body) => withServer((server) => server.on('upgrade', createUpgradeFallback(parts)), body);

  test('an upgrade no service takes gets a 404 and a closed socket', async () => {
    await withFallback({ relayPath: '/relay', signaling: { path: '/peerjs', wsPath: '/peerjs/peerjs' } }, async (port) => {
      assert.equal(await rawUpgrade(port, '/elsewhere'),
        'HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: 10\r\n\r\nNot Found\n');
    });
  });

  test('the services\' own paths are left to them', async () => {
    await withFallback({ relayPath: '/relay', signaling: { path: '/peerjs', wsPath: '/peerjs/peerjs' } }, async (port) => {
      assert.equal(await rawUpgrade(port, '/relay', LEFT_OPEN_MS), null);
      assert.equal(await rawUpgrade(port, '/peerjs/peerjs?key=k', LEFT_OPEN_MS), null);
    });
  });

  test('with a WebSocket path, only it counts for signaling', async () => {
    await withFallback({ relayPath: '/relay', signaling: { path: '/peerjs', wsPath: '/peerjs/peerjs' } }, async (port) => {
      assert.match(await rawUpgrade(port, '/peerjs/other') ?? 'left open', / 404 /);
    });
  });

  test('without one, anything under the signaling mount counts', async () => {
    await withFallback({ relayPath: '/relay', signaling: { path: '/peerjs' } }, async (port) => {
      assert.equal(await rawUpgrade(port, '/peerjs/other', LEFT_OPEN_MS), null);
    });
  });

  test('extra upgrade paths are prefixes left to other services', async () => {
    await withFallback({ relayPath: '/relay', signaling: { path: '/peerjs' }, extraUpgradePaths: ['/floor'] }, async (port) => {
      assert.equal(await rawUpgrade(port, '/floor/x', LEFT_OPEN_MS), null);
      assert.match(await rawUpgrade(port, '/flo') ?? 'left open', / 404 /);
    });
  });
});

test('urlsFor: localhost first for a wildcard host, the host itself otherwise', () => {
  const wildcard = urlsFor('https', '0.0.0.0', 8443);
  assert.equal(wildcard[0], 'https://localhost:8443/');
  assert.deepEqual(urlsFor('http', '127.0.0.1', 8080), ['http://127.0.0.1:8080/']);
  assert.deepEqual(urlsFor('https', '::1', 1), ['https://[::1]:1/']);
});

describe('closeGracefully', () => {
  test('closes every service and the server, and rejects with a service\'s failure', async () => {
    const server = http.createServer();
    await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
    /** @type {string[]} */
    const closed = [];
    const failure = new Error('relay would not close');
    const services = [
      { close: async () => { closed.push('a'); } },
      { close: async () => { closed.push('b'); throw failure; } },
    ];
    await assert.rejects(closeGracefully({ server, sockets: new Set(), services, timeoutMs: 1000 }), failure);
    assert.deepEqual(closed, ['a', 'b']);
    assert.equal(server.listening, false);
  });

  test('a service that never closes and clients that never leave are cut off at the deadline', { timeout: 5000 }, async () => {
    const server = http.createServer();
    const sockets = trackSockets(server);
    // An upgraded socket nobody answers: closeAllConnections() does not see it.
    server.on('upgrade', () => {});
    await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
    const { port } = /** @type {net.AddressInfo} */ (server.address());
    const connect = async () => {
      const client = net.connect(port, '127.0.0.1');
      await new Promise((resolve) => client.once('connect', resolve));
      return client;
    };
    const halfRequest = await connect();
    halfRequest.write('GET / HTTP/1.1\r\nHost: x\r\n'); // half a request: not idle
    const upgraded = await connect();
    upgraded.write('GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n');
    await new Promise((resolve) => setTimeout(resolve, 50));
    const clientClosed = Promise.all([halfRequest, upgraded].map((client) => new Promise((resolve) => client.once('close', resolve))));
    const started = Date.now();
    await closeGracefully({ server, sockets, services: [{ close: () => new Promise(() => {}) }], timeoutMs: 200 });
    await clientClosed;
    const took = Date.now() - started;
    assert.ok(took >= 150, `returned after ${took} ms, before its 200 ms`); // the service never closes: only the bound returns
    assert.equal(server.listening, false);
  });
});
