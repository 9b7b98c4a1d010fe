import { test } from 'node:test';
import assert from 'node:assert/strict';

import { CarClient } from './client.js';
import { Reporter, reportProblem } from './report.js';
import { markOf } from './scene-metrics.js';
import { MARK_FIELDS, SCENE_REPORT_MAX_MARKS, assembleSceneLog, marksOfReport, sceneReport, sceneReportProblem } from './scene-report.js';

/** @typedef {import('./protocol.js').Pose} Pose */
const pose = () => /** @type {Pose} */ ([0, 0, 0, 0, 0, 0, 1]);
const OFFSET = 5_000.4; // the server's clock runs this far ahead of the phone's

/**
 * A client joined alone on a transport whose server clock is known; the
 * phone's own epoch clock is `epoch`.
 * @param {{ clock?: boolean }} [o]
 */
async function joined({ clock = true } = {}) {
  let epoch = 1_700_000_000_000;
  /** @type {import('./client.js').Transport} */
  const transport = {
    name: 'relay',
    connect: () => Promise.resolve({ type: 2, clientId: 7, serverTime: 0, members: [{ id: 7, name: 'a' }] }),
    sendUpdate() {},
    sendAck() {},
    channelInfo: () => null,
    serverClock: clock ? { offsetMs: OFFSET, errorMs: 3.6 } : null,
    close() {},
  };
  const client = new CarClient({ transport, group: 'g', name: 'a', pose, now: () => 0, epochNow: () => epoch });
  await client.connect();
  return { client, tick: (/** @type {number} */ ms) => { epoch += ms; } };
}

/** @param {CarClient} client @param {number} n @param {(ms: number) => void} tick */
function edit(client, n, tick) {
  const rec = client.addObject('cube', [0, 0, 0, 0, 0, 0, 1]);
  for (let i = 1; i < n; i++) {
    tick(10);
    client.moveSceneObject(rec.id, [i / 100, 0, 0, 0, 0, 0, 1]);
  }
}

test('a report\'s scene part: the marks on the server clock, from the join, in chunks that fit a report', async () => {
  const { client, tick } = await joined();
  tick(100);
  edit(client, 5, tick);
  const first = /** @type {import('./scene-report.js').SceneReport} */ (sceneReport(client, 0, 3));
  assert.equal(first.t0, Math.round(1_700_000_000_000 + OFFSET));
  assert.equal(first.clockErrorMs, 4);
  assert.deepEqual([first.from, first.total, first.log.length / MARK_FIELDS], [0, 5, 3]);
  assert.equal(sceneReportProblem(first), null);
  const second = /** @type {import('./scene-report.js').SceneReport} */ (sceneReport(client, 3, 3));
  assert.deepEqual([second.from, second.log.length / MARK_FIELDS], [3, 2]);
  const whole = assembleSceneLog([second, first]);
  assert.equal(whole.complete, true);
  const own = client.sceneLog.map(markOf).map((m) => ({ ...m, at: Math.round(m.at + OFFSET) }));
  assert.deepEqual(whole.marks, own, 'each mark as the client logged it, on the server clock');
  assert.equal(whole.marks[0].at - first.t0, 100);
  assert.ok(whole.marks.every((m) => m.local));
});

test('the marks of a chunk that is missing leave the log incomplete; one sent again is taken once', async () => {
  const { client, tick } = await joined();
  edit(client, 6, tick);
  const parts = [0, 2, 4].map((from) => /** @type {import('./scene-report.js').SceneReport} */ (sceneReport(client, from, 2)));
  assert.equal(assembleSceneLog([parts[0], parts[2]]).complete, false);
  const again = /** @type {import('./scene-report.js').SceneReport} */ (sceneReport(client, 1, 4));
  const whole = assembleSceneLog([parts[0], again, parts[2], parts[1]]);
  assert.equal(whole.complete, true);
  assert.equal(whole.marks.length, 6);
  assert.deepEqual(whole.marks.map((m) => m.version), [1, 2, 3, 4, 5, 6]);
  assert.equal(assembleSceneLog([parts[0], parts[1]]).complete, false, 'the newest total says marks are still to come');
});

test('no scene part before the join or without a server clock', async () => {
  const { client } = await joined({ clock: false });
  assert.equal(sceneReport(client, 0), null);
});

test('the Reporter sends each mark in two reports (one lost on its way loses nothing), and again after a delivery that failed', async () => {
  const { client, tick } = await joined();
  /** @type {any[]} */
  const delivered = [];
  let fail = false;
  let drop = false;
  const reporter = new Reporter({
    client, intervalMs: 0, minGapMs: 0,
    send: (r) => {
      if (fail) return Promise.reject(new Error('offline'));
      if (!drop) delivered.push(r); // dropped: "sent", as a refused STATS report is
      return Promise.resolve();
    },
  });
  const report = async () => { reporter.send(false); await reporter.idle(); };
  edit(client, 3, tick);
  await report(); // marks 0..2
  fail = true;
  edit(client, 2, tick);
  await report(); // 0..4, failed: sent again
  fail = false;
  edit(client, 1, tick);
  await report(); // 0..5
  drop = true;
  edit(client, 2, tick);
  await report(); // 0..7 (new: 6, 7), lost
  drop = false;
  edit(client, 1, tick);
  await report(); // 6..8: the lost one's new marks again, and the new one
  assert.deepEqual(delivered.map((r) => [r.scene.from, r.scene.log.length / MARK_FIELDS]), [[0, 3], [0, 6], [6, 3]]);
  const whole = assembleSceneLog(delivered.map((r) => r.scene));
  assert.equal(whole.complete, true);
  assert.equal(whole.marks.length, 9);
  for (const r of delivered) assert.equal(reportProblem(r), null);
});

test('a malformed scene part is named', async () => {
  const { client, tick } = await joined();
  edit(client, 2, tick);
  const good = /** @type {import('./scene-report.js').SceneReport} */ (sceneReport(client, 0));
  assert.equal(marksOfReport(good).length, 2);
  const bad = (/** @type {Record<string, unknown>} */ change) => sceneReportProblem({ ...good, ...change });
  assert.match(String(bad({ log: good.log.slice(1) })), /whole marks/);
  assert.match(String(bad({ log: Array(MARK_FIELDS * (SCENE_REPORT_MAX_MARKS + 1)).fill(0), total: 1e6 })), /at most 800/);
  assert.match(String(bad({ log: [0, 1, 1, 7, 1, 2] })), /0 or 1/);
  assert.match(String(bad({ log: [0.5, 1, 1, 7, 1, 1] })), /whole ms/);
  assert.match(String(bad({ total: 1 })), /count the marks/);
  assert.match(String(bad({ inStep: 'yes' })), /inStep/);
  assert.match(String(bad({ t0: -1 })), /t0/);
  assert.match(String(sceneReportProblem([])), /object or null/);
  assert.equal(sceneReportProblem(null), null);
});
