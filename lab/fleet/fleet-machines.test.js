// The fleet as several machines for real: two `carlab agent`s, each in its
// own network namespace with its own link to the server's namespace (which
// holds NATS and the server under test), the bench in the root namespace on
// a link of its own, as lab/target/cluster-machines.test.js does for relays. A relay
// and a p2p point over the two agents (every group across both, so p2p
// crosses machines), every peer accounted for, the run the same in shape as a
// one-machine run of the same point; a wrong token refused; one agent killed
// mid-point, its peers lost peers.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';

import { startNatsServer } from '../../server/nats-process.js';
import { run } from '../commands/bench.js';
import { assertAgentLost, assertFleetRuns, killOnceMeasuring, until } from './fleet-harness.js';
import { planTopology } from '../net/commands.js';
import { createTopology, destroyTopology, joinBridgeFromRoot, namespacesForbidden, runCommand } from '../net/system.js';
import { ensureLabPages } from '../pages/build.js';
import { startServerChild } from '../target/server-process.js';

const CARLAB = fileURLToPath(new URL('../../scripts/carlab.js', import.meta.url));
const TOKEN = 'machines-test-token';
const forbidden = namespacesForbidden();
/** A network of our own (cluster-machines and haproxy have 10.204 and 10.202), since this process joins its bridge. */
const NET = '10.203';
const ROOT_IP = `${NET}.250.250`;
const ROOT_LINK = `carlabfl${process.pid}`.slice(0, 15);

/** @type {import('../net/commands.js').Topology | null} */
let topology = null;
/** @type {Awaited<ReturnType<typeof startNatsServer>> | null} */
let nats = null;
/** @type {Awaited<ReturnType<typeof startServerChild>> | null} */
let server = null;
/** @type {{ name: string, child: import('node:child_process').ChildProcess, log: () => string }[]} */
const agents = [];

before(async () => {
  if (forbidden) return;
  await ensureLabPages({ log: () => {} });
  topology = planTopology({ pid: process.pid, seq: 83, links: 2, net: NET });
  createTopology(topology);
  const S = topology.serverNs;
  joinBridgeFromRoot(topology, { link: ROOT_LINK, peer: 'fl0', ip: ROOT_IP });
  nats = await startNatsServer({ host: topology.serverIp, netns: S });
  // the server under test, in the server's namespace; the agents' pages come from their own loopbacks
  server = await startServerChild({ host: topology.serverIp, allowedOrigins: ['*'] }, { netns: S });
  for (let i = 0; i < 2; i++) {
    const name = `m${i}`;
    /** @type {import('node:child_process').ChildProcess} */
    const child = spawn('ip', ['netns', 'exec', topology.clientNs[i], process.execPath, CARLAB, 'agent', '--nats', nats.url, '--name', name], {
      env: { ...process.env, CARLAB_TOKEN: TOKEN }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout?.on('data', (/** @type {Buffer} */ d) => { out += d; });
    child.stderr?.on('data', (/** @type {Buffer} */ d) => { out += d; });
    agents.push({ name, child, log: () => out });
    await until(() => out.includes(`carlab agent ${name}: on `) || child.exitCode !== null, 30_000, `agent ${name}`);
    assert.equal(child.exitCode, null, out);
  }
}, { timeout: 120_000 });

after(async () => {
  for (const a of agents) {
    if (a.child.exitCode !== null || a.child.signalCode !== null) continue;
    a.child.kill('SIGTERM');
    await new Promise((r) => a.child.once('exit', r));
  }
  await server?.close();
  await nats?.stop();
  if (topology) destroyTopology(topology); // our end of the link goes with its peer
});

const sink = () => {
  /** @type {string[]} */
  const chunks = [];
  return { stream: new Writable({ write(c, _e, cb) { chunks.push(String(c)); cb(); } }), text: () => chunks.join('') };
};

/** @param {string[]} argv */
async function bench(argv) {
  const out = await mkdtemp(path.join(tmpdir(), 'carlab-fleet-ns-'));
  try {
    const stderr = sink();
    const code = await run(['--url', /** @type {any} */ (server).url, '--clients', '4', '--group', '2', '--warmup', '1',
      '--peers-per-page', '2', '--no-progress', '--out', out, ...argv], { stdout: sink().stream, stderr: /** @type {any} */ (stderr.stream) });
    return { code, stderr: stderr.text(), results: JSON.parse(await readFile(path.join(out, 'results.json'), 'utf8')) };
  } finally {
    await rm(out, { recursive: true, force: true });
  }
}

const fleetFlags = () => ['--agents', '2', '--nats', /** @type {any} */ (nats).url];

test('machines: a wrong token opens nothing', { skip: forbidden ?? false, timeout: 60_000 }, async () => {
  const { code, results } = await bench([...fleetFlags(), '--token', 'wrong-token-here', '--duration', '2']);
  assert.equal(code, 1);
  assert.match(results.runs[0].error, /agent m[01] refused prepare: wrong token/);
  for (const a of agents) assert.doesNotMatch(a.log(), /peers of relay/);
});

test('machines: relay and p2p over two agents on their own links, every peer accounted for, the same run as on one machine', { skip: forbidden ?? false, timeout: 240_000 }, async () => {
  const fleet = await bench([...fleetFlags(), '--token', TOKEN, '--transport', 'relay,p2p', '--duration', '3']);
  assert.equal(fleet.code, 0, fleet.stderr);
  // each group of 2 has one peer per machine, so each p2p link crossed the namespaces
  assertFleetRuns(fleet.results, { agents: ['m0', 'm1'], natsUrl: `${/** @type {any} */ (nats).url}` });
  // the same point on this machine alone: the same fields, plus the fleet's
  const local = await bench(['--transport', 'relay', '--duration', '2']);
  assert.equal(local.code, 0, local.stderr);
  const keys = (/** @type {any} */ r) => Object.keys(r).sort();
  const extra = keys(fleet.results.runs[0]).filter((k) => !keys(local.results.runs[0]).includes(k));
  const missing = keys(local.results.runs[0]).filter((k) => !keys(fleet.results.runs[0]).includes(k));
  assert.deepEqual(extra, ['fleet', 'lostPeers']);
  assert.deepEqual(missing, []);
});

test('machines: one agent killed mid-point, its peers lost peers with its name and time', { skip: forbidden ?? false, timeout: 120_000 }, async () => {
  const victim = agents[1];
  const mark = victim.log().length;
  const benchDone = bench([...fleetFlags(), '--token', TOKEN, '--transport', 'relay', '--duration', '8']);
  const killer = killOnceMeasuring(victim, benchDone);
  const { code, stderr, results } = await benchDone;
  const killed = await killer;
  assert.equal(code, 0, stderr);
  assert.ok(killed, `the bench ended before m1 measured: ${results.runs[0]?.error}\n${stderr}\nm1: ${victim.log().slice(mark)}`);
  assertAgentLost(results, { agents: ['m0', 'm1'], victim: 'm1' });
});
