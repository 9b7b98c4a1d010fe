// carlab on two "machines" behind HAProxy, with the repository's own
// configuration (deploy/haproxy.cfg, its variables filled in): each machine is
// `carlab start --http --nats URL` in its own network namespace (lab/net's
// topology: a hub namespace with a bridge, one link per machine), one
// nats-server in the hub, HAProxy in the test's own namespace with a link to
// the bridge, and the relay clients in the test process connecting to
// HAProxy. Every member of a group lands on one machine and both machines get
// groups; one machine killed with SIGKILL, HAProxy's health check takes it
// out, its groups move whole to the other, its clients reconnect by
// themselves and exchange updates again, and the other machine's clients
// never notice. docs/scale-out.md, "Several machines behind HAProxy".
//
// Addresses: 10.202.0.0/16, not the lab's usual 10.201.0.0/16, because the
// test puts an address of that network in its own (the host's) namespace, and
// the other tests that do so (cluster-machines 10.204, fleet-machines 10.203),
// which run at the same time, take theirs: two links claiming one network
// would steal each other's packets.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { CarClient } from '../../core/client.js';
import { createTransport } from '../../web/src/transport/index.js';
import { freePort, startNatsServer } from '../../server/nats-process.js';
import { loadTlsCertificate } from '../../server/tls.js';
import { startStallMeter } from '../shared/loop-stall.js';
import { planTopology } from '../net/commands.js';
import { createTopology, destroyTopology, joinBridgeFromRoot, namespacesForbidden, runCommand } from '../net/system.js';
import {
  checkHaproxyConfig, ensureWebBuild, getJson, haproxyEnv, missingTools, serverStates, startCarlabMachine, startHaproxy, until, userExists,
} from './lb.js';

const missingHaproxy = missingTools(['haproxy']).length > 0 ? 'haproxy is not installed (apt-get install haproxy; .ci/run installs it)' : null;
const missing = missingTools(['haproxy', 'ip', 'nats-server']);
const skipMachines = missing.length
  ? `needs ${missing.join(', ')} (apt-get install ${missing.map((t) => (t === 'ip' ? 'iproute2' : t)).join(' ')}; .ci/run installs them)`
  : namespacesForbidden();

/** The test's own address on the machines' network, and its end of the link. */
const NET = '10.202';
const ROOT_IP = `${NET}.250.250`;
const ROOT_LINK = `carlablb${process.pid}`.slice(0, 15);
/** Each machine's carlab port. */
const MACHINE_PORT = 8080;
const GROUPS = 10;
const MEMBERS = 3;

/** What the app gets at /config.json, as far as the relay transport reads it. */
const CONFIG = { iceServers: [], relayPath: '/relay', peerjs: { path: '/peerjs', key: 'peerjs' } };

/** @returns {import('../../core/protocol.js').Pose} */
const pose = () => [0, 0, 0, 0, 0, 0, 1];

/** @type {import('../net/commands.js').Topology | null} */
let topology = null;
/** @type {Awaited<ReturnType<typeof startNatsServer>> | null} */
let nats = null;
/** @type {Awaited<ReturnType<typeof startCarlabMachine>>[]} */
const machines = [];
/** @type {Awaited<ReturnType<typeof startHaproxy>> | null} */
let haproxy = null;
/** http://host:port of the balancer, as clients reach it. */
let lbBase = '';
/** @type {CarClient[]} */
const clients = [];
/** @type {string[]} */
const tempDirs = [];

