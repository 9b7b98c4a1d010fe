// Rate limits that punish only the sender (issue 18, docs/security.md "Rate
// limits"): a member that sends one UPDATE per cycle and ACKs every UPDATE it
// gets is never closed, whatever the others in its group send; a member over
// its own budget is the one closed, with 4005 and a reason.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { once } from 'node:events';
import WebSocket from 'ws';
import { CloseCode, HelloFlag, MsgType, decode, encode, encodeBatchOfBodies, frameOfBody } from '../core/protocol.js';
import { RELAY_DEFAULTS, createRelay } from './index.js';
import { waitFor } from '../lab/shared/loop-stall.js';

/** @type {(() => Promise<void>)[]} */
const cleanups = [];
after(async () => { for (const c of cleanups) await c(); });

/** @param {import('./index.js').RelayOptions} [options] */
async function startRelay(options = {}) {
  const server = http.createServer();
  const relay = createRelay({ server, path: '/relay', ...options });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = /** @type {import('node:net').AddressInfo} */ (server.address());
  const stop = async () => { await relay.close(); server.closeAllConnections(); await new Promise((r) => server.close(r)); };
  cleanups.push(stop);
  return { relay, url: `ws://127.0.0.1:${address.port}/relay` };
}

/** @type {import('../core/protocol.js').Pose} */
const POSE = [0, 0, 0, 0, 0, 0, 1];

/**
 * A raw member of group `group` in mode relay: ACKs every UPDATE it gets (in
 * one BATCH per turn, as the reference client does) when `acks` is set.
 * @param {string} url @param {string} group @param {{ acks: boolean }} o
 */
async function member(url, group, o) {
  const ws = new WebSocket(url);
  /** @type {Map<number, number[]>} arrival times (ms) of updates per sender */
  const arrivals = new Map();
  /** @type {Uint8Array[]} */
  let acks = [];
  let id = 0;
  /** @type {{ code: number, reason: string } | null} */
  let closed = null;
  ws.on('close', (code, reason) => { closed = { code, reason: reason.toString() }; });
  ws.on('message', (data) => {
    const m = decode(/** @type {Buffer} */ (data));
    if (m instanceof Error) throw m;
    for (const u of m.type === MsgType.BATCH ? m.messages : [m]) {
      if (u.type === MsgType.WELCOME) id = u.clientId;
      if (u.type !== MsgType.UPDATE) continue;
      const list = arrivals.get(u.sender) ?? [];
      list.push(performance.now());
      arrivals.set(u.sender, list);
      if (!o.acks) continue;
      if (acks.length === 0) setImmediate(flushAcks);
      acks.push(encode({ type: MsgType.ACK, sender: u.sender, seq: u.seq, acker: id }).subarray(1));
    }
  });
  function flushAcks() {
    const bodies = acks;
    acks = [];
    if (ws.readyState !== WebSocket.OPEN || bodies.length === 0) return;
    ws.send(bodies.length === 1 ? frameOfBody(bodies[0]) : encodeBatchOfBodies(bodies));
  }
  await once(ws, 'open');
  ws.send(encode({ type: MsgType.HELLO, flags: HelloFlag.BATCHED, clientId: 0, group, name: 'm', token: '' }));
  while (id === 0) await new Promise((r) => setTimeout(r, 5));
  let seq = 0;
  return {
    ws,
    get id() { return id; },
    get closed() { return closed; },
    arrivals,
    /** Sends n UPDATEs in one frame (a BATCH when n > 1). @param {number} n */
    send(n) {
      if (ws.readyState !== WebSocket.OPEN) return;
      const messages = Array.from({ length: n }, () => ({ type: MsgType.UPDATE, sender: id, seq: ++seq, sendTime: 0, pose: POSE, object: null }));
      ws.send(encode(n === 1 ? messages[0] : { type: MsgType.BATCH, messages }));
    },
  };
}

/**
 * 5 members of one group: two flood UPDATEs at 75 % of the UPDATE limit, three
 * send one per 167 ms and ACK everything, for `seconds`.
 * @param {import('./index.js').RelayOptions} options
 * @param {number} seconds
 */
