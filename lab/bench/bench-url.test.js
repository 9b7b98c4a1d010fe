// `carlab bench --url`: the bench hosts its own peer pages (lab/bench/page-host.js)
// and points them at a separately started `carlab start`, one process or
// `--cluster 2`; a server that does not allow the pages' origin is named with
// the flag that fixes it.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';

import { freePort } from '../../server/nats-process.js';
import { run } from '../commands/bench.js';
import { checkServerAllowsOrigin, originRefusedText, startPageHost } from './page-host.js';
import { ensureLabPages } from '../pages/build.js';
import { resultsSchemaProblems } from '../report/schema.js';

const CARLAB = fileURLToPath(new URL('../../scripts/carlab.js', import.meta.url));

/** @type {import('node:child_process').ChildProcess[]} */
const servers = [];
// The page host serves lab/pages/dist, which a fresh clone has not built yet (the bench command builds it itself).
before(() => ensureLabPages({ log: () => {} }), { timeout: 180_000 });

after(async () => {
  for (const s of servers) if (s.exitCode === null) { s.kill('SIGTERM'); await new Promise((r) => s.once('exit', r)); }
});

/**
 * `carlab start --http` on a free loopback port, ready.
 * @param {string[]} extra
 */
async function startCarlab(extra) {
  const port = await freePort();
  const child = spawn(process.execPath, [CARLAB, 'start', '--http', '--host', '127.0.0.1', '--port', String(port),
    '--no-qr', '--no-banner', '--no-build', '--no-scene-store', '--log-level', 'warn', '--drain-timeout', '0', ...extra], { stdio: ['ignore', 'ignore', 'inherit'] });
  servers.push(child);
  const url = `http://127.0.0.1:${port}`;
  const end = Date.now() + 30_000;
  for (;;) {
    // /healthz, not /readyz: a fresh clone has no web build (--no-build), and the bench needs none
    const ok = await fetch(`${url}/healthz`).then((r) => r.ok, () => false);
    if (ok) return { url, child };
    if (Date.now() > end || child.exitCode !== null) throw new Error(`carlab start ${extra.join(' ')} did not get ready`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** @param {import('node:child_process').ChildProcess} child */
async function stop(child) {
  if (child.exitCode !== null) return;
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
}

const sink = () => {
  /** @type {string[]} */
  const chunks = [];
  return { stream: new Writable({ write(c, _e, cb) { chunks.push(String(c)); cb(); } }), text: () => chunks.join('') };
};

test('a server that does not allow the page host\'s origin is refused with the flag to give; one that does passes', async () => {
  const plain = await startCarlab([]);
  const host = await startPageHost({ server: plain.url });
  try {
    await assert.rejects(checkServerAllowsOrigin(plain.url, host.origin), { message: originRefusedText(plain.url, host.origin) });
    assert.match(originRefusedText(plain.url, host.origin), new RegExp(`--allowed-origins ${host.origin.replace(/[.]/g, '\\.')} \\(or --allowed-origins '\\*'`));
    // the page host answers /config.json for its pages from the server under test
    const config = await (await fetch(`${host.url}/config.json`)).json();
    assert.equal(config.relayPath, '/relay');
    assert.equal((await fetch(`${host.url}/peer.html`)).status, 200);
  } finally {
    await host.close();
    await stop(plain.child);
  }
  const any = await startCarlab(['--allowed-origins', '*']);
  try {
    await checkServerAllowsOrigin(any.url, 'http://127.0.0.1:1');
  } finally {
    await stop(any.child);
  }
});

for (const cluster of [0, 2]) {
  test(`bench --url against a separate carlab start${cluster ? ` --cluster ${cluster}` : ''}: relay and p2p, 4 peers in groups of 2`, { timeout: 240_000 }, async () => {
    const pagesPort = await freePort();
    const origin = `http://127.0.0.1:${pagesPort}`;
    const server = await startCarlab(['--allowed-origins', origin, ...(cluster ? ['--cluster', String(cluster)] : [])]);
    const out = await mkdtemp(path.join(tmpdir(), 'carlab-bench-url-'));
    try {
      const stderr = sink();
      const code = await run(['--url', server.url, '--pages-port', String(pagesPort), '--transport', 'relay,p2p', '--clients', '4', '--group', '2',
        '--duration', '3', '--warmup', '1', '--peers-per-page', '2', '--no-progress', '--out', out],
      { stdout: sink().stream, stderr: /** @type {any} */ (stderr.stream) });
      assert.equal(code, 0, stderr.text());
      const results = JSON.parse(await readFile(path.join(out, 'results.json'), 'utf8'));
      assert.deepEqual(resultsSchemaProblems(results), []);
      for (const r of results.runs) {
        assert.equal(r.error, undefined);
        assert.equal(r.connected, 4, `${r.transport}: every peer connected`);
        assert.ok(r.rt.n > 0, `${r.transport}: RTs measured`);
        assert.equal(r.lossPct, 0);
        assert.deepEqual(r.pageErrors, []);
      }
    } finally {
      await rm(out, { recursive: true, force: true });
      await stop(server.child);
    }
  });
}
