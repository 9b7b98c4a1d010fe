// A cluster of relays joined by a real nats-server: groups whose members sit
// on different nodes work exactly as on one (every update reaches every
// neighbour once, in order on the reliable relay, ACKs and RT), a node that
// dies loses only its own members, and a NATS restart is survived.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { once } from 'node:events';
import WebSocket from 'ws';
import { createRelay } from './index.js';
import { CloseCode, HelloFlag, MsgType, encode } from '../core/protocol.js';
import { rawClient } from './raw-client-harness.js';
import { connectNatsBroker, ERR_BROKER_UNREACHABLE } from './broker.js';
import { NODE_TIMEOUT_MS, RemoteMember } from './cluster.js';
import { CarClient } from '../core/client.js';
import { createRelayTransport } from '../web/src/transport/relay.js';
import { createRelayUdpTransport } from '../web/src/transport/relay-udp.js';
import { RTCPeerConnection } from 'node-datachannel/polyfill';
import { freePort, startNatsServer } from '../server/nats-process.js';
import { waitFor as until } from '../lab/shared/loop-stall.js';

/** @returns {import('../core/protocol.js').Pose} */
const pose = () => [0, 0, 0, 0, 0, 0, 1];

/**
 * One relay node: an HTTP server, a relay and its own NATS connection.
 * @param {string} natsUrl
 */
async function startNode(natsUrl) {
  const broker = await connectNatsBroker({ url: natsUrl });
  const server = http.createServer();
  const relay = createRelay({ server, path: '/relay', broker, ackTimeoutMs: 5000 });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    relay, broker, url: `ws://127.0.0.1:${port}/relay`,
    /** the graceful way: says goodbye to the cluster */
    async stop() {
      await relay.close();
      await broker.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
    /** a crash: sockets cut, no goodbye, NATS connection gone */
    async crash() {
      // The cluster connection goes first, so nothing of the teardown reaches
      // the others: to them the node just falls silent, as on a SIGKILL.
      await broker.close();
      server.closeAllConnections();
      for (const ws of relay.wss.clients) ws.terminate();
      await new Promise((r) => server.close(r));
    },
  };
}

/** @typedef {Awaited<ReturnType<typeof startNode>>} Node */

/**
 * Clients of groups spread round-robin over the nodes, so each group spans them.
 * @param {Node[]} nodes @param {{ groups: number, size: number, batched: boolean, updates: number, prefix: string }} o
 */
async function spreadClients(nodes, o) {
  /** @type {CarClient[]} */
  const clients = [];
  let n = 0;
  for (let g = 0; g < o.groups; g++) {
    for (let i = 0; i < o.size; i++) {
      const node = nodes[n++ % nodes.length];
      const c = new CarClient({
        transport: createRelayTransport({ url: node.url, batched: o.batched, WebSocket, reconnect: false }),
        group: `${o.prefix}${g}`, name: `c${g}.${i}`, cycleMs: 25, ackTimeoutMs: 5000, maxUpdates: o.updates, pose,
      });
      await c.connect();
      clients.push(c);
    }
  }
  await until(() => clients.every((c) => c.members.size === o.size - 1));
  return clients;
}