async function fiveMembers(options, seconds) {
  const { relay, url } = await startRelay(options);
  const limit = options.maxUpdatesPerSecond ?? RELAY_DEFAULTS.maxUpdatesPerSecond;
  const group = `fair-${limit}`;
  const good = [await member(url, group, { acks: true }), await member(url, group, { acks: true }), await member(url, group, { acks: true })];
  const floods = [await member(url, group, { acks: false }), await member(url, group, { acks: false })];
  const perTick = (0.75 * limit) / 100; // updates per 10 ms tick
  let owed = 0;
  const flood = setInterval(() => {
    owed += perTick;
    const n = Math.floor(owed);
    owed -= n;
    if (n > 0) for (const f of floods) f.send(n);
  }, 10);
  const cycle = setInterval(() => { for (const g of good) g.send(1); }, 167);
  const start = performance.now();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  clearInterval(flood);
  clearInterval(cycle);
  const end = performance.now();
  await new Promise((r) => setTimeout(r, 200));
  return { relay, good, floods, start, end };
}

/**
 * What each well-behaved member got: from every other well-behaved member,
 * updates in every 2 s of the run (it keeps receiving them; 12 are sent in
 * that time, so only a member the floods starve gets none). How many per
 * second is timing: the gate `fairness` (lab/gates/gates.js).
 * @param {Awaited<ReturnType<typeof fiveMembers>>} run
 */
function assertInnocentsFine(run) {
  for (const g of run.good) assert.equal(g.closed, null, `well-behaved member ${g.id} closed: ${JSON.stringify(g.closed)}`);
  for (const g of run.good) {
    for (const other of run.good) {
      if (other === g) continue;
      const times = g.arrivals.get(other.id) ?? [];
      for (let t = run.start + 1000; t < run.end - 2000; t += 2000) {
        const inWindow = times.filter((x) => x >= t && x < t + 2000).length;
        assert.ok(inWindow >= 1, `member ${g.id} got no update of ${other.id} in the 2 s from second ${Math.round((t - run.start) / 1000)}`);
      }
    }
    for (const f of run.floods) assert.ok((g.arrivals.get(f.id) ?? []).length > 0, 'the floods are forwarded too');
  }
}

describe('fair rate limits: two members flood, three behave', () => {
  test('at 75 % of the default UPDATE limit for 10 s: no well-behaved member is closed, each keeps receiving the others', async () => {
    const run = await fiveMembers({}, 10);
    assertInnocentsFine(run);
    assert.deepEqual(run.relay.stats.closedByCode, {}, 'nobody is closed: the floods are within their own limit');
  });

  test('floods at 75 % of a raised UPDATE limit: the ACKs they oblige others to send are not counted against them', async () => {
    // 1500 UPDATEs/s from each flooder: every well-behaved member must ACK
    // 3000 per second, above the 2000 messages/s of its own message bucket.
    // Only credit (one ACK per UPDATE it was sent) keeps it open.
    const run = await fiveMembers({ maxUpdatesPerSecond: 2000, maxUpdatesBurst: 4000 }, 10);
    assertInnocentsFine(run);
    // more ACKs than the message buckets' bursts (4000 each) allow without credit, and nobody closed
    const acksIn = run.relay.stats.acksIn;
    assert.ok(acksIn > 3 * 4000, `the well-behaved members ACKed ${acksIn} updates, more than their message buckets' bursts`);
  });

  test('a member over its own UPDATE limit is the one closed, 4005 with a reason; the group goes on', async () => {
    const { relay, url } = await startRelay({ maxUpdatesPerSecond: 50, maxUpdatesBurst: 100 });
    const a = await member(url, 'over', { acks: true });
    const b = await member(url, 'over', { acks: true });
    const flooder = await member(url, 'over', { acks: true });
    flooder.send(60);
    flooder.send(60);
    while (!flooder.closed) await new Promise((r) => setTimeout(r, 5));
    assert.equal(flooder.closed?.code, CloseCode.RATE_LIMITED);
    assert.match(String(flooder.closed?.reason), /over 50 UPDATEs\/s/);
    a.send(1);
    // until it arrived, not a fixed 100 ms: after a stall the sleep's timer runs before the socket is read
    await waitFor(() => (b.arrivals.get(a.id) ?? []).length >= 1, 15_000, 'a\'s update at b');
    assert.equal(a.closed, null);
    assert.equal(b.closed, null);
    assert.equal((b.arrivals.get(a.id) ?? []).length, 1);
    assert.equal(relay.stats.closedByCode[CloseCode.RATE_LIMITED], 1);
  });
});
