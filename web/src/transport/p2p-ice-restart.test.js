// An ICE restart on a fake RTCPeerConnection: when it starts, what it sends,
// how the other side answers, that PeerJS's handlers are held back meanwhile,
// and that a restart that does not bring the link back fails it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { IceRestart, PAIR_POLL_MS, PAIR_SETTLE_MS, RESTART_AFTER_MS, readRestartSignal } from './p2p-ice-restart.js';

/** A peer connection with what a restart touches. */
class FakePc extends EventTarget {
  constructor() {
    super();
    this.iceConnectionState = 'connected';
    this.iceGatheringState = 'complete';
    this.connectionState = 'connected';
    /** The selected candidate pair getStats would name. */
    this.pair = 'host 10.0.1.2:5000 -> host 10.0.2.2:6000';
    /** @type {RTCSessionDescriptionInit | null} */
    this.localDescription = null;
    /** @type {RTCSessionDescriptionInit[]} */
    this.remote = [];
    /** @type {any[]} what PeerJS's handlers saw */
    this.peerjsSaw = [];
    /** @type {((ev: any) => void) | null} */
    this.onicecandidate = (ev) => this.peerjsSaw.push(['candidate', ev]);
    /** @type {((ev: any) => void) | null} */
    this.oniceconnectionstatechange = () => this.peerjsSaw.push(['state', this.iceConnectionState]);
  }

  /** @param {RTCOfferOptions} [o] */
  async createOffer(o) { return { type: /** @type {const} */ ('offer'), sdp: `offer restart=${Boolean(o?.iceRestart)}` }; }
  async createAnswer() { return { type: /** @type {const} */ ('answer'), sdp: 'answer' }; }
  /** @param {RTCSessionDescriptionInit} d */
  async setLocalDescription(d) { this.localDescription = d; }
  /** @param {RTCSessionDescriptionInit} d */
  async setRemoteDescription(d) { this.remote.push(d); }

  /** @param {RTCIceConnectionState} s */
  goes(s) {
    this.iceConnectionState = s;
    this.oniceconnectionstatechange?.({});
    this.dispatchEvent(new Event('iceconnectionstatechange'));
  }
}

/** @param {boolean} initiator */
function restartOn(initiator) {
  const pc = new FakePc();
  /** @type {any[]} */
  const sent = [];
  const events = { restarted: 0, failed: /** @type {string[]} */ ([]), counted: /** @type {string[]} */ ([]), outcomes: /** @type {any[]} */ ([]) };
  const r = new IceRestart({
    pc: /** @type {any} */ (pc), initiator, now: () => performance.now(),
    send: (p) => sent.push(p), onRestarted: (o) => { events.restarted++; events.outcomes.push(o); }, onFailed: (why) => events.failed.push(why),
    count: (what) => events.counted.push(what), readPair: async (c) => /** @type {any} */ (c).pair,
  });
  return { pc, sent, events, r };
}

const settle = (ms = 0) => new Promise((resolve) => setTimeout(resolve, ms));
/** Runs what is queued (not a timer: the mocked tests keep them still). */
const flush = () => new Promise((resolve) => setImmediate(resolve));

test('the dialling side restarts a link that stays disconnected; the other answers; the link comes back on the same connection', async () => {
  const a = restartOn(true);
  const b = restartOn(false);
  a.pc.goes('disconnected');
  b.pc.goes('disconnected');
  await settle(RESTART_AFTER_MS + 50);
  assert.equal(a.sent.length, 1, 'one offer, from the dialling side only');
  assert.deepEqual(a.sent[0], { kind: 'ice-restart', type: 'offer', sdp: 'offer restart=true', attempt: 1 });
  assert.equal(b.sent.length, 0);
  assert.equal(a.r.holding(), true);
  // meanwhile PeerJS hears neither the new candidates nor a failure
  a.pc.onicecandidate?.({ candidate: { candidate: 'x' } });
  a.pc.goes('failed');
  assert.deepEqual(a.pc.peerjsSaw, [['state', 'disconnected']]);
  // through the relay to B, which answers
  await b.r.onSignal(/** @type {any} */ (readRestartSignal(JSON.stringify(a.sent[0]))));
  assert.deepEqual(b.pc.remote, [{ type: 'offer', sdp: 'offer restart=true' }]);
  assert.deepEqual(b.sent, [{ kind: 'ice-restart', type: 'answer', sdp: 'answer', attempt: 1 }]);
  await a.r.onSignal(/** @type {any} */ (readRestartSignal(JSON.stringify(b.sent[0]))));
  assert.deepEqual(a.pc.remote, [{ type: 'answer', sdp: 'answer' }]);
  a.pc.pair = 'host 10.0.9.2:5002 -> host 10.0.2.2:6000';
  a.pc.goes('connected');
  b.pc.goes('connected');
  assert.equal(a.r.holding(), false);
  await settle(PAIR_SETTLE_MS + 50); // the new pair is read a moment after ICE connects
  assert.deepEqual([a.events.restarted, b.events.restarted], [1, 1]);
  assert.deepEqual([a.events.outcomes[0].pairBefore, a.events.outcomes[0].pairAfter],
    ['host 10.0.1.2:5000 -> host 10.0.2.2:6000', 'host 10.0.9.2:5002 -> host 10.0.2.2:6000'], 'the selected pair, before and after');
  assert.ok(a.events.outcomes[0].ms >= 0);
  assert.deepEqual(a.events.counted, ['disconnected', 'started', 'failed']);
  assert.deepEqual(a.events.failed, []);
  a.r.stop(); b.r.stop();
});

