// "Several machines" for real: each relay node in its own network namespace
// with its own link to the NATS server (in another namespace), clients
// reaching the relays over the links. Cutting one node's path to NATS leaves
// its clients connected, makes it unready, and the other node drops its
// members; healing the cut brings them back and updates flow again.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { CarClient } from '../../core/client.js';
import { createRelayTransport } from '../../web/src/transport/relay.js';
import { startNatsServer } from '../../server/nats-process.js';
import { planTopology } from '../net/commands.js';
import { createTopology, destroyTopology, joinBridgeFromRoot, namespacesForbidden, runCommand } from '../net/system.js';
import { startServerChild } from '../target/server-process.js';
import { waitFor } from '../shared/loop-stall.js';

const forbidden = namespacesForbidden();
/** A network of our own (fleet-machines and haproxy have 10.203 and 10.202), since this process joins its bridge. */
const NET = '10.204';
/** The test process's own address on the run's bridge. */
const ROOT_IP = `${NET}.250.250`;
const ROOT_LINK = `carlabcm${process.pid}`.slice(0, 15);

/** @returns {import('../../core/protocol.js').Pose} */
const pose = () => [0, 0, 0, 0, 0, 0, 1];

/** Polled every 100 ms (some look through HTTP). @param {() => boolean | Promise<boolean>} cond @param {number} [timeoutMs] */
const until = (cond, timeoutMs = 20_000) => waitFor(cond, timeoutMs, '', 100);

/** @type {import('../net/commands.js').Topology | null} */
let topology = null;
/** @type {Awaited<ReturnType<typeof startNatsServer>> | null} */
let nats = null;
/** @type {Awaited<ReturnType<typeof startServerChild>>[]} */
const relays = [];

before(async () => {
  if (forbidden) return;
  // Two "machines" (client namespaces of the lab's topology) and NATS in the hub (its server namespace).
  topology = planTopology({ pid: process.pid, seq: 77, links: 2, net: NET });
  createTopology(topology);
  // The test process joins the bridge too, as the clients' network.
  const S = topology.serverNs;
  joinBridgeFromRoot(topology, { link: ROOT_LINK, peer: 'up0', ip: ROOT_IP });
  nats = await startNatsServer({ host: topology.serverIp, netns: S });
  for (let i = 0; i < 2; i++) {
    relays.push(await startServerChild({ host: topology.clientIps[i], natsUrl: nats.url }, { netns: topology.clientNs[i] }));
  }
  await until(async () => (await Promise.all(relays.map((r) => r.metrics()))).every((m) => m.relay.cluster?.nodes === 2));
});

after(async () => {
  for (const r of relays) await r.close().catch(() => {});
  await nats?.stop();
  if (topology) destroyTopology(topology); // the root end of the veth goes with its peer
});

/**
 * Drops (or lets through again) everything between a relay's namespace and NATS.
 * @param {number} i @param {boolean} cut
 */
function cutNatsLink(i, cut) {
  const ns = /** @type {import('../net/commands.js').Topology} */ (topology).clientNs[i];
  const natsIp = /** @type {import('../net/commands.js').Topology} */ (topology).serverIp;
  if (cut) {
    runCommand({ argv: ['ip', 'netns', 'exec', ns, 'nft', '-f', '-'], input: `table inet carlabcut {\n chain out { type filter hook output priority 0; ip daddr ${natsIp} drop; }\n chain in { type filter hook input priority 0; ip saddr ${natsIp} drop; }\n}\n` });
  } else {
    runCommand({ argv: ['ip', 'netns', 'exec', ns, 'nft', 'delete', 'table', 'inet', 'carlabcut'] });
  }
}

test('relays on two "machines": a group spans them; a cut to NATS isolates one node, healing rejoins it', { skip: forbidden ?? false, timeout: 90_000 }, async () => {
  /** @param {number} i @param {string} name */
  const client = async (i, name) => {
    const c = new CarClient({
      transport: createRelayTransport({ url: `${relays[i].url.replace(/^http/, 'ws').replace(/\/$/, '')}/relay`, batched: true, WebSocket, reconnect: false }),
      group: 'machines', name, cycleMs: 50, ackTimeoutMs: 2000, pose,
    });
    await c.connect();
    return c;
  };
  const a = await client(0, 'on-a');
  const b = await client(1, 'on-b');
  await until(() => a.members.size === 1 && b.members.size === 1);
  a.start();
  b.start();
  await until(() => (b.streams.get(a.id ?? 0)?.received ?? 0) >= 20 && (a.streams.get(b.id ?? 0)?.received ?? 0) >= 20);

  cutNatsLink(0, true);
  // B's node stops hearing A's node and drops its member; A's node notices it lost NATS.
  await until(() => b.members.size === 0);
  await until(async () => (await relays[0].metrics()).relay.cluster?.nats.connected === false);
  assert.equal(a.closedWith, null, 'A keeps its connection to its own relay');

  cutNatsLink(0, false);
  // Each node must send the other its state again (relay/cluster-nodes.js: the hello after a reconnect).
  await until(() => a.members.size === 1 && b.members.size === 1, 30_000).catch(async (err) => {
    const cluster = (await Promise.all(relays.map((r) => r.metrics()))).map((m) => m.relay.cluster);
    throw new Error(`${err.message}: members A ${a.members.size}, B ${b.members.size}; nodes ${JSON.stringify(cluster)}`);
  });
  const heard = b.streams.get(a.id ?? 0)?.received ?? 0;
  await until(() => (b.streams.get(a.id ?? 0)?.received ?? 0) >= heard + 20);
  const status = (await relays[0].metrics()).relay.cluster;
  assert.equal(status.nats.connected, true);
  assert.ok(status.nats.disconnects >= 1, 'the cut is on record');
  a.close();
  b.close();
});
