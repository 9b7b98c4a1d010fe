// `carlab start --cluster N` and `--nats URL` as a user runs them: real
// processes, a real nats-server, one port.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import net from 'node:net';
import { once } from 'node:events';
import WebSocket from 'ws';
import { CarClient } from '../core/client.js';
import { createTransport } from '../web/src/transport/index.js';
import { createRouter, publicAddress, workerArgv, workerCount } from './cluster.js';
import { freePort } from './nats-process.js';
import { parseStartOptions } from './options.js';
import { HEAD_LIMITS, ROUTED_CONNECTION, pickRendezvous } from './route.js';
import { loadTlsCertificate } from './tls.js';
import { waitFor } from '../lab/shared/loop-stall.js';
import { processRef, processStart, sameProcess } from '../lab/shared/proctree.js';

const BIN = fileURLToPath(new URL('../scripts/carlab.js', import.meta.url));

/** HTTP and log checks: polled every 100 ms. @param {() => Promise<boolean>} cond @param {number} [timeoutMs] */
const until = (cond, timeoutMs = 20_000) => waitFor(cond, timeoutMs, '', 100);


/**
 * GET a JSON route on a fresh connection each time (a kept-alive one would
 * stick to one worker and hide the others).
 * @param {string} url @returns {Promise<{ status: number, body: any }>}
 */
function getJson(url) {
  return new Promise((resolve) => {
    const req = http.get(url, { agent: false, headers: { Accept: 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (d) => { text += d; });
      res.on('end', () => {
        try { resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }); } catch { resolve({ status: res.statusCode ?? 0, body: null }); }
      });
    });
    req.on('error', () => resolve({ status: 0, body: null }));
    req.setTimeout(2000, () => req.destroy());
  });
}

/**
 * `carlab ARGS` as a child. Every nats-server it prints "(pid N)" of is taken a reference of as
 * the line arrives (lab/shared/proctree.js): `endNats` ends those still running, and never the
 * process the kernel gave a dead one's pid to since (a killed nats-server's pid, reused by a
 * browser thread beside this file, once took that browser down).
 * @param {string[]} args @param {NodeJS.ProcessEnv} [env]
 */