describe('a cluster of 3 relays through nats-server', () => {
  /** @type {Awaited<ReturnType<typeof startNatsServer>>} */
  let nats;
  /** @type {Node[]} */
  let nodes = [];
  before(async () => {
    nats = await startNatsServer();
    nodes = [await startNode(nats.url), await startNode(nats.url), await startNode(nats.url)];
    await until(() => nodes.every((n) => n.relay.readiness().ready));
  });
  after(async () => {
    for (const n of nodes) await n.stop().catch(() => {});
    await nats.stop();
  });

  for (const batched of [true, false]) {
    const mode = batched ? 'relay' : 'relay-faithful';
    test(`${mode}: groups spanning 3 nodes lose, duplicate and reorder nothing; RT and ACKs as on one`, async () => {
      const clients = await spreadClients(nodes, { groups: 3, size: 5, batched, updates: 20, prefix: `span-${mode}-` });
      const before = nodes.map((n) => n.relay.cluster?.snapshot().updatesPublished ?? 0);
      for (const c of clients) c.start();
      await until(() => clients.every((c) => c.cycle.completed === 20));
      for (const sender of clients) {
        assert.equal(sender.cycle.updatesSent, 20);
        assert.equal(sender.cycle.ackTimeouts, 0, 'every update completed by ACKs');
        assert.equal(sender.rt.length, 20);
        for (const receiver of clients) {
          if (receiver === sender || receiver.options.group !== sender.options.group) continue;
          const stream = receiver.streams.get(sender.id);
          assert.ok(stream, `${receiver.options.name} heard ${sender.options.name}`);
          assert.equal(sender.cycle.sentTo[receiver.id], 20);
          assert.equal(stream.received, 20, 'every update once');
          assert.equal(stream.duplicates, 0);
          assert.equal(stream.reorders, 0);
        }
      }
      const crossed = nodes.map((n, i) => (n.relay.cluster?.snapshot().updatesPublished ?? 0) - before[i]);
      assert.ok(crossed.every((x) => x > 0), `every node sent updates to the others: ${crossed}`);
      // 5 members round-robin over 3 nodes: every update has neighbours elsewhere, and crosses once.
      assert.equal(crossed.reduce((a, b) => a + b, 0), clients.length * 20);
      for (const c of clients) c.close();
      await until(() => nodes.every((n) => n.relay.groups.memberCount === 0));
    });
  }

  test('relay-udp: a group spanning 3 nodes exchanges updates over data channels; membership follows the channels', async () => {
    /** @type {CarClient[]} */
    const clients = [];
    for (let i = 0; i < 4; i++) {
      clients.push(new CarClient({
        transport: createRelayUdpTransport({ url: nodes[i % 3].url, RTCPeerConnection, WebSocket }),
        group: 'udp-span', name: `u${i}`, cycleMs: 50, ackTimeoutMs: 3000, maxUpdates: 20, pose,
      }));
    }
    await Promise.all(clients.map((c) => c.connect()));
    await until(() => clients.every((c) => c.members.size === 3));
    for (const c of clients) c.start();
    await until(() => clients.every((c) => c.cycle.updatesSent === 20 && !c.cycle.outstanding));
    await new Promise((r) => setTimeout(r, 100)); // stragglers on the wire
    let received = 0;
    let expected = 0;
    for (const sender of clients) {
      for (const receiver of clients) {
        if (receiver === sender) continue;
        expected += sender.cycle.sentTo[receiver.id ?? 0] ?? 0;
        received += receiver.streams.get(sender.id ?? 0)?.received ?? 0;
      }
    }
    // Loopback drops nothing in practice; an unreliable transport may, so allow a sliver.
    assert.equal(expected, 4 * 3 * 20);
    assert.ok(received >= expected * 0.98, `received ${received} of ${expected}`);
    assert.ok(clients.every((c) => c.rt.length >= 18), 'ACKs crossed back');
    for (const c of clients) c.close();
    await until(() => nodes.every((n) => !n.relay.groups.groups.has('g:udp-span')));
  });

  test('bad input closes only its sender, also when its group spans nodes', async () => {
    const clients = await spreadClients(nodes, { groups: 1, size: 3, batched: true, updates: 0, prefix: 'bad-' });
    const bad = new WebSocket(nodes[0].url);
    await once(bad, 'open');
    bad.send(encode({ type: MsgType.HELLO, flags: 1, clientId: 0, group: 'bad-0', name: 'bad', token: '' }));
    await until(() => clients.every((c) => c.members.size === 3));
    const closed = new Promise((resolve) => bad.once('close', (code) => resolve(code)));
    bad.send(new Uint8Array([1, 250, 0, 0])); // version 1, an unknown message type
    assert.equal(await closed, CloseCode.BAD_FRAME);
    await until(() => clients.every((c) => c.members.size === 2));
    for (const c of clients) c.start();
    await until(() => clients.every((c) => c.cycle.completed >= 5));
    assert.ok(clients.every((c) => c.closedWith === null), 'the others keep their sockets');
    for (const c of clients) c.close();
  });

  test('membership is cluster-wide: ids unique, a taken id refused, tokens checked on every node', async () => {
    const [a, b] = nodes;
    const first = new CarClient({ transport: createRelayTransport({ url: a.url, batched: true, WebSocket, reconnect: false }), group: 'locked', name: 'owner', token: 'secret-1', pose });
    await first.connect();
    await until(() => b.relay.groups.groups.get('g:locked')?.members.size === 1);
    const intruder = new CarClient({ transport: createRelayTransport({ url: b.url, batched: true, WebSocket, reconnect: false }), group: 'locked', name: 'x', token: 'wrong', pose });
    await assert.rejects(intruder.connect(), 'a wrong token is refused on another node too');
    const friend = new CarClient({ transport: createRelayTransport({ url: b.url, batched: true, WebSocket, reconnect: false }), group: 'locked', name: 'friend', token: 'secret-1', pose });
    await friend.connect();
    assert.notEqual(friend.id, first.id);
    await until(() => first.members.size === 1 && friend.members.size === 1);
    assert.equal(friend.members.get(first.id ?? 0)?.name, 'owner', 'the WELCOME names the member on the other node');
    const clash = new CarClient({ transport: createRelayTransport({ url: nodes[2].url, batched: true, WebSocket, reconnect: false }), group: 'locked', name: 'clash', token: 'secret-1', clientId: first.id ?? 0, pose });
    await assert.rejects(clash.connect(), 'an id held on another node is taken');
    first.close();
    friend.close();
    await until(() => nodes.every((n) => !n.relay.groups.groups.has('g:locked')));
  });

  test('a node that dies loses only its own members; the others go on', async () => {
    const spare = await startNode(nats.url);
    await until(() => spare.relay.readiness().ready && nodes.every((n) => (n.relay.cluster?.nodes.size ?? 0) >= 3));
    const group = 'survive';
    /** @param {string} url @param {string} name */
    const join = async (url, name) => {
      const c = new CarClient({ transport: createRelayTransport({ url, batched: true, WebSocket, reconnect: false }), group, name, cycleMs: 25, ackTimeoutMs: 2000, pose });
      await c.connect();
      return c;
    };
    const stay = [await join(nodes[0].url, 's0'), await join(nodes[1].url, 's1')];
    const doomed = await join(spare.url, 'doomed');
    await until(() => stay.every((c) => c.members.size === 2));
    for (const c of [...stay, doomed]) c.start();
    await until(() => stay.every((c) => c.cycle.completed >= 10));
    await spare.crash();
    // Without a goodbye, the others notice the silence: within NODE_TIMEOUT_MS plus a heartbeat of
    // their running time (cluster-nodes.test.js, on its own clock). Waited for with the default
    // bound, not that one in wall-clock time: a node's late ticks (a loaded machine) lengthen the
    // silence it waits out by design (NodeDirectory.tick), so a slow machine is late, not wrong.
    await until(() => stay.every((c) => c.members.size === 1));
    const at = stay.map((c) => c.cycle.completed);
    await until(() => stay.every((c, i) => c.cycle.completed >= at[i] + 10));
    for (const c of stay) {
      const other = stay.find((o) => o !== c);
      const stream = other && c.streams.get(other.id ?? 0);
      assert.ok(stream && stream.duplicates === 0 && stream.reorders === 0);
    }
    assert.ok(nodes.some((n) => (n.relay.cluster?.snapshot().nodesLost ?? 0) >= 1), 'the loss was noticed');
    for (const c of [...stay, doomed]) c.close();
  });

  test('one group over the nodes whatever each member picked: a p2p member reaches relayed members of other nodes through LINK, and they reach it', async () => {
    const p = await rawClient(nodes[0].url, 'mixed-span', HelloFlag.MEMBERSHIP_ONLY);
    const r = await rawClient(nodes[1].url, 'mixed-span', HelloFlag.BATCHED);
    const f = await rawClient(nodes[2].url, 'mixed-span', 0);
    await until(() => p.got.filter((m) => m.type === MsgType.MEMBER_JOINED).length === 2);
    // relayed -> p2p across nodes; the p2p member's LINK'd ACK goes back to the sender's node
    r.ws.send(encode({ type: MsgType.UPDATE, sender: r.id, seq: 1, sendTime: 1, pose: pose(), object: null }));
    await until(() => p.got.some((m) => m.type === MsgType.UPDATE));
    await until(() => f.got.some((m) => m.type === MsgType.UPDATE));
    f.ws.send(encode({ type: MsgType.ACK, sender: r.id, seq: 1, acker: f.id }));
    p.ws.send(encode({ type: MsgType.LINK, peers: [r.id], message: { type: MsgType.ACK, sender: r.id, seq: 1, acker: p.id } }));
    await until(() => r.got.some((m) => m.type === MsgType.ACKED_ALL));
    const all = /** @type {import('../core/protocol.js').AckedAllMsg} */ (r.got.find((m) => m.type === MsgType.ACKED_ALL));
    assert.deepEqual([all.acked, all.dropped], [2, 0]);
    // p2p -> relayed on two other nodes; their ACKs come back to the p2p member
    p.ws.send(encode({ type: MsgType.LINK, peers: [r.id, f.id], message: { type: MsgType.UPDATE, sender: p.id, seq: 1, sendTime: 2, pose: pose(), object: null } }));
    const fromP = (/** @type {typeof p} */ c) => c.got.filter((m) => m.type === MsgType.UPDATE && m.sender === p.id).length;
    await until(() => fromP(r) === 1 && fromP(f) === 1);
    r.ws.send(encode({ type: MsgType.ACK, sender: p.id, seq: 1, acker: r.id }));
    f.ws.send(encode({ type: MsgType.ACK, sender: p.id, seq: 1, acker: f.id }));
    await until(() => p.got.filter((m) => m.type === MsgType.ACK).length === 2);
    assert.ok((nodes[0].relay.cluster?.snapshot().linksRouted ?? 0) >= 2, 'one LINK envelope per node');
    for (const c of [p, r, f]) c.ws.close();
    await until(() => nodes.every((n) => n.relay.groups.memberCount === 0));
  });
});

