// `carlab start --cluster N` and `--nats URL` as a user runs them: real
// processes, a real nats-server, one port.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { workerArgv, workerCount } from './cluster.js';
import { freePort } from './nats-process.js';
import { parseStartOptions } from './options.js';

const BIN = fileURLToPath(new URL('../scripts/carlab.js', import.meta.url));

/** @param {() => Promise<boolean>} cond @param {number} [timeoutMs] */
async function until(cond, timeoutMs = 20000) {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** @param {number} pid */
function alive(pid) {
  try { process.kill(pid, 0); return true; } catch { return false; }
}

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

/** @param {string[]} args @param {NodeJS.ProcessEnv} [env] */
function carlab(args, env = {}) {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d) => { output += d; });
  child.stderr.on('data', (d) => { output += d; });
  const exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, exited, output: () => output };
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

test('workers run `carlab start --nats URL` with the user\'s flags', () => {
  assert.deepEqual(workerArgv(['--http', '--cluster', '3', '--port', '9000', '--nats=nats://a:1'], 'nats://127.0.0.1:4222'),
    ['--http', '--port', '9000', '--nats', 'nats://127.0.0.1:4222', '--no-build', '--no-qr', '--no-banner']);
  assert.equal(workerCount(3), 3);
  assert.ok(workerCount(0) >= 1, '0: one per core');
});

test('carlab start --cluster 2: one port, two nodes, /readyz, a killed worker replaced, SIGTERM stops all, NATS too', { timeout: 90_000 }, async () => {
  const port = await freePort();
  const run = carlab(['start', '--cluster', '2', '--http', '--host', '127.0.0.1', '--port', String(port), '--no-build', '--no-qr']);
  const base = `http://127.0.0.1:${port}`;
  try {
    // Ready as a cluster node (the web build may be missing in a fresh clone: that check is apart).
    await until(async () => (await getJson(`${base}/readyz`)).body?.checks?.cluster?.ok === true);
    /** @type {Set<number>} */
    const pids = new Set();
    await until(async () => {
      const { body } = await getJson(`${base}/metrics`);
      if (body?.relay?.cluster?.nodes === 2) pids.add(body.process.pid);
      return pids.size === 2;
    });
    const natsPid = Number((run.output().match(/\(pid (\d+)\)/) ?? [])[1]);
    assert.ok(alive(natsPid), 'carlab started its own nats-server');
    const [victim] = pids;
    process.kill(victim, 'SIGKILL');
    // The port keeps answering from the other worker, and a new worker takes the dead one's place.
    await until(async () => {
      const { body } = await getJson(`${base}/metrics`);
      if (body?.process?.pid && !pids.has(body.process.pid)) pids.add(body.process.pid);
      return pids.size === 3 && body?.relay?.cluster?.nodes === 2;
    }, 30_000).catch((err) => { throw new Error(`${err.message}; carlab printed:\n${run.output()}`); });
    run.child.kill('SIGTERM');
    assert.equal(await run.exited, 0);
    for (const pid of [...pids, natsPid]) await until(async () => !alive(pid), 5000);
  } finally {
    if (run.child.exitCode === null) {
      run.child.kill('SIGKILL');
      const natsPid = Number((run.output().match(/\(pid (\d+)\)/) ?? [])[1]);
      if (natsPid) process.kill(natsPid, 'SIGKILL');
    }
  }
});

test('an unreachable --nats and a missing nats-server are clear errors', { timeout: 30_000 }, async () => {
  const port = await freePort();
  const unreachable = carlab(['start', '--http', '--port', '0', '--no-build', '--no-qr', '--nats', `nats://127.0.0.1:${port}`]);
  assert.equal(await unreachable.exited, 1);
  assert.match(unreachable.output(), /cannot reach NATS at nats:\/\/127\.0\.0\.1:\d+/);
  const missing = carlab(['start', '--http', '--port', '0', '--no-build', '--no-qr', '--cluster', '2'], { CARLAB_NATS_SERVER: '/nonexistent/nats-server' });
  assert.equal(await missing.exited, 1);
  assert.match(missing.output(), /nats-server not found: install it \(apt-get install nats-server\)/);
});