function carlab(args, env = {}) {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  /** @type {Map<number, import('../lab/shared/proctree.js').ProcessRef>} */
  const nats = new Map();
  let scanned = 0; // output before this is whole lines already looked at
  const read = (/** @type {Buffer} */ d) => {
    output += d;
    const end = output.lastIndexOf('\n') + 1;
    for (const [, pid] of output.slice(scanned, end).matchAll(/nats-server[^"]*\(pid (\d+)\)/g)) if (!nats.has(Number(pid))) nats.set(Number(pid), processRef(Number(pid)));
    scanned = Math.max(scanned, end);
  };
  child.stdout.on('data', read);
  child.stderr.on('data', read);
  // The exit code, or the signal that ended it (which fails an equal-to-0 with its name).
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));
  return {
    child, exited, output: () => output,
    /** every nats-server it printed, in order (also after a restart) */
    natsPids: () => [...nats.keys()],
    /** the same, each as it was when printed */
    natsRefs: () => [...nats.values()],
    /** SIGKILL to each nats-server it printed that is still that process */
    endNats: () => { for (const ref of nats.values()) if (sameProcess(ref)) process.kill(ref.pid, 'SIGKILL'); },
  };
}

test('--cluster and --nats parse, with clear errors', () => {
  const ok = parseStartOptions(['--cluster', '2', '--nats', 'nats://10.0.0.5:4222'], { env: {} });
  assert.equal(ok.kind, 'options');
  if (ok.kind === 'options') {
    assert.equal(ok.options.cluster, 2);
    assert.equal(ok.options.nats, 'nats://10.0.0.5:4222');
  }
  const none = parseStartOptions([], { env: {} });
  assert.ok(none.kind === 'options' && none.options.cluster === null && none.options.nats === null, 'no flags: one process, no NATS');
  const bad = parseStartOptions(['--cluster', 'two'], { env: {} });
  assert.ok(bad.kind === 'error' && /--cluster: expected a process count/.test(bad.error.message));
  const badUrl = parseStartOptions(['--nats', 'http://x'], { env: {} });
  assert.ok(badUrl.kind === 'error' && /--nats: expected nats:\/\/host:port/.test(badUrl.error.message));
  const fromEnv = parseStartOptions([], { env: { CARLAB_CLUSTER: '0' } });
  assert.ok(fromEnv.kind === 'options' && fromEnv.options.cluster === 0);
});

test('workers run `carlab start --nats URL` with the user\'s flags, on a private loopback port', () => {
  assert.deepEqual(workerArgv(['--http', '--cluster', '3', '--port', '9000', '--host=0.0.0.0', '--nats=nats://a:1', '--log-level', 'warn'], 'nats://127.0.0.1:4222'),
    ['--http', '--log-level', 'warn', '--nats', 'nats://127.0.0.1:4222', '--host', '127.0.0.1', '--port', '0', '--no-build', '--no-qr', '--no-banner']);
  assert.deepEqual(publicAddress(['--http', '--port', '9000', '--host', '10.0.0.5'], {}), { host: '10.0.0.5', port: 9000, http: true });
  assert.deepEqual(publicAddress([], { CARLAB_PORT: '8555' }), { host: '0.0.0.0', port: 8555, http: false }, 'the environment counts as for `carlab start`');
  assert.equal(workerCount(3), 3);
  assert.ok(workerCount(0) >= 1, '0: one per core');
});

test('carlab start --cluster 2: one port, two nodes, /readyz, a killed worker replaced, SIGTERM stops all, NATS too', { timeout: 90_000 }, async () => {
  const port = await freePort();
  const run = carlab(['start', '--cluster', '2', '--http', '--host', '127.0.0.1', '--port', String(port), '--no-build', '--no-qr', '--no-scene-store']);
  const base = `http://127.0.0.1:${port}`;
  try {
    // Ready as a cluster node (the web build may be missing in a fresh clone: that check is apart).
    await until(async () => (await getJson(`${base}/readyz`)).body?.checks?.cluster?.ok === true);
    /** @type {Map<number, import('../lab/shared/proctree.js').ProcessRef>} */
    const workers = new Map();
    await until(async () => {
      const { body } = await getJson(`${base}/metrics`);
      if (body?.relay?.cluster?.nodes === 2 && !workers.has(body.process.pid)) workers.set(body.process.pid, processRef(body.process.pid));
      return workers.size === 2;
    });
    const [natsPid] = run.natsPids();
    assert.ok(natsPid !== undefined && processStart(natsPid) !== null, 'carlab started its own nats-server');
    const [victim] = workers.keys();
    process.kill(victim, 'SIGKILL');
    // The port keeps answering from the other worker, and a new worker takes the dead one's place.
    await until(async () => {
      const { body } = await getJson(`${base}/metrics`);
      if (body?.process?.pid && !workers.has(body.process.pid)) workers.set(body.process.pid, processRef(body.process.pid));
      return workers.size === 3 && body?.relay?.cluster?.nodes === 2;
    }, 30_000).catch((err) => { throw new Error(`${err.message}; carlab printed:\n${run.output()}`); });
    run.child.kill('SIGTERM');
    assert.equal(await run.exited, 0);
    for (const ref of [...workers.values(), ...run.natsRefs()]) await until(async () => !sameProcess(ref), 5000);
  } finally {
    if (run.child.exitCode === null) run.child.kill('SIGKILL');
    run.endNats();
  }
});

test('an unreachable --nats and a missing nats-server are clear errors', { timeout: 30_000 }, async () => {
  const port = await freePort();
  const unreachable = carlab(['start', '--http', '--port', '0', '--no-build', '--no-qr', '--no-scene-store', '--nats', `nats://127.0.0.1:${port}`]);
  assert.equal(await unreachable.exited, 1);
  assert.match(unreachable.output(), /cannot reach NATS at nats:\/\/127\.0\.0\.1:\d+/);
  const missing = carlab(['start', '--http', '--port', '0', '--no-build', '--no-qr', '--no-scene-store', '--cluster', '2'], { CARLAB_NATS_SERVER: '/nonexistent/nats-server' });
  assert.equal(await missing.exited, 1);
  assert.match(missing.output(), /nats-server not found: install it \(apt-get install nats-server\)/);
});

// ---------------------------------------------------------------- the router alone

/**
 * What a fake worker was handed.
 * @typedef {{ slot: number, message: { cmd: string, head: string }, socket: net.Socket }} Handed
 */

/**
 * What `worker.send(message, socket)` and the worker do with a socket, in
 * one process: the handle leaves the primary's socket as it is (whatever
 * that socket read stays behind) and becomes a new socket that reads on from
 * the kernel.
 * @param {net.Socket} socket
 */
function adoptHandle(socket) {
  const s = /** @type {any} */ (socket);
  const handle = s._handle;
  // child_process drops whatever the handle reads once it is sent: the router must have stopped it.
  assert.ok(!handle.reading, 'the primary stopped reading before handing the socket over');
  assert.equal(socket.readableLength, 0, 'nothing left behind in the primary\'s buffer');
  s._handle = null;
  const adopted = new net.Socket(/** @type {net.SocketConstructorOpts} */ (/** @type {unknown} */ ({ handle, readable: true, writable: true })));
  adopted.on('error', () => {});
  return adopted;
}

/**
 * A router on a loopback port whose "workers" only record what they are
 * handed (the socket stays in this process, so the test can read on from it).
 * @param {{ workers?: number, readHeads?: boolean, limits?: Partial<import('./route.js').HeadLimits> }} [o]
 */
async function fakeRouter(o = {}) {
  /** @type {Handed[]} */
  const handed = [];
  const live = Array.from({ length: o.workers ?? 2 }, (_, slot) => ({
    slot,
    worker: /** @type {import('node:cluster').Worker} */ (/** @type {unknown} */ ({
      send: (/** @type {any} */ message, /** @type {net.Socket} */ socket, /** @type {unknown} */ _options, /** @type {(e: Error | null) => void} */ cb) => {
        handed.push({ slot, message, socket: adoptHandle(socket) });
        cb(null);
        return true;
      },
    })),
  }));
  const router = createRouter({ live: () => live, readHeads: o.readHeads ?? true, limits: { ...HEAD_LIMITS, ...o.limits } });
  router.server.listen(0, '127.0.0.1');
  await once(router.server, 'listening');
  const { port } = /** @type {net.AddressInfo} */ (router.server.address());
  /** @type {net.Socket[]} */
  const clients = [];
  return {
    handed, stats: router.stats, live,
    async connect() {
      const socket = net.connect(port, '127.0.0.1');
      socket.on('error', () => {});
      clients.push(socket);
      await once(socket, 'connect');
      return socket;
    },
    /** @param {number} n */
    handedCount: (n) => until(async () => handed.length >= n, 20_000),
    close() {
      for (const c of clients) c.destroy();
      for (const h of handed) h.socket.destroy();
      router.server.close();
    },
  };
}

/** @param {net.Socket} socket @param {string} text @returns {Promise<string>} what arrives until `text` has */
function readUntil(socket, text) {
  return new Promise((resolve) => {
    let got = '';
    socket.on('data', (d) => { got += d.toString('latin1'); if (got.includes(text)) resolve(got); });
    socket.resume();
  });
}

const UPGRADE_HEAD = (/** @type {string} */ group) =>
  `GET /relay?g=${encodeURIComponent(group)} HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\r\n`;

test('router: an upgrade goes to its group\'s worker with the head it read, and bytes after the head stay unread for the worker', { timeout: 10_000 }, async () => {
  const r = await fakeRouter({ workers: 3 });
  try {
    const socket = await r.connect();
    const head = UPGRADE_HEAD('lab 7');
    socket.write(head.slice(0, 30)); // a head in two segments
    await new Promise((res) => setTimeout(res, 50));
    socket.write(head.slice(30));
    await r.handedCount(1);
    const [first] = r.handed;
    assert.equal(String(first.slot), pickRendezvous('lab 7', ['0', '1', '2']), 'the rendezvous pick of its group');
    assert.deepEqual(first.message, { cmd: ROUTED_CONNECTION, head, id: 1 });
    socket.write('AFTER-THE-HEAD');
    assert.equal(await readUntil(first.socket, 'AFTER-THE-HEAD'), 'AFTER-THE-HEAD', 'not lost, not read twice');
    // Plain HTTP (a g there too) and upgrades without g: round-robin over the workers.
    for (const request of ['GET /readyz?g=lab HTTP/1.1\r\nHost: h\r\n\r\n', 'GET /relay HTTP/1.1\r\nUpgrade: websocket\r\n\r\n', 'GET / HTTP/1.1\r\n\r\n']) {
      (await r.connect()).write(request);
      await r.handedCount(r.handed.length + 1);
    }
    assert.deepEqual(r.handed.slice(1).map((h) => h.slot), [0, 1, 2]);
    assert.deepEqual([r.stats.byGroup, r.stats.roundRobin], [1, 3]);
  } finally {
    r.close();
  }
});

test('router: a slowloris, an oversized head and too many heads at once are handed on round-robin at once, never held', { timeout: 60_000 }, async () => {
  // The slow head must still hold the one pending slot when the next connection is accepted:
  // with 200 ms, a 200 ms stall of this process between the two accepts let it go first (CI).
  const timeoutMs = 2000;
  const r = await fakeRouter({ limits: { timeoutMs, maxBytes: 64, maxPending: 1 } });
  try {
    const slow = await r.connect();
    slow.write('GET /relay?g=x HTTP/1.1\r\n'); // and never more
    const unread = await r.connect(); // the one pending slot is taken: this one goes unread
    await r.handedCount(1);
    assert.equal(r.handed[0].message.head, '', 'handed without reading');
    assert.equal(r.stats.unread, 1);
    await r.handedCount(2);
    assert.equal(r.handed[1].message.head, 'GET /relay?g=x HTTP/1.1\r\n', 'with what it had sent, for the worker to answer');
    const big = await r.connect();
    big.write(`GET /relay?g=${'x'.repeat(100)}`);
    await r.handedCount(3);
    assert.equal(r.handed[2].message.head, `GET /relay?g=${'x'.repeat(100)}`, 'everything read, past the limit');
    assert.deepEqual([r.stats.headTimeouts, r.stats.headTooLarge, r.stats.byGroup], [1, 1, 0]);
    unread.write('still there');
    assert.equal(await readUntil(r.handed[0].socket, 'still there'), 'still there');
    void slow; void big;
  } finally {
    r.close();
  }
});

test('router: HTTPS connections are handed on unread (the bytes reach the worker untouched); no worker: closed', { timeout: 10_000 }, async () => {
  const r = await fakeRouter({ readHeads: false });
  try {
    const socket = await r.connect();
    socket.write('\x16\x03\x01 a TLS ClientHello');
    await r.handedCount(1);
    assert.equal(r.handed[0].message.head, '');
    assert.equal(await readUntil(r.handed[0].socket, 'ClientHello'), '\x16\x03\x01 a TLS ClientHello');
    r.live.length = 0; // every worker restarting
    const orphan = await r.connect();
    await once(orphan, 'close');
    assert.equal(r.stats.noWorker, 1);
  } finally {
    r.close();
  }
});

test('router: a worker that dies before it takes a connection handed to it: the client is closed at once, not left waiting', { timeout: 20_000 }, async () => {
  // A real child process as the worker, stopped so that it never takes what it is sent, then killed.
  const child = spawn(process.execPath, ['-e', 'process.on("message", () => {})'], { stdio: ['ignore', 'ignore', 'ignore', 'ipc'] });
  await once(child, 'spawn');
  const router = createRouter({ live: () => [{ slot: 0, worker: /** @type {any} */ (child) }], readHeads: true, limits: HEAD_LIMITS });
  router.server.listen(0, '127.0.0.1');
  await once(router.server, 'listening');
  const { port } = /** @type {net.AddressInfo} */ (router.server.address());
  try {
    process.kill(/** @type {number} */ (child.pid), 'SIGSTOP');
    const clients = [0, 1, 2].map(() => net.connect(port, '127.0.0.1').on('error', () => {}));
    for (const c of clients) c.write(UPGRADE_HEAD('g'));
    await until(async () => router.untaken() === 3, 5000);
    const closed = clients.map((c) => once(c, 'close'));
    child.kill('SIGKILL');
    await once(child, 'exit');
    router.workerGone(/** @type {any} */ (child));
    await Promise.all(closed);
    assert.equal(router.untaken(), 0);
    assert.equal(router.stats.lostWithWorker, 3);
  } finally {
    child.kill('SIGKILL');
    router.server.close();
  }
});

// ---------------------------------------------------------------- real clusters

/** What the app gets at /config.json, as far as the relay transport reads it. */
const CONFIG = { iceServers: [], relayPath: '/relay', peerjs: { path: '/peerjs', key: 'peerjs' } };

/** @returns {import('../core/protocol.js').Pose} */
const pose = () => [0, 0, 0, 0, 0, 0, 1];

/**
 * A WebSocket that drops the URL's group: the primary spreads such
 * connections round-robin, so one group can be made to span workers.
 */
class WebSocketWithoutGroup extends WebSocket {
  /** @param {string} url */
  constructor(url) {
    const u = new URL(url);
    u.searchParams.delete('g');
    super(u.href);
  }
}

/**
 * A member of `group` on the cluster at `base`: the app's relay transport
 * (reconnecting by itself), a pipelined 100 ms cycle.
 * @param {string} base @param {string} group @param {string} name @param {any} [WebSocketClass]
 */
function member(base, group, name, WebSocketClass = WebSocket) {
  return new CarClient({
    transport: createTransport('relay', { baseUrl: base, config: CONFIG, WebSocket: WebSocketClass, reconnect: true }),
    group, name, cycleMs: 100, cycleMode: 'pipelined', ackTimeoutMs: 3000, pose,
  });
}

/**
 * `carlab start --cluster n --http` on a free loopback port, once every
 * worker is a ready cluster node; `pids` in slot order.
 * @param {number} n
 */
async function startCluster(n) {
  const port = await freePort();
  const run = carlab(['start', '--cluster', String(n), '--http', '--host', '127.0.0.1', '--port', String(port), '--no-build', '--no-qr', '--no-scene-store']);
  const base = `http://127.0.0.1:${port}`;
  const failed = (/** @type {Error} */ err) => { throw new Error(`${err.message}; carlab printed:\n${run.output()}`); };
  await until(async () => run.output().includes('"event":"cluster-up"'), 30_000).catch(failed);
  const bodies = await workerMetrics(base, n, (b) => b?.relay?.cluster?.nodes === n).catch(failed);
  const pids = [...bodies.keys()].sort((a, b) => slotOf(a) - slotOf(b));
  return {
    run, base, pids,
    /** every pid carlab printed (nats-server's, also after a restart) */
    natsPids: run.natsPids,
    async stop() {
      if (run.child.exitCode === null) run.child.kill('SIGTERM');
      const code = await Promise.race([run.exited, new Promise((r) => setTimeout(() => r('timeout'), 15_000))]);
      if (code === 'timeout') run.child.kill('SIGKILL');
      run.endNats();
      return code;
    },
  };
}

/** The slot of a worker (its CARLAB_WORKER_SLOT), read from /proc. @param {number} pid */
function slotOf(pid) {
  const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
  return Number((env.find((e) => e.startsWith('CARLAB_WORKER_SLOT=')) ?? '=-1').split('=')[1]);
}

/**
 * /metrics of `n` distinct workers, each answer taken after this call began
 * and passing `accept` (fresh connections go round-robin over the workers).
 * @param {string} base @param {number} n @param {(body: any) => boolean} [accept]
 * @returns {Promise<Map<number, any>>} pid -> body
 */
async function workerMetrics(base, n, accept = () => true) {
  /** @type {Map<number, any>} */
  const seen = new Map();
  await until(async () => {
    const { body } = await getJson(`${base}/metrics`);
    if (body?.process?.pid && accept(body)) seen.set(body.process.pid, body);
    return seen.size >= n;
  }, 20_000);
  return seen;
}

/**
 * Whether `pass(receiver, sender)` holds for every two members of one group.
 * @param {CarClient[]} clients @param {(r: CarClient, s: CarClient) => boolean} pass
 */
function everyPair(clients, pass) {
  return clients.every((r) => clients.every((s) => s === r || r.options.group !== s.options.group || pass(r, s)));
}

/** @param {CarClient[]} clients every member has received at least `n` updates from every other of its group */
function exchanged(clients, n = 3) {
  return everyPair(clients, (r, s) => (r.streams.get(s.id)?.received ?? 0) >= n);
}

/** @param {CarClient[]} clients @returns {Map<CarClient, Map<number, number>>} received per receiver per sender */
function receivedCounts(clients) {
  return new Map(clients.map((r) => [r, new Map([...r.streams].map(([id, s]) => [id, s.received]))]));
}

/** @param {number[]} values @param {number} q */
function quantile(values, q) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
}

