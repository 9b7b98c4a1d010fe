// Loss and ACK loss as docs/architecture.md "Loss" defines them, end to end
// through real client cores: a scripted network drops a known set of updates
// and a known set of ACKs (each ACK to its sender, or aggregated by a scripted
// relay into one ACKED_ALL), and the counts taken mid-run and at the end must
// be exactly the dropped sets, whatever the ACK timeout.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CarClient } from './client.js';
import { aggregateStreams } from './metrics.js';

/** @typedef {import('./client.js').TransportHandlers} TransportHandlers */
/** @typedef {import('./protocol.js').UpdateMsg} UpdateMsg */

const CYCLE_MS = 100;
const LATENCY_MS = 5;
const IDS = [1, 2, 3, 4];

/**
 * @typedef {object} Script
 * @property {'each' | 'aggregated'} acks each ACK to its sender (relay-faithful, p2p) or one ACKED_ALL (relay)
 * @property {(sender: number, seq: number, receiver: number) => boolean} dropUpdate
 * @property {(sender: number, seq: number, acker: number) => boolean} dropAck
 * @property {(sender: number, seq: number) => boolean} [dropAckedAll]
 * @property {(sender: number, seq: number, receiver: number) => boolean} [supersede] the relay replaces
 *   this update, queued for the receiver, by the sender's next one (mode relay)
 * @property {number} ackTimeoutMs
 */

/**
 * A group of four client cores on one fake clock, joined through a scripted network.
 * @param {Script} script
 */
function world(script) {
  let clock = 0;
  /** @type {{ at: number, run: () => void }[]} */
  const events = [];
  const later = (/** @type {() => void} */ run) => events.push({ at: clock + LATENCY_MS, run });
  /** @type {Map<number, TransportHandlers>} */
  const handlers = new Map();
  /** Aggregated mode: per (sender, seq), the receivers whose ACK the relay still awaits. @type {Map<string, Set<number>>} */
  const awaiting = new Map();
  /** @type {Map<number, CarClient>} */
  const clients = new Map();
  for (const id of IDS) {
    /** @type {import('./client.js').Transport} */
    const transport = {
      name: script.acks === 'each' ? 'relay-faithful' : 'relay',
      connect(_join, h) {
        handlers.set(id, h);
        return Promise.resolve({ type: 2, clientId: id, serverTime: 0, members: IDS.map((m) => ({ id: m, name: `m${m}` })) });
      },
      sendUpdate: (u) => route(u),
      sendAck: (sender, seq, acker) => ack(sender, seq, acker),
      channelInfo: () => null,
      close() {},
    };
    clients.set(id, new CarClient({ transport, group: 'g', name: `m${id}`, pose: () => [0, 0, 0, 0, 0, 0, 1], cycleMode: 'pipelined', cycleMs: CYCLE_MS, ackTimeoutMs: script.ackTimeoutMs, now: () => clock }));
  }

  /** @param {UpdateMsg} u */
  function route(u) {
    const to = IDS.filter((r) => r !== u.sender);
    if (script.acks === 'aggregated') awaiting.set(`${u.sender}:${u.seq}`, new Set(to));
    for (const r of to) {
      if (script.dropUpdate(u.sender, u.seq, r)) continue;
      if (script.supersede?.(u.sender, u.seq, r)) continue; // replaced by the next one, which carries the mark
      const prev = u.seq - 1;
      const marked = prev >= 1 && script.supersede?.(u.sender, prev, r) && !script.dropUpdate(u.sender, prev, r);
      later(() => {
        const h = /** @type {TransportHandlers} */ (handlers.get(r));
        if (marked) h.onSuperseded?.({ type: 13, sender: u.sender, seq: u.seq, ranges: [prev, prev] });
        h.onUpdate({ ...u, scene: null }, clock);
      });
      // The relay answers for a superseded copy (dropped + 1): it waits for nothing more from r.
      if (marked) awaiting.get(`${u.sender}:${prev}`)?.delete(r);
    }
    if (script.acks === 'aggregated') {
      // A superseded copy: the relay never waits for it.
      for (const r of to) if (script.supersede?.(u.sender, u.seq, r) && !script.dropUpdate(u.sender, u.seq, r)) awaiting.get(`${u.sender}:${u.seq}`)?.delete(r);
    }
  }

  /** @param {number} sender @param {number} seq @param {number} acker */
  function ack(sender, seq, acker) {
    if (script.dropAck(sender, seq, acker)) return;
    later(() => {
      const h = /** @type {TransportHandlers} */ (handlers.get(sender));
      if (script.acks === 'each') { h.onAck({ type: 6, sender, seq, acker }); return; }
      const waiting = awaiting.get(`${sender}:${seq}`);
      if (!waiting || !waiting.delete(acker) || waiting.size > 0) return;
      awaiting.delete(`${sender}:${seq}`);
      if (!script.dropAckedAll?.(sender, seq)) later(() => h.onAckedAll({ type: 7, sender, seq, acked: 3, dropped: 0 }));
    });
  }

  /** Runs the clock to `until`, ticking every cycle (no ticks past `sendUntil`). @param {number} until @param {number} sendUntil */
  function run(until, sendUntil) {
    while (clock < until) {
      clock++;
      if (clock % CYCLE_MS === 0 && clock <= sendUntil) for (const c of clients.values()) c.cycle.tick();
      for (let i = 0; i < events.length; i++) {
        if (events[i].at > clock) continue;
        const [e] = events.splice(i--, 1);
        e.run();
      }
    }
  }

  return {
    clients,
    run,
    connect: () => Promise.all([...clients.values()].map((c) => c.connect())),
    count: () => aggregateStreams([...clients.values()].map((c) => c.stats())),
    now: () => clock,
  };
}