test('the answering side that doubts its path asks the dialling side, which restarts at once', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'setInterval'] });
  const a = restartOn(true);
  const b = restartOn(false);
  b.r.networkChanged(); // B's link fell silent: B does not dial, so it asks
  await flush();
  assert.deepEqual(b.sent, [{ kind: 'ice-restart', type: 'request', sdp: '', attempt: 1 }]);
  b.r.networkChanged(); // one request at a time
  t.mock.timers.tick(1000);
  assert.equal(b.sent.length, 2, 'sent again until an offer comes');
  const request = /** @type {any} */ (readRestartSignal(JSON.stringify(b.sent[0])));
  await b.r.onSignal(request); // a request to the answering side means nothing
  assert.equal(b.sent.length, 2);
  await a.r.onSignal(request);
  assert.equal(a.r.holding(), true, 'A restarts on the request');
  await flush();
  assert.deepEqual(a.sent.map((m) => m.type), ['offer']);
  await a.r.onSignal(request); // a repeated request gets the offer under way again
  assert.deepEqual(a.sent.map((m) => m.type), ['offer', 'offer']);
  await b.r.onSignal(/** @type {any} */ (readRestartSignal(JSON.stringify(a.sent[0]))));
  t.mock.timers.tick(3000);
  assert.deepEqual(b.sent.map((m) => m.type), ['request', 'request', 'answer'], 'the offer ended the requests');
  a.r.stop(); b.r.stop();
});

test('a restart whose ICE never left connected is done when the selected pair moves', async () => {
  const a = restartOn(true);
  const b = restartOn(false);
  a.r.networkChanged(); // a doubt: A's ICE still says connected, and says nothing more
  await settle();
  await b.r.onSignal(/** @type {any} */ (readRestartSignal(JSON.stringify(a.sent[0]))));
  await a.r.onSignal(/** @type {any} */ (readRestartSignal(JSON.stringify(b.sent[0]))));
  await settle(PAIR_POLL_MS * 3);
  assert.deepEqual([a.r.holding(), a.events.restarted], [true, 0], 'the same pair: not yet done');
  a.pc.pair = 'host 10.0.9.2:5002 -> host 10.0.2.2:6000';
  b.pc.pair = 'host 10.0.2.2:6000 -> host 10.0.9.2:5002';
  await settle(PAIR_POLL_MS * 2 + PAIR_SETTLE_MS + 50);
  assert.deepEqual([a.r.holding(), a.events.restarted, b.events.restarted], [false, 1, 1]);
  assert.equal(a.events.outcomes[0].pairAfter, 'host 10.0.9.2:5002 -> host 10.0.2.2:6000');
  a.r.stop(); b.r.stop();
});

test('a blip shorter than the wait starts nothing', async () => {
  const a = restartOn(true);
  a.pc.goes('disconnected');
  a.pc.goes('connected');
  await settle(RESTART_AFTER_MS + 50);
  assert.equal(a.sent.length, 0);
  a.r.stop();
});

test('an answer that does not belong to the restart under way is ignored; bad payloads are not restarts', async () => {
  const a = restartOn(true);
  await a.r.start();
  await a.r.onSignal({ kind: 'ice-restart', type: 'answer', sdp: 'old', attempt: 7 });
  assert.deepEqual(a.pc.remote, []);
  for (const p of ['not json', '{"kind":"other"}', '{"kind":"ice-restart","type":"offer","sdp":""}', '{"kind":"ice-restart","type":"pranswer","sdp":"x"}']) {
    assert.equal(readRestartSignal(p), null, p);
  }
  a.r.stop();
});

test('a restart that never connects fails the link as it would have failed', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const a = restartOn(true);
  a.pc.iceConnectionState = 'disconnected';
  await a.r.start();
  t.mock.timers.tick(6000);
  assert.equal(a.events.failed.length, 1);
  assert.match(a.events.failed[0], /no ICE after a restart/);
  assert.equal(a.r.holding(), false);
  a.r.stop();
});

test('a restart begun on a doubt that never gets an answer fails nothing while ICE still holds a pair', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'setInterval'] });
  const a = restartOn(true);
  await a.r.start();
  t.mock.timers.tick(6000);
  assert.deepEqual([a.events.failed.length, a.r.holding()], [0, false]);
  a.r.stop();
});