test('--cluster 2 --http: every member of a group on one worker (the hash\'s), groups on both, nothing crosses NATS', { timeout: 90_000 }, async () => {
  const cluster = await startCluster(2);
  /** @type {CarClient[]} */
  const clients = [];
  try {
    const groups = Array.from({ length: 8 }, (_, i) => `team ${i}`);
    for (const group of groups) {
      for (let i = 0; i < 3; i++) {
        const c = member(cluster.base, group, `${group}/${i}`);
        await c.connect();
        clients.push(c);
      }
    }
    for (const c of clients) c.start();
    await until(async () => exchanged(clients, 5), 30_000);
    const bodies = await workerMetrics(cluster.base, 2);
    const expected = [0, 0];
    for (const group of groups) expected[Number(pickRendezvous(group, ['0', '1']))]++;
    assert.ok(expected[0] > 0 && expected[1] > 0, 'these groups spread over both slots');
    for (const [slot, pid] of cluster.pids.entries()) {
      const relay = bodies.get(pid).relay;
      assert.equal(relay.groups, expected[slot], `worker in slot ${slot}: the groups the hash gives it, each whole`);
      assert.equal(relay.joined, 3 * expected[slot]);
      assert.equal(relay.cluster.crossNodeUpdates, 0, 'no update crossed NATS');
    }
  } finally {
    for (const c of clients) c.close();
    assert.equal(await cluster.stop(), 0);
  }
});

