// PeerServer across processes, through a real nats-server: a peer on node A
// signals a peer on node B (OFFER/ANSWER/CANDIDATE cross through NATS), ids
// are unique cluster-wide, and the same peer reconnecting elsewhere wins.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { once } from 'node:events';
import WebSocket from 'ws';
import { createSignaling } from './index.js';
import { connectNatsBroker } from '../relay/index.js';
import { NodeDirectory } from '../relay/cluster-nodes.js';
import { startNatsServer } from '../server/nats-process.js';
import { waitFor as until } from '../lab/shared/loop-stall.js';

// The `peer` package's timers never stop: leave once done.
after(() => { setTimeout(() => process.exit(), 500).unref(); });

/** One process's PeerServer on its own port and NATS connection. @param {string} natsUrl */
async function startSignalingNode(natsUrl) {
  const broker = await connectNatsBroker({ url: natsUrl });
  const nodes = new NodeDirectory(broker);
  const server = http.createServer();
  const signaling = createSignaling({ server, broker, nodes });
  server.on('request', (req, res) => { if (!signaling.handleRequest(req, res)) res.writeHead(404).end(); });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    signaling,
    broker,
    /** the other nodes this one has heard from */
    otherNodes: () => nodes.nodes.size,
    /** @param {string} id @param {string} token */
    url: (id, token) => `ws://127.0.0.1:${port}/peerjs/peerjs?key=peerjs&id=${id}&token=${token}`,
    async stop() {
      await signaling.close();
      await broker.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/**
 * A PeerJS client speaking the PeerServer protocol by hand.
 * @param {string} url
 */
async function peer(url) {
  const ws = new WebSocket(url);
  /** @type {any[]} */
  const inbox = [];
  ws.on('message', (d) => inbox.push(JSON.parse(String(d))));
  const closed = new Promise((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: String(reason) })));
  await once(ws, 'open');
  await until(() => inbox.length > 0);
  return { ws, inbox, closed, first: inbox[0] };
}

describe('PeerServer on two nodes joined by NATS', () => {
  /** @type {Awaited<ReturnType<typeof startNatsServer>>} */
  let nats;
  /** @type {Awaited<ReturnType<typeof startSignalingNode>>[]} */
  let nodes = [];
  before(async () => {
    nats = await startNatsServer();
    nodes = [await startSignalingNode(nats.url), await startSignalingNode(nats.url)];
    await until(() => nodes.every((n) => n.otherNodes() === 1)); // heartbeats: the nodes know each other
  });
  after(async () => {
    for (const n of nodes) await n.stop().catch(() => {});
    await nats.stop();
  });

  test('OFFER, ANSWER and CANDIDATE reach a peer on the other node, with src set', async () => {
    const a = await peer(nodes[0].url('peer-a', 'ta'));
    const b = await peer(nodes[1].url('peer-b', 'tb'));
    assert.equal(a.first.type, 'OPEN');
    assert.equal(b.first.type, 'OPEN');
    await until(() => (nodes[0].signaling.metrics().cluster?.remotePeers ?? 0) >= 1);
    for (const type of ['OFFER', 'CANDIDATE']) {
      a.ws.send(JSON.stringify({ type, dst: 'peer-b', payload: { sdp: `x-${type}` } }));
      await until(() => b.inbox.some((m) => m.type === type));
      const got = b.inbox.find((m) => m.type === type);
      assert.equal(got.src, 'peer-a', 'the source is the sender, set by its node');
      assert.deepEqual(got.payload, { sdp: `x-${type}` });
    }
    b.ws.send(JSON.stringify({ type: 'ANSWER', dst: 'peer-a', payload: { sdp: 'y' } }));
    await until(() => a.inbox.some((m) => m.type === 'ANSWER' && m.src === 'peer-b'));
    assert.ok((nodes[0].signaling.metrics().cluster?.forwarded ?? 0) >= 2);
    a.ws.close();
    b.ws.close();
  });

  test('an id held on one node is taken on the other; with the same token the newer socket wins', async () => {
    // The first test's peers are released everywhere first, so the count below means this one's.
    await until(() => nodes.every((n) => (n.signaling.metrics().cluster?.remotePeers ?? 0) === 0));
    const owner = await peer(nodes[0].url('shared-id', 'token-1'));
    await until(() => (nodes[1].signaling.metrics().cluster?.remotePeers ?? 0) >= 1);
    const thief = await peer(nodes[1].url('shared-id', 'token-2'));
    assert.equal(thief.first.type, 'ID-TAKEN');
    const again = await peer(nodes[1].url('shared-id', 'token-1'));
    assert.equal(again.first.type, 'OPEN');
    const closed = /** @type {{ code: number, reason: string }} */ (await owner.closed);
    assert.equal(closed.code, 4007);
    assert.match(closed.reason, /newer connection/);
    const other = await peer(nodes[0].url('other', 'to'));
    await until(() => (nodes[0].signaling.metrics().cluster?.remotePeers ?? 0) >= 1);
    other.ws.send(JSON.stringify({ type: 'OFFER', dst: 'shared-id', payload: 1 }));
    await until(() => again.inbox.some((m) => m.type === 'OFFER'), 5000);
    again.ws.close();
    other.ws.close();
  });
});