test('a client whose relay died rejoins another with its old id before the death is noticed', { timeout: 30_000 }, async () => {
  const nats = await startNatsServer();
  const [home, other] = [await startNode(nats.url), await startNode(nats.url)];
  try {
    await until(() => home.relay.readiness().ready && other.relay.readiness().ready);
    const friend = new CarClient({ transport: createRelayTransport({ url: other.url, batched: true, WebSocket, reconnect: false }), group: 'claim', name: 'friend', pose });
    const mover = new CarClient({
      transport: createRelayTransport({ url: [home.url, other.url], batched: true, WebSocket, reconnect: { baseMs: 50, maxMs: 200 } }),
      group: 'claim', name: 'mover', pose,
    });
    await friend.connect();
    await mover.connect();
    const id = mover.id;
    await until(() => friend.members.size === 1);
    const killedAt = Date.now();
    await home.crash();
    await until(() => mover.reconnects === 1);
    const tookMs = Date.now() - killedAt;
    assert.equal(mover.id, id, 'the old id, taken over from the dead node');
    assert.ok(tookMs < NODE_TIMEOUT_MS, `rejoined in ${tookMs} ms, before the node timeout`);
    assert.equal(other.relay.cluster?.snapshot().claimsTakenOver, 1);
    // A live holder keeps its id: asking for the friend's id is refused.
    const thief = new CarClient({ transport: createRelayTransport({ url: other.url, batched: true, WebSocket, reconnect: false }), group: 'claim', name: 'x', clientId: friend.id ?? 0, pose });
    await assert.rejects(thief.connect());
    friend.close();
    mover.close();
  } finally {
    await other.stop().catch(() => {});
    await nats.stop();
  }
});

