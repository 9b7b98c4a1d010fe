// The well-behaved clients of the fuzz run, whose traffic must go on
// untouched while the cases and scenarios run: two relay groups of
// CarClients (one locked with a token) and two PeerJS peers (sentinels), and
// what their streams showed once they settled.

import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';
import { CarClient } from '../../core/client.js';
import { aggregateStreams } from '../../core/metrics.js';
import { createRelayTransport } from '../../web/src/transport/relay.js';


/**
 * Well-behaved PeerJS peers: A sends B a numbered OFFER every 100 ms; B must get them all, in order.
 * @param {string} base ws://host:port
 * @param {import('./fuzz-world.js').FuzzWorld} world
 */
export async function startSentinels(base, world) {
  const idA = `fuzz-sentinel-a-${world.seed}`;
  const connect = async (/** @type {string} */ id, /** @type {string} */ token) => {
    const ws = new WebSocket(`${base}/peerjs/peerjs?${new URLSearchParams({ key: world.peerKey, id, token })}`, { perMessageDeflate: false });
    ws.on('error', () => {});
    const data = /** @type {Buffer} */ (await new Promise((resolve, reject) => {
      ws.once('message', (d) => resolve(/** @type {Buffer} */ (d)));
      ws.once('close', (code) => reject(new Error(`sentinel ${id} closed with ${code}`)));
    }));
    if (JSON.parse(String(data)).type !== 'OPEN') throw new Error(`sentinel ${id}: no OPEN`);
    return ws;
  };
  const a = await connect(idA, `sentinel-a-${world.seed}`);
  const b = await connect(world.sentinel.id, world.sentinel.token);
  const state = { sent: 0, received: 0, outOfOrder: 0, closedA: /** @type {number | null} */ (null), closedB: /** @type {number | null} */ (null) };
  a.on('close', (code) => { state.closedA = code; });
  b.on('close', (code) => { state.closedB = code; });
  b.on('message', (data) => {
    let m;
    try { m = JSON.parse(String(data)); } catch { return; }
    if (m.type !== 'OFFER' || m.src !== idA) return; // fuzz cases send B junk too: only A's count
    if (m.payload?.n !== state.received + 1) state.outOfOrder++;
    state.received++;
  });
  const offers = setInterval(() => {
    if (a.readyState !== WebSocket.OPEN) return;
    a.send(JSON.stringify({ type: 'OFFER', dst: world.sentinel.id, payload: { n: ++state.sent } }));
  }, 100);
  const beats = setInterval(() => {
    for (const ws of [a, b]) if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: 'HEARTBEAT' }));
  }, 5000);
  return {
    state,
    async stop() {
      clearInterval(offers);
      clearInterval(beats);
      await sleep(300); // the last offers land
      const open = a.readyState === WebSocket.OPEN && b.readyState === WebSocket.OPEN;
      a.close(1000);
      b.close(1000);
      return { ...state, open };
    },
  };
}

/**
 * Well-behaved clients: two groups of three, one of them locked with a
 * token; connected, meshed (or 10 s passed) and started.
 * @param {string} wsBase ws://host:port
 * @param {import('./fuzz-world.js').FuzzWorld} world
 */
export async function startGoodClients(wsBase, world) {
  /** @type {CarClient[]} */
  const good = [];
  for (const g of world.goodGroups) {
    for (const id of g.ids) {
      const client = new CarClient({
        transport: createRelayTransport({ url: `${wsBase}/relay`, batched: true, WebSocket }),
        group: g.name, name: `good-${id}`, clientId: id, token: g.token, cycleMs: 50, ackTimeoutMs: 5000,
        pose: () => [Math.sin(performance.now() / 1000), 0, 0, 0, 0, 0, 1],
      });
      await client.connect();
      good.push(client);
    }
  }
  const meshEnd = Date.now() + 10000;
  while (good.some((c) => c.members.size < 2) && Date.now() < meshEnd) await sleep(20);
  for (const c of good) c.start();
  return good;
}

/**
 * The good clients: stop sending, let what is in flight land, then sum
 * their good-to-good streams.
 * @param {CarClient[]} good
 */
export async function settleGoodClients(good) {
  await sleep(500);
  for (const c of good) c.stop();
  const settleEnd = Date.now() + 3000;
  while (good.some((c) => c.cycle.outstanding) && Date.now() < settleEnd) await sleep(20);
  await sleep(200);
  const stats = good.map((c) => c.stats());
  const ids = new Set(good.map((c) => `${c.options.group}\u0000${c.id}`));
  for (const s of stats) {
    // Updates also went to fuzz cases that joined the group: only good-to-good streams count.
    s.sentTo = Object.fromEntries(Object.entries(s.sentTo).filter(([rid]) => ids.has(`${s.group}\u0000${rid}`)));
  }
  const streams = aggregateStreams(stats);
  const goodClosed = good.filter((c) => c.closedWith).map((c) => `${c.id}: ${c.closedWith?.code}`);
  return { stats, streams, goodClosed };
}
