// Kept scenes end to end (docs/operations.md "Kept scenes"): a group adds
// objects, every member leaves, and the first member back sees them, on each
// transport whose updates the server relays; and across `carlab start` killed
// with SIGKILL and started again on the same store.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { RTCPeerConnection } from 'node-datachannel/polyfill';

import { CarClient } from '../core/client.js';
import { createTransport } from '../web/src/transport/index.js';
import { waitFor } from '../lab/shared/loop-stall.js';
import { createCarlabServer } from './server.js';

const BIN = fileURLToPath(new URL('../scripts/carlab.js', import.meta.url));
/** @type {(() => Promise<void> | void)[]} */
const cleanups = [];
after(async () => { for (const c of cleanups.reverse()) await c(); });

/** @type {import('../core/protocol.js').Pose} */
const HERE = [0, 0, 0, 0, 0, 0, 1];
/** @type {import('../core/protocol.js').Pose} */
const CUBE_AT = [0.25, 0, -0.5, 0, 0, 0, 1];
/** @type {import('../core/protocol.js').Pose} */
const SPHERE_AT = [-0.125, 0, 0.5, 0, 0, 0, 1];

/**
 * A member of `group` on `transport`, joined and cycling.
 * @param {string} baseUrl @param {string} transport @param {string} group @param {string} name
 */
async function member(baseUrl, transport, group, name) {
  const client = new CarClient({
    transport: createTransport(transport, { baseUrl, config: { relayPath: '/relay', iceServers: [], peerjs: { path: '/peerjs', key: 'peerjs' } }, WebSocket, RTCPeerConnection, reconnect: false }),
    group, name, cycleMs: 50, cycleMode: 'pipelined', ackTimeoutMs: 2000, pose: () => HERE,
  });
  await client.connect();
  client.start();
  cleanups.push(() => client.close());
  return client;
}

/** The live objects a member holds, by kind, without ids (which the adder picked). @param {CarClient} c */
const objectsOf = (c) => c.scene.objects().filter((o) => o.id !== 0).map((o) => ({ kind: o.kind, pose: o.pose })).sort((a, b) => a.kind - b.kind);

/**
 * Two members add a cube and a sphere and move the cube; both leave; resolves with what they held.
 * @param {string} baseUrl @param {string} transport @param {string} group
 */
async function arrangeAndLeave(baseUrl, transport, group) {
  const a = await member(baseUrl, transport, group, 'a');
  const b = await member(baseUrl, transport, group, 'b');
  await waitFor(() => a.members.size === 1 && b.members.size === 1, 10_000, 'the two see each other');
  const cube = a.addObject('cube', HERE);
  b.addObject('sphere', SPHERE_AT);
  a.moveSceneObject(cube.id, CUBE_AT);
  await waitFor(() => objectsOf(a).length === 2 && JSON.stringify(objectsOf(a)) === JSON.stringify(objectsOf(b)), 10_000, 'both hold both objects');
  const held = objectsOf(a);
  await new Promise((r) => setTimeout(r, 200)); // the last edits' UPDATEs have passed the relay
  a.close();
  b.close();
  return held;
}

for (const transport of ['relay', 'relay-faithful', 'relay-udp']) {
  test(`${transport}: a group's objects outlive it; the first member back sees them`, { timeout: 60_000 }, async () => {
    const carlab = await createCarlabServer({ http: true, keptScenes: { dir: null } });
    cleanups.push(() => carlab.close());
    const base = carlab.url;
    // the pages are told, and say so (web/src/ui/kept-notice.js)
    assert.deepEqual((await (await fetch(`${base}config.json`)).json()).keptScenes, { ttlS: 7 * 24 * 3600 });
    const held = await arrangeAndLeave(base, transport, `kept-${transport}`);
    await waitFor(() => carlab.sceneStore?.get(`kept-${transport}`) !== null, 5_000, 'the scene is kept');
    const c = await member(base, transport, `kept-${transport}`, 'c');
    await waitFor(() => objectsOf(c).length === 2, 5_000, 'the first member back holds both objects');
    assert.deepEqual(objectsOf(c), held);
    assert.equal(c.sceneRestored?.records, 2, 'the two objects (the car nobody moved is not kept)');
  });
}

/**
 * `carlab start` on a free port with its scenes in `dir`; resolves with its base URL once listening.
 * @param {string} dir
 */
async function startCarlab(dir) {
  const child = spawn(process.execPath, [BIN, 'start', '--http', '--port', '0', '--host', '127.0.0.1', '--no-build', '--no-qr',
    '--scene-store', dir], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, CARLAB_LOG_LEVEL: 'info' } });
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { out += d; });
  const exited = new Promise((r) => child.once('exit', (code, signal) => r(signal ?? code)));
  cleanups.push(() => { child.kill('SIGKILL'); });
  await waitFor(() => /"event":"listening"/.test(out), 20_000, 'carlab start listens').catch((err) => { throw new Error(`${err.message}: ${out}`); });
  const url = /"url":"(http:\/\/127\.0\.0\.1:\d+\/)"/.exec(out)?.[1];
  assert.ok(url, out);
  return { child, exited, url };
}

test('carlab start killed with SIGKILL and started again: the first member back sees the same objects', { timeout: 90_000 }, async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'carlab-kept-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const first = await startCarlab(dir);
  const held = await arrangeAndLeave(first.url, 'relay', 'class');
  await waitFor(async () => (await readdir(dir)).some((f) => f.endsWith('.json')), 5_000, 'the scene is on disk');
  first.child.kill('SIGKILL');
  assert.equal(await first.exited, 'SIGKILL');
  const second = await startCarlab(dir);
  const c = await member(second.url, 'relay', 'class', 'back');
  await waitFor(() => objectsOf(c).length === 2, 5_000, 'the first member back holds both objects');
  assert.deepEqual(objectsOf(c), held);
  second.child.kill('SIGTERM');
  assert.equal(await second.exited, 0);
});