test('the cluster\'s nats-server killed with SIGKILL: restarted on its port, /readyz 200 on both workers within 5 s, a group spanning both exchanges updates again', { timeout: 90_000 }, async (t) => {
  const cluster = await startCluster(2);
  /** @type {CarClient[]} */
  const clients = [];
  try {
    // Without ?g= the primary spreads them: one group on both workers, so its updates cross NATS.
    for (let i = 0; i < 4; i++) {
      const c = member(cluster.base, 'spanning', `m${i}`, WebSocketWithoutGroup);
      await c.connect();
      clients.push(c);
    }
    const before = await workerMetrics(cluster.base, 2, (b) => b.relay.joined > 0);
    assert.equal(before.size, 2, 'the group has members on both workers');
    for (const c of clients) c.start();
    await until(async () => exchanged(clients), 20_000);
    const [natsPid] = cluster.natsPids();
    assert.ok(processStart(natsPid) !== null);
    process.kill(natsPid, 'SIGKILL');
    const killedAt = Date.now();
    // Fresh connections alternate between the two workers: four ready answers in a row are both.
    let inARow = 0;
    await until(async () => {
      const { body } = await getJson(`${cluster.base}/readyz`);
      inARow = body?.checks?.cluster?.ok === true ? inARow + 1 : 0;
      return inARow >= 4;
    }, 30_000).catch((err) => { throw new Error(`${err.message} (not ready within 30 s); carlab printed:\n${cluster.run.output()}`); });
    const readyMs = Date.now() - killedAt;
    t.diagnostic(`both workers ready ${readyMs} ms after the SIGKILL`);
    assert.match(cluster.run.output(), /"event":"nats-exit".*"signal":"SIGKILL"/);
    const restarted = cluster.natsPids().filter((pid) => pid !== natsPid);
    assert.equal(restarted.length, 1, 'one new nats-server');
    assert.ok(processStart(restarted[0]) !== null);
    const at = receivedCounts(clients);
    await until(async () => everyPair(clients, (r, s) => (r.streams.get(s.id)?.received ?? 0) >= (at.get(r)?.get(s.id) ?? 0) + 5), 15_000);
    const after = await workerMetrics(cluster.base, 2, (b) => b.relay.cluster.nats.connected && b.relay.cluster.nodes === 2);
    for (const body of after.values()) assert.ok(body.relay.cluster.nats.disconnects >= 1, 'each worker saw the outage and came back');
  } finally {
    for (const c of clients) c.close();
    assert.equal(await cluster.stop(), 0);
  }
});