before(async () => {
  if (skipMachines) return;
  // A machine is ready (and gets clients) only with a web build.
  if (await ensureWebBuild()) console.log('# built web/dist (a fresh clone has none)');
  topology = planTopology({ pid: process.pid, seq: 81, links: 2, net: NET });
  createTopology(topology);
  const S = topology.serverNs;
  joinBridgeFromRoot(topology, { link: ROOT_LINK, peer: 'lb0', ip: ROOT_IP });
  nats = await startNatsServer({ host: topology.serverIp, netns: S });
  const t = topology;
  const natsUrl = nats.url;
  machines.push(...await Promise.all([0, 1].map((i) => startCarlabMachine({ netns: t.clientNs[i], host: t.clientIps[i], port: MACHINE_PORT, nats: natsUrl }))));
  await until(async () => (await Promise.all(machines.map((m) => getJson(`${m.url}/metrics`)))).every((r) => r.body?.relay?.cluster?.nodes === 2), 20_000,
    () => 'the two machines do not see each other through NATS');
  const [lbPort, statsPort] = [await freePort(), await freePort()];
  haproxy = await startHaproxy(haproxyEnv({
    machines: machines.map((m) => m.url.replace(/^http:\/\//, '')), bind: `127.0.0.1:${lbPort}`, stats: `127.0.0.1:${statsPort}`,
    // As Debian's service would run it: root to start, then its own user.
    user: userExists('haproxy') ? 'haproxy' : undefined,
  }));
  lbBase = `http://127.0.0.1:${lbPort}`;
  const lb = haproxy;
  await until(async () => [...(await serverStates(lb.statsBase)).values()].every((s) => s === 'UP'), 10_000,
    () => `HAProxy does not see both machines up:\n${lb.output()}`);
}, { timeout: 240_000 });

after(async () => {
  for (const c of clients) c.close();
  await haproxy?.stop();
  for (const m of machines) await m.stop();
  await nats?.stop();
  if (topology) destroyTopology(topology); // the test's end of the link goes with its peer
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

test('deploy/haproxy.cfg is valid for 2 to 6 machines, with TLS, and names what is missing', { skip: missingHaproxy ?? false, timeout: 30_000 }, async () => {
  const machinesOf = (/** @type {number} */ n) => Array.from({ length: n }, (_, i) => `10.0.0.${i + 1}:8080`);
  for (const n of [2, 6]) {
    const r = checkHaproxyConfig(haproxyEnv({ machines: machinesOf(n), bind: '127.0.0.1:8000', stats: '127.0.0.1:8404' }));
    assert.ok(r.ok, `${n} machines: ${r.output}`);
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'carlab-haproxy-'));
  tempDirs.push(dir);
  const tls = await loadTlsCertificate({ certDir: dir, hosts: ['127.0.0.1', 'localhost'] });
  const pem = path.join(dir, 'carlab.pem');
  writeFileSync(pem, `${tls.cert.trim()}\n${tls.key.trim()}\n`);
  const withTls = checkHaproxyConfig(haproxyEnv({ machines: machinesOf(3), bind: '127.0.0.1:8443', stats: '127.0.0.1:8404', cert: pem }));
  assert.ok(withTls.ok, `TLS: ${withTls.output}`);
  const one = checkHaproxyConfig({ CARLAB_MACHINE_1: '10.0.0.1:8080', CARLAB_LB_BIND: '127.0.0.1:8000', CARLAB_LB_STATS: '127.0.0.1:8404' });
  assert.equal(one.ok, false, 'CARLAB_MACHINE_2 is required');
  assert.match(one.output, /'server' expects <name> and <addr>/);
});

/**
 * A member of `group` connecting through the balancer: the app's relay
 * transport (/relay?g=<group>, reconnecting by itself), a pipelined 100 ms cycle.
 * @param {string} base @param {string} group @param {string} name
 */
function member(base, group, name) {
  return new CarClient({
    transport: createTransport('relay', { baseUrl: base, config: CONFIG, WebSocket, reconnect: true }),
    group, name, cycleMs: 100, cycleMode: 'pipelined', ackTimeoutMs: 3000, pose,
  });
}

/**
 * Whether `pass(receiver, sender)` holds for every two members of one group.
 * @param {CarClient[]} cs @param {(r: CarClient, s: CarClient) => boolean} pass
 */
function everyPair(cs, pass) {
  return cs.every((r) => cs.every((s) => s === r || r.options.group !== s.options.group || pass(r, s)));
}

/** @param {CarClient} r @param {CarClient} s */
const heard = (r, s) => r.streams.get(s.id)?.received ?? 0;

/** Reconnection attempts the client's relay transport made. @param {CarClient} c */
const attempts = (c) => /** @type {import('../../web/src/transport/relay.js').RelayTransport} */ (c.transport).reconnectInfo().attempts;

/** @param {number[]} values @param {number} q */
function quantile(values, q) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
}

/** Each machine's /metrics JSON, in machine order. @returns {Promise<any[]>} */
async function machineMetrics() {
  return (await Promise.all(machines.map((m) => getJson(`${m.url}/metrics`)))).map((r) => r.body);
}

test('two machines behind HAProxy: a group on one machine, groups on both; one machine killed, its groups move whole, its clients come back, the others never notice',
  { skip: skipMachines ?? false, timeout: 120_000 }, async (t) => {
    const lb = /** @type {NonNullable<typeof haproxy>} */ (haproxy);
    const groups = Array.from({ length: GROUPS }, (_, i) => `crew ${i}`);
    /** @type {Map<string, CarClient[]>} */
    const byGroup = new Map();
    for (const group of groups) {
      /** @type {CarClient[]} */
      const members = [];
      for (let i = 0; i < MEMBERS; i++) {
        const c = member(lbBase, group, `${group}/${i}`);
        clients.push(c);
        await c.connect();
        members.push(c);
      }
      byGroup.set(group, members);
    }
    for (const c of clients) c.start();
    await until(() => everyPair(clients, (r, s) => heard(r, s) >= 5), 30_000, () => 'members do not hear each other');

    // (a) Placement: every group on one machine (a group split over two counts on both), both machines used.
    const placed = await machineMetrics();
    const groupsOn = placed.map((b) => b.relay.groups);
    const joinedOn = placed.map((b) => b.relay.joined);
    t.diagnostic(`groups per machine ${groupsOn.join(' + ')}, members ${joinedOn.join(' + ')}`);
    assert.equal(groupsOn[0] + groupsOn[1], GROUPS, `each group on exactly one machine (groups per machine: ${groupsOn.join(', ')})`);
    assert.equal(joinedOn[0] + joinedOn[1], GROUPS * MEMBERS);
    assert.ok(groupsOn.every((n) => n > 0), 'both machines hold groups');
    for (const b of placed) assert.equal(b.relay.cluster.crossNodeUpdates, 0, 'no update crossed NATS: no group spans the machines');
    // Everything else is spread over the machines (leastconn: round-robin while none is busier).
    /** @type {Set<number>} */
    const pids = new Set();
    for (let i = 0; i < 6; i++) pids.add((await getJson(`${lbBase}/metrics`)).body?.process?.pid);
    assert.equal(pids.size, 2, 'plain requests reach both machines');

    // (b) One machine dies.
    const victim = groupsOn[1] > groupsOn[0] ? 1 : 0;
    const server = `m${victim + 1}`;
    const victimMembers = joinedOn[victim];
    // the clients live in this process: a stall of its loop delays their reconnects whatever HAProxy does
    const stallMeter = startStallMeter();
    const killedAt = Date.now();
    machines[victim].kill('SIGKILL');
    /** @type {number | null} */
    let downMs = null;
    await until(async () => {
      const states = await serverStates(lb.statsBase);
      if (downMs === null && states.get(`carlab_groups/${server}`)?.startsWith('DOWN')) downMs = Date.now() - killedAt;
      return downMs !== null && states.get(`carlab_any/${server}`)?.startsWith('DOWN') === true;
    }, 10_000, () => `HAProxy still counts ${server} up:\n${lb.output()}`);
    const moved = () => clients.filter((c) => c.reconnects > 0 || c.outage !== null);
    await until(() => clients.every((c) => c.connected) && moved().length >= victimMembers, 20_000,
      () => `${moved().filter((c) => c.connected).length} of ${victimMembers} clients of the dead machine back`);
    const stallMs = stallMeter.stop();
    const back = moved();
    const stayed = clients.filter((c) => !back.includes(c));
    assert.equal(back.length, victimMembers, 'exactly the dead machine\'s members reconnected');
    for (const [group, members] of byGroup) {
      const n = members.filter((c) => back.includes(c)).length;
      assert.ok(n === 0 || n === MEMBERS, `${group}: moved whole or not at all (${n} of ${MEMBERS} moved)`);
    }
    assert.ok(stayed.every((c) => c.reconnects === 0 && c.closedWith === null && c.connected), 'the other machine\'s members never disconnected');
    const reconnectMs = back.map((c) => c.outages[0]?.ms ?? Infinity);
    const figures = `machine ${server} (${victimMembers} members in ${groupsOn[victim]} groups) SIGKILLed: HAProxy marked it down after ${downMs} ms; `
      + `its members reconnected in p50 ${Math.round(quantile(reconnectMs, 0.5))} ms, p99 ${Math.round(quantile(reconnectMs, 0.99))} ms, `
      + `max ${Math.round(Math.max(...reconnectMs))} ms, attempts each at most ${Math.max(...back.map((c) => attempts(c)))}; `
      + `this process's loop stalled at most ${stallMs} ms`;
    t.diagnostic(figures);
    // Every one of them is back (waited for above, 20 s at most); how fast is the gate `haproxy`
    // (lab/gates/gates.js: carlab sim --placement haproxy --kill-relay-at).
    assert.ok(reconnectMs.every(Number.isFinite), figures);

    // Its groups now live whole on the survivor, and their members hear each other again.
    const survivor = machines[1 - victim];
    await until(async () => {
      const b = (await getJson(`${survivor.url}/metrics`)).body;
      return b?.relay?.groups === GROUPS && b.relay.joined === GROUPS * MEMBERS && b.relay.cluster.nodes === 1;
    }, 15_000, () => 'the survivor does not hold every group alone');
    const at = new Map(back.map((r) => [r, new Map(back.map((s) => [s, heard(r, s)]))]));
    await until(() => everyPair(back, (r, s) => heard(r, s) >= (at.get(r)?.get(s) ?? 0) + 5), 10_000,
      () => 'the moved groups do not exchange updates again');

    // The survivor's own members lost nothing: every update they sent reached every neighbour.
    for (const c of clients) c.stop();
    await until(() => everyPair(stayed, (r, s) => heard(r, s) === (s.cycle.sentTo[r.id] ?? 0)), 10_000,
      () => 'a member of the surviving machine missed updates');
    assert.match(lb.output(), new RegExp(`Server carlab_groups/${server} is DOWN`));
  });