/** Deterministic drops: a stable hash of the triple under `per` of 1000. @param {number} per @param {number} salt */
const drops = (per, salt) => (/** @type {number} */ a, /** @type {number} */ b, /** @type {number} */ c) => ((a * 7919 + b * 104729 + c * 1299709 + salt) % 1000) < per;

/**
 * The dropped (sender, seq, receiver) triples up to each sender's cutoff, counted by brute force.
 * @param {ReturnType<typeof world>} w @param {(s: number, q: number, r: number) => boolean} dropped
 */
function droppedUpToCutoff(w, dropped) {
  let n = 0;
  let expected = 0;
  for (const [id, c] of w.clients) {
    const cutoff = c.cycle.cutoffSeq();
    for (let seq = 1; seq <= cutoff; seq++) for (const r of IDS) if (r !== id) { expected++; if (dropped(id, seq, r)) n++; }
  }
  return { lost: n, expected };
}

for (const ackTimeoutMs of [300, 20_000]) {
  test(`each ACK to its sender: loss and ACK loss are exactly the dropped sets, mid-run and at the end (ACK timeout ${ackTimeoutMs} ms)`, async () => {
    const dropUpdate = drops(50, 1);
    const dropAck = drops(80, 2);
    const w = world({ acks: 'each', dropUpdate, dropAck, ackTimeoutMs });
    await w.connect();
    w.run(6000, 10_000);
    const mid = w.count();
    const truth = droppedUpToCutoff(w, dropUpdate);
    assert.equal(mid.expected, truth.expected, 'expected: every seq at or below the cutoff, to every neighbour');
    assert.equal(mid.lost, truth.lost, 'lost: exactly the dropped updates at or below the cutoff');
    assert.ok(mid.inFlight > 0 && mid.inFlight <= 3 * 12 * (1000 / CYCLE_MS + 1), `younger than the horizon: counted on neither end (${mid.inFlight})`);
    assert.ok(truth.lost > 20, `the script dropped enough to tell (${truth.lost})`);
    // ACK loss: of the updates that arrived, those whose ACK was dropped
    let acksLost = 0;
    for (const [id, c] of w.clients) for (let seq = 1; seq <= c.cycle.cutoffSeq(); seq++) for (const r of IDS) if (r !== id && !dropUpdate(id, seq, r) && dropAck(id, seq, r)) acksLost++;
    assert.equal(mid.acksSent - mid.acksReceived, acksLost);
    // the end: sends stop, one horizon passes, everything counts
    w.run(8000, 6000);
    const end = w.count();
    assert.equal(end.inFlight, 0, 'nothing left past the cutoff once a horizon passed');
    assert.equal(end.lost, droppedUpToCutoff(w, dropUpdate).lost);
    assert.equal(end.expected, 12 * 60);
    assert.equal(end.received + end.lost, end.expected, 'received never exceeds expected: counted over the same seqs');
  });

  test(`one ACKED_ALL for all: ACK loss is the updates every receiver got whose ACKED_ALL never came (ACK timeout ${ackTimeoutMs} ms)`, async () => {
    const dropUpdate = drops(40, 3);
    const dropAck = drops(60, 4);
    const dropAckedAll = (/** @type {number} */ s, /** @type {number} */ q) => (s * 31 + q * 17) % 50 === 0;
    const w = world({ acks: 'aggregated', dropUpdate, dropAck, dropAckedAll, ackTimeoutMs });
    await w.connect();
    w.run(6000, 6000);
    w.run(8000, 6000);
    const end = w.count();
    assert.equal(end.lost, droppedUpToCutoff(w, dropUpdate).lost);
    let allGot = 0;
    let answered = 0;
    for (const [id] of w.clients) {
      for (let seq = 1; seq <= 60; seq++) {
        const to = IDS.filter((r) => r !== id);
        if (to.some((r) => dropUpdate(id, seq, r))) continue;
        allGot++;
        if (!to.some((r) => dropAck(id, seq, r)) && !dropAckedAll(id, seq)) answered++;
      }
    }
    assert.equal(end.acksSent, allGot, 'ACKs expected: one answer per update every receiver got');
    assert.equal(end.acksReceived, answered);
    assert.ok(allGot - answered > 5, `the script lost enough answers to tell (${allGot - answered})`);
  });
}

test('superseded counts apart from loss only when the newer pose arrived; else the replaced update is lost', async () => {
  // The relay replaces seq q queued for receiver 2 by q + 1 when q % 10 === 3; the newer one is
  // dropped for q = 13, so update 13 to receiver 2 is lost, the others superseded.
  const supersede = (/** @type {number} */ s, /** @type {number} */ q, /** @type {number} */ r) => s === 1 && r === 2 && q % 10 === 3;
  const dropUpdate = (/** @type {number} */ s, /** @type {number} */ q, /** @type {number} */ r) => s === 1 && r === 2 && q === 14;
  const w = world({ acks: 'aggregated', dropUpdate, dropAck: () => false, supersede, ackTimeoutMs: 20_000 });
  await w.connect();
  w.run(4000, 4000);
  w.run(6000, 4000);
  const end = w.count();
  // seqs 1..40 from 1 to 2: 3, 13, 23, 33 replaced; 14 dropped, so 13's mark never arrived
  assert.equal(end.superseded, 3);
  assert.equal(end.lost, 2, 'update 13 (its newer pose lost) and update 14 (dropped)');
  assert.equal(end.expected, 12 * 40);
  assert.equal(end.received + end.superseded + end.lost, end.expected);
});