test('--cluster 3, one worker killed with SIGKILL: its groups reconnect whole to the workers the hash now picks, the others lose nothing; its replacement takes new members of its groups', { timeout: 120_000 }, async (t) => {
  const cluster = await startCluster(3);
  /** @type {Map<string, CarClient[]>} */
  const byGroup = new Map();
  const all = () => [...byGroup.values()].flat();
  try {
    const groups = Array.from({ length: 9 }, (_, i) => `crew ${i}`);
    const slotOfGroup = (/** @type {string} */ g, /** @type {string[]} */ slots) => Number(pickRendezvous(g, slots));
    const perSlot = [0, 1, 2].map((slot) => groups.filter((g) => slotOfGroup(g, ['0', '1', '2']) === slot).length);
    const victimSlot = perSlot.indexOf(Math.max(...perSlot));
    for (const group of groups) {
      /** @type {CarClient[]} */
      const members = [];
      for (let i = 0; i < 3; i++) {
        const c = member(cluster.base, group, `${group}/${i}`);
        await c.connect();
        members.push(c);
      }
      byGroup.set(group, members);
    }
    for (const c of all()) c.start();
    await until(async () => exchanged(all()), 30_000);
    const victim = cluster.pids[victimSlot];
    const victimGroups = groups.filter((g) => slotOfGroup(g, ['0', '1', '2']) === victimSlot);
    process.kill(victim, 'SIGKILL');
    const moved = victimGroups.flatMap((g) => byGroup.get(g) ?? []);
    const stayed = groups.filter((g) => !victimGroups.includes(g)).flatMap((g) => byGroup.get(g) ?? []);
    await until(async () => moved.every((c) => c.reconnects >= 1 && c.connected), 20_000).catch((err) => {
      const stuck = moved.filter((c) => !(c.reconnects >= 1 && c.connected))
        .map((c) => `id ${c.id}: connected ${c.connected}, ${JSON.stringify(/** @type {any} */ (c.transport).reconnectInfo?.())}`);
      throw new Error(`${err.message}: ${stuck.length} of ${moved.length} not back: ${stuck.join('; ')}; carlab printed:\n${cluster.run.output().slice(-4000)}`);
    });
    const reconnectMs = moved.map((c) => c.outages[0].ms);
    t.diagnostic(`${moved.length} members reconnected, p99 ${Math.round(quantile(reconnectMs, 0.99))} ms, max ${Math.round(Math.max(...reconnectMs))} ms`);
    assert.ok(stayed.every((c) => c.reconnects === 0), 'members of the other workers never noticed');
    // Where they are now: each group whole, on the worker the hash over the two survivors picks.
    const survivors = [0, 1, 2].filter((slot) => slot !== victimSlot);
    const bodies = await workerMetrics(cluster.base, 2, (b) => survivors.some((slot) => cluster.pids[slot] === b.process.pid));
    for (const slot of survivors) {
      const want = groups.filter((g) => slotOfGroup(g, survivors.map(String)) === slot).length;
      assert.equal(bodies.get(cluster.pids[slot]).relay.groups, want, `slot ${slot} holds ${want} groups, each whole`);
      assert.equal(bodies.get(cluster.pids[slot]).relay.joined, 3 * want);
    }
    const at = receivedCounts(moved);
    await until(async () => everyPair(moved, (r, s) => (r.streams.get(s.id)?.received ?? 0) > (at.get(r)?.get(s.id) ?? 0)), 10_000);
    // The replacement, in the victim's slot, gets the new connections of the victim's groups.
    const replacement = await workerMetrics(cluster.base, 1, (b) => !cluster.pids.includes(b.process.pid) && b.relay.cluster.nodes === 3);
    const [newPid] = replacement.keys();
    assert.equal(slotOf(newPid), victimSlot);
    const late = member(cluster.base, victimGroups[0], 'late');
    await late.connect();
    const lateView = await workerMetrics(cluster.base, 1, (b) => b.process.pid === newPid && b.relay.joined === 1);
    assert.equal(lateView.get(newPid).relay.groups, 1, 'a new member of a victim group lands on the replacement');
    late.close();
    // Members on the surviving workers lost nothing: every update they sent reached every neighbour.
    for (const c of all()) c.stop();
    await until(async () => everyPair(stayed, (r, s) => (r.streams.get(s.id)?.received ?? -1) === s.cycle.sentTo[r.id]), 10_000);
  } finally {
    for (const c of all()) c.close();
    assert.equal(await cluster.stop(), 0);
  }
});