test('a NATS restart is survived: nodes reconnect, resubscribe and carry updates again', { timeout: 60_000 }, async () => {
  const port = await freePort();
  let nats = await startNatsServer({ port });
  const nodes = [await startNode(nats.url), await startNode(nats.url)];
  try {
    await until(() => nodes.every((n) => n.relay.readiness().ready));
    const clients = await spreadClients(nodes, { groups: 1, size: 2, batched: true, updates: 0, prefix: 'restart-' });
    for (const c of clients) c.start();
    await until(() => clients.every((c) => c.cycle.completed >= 5));
    nats.kill();
    await until(() => nodes.every((n) => !n.relay.readiness().ready), 5000);
    assert.match(nodes[0].relay.readiness().reason, /NATS/, '/readyz says why');
    nats = await startNatsServer({ port });
    await until(() => nodes.every((n) => n.relay.readiness().ready), 15_000);
    const [a, b] = clients;
    const heard = a.streams.get(b.id ?? 0)?.received ?? 0;
    await until(() => (a.streams.get(b.id ?? 0)?.received ?? 0) >= heard + 10, 15_000);
    assert.ok(nodes.every((n) => (n.broker.status().disconnects) >= 1), 'the gap was seen and is reported');
    for (const c of clients) c.close();
  } finally {
    for (const n of nodes) await n.stop().catch(() => {});
    await nats.stop();
  }
});

test('an unreachable NATS is a clear error', async () => {
  const port = await freePort();
  await assert.rejects(connectNatsBroker({ url: `nats://127.0.0.1:${port}`, timeoutMs: 1000 }),
    (err) => /** @type {{ code?: string }} */ (err).code === ERR_BROKER_UNREACHABLE && /cannot reach NATS at nats:\/\/127\.0\.0\.1/.test(String(err)));
});

test('remote members are what the registry needs of a session', () => {
  const m = new RemoteMember('n1', { id: 7, name: 'x', ready: true, udp: false, batched: true });
  assert.deepEqual(m.takeQueuedEntries(), []);
  assert.equal(m.pending.size, 0);
  m.push(new Uint8Array(1));
  assert.equal(m.local, false);
  assert.equal(m.node, 'n1');
  assert.equal(m.rtsClockAt(12.5), 12.5); // its node forwards on arrival
});

test('a LINK envelope carries its destinations and the body unchanged; an empty or cut one is refused', async () => {
  const { linkPayload, readLinkPayload } = await import('./cluster-wire.js');
  const body = Uint8Array.of(6, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 3);
  const back = readLinkPayload(linkPayload([7, 9], body));
  assert.deepEqual(back && { ids: back.ids, body: [...back.body] }, { ids: [7, 9], body: [...body] });
  assert.equal(readLinkPayload(linkPayload([], body)), null);
  assert.equal(readLinkPayload(linkPayload([7], body).subarray(0, 6)), null);
  assert.equal(readLinkPayload(Uint8Array.of(0)), null);
});
