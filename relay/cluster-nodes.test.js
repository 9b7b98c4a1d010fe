// The node directory's heartbeats, on an in-process bus that delivers like
// NATS with noEcho (a node never hears itself); what a real nats-server adds
// (a cut, a heal) is lab/target/cluster-machines.test.js.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HEARTBEAT_MS, NODE_TIMEOUT_MS, NodeDirectory } from './cluster-nodes.js';
import { HEARTBEAT_SUBJECT, jsonBytes, parseJsonBytes } from './cluster-wire.js';

/** A bus of brokers; `connected` false drops what a broker would send or receive. */
function bus() {
  /** @type {{ nodeId: string, connected: boolean, stalled: boolean, probes: number, subs: Map<string, ((d: Uint8Array) => void)[]>, onChange: ((c: boolean) => void)[] }[]} */
  const members = [];
  /** @param {string} nodeId */
  const broker = (nodeId) => {
    /** @type {Map<string, ((d: Uint8Array) => void)[]>} */
    const subs = new Map();
    const me = { nodeId, connected: true, stalled: false, probes: 0, subs, onChange: /** @type {((c: boolean) => void)[]} */ ([]) };
    members.push(me);
    return {
      me,
      /** @type {import('./broker.js').Broker} */
      api: {
        nodeId,
        publish(subject, data) {
          if (!me.connected || me.stalled) return;
          for (const m of members) if (m !== me && m.connected) for (const h of m.subs.get(subject) ?? []) h(data);
        },
        subscribe(subject, handler) {
          me.subs.set(subject, [...(me.subs.get(subject) ?? []), handler]);
          return { unsubscribe: () => me.subs.set(subject, (me.subs.get(subject) ?? []).filter((h) => h !== handler)) };
        },
        status: () => ({
          connected: me.connected, url: 'bus', serverVersion: null, disconnects: 0, outageMs: 0, lastError: null,
          silentMs: 0, stalls: 0, droppedWhileSilent: 0, unconfirmedAtDisconnect: 0,
        }),
        probe() { me.probes++; },
        stalled: () => me.connected && me.stalled,
        onConnectionChange(listener) { me.onChange.push(listener); },
        async close() {},
      },
      /** @param {boolean} connected */
      setConnected(connected) { me.connected = connected; for (const l of me.onChange) l(connected); },
    };
  };
  return { broker };
}

/** @param {NodeDirectory} dir */
function newNodesSeen(dir) {
  /** @type {string[]} */
  const seen = [];
  dir.listen({ onNodeNew: (node) => seen.push(node) });
  return seen;
}

/**
 * Two nodes A and B on one bus, each with its directory (stopped after the test), not yet started.
 * @param {import('node:test').TestContext} t
 */
function twoNodes(t) {
  const net = bus();
  const a = net.broker('aaaa');
  const b = net.broker('bbbb');
  const dirA = new NodeDirectory(a.api);
  const dirB = new NodeDirectory(b.api);
  t.after(() => { dirA.stop(); dirB.stop(); });
  return { a, b, dirA, dirB };
}

test('a node that (re)connects says hello, and every node sends it their state again, known or not', (t) => {
  const { a, b, dirA, dirB } = twoNodes(t);
  /** @type {unknown[]} */
  const heartbeats = [];
  a.api.subscribe(HEARTBEAT_SUBJECT, (d) => heartbeats.push(parseJsonBytes(d)));
  const newToA = newNodesSeen(dirA);
  const newToB = newNodesSeen(dirB);
  dirA.start();
  dirB.start();
  assert.deepEqual(heartbeats[0], { node: 'bbbb', hello: true }, 'the first heartbeat says hello');
  assert.deepEqual([newToA, newToB], [['bbbb'], ['aaaa']], 'each learned of the other once');

  // A is cut off and comes back before B's sweep drops it: B still knows A, and A's hello
  // still gets B's state sent to it (the case a heal under load met)
  a.setConnected(false);
  a.setConnected(true);
  assert.deepEqual(newToB, ['aaaa', 'aaaa'], 'B sends its state to A again');
  assert.deepEqual(newToA, ['bbbb', 'bbbb'], 'and A, back, sends B its own: B may have dropped it meanwhile');

  // a plain heartbeat of a known node is no news
  b.api.publish(HEARTBEAT_SUBJECT, jsonBytes({ node: 'bbbb' }));
  assert.deepEqual(newToA, ['bbbb', 'bbbb']);
  // a node's own hello (never echoed by NATS, but a node could be told its own) is ignored
  dirA.onHeartbeat({ node: 'aaaa', hello: true });
  assert.deepEqual(newToA, ['bbbb', 'bbbb']);
});

test('a node back on NATS sends its state to a node that dropped it while it kept that node', (t) => {
  const { a, b, dirA, dirB } = twoNodes(t);
  const newToA = newNodesSeen(dirA);
  dirA.start();
  dirB.start();
  // A's broker stalled: A kept B (no silence counts), B dropped A; B's ask for A's state, sent when
  // A's old connection delivered a late heartbeat, went nowhere (here: nothing of B's reaches A)
  a.setConnected(false);
  dirB.gone('aaaa');
  b.me.connected = false;
  a.setConnected(true);
  assert.deepEqual(newToA, ['bbbb', 'bbbb'], 'A sends B its state on reconnecting, unasked');
  b.me.connected = true;
  dirA.heartbeat();
  assert.ok(dirB.nodes.has('aaaa'), 'and B knows A again from its next heartbeat');
});