test('--cluster 2 over HTTPS: the primary reads nothing and spreads connections; the workers terminate TLS; a wss group works', { timeout: 90_000 }, async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'carlab-cluster-tls-'));
  const tls = await loadTlsCertificate({ certDir: dir, hosts: ['127.0.0.1', 'localhost'] });
  const port = await freePort();
  const run = carlab(['start', '--cluster', '2', '--cert', tls.certPath, '--key', /** @type {string} */ (tls.keyPath),
    '--host', '127.0.0.1', '--port', String(port), '--no-build', '--no-qr', '--no-scene-store']);
  const base = `https://127.0.0.1:${port}`;
  /** @type {CarClient[]} */
  const clients = [];
  try {
    await until(async () => run.output().includes('"event":"cluster-up"'), 30_000)
      .catch((err) => { throw new Error(`${err.message}; carlab printed:\n${run.output()}`); });
    assert.match(run.output(), /"routing":"round-robin"/);
    /** @type {Set<number>} */
    const pids = new Set();
    await until(async () => {
      const body = await getJsonTls(`${base}/metrics`, tls.cert);
      if (body?.relay?.cluster?.nodes === 2) pids.add(body.process.pid);
      return pids.size === 2;
    }, 20_000);
    /** The app's WebSocket, trusting the test's certificate. */
    class TrustingWebSocket extends WebSocket {
      /** @param {string} url */
      constructor(url) { super(url, { ca: tls.cert }); }
    }
    for (let i = 0; i < 3; i++) {
      const c = member(base, 'secure', `s${i}`, TrustingWebSocket);
      await c.connect();
      clients.push(c);
    }
    for (const c of clients) c.start();
    await until(async () => exchanged(clients), 20_000);
  } finally {
    for (const c of clients) c.close();
    run.child.kill('SIGTERM');
    assert.equal(await run.exited, 0, `carlab printed:\n${run.output().slice(-3000)}`);
    run.endNats();
    rmSync(dir, { recursive: true, force: true });
  }
});