test('a node dropped on one side only is asked for its state when heard again', (t) => {
  const { dirA, dirB } = twoNodes(t);
  const newToA = newNodesSeen(dirA);
  const newToB = newNodesSeen(dirB);
  dirA.start();
  dirB.start();
  // A took B for gone (B's heartbeats came late there); B never dropped A
  dirA.gone('bbbb');
  dirB.heartbeat();
  assert.deepEqual(newToA, ['bbbb', 'bbbb'], 'A sends B its state again');
  assert.deepEqual(newToB, ['aaaa', 'aaaa'], 'and B, asked, sends A its own: A had dropped its members');
});

test('a stalled node counts no silence of its peers while it was stalled, and announces itself again', (t) => {
  const { dirA, dirB } = twoNodes(t);
  let silenced = 0;
  dirA.listen({ onSilenced: () => { silenced++; } });
  dirA.start();
  dirB.start();
  const heardB = /** @type {number} */ (dirA.nodes.get('bbbb'));

  // A's tick comes 5 s late (its process was stopped): B's heartbeats of that time are still
  // unread, so B is kept, and the others have dropped A, so A announces itself
  dirA.tick(dirA.lastTickAt + HEARTBEAT_MS + 5000);
  assert.ok(dirA.nodes.has('bbbb'), 'B is kept');
  // within a microsecond: the credit is a difference of two clock readings, and 5581.849393 came
  // back as 5581.849392999999 (fresh-clone run 2)
  assert.ok(Math.abs(/** @type {number} */ (dirA.nodes.get('bbbb')) - (heardB + 5000)) < 1e-3, 'B\'s silence counts from when A ran again');
  assert.deepEqual([silenced, dirA.silenced, dirA.lost], [1, 1, 0]);

  // a tick late by less than the others wait announces nothing
  dirA.tick(dirA.lastTickAt + HEARTBEAT_MS + 1000);
  assert.equal(silenced, 1);

  // ticks on time: B, silent from now on, is gone once NODE_TIMEOUT_MS of A's running time passed
  let now = /** @type {number} */ (dirA.nodes.get('bbbb'));
  dirA.lastTickAt = now;
  for (let i = 0; i < Math.floor(NODE_TIMEOUT_MS / HEARTBEAT_MS); i++) dirA.tick(now += HEARTBEAT_MS);
  assert.ok(dirA.nodes.has('bbbb'), `kept after ${now - /** @type {number} */ (dirA.nodes.get('bbbb'))} ms`);
  dirA.tick(now += HEARTBEAT_MS);
  assert.ok(!dirA.nodes.has('bbbb'), 'gone after the timeout');
  assert.deepEqual([silenced, dirA.lost], [1, 1]);
});

test('a tick overdue by the node timeout runs when the node is about to send, before its timer', (t) => {
  const { dirA, dirB } = twoNodes(t);
  let silenced = 0;
  dirA.listen({ onSilenced: () => { silenced++; } });
  dirA.catchUp();
  assert.equal(silenced, 0, 'not started: nothing to catch up');
  dirA.start();
  dirB.start();
  dirA.catchUp(dirA.lastTickAt + NODE_TIMEOUT_MS - 1);
  assert.equal(silenced, 0, 'not overdue yet');
  const stoppedAt = dirA.lastTickAt;
  dirA.catchUp(stoppedAt + NODE_TIMEOUT_MS + 500);
  assert.deepEqual([silenced, dirA.lastTickAt, dirA.lost], [1, stoppedAt + NODE_TIMEOUT_MS + 500, 0], 'announced once; B kept');
  dirA.catchUp(stoppedAt + NODE_TIMEOUT_MS + 600);
  assert.equal(silenced, 1, 'and not again');
});

test('a stalled broker is not every peer gone: no silence counts while it stalls; once given up, it does', (t) => {
  const { a, dirA, dirB } = twoNodes(t);
  dirA.start();
  dirB.start();
  const me = a.me;
  me.stalled = true; // nats-server stopped (SIGSTOP): nothing arrives, the connection stays
  let now = dirA.lastTickAt;
  for (let i = 0; i < 8; i++) dirA.tick(now += HEARTBEAT_MS);
  assert.ok(dirA.nodes.has('bbbb'), 'B is kept through 8 s of the broker\'s silence');
  assert.equal(dirA.lost, 0);
  // (t + 1000) - t is not always 1000 in floating point: 8 such steps may sum to 7999.999…
  assert.ok(dirA.brokerStalledMs >= 8 * HEARTBEAT_MS - 1e-6, String(dirA.brokerStalledMs));
  assert.ok(me.probes >= 8, 'every tick asks the broker for a sign of life');
  me.connected = false; // the client gave the connection up as stale: from now on peers' silence counts
  for (let i = 0; i < Math.floor(NODE_TIMEOUT_MS / HEARTBEAT_MS); i++) dirA.tick(now += HEARTBEAT_MS);
  assert.ok(dirA.nodes.has('bbbb'));
  dirA.tick(now += HEARTBEAT_MS);
  assert.ok(!dirA.nodes.has('bbbb'), 'gone the node timeout after the broker was given up');
});