/**
 * GET a JSON route over HTTPS on a fresh connection, trusting `ca`.
 * @param {string} url @param {string} ca @returns {Promise<any>} the body, null on any failure
 */
function getJsonTls(url, ca) {
  return new Promise((resolve) => {
    const req = https.get(url, { agent: false, ca, headers: { Accept: 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (d) => { text += d; });
      res.on('end', () => { try { resolve(JSON.parse(text)); } catch { resolve(null); } });
    });
    req.on('error', () => resolve(null));
    req.setTimeout(2000, () => req.destroy());
  });
}

test('carlab start --cluster 2: a group\'s objects outlive its workers and a nats-server restart (JetStream)', { timeout: 120_000 }, async () => {
  const port = await freePort();
  const store = mkdtempSync(path.join(tmpdir(), 'carlab-cluster-scenes-'));
  const run = carlab(['start', '--cluster', '2', '--http', '--host', '127.0.0.1', '--port', String(port), '--no-build', '--no-qr', '--scene-store', store]);
  const base = `http://127.0.0.1:${port}/`;
  /** @type {CarClient[]} */
  const clients = [];
  /** @param {string} name */
  const member = async (name) => {
    const c = new CarClient({
      transport: createTransport('relay', { baseUrl: base, config: { relayPath: '/relay', iceServers: [], peerjs: { path: '/peerjs', key: 'peerjs' } }, WebSocket, reconnect: false }),
      group: 'kept-in-nats', name, cycleMs: 50, cycleMode: 'pipelined', ackTimeoutMs: 2000, pose: () => [0, 0, 0, 0, 0, 0, 1],
    });
    await c.connect();
    c.start();
    clients.push(c);
    return c;
  };
  /** @param {CarClient} c */
  const kinds = (c) => c.scene.objects().filter((o) => o.id !== 0).map((o) => o.kind).sort();
  try {
    await until(async () => (await getJson(`${base}readyz`)).body?.checks?.cluster?.ok === true);
    /** @type {Set<number>} */
    const workers = new Set();
    await until(async () => {
      const { body } = await getJson(`${base}metrics`);
      if (body?.relay?.cluster?.nodes === 2) workers.add(body.process.pid);
      return workers.size === 2;
    });
    const a = await member('a');
    const b = await member('b');
    await waitFor(() => a.members.size === 1 && b.members.size === 1, 10_000, 'the two see each other');
    a.addObject('cube', [0.25, 0, -0.5, 0, 0, 0, 1]);
    b.addObject('sphere', [-0.125, 0, 0.5, 0, 0, 0, 1]);
    await waitFor(() => kinds(a).length === 2 && kinds(b).length === 2, 10_000, 'both hold both objects');
    await new Promise((r) => setTimeout(r, 300));
    a.close();
    b.close();
    await new Promise((r) => setTimeout(r, 1000)); // the group empties; its scene goes to the bucket
    // every worker (the group's among them) and the nats-server die; the primary brings them back
    for (const pid of workers) process.kill(pid, 'SIGKILL');
    const [natsPid] = run.natsPids();
    process.kill(natsPid, 'SIGKILL');
    await until(async () => run.natsPids().length >= 2, 30_000);
    await until(async () => {
      const { body } = await getJson(`${base}metrics`);
      return body?.relay?.cluster?.nodes === 2 && !workers.has(body.process.pid);
    }, 30_000).catch((err) => { throw new Error(`${err.message}; carlab printed:\n${run.output()}`); });
    const c = await member('back');
    await waitFor(() => kinds(c).length === 2, 10_000, 'the first member back holds both objects');
    assert.deepEqual(kinds(c), [1, 2]);
  } finally {
    for (const c of clients) c.close();
    run.child.kill('SIGTERM');
    await run.exited;
    run.endNats();
    rmSync(store, { recursive: true, force: true });
  }
});
