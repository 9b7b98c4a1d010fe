// A study recording's shared scene (lab/report/recording-scene.js), end to
// end: real CarClients on an in-memory relay, each phone's clock off the
// server's by its own skew (which its serverClock corrects), editing the
// scene while updates are lost; their real reports (core/report.js Reporter)
// recorded by server/recorder.js and read back by `carlab report`'s reader.
// The recording's scene measures must equal what core/scene-metrics.js
// gives from the clients' own logs on the server clock; a member with a
// report missing is left out and counted; one group whatever the transport.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import { CarClient } from '../../core/client.js';
import { Reporter } from '../../core/report.js';
import { summarizeScene } from '../../core/scene-metrics.js';
import { openRecorder } from '../../server/recorder.js';
import { readRecording } from './recording.js';
import { renderTables } from './output.js';
import { recordingToResults } from './recording-results.js';
import { renderReportHtml } from './report-html.js';

const BASE = Date.UTC(2026, 10, 29, 9, 0, 0);
const CYCLE_MS = 50;
/** @typedef {import('../../core/protocol.js').Pose} Pose */
const at = (/** @type {number} */ x) => /** @type {Pose} */ ([x, 0, 0, 0, 0, 0, 1]);

test('a recording\'s scene: convergence and disagreement as the clients\' own logs give them, on the server clock', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'carlab-rec-scene-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  let now = 0;
  /** @type {{ at: number, deliver: () => void }[]} */
  let queue = [];
  /** @type {Map<number, import('../../core/client.js').TransportHandlers>} */
  const members = new Map();
  let nextId = 10;
  const recorder = openRecorder({ dir, node: 'n1', version: '0.1.0', now: () => BASE });

  /**
   * A phone: its transport on the in-memory relay (every 5th UPDATE to it lost),
   * its clock `skew` ms off the server's, its reports recorded unless `lose` says not (two in a row lost leave a gap: each report repeats the one before's new marks).
   * @param {{ group: string, transport: string, skew: number, lose?: (seq: number) => boolean }} spec
   */
  const phone = ({ group, transport, skew, lose = () => false }) => {
    let me = 0;
    let received = 0;
    /** @type {import('../../core/client.js').Transport} */
    const link = {
      name: transport,
      serverClock: { offsetMs: -skew, errorMs: 2 },
      connect(join, h) {
        me = nextId++;
        for (const m of members.values()) m.onMemberJoined({ id: me, name: join.name });
        const welcome = { type: /** @type {const} */ (2), clientId: me, serverTime: 0, members: [...[...members.keys()].map((id) => ({ id, name: `m${id}` })), { id: me, name: join.name }] };
        members.set(me, h);
        return Promise.resolve(welcome);
      },
      sendUpdate(u) {
        for (const [id, h] of members) {
          if (id === me || (group === 'mix' && ++received % 5 === 0)) continue;
          queue.push({ at: now + 12, deliver: () => { if (members.get(id) === h) h.onUpdate(u, now); } });
        }
      },
      sendAck(sender, seq, acker) { queue.push({ at: now + 12, deliver: () => members.get(sender)?.onAck({ type: 6, sender, seq, acker }) }); },
      channelInfo: () => null,
      close() { members.delete(me); for (const h of members.values()) h.onMemberLeft(me); },
    };
    const client = new CarClient({
      transport: link, group, name: `${transport}-${skew}`, cycleMs: CYCLE_MS, cycleMode: 'pipelined', now: () => now, epochNow: () => BASE + now + skew, pose: () => at(0),
    });
    const reporter = new Reporter({
      client, intervalMs: 0, minGapMs: 0,
      send: (r) => { if (!lose(r.seq)) recorder.append({ at: BASE + now, node: 'n1', ua: 'node', r }); },
    });
    return { client, reporter, skew, joinedAt: 0, leftAt: 0 };
  };
  const run = (/** @type {ReturnType<typeof phone>[]} */ phones, /** @type {number} */ until) => {
    for (; now < until; now++) {
      for (const p of phones) if (p.client.id > 0 && !p.leftAt && now % CYCLE_MS === p.skew % CYCLE_MS) p.client.cycle.tick();
      const due = queue.filter((m) => m.at <= now);
      queue = queue.filter((m) => m.at > now);
      for (const m of due) m.deliver();
      for (const p of phones) if (!p.leftAt && now > 0 && now % 400 === 0) p.reporter.send(false);
    }
  };
  const join = async (/** @type {ReturnType<typeof phone>} */ p) => {
    await p.client.connect();
    p.joinedAt = now;
    p.client.start(0);
    p.client.cycle.stop(); // ticked by run(), on the test's clock
  };

  const mix = [phone({ group: 'mix', transport: 'relay', skew: 7_000 }), phone({ group: 'mix', transport: 'p2p', skew: -3_000 }), phone({ group: 'mix', transport: 'relay', skew: 250 })];
  const gap = [phone({ group: 'gap', transport: 'relay', skew: 0 }), phone({ group: 'gap', transport: 'relay', skew: 40, lose: (seq) => seq === 3 || seq === 4 })];
  const still = [phone({ group: 'still', transport: 'relay', skew: 0 }), phone({ group: 'still', transport: 'relay', skew: 9 })];
  const all = [...mix, ...gap, ...still];
  await join(mix[0]);
  await join(mix[1]);
  for (const p of [...gap, ...still]) await join(p);
  const car = mix[0].client.addObject('car', at(0.1));
  gap[0].client.addObject('cube', at(0.2));
  run(all, 300);
  mix[1].client.moveSceneObject(car.id, at(0.3));
  gap[1].client.addObject('cone', at(0.1));
  run(all, 900);
  await join(mix[2]); // a late joiner
  for (let i = 0; i < 6; i++) {
    mix[i % 3].client.moveSceneObject(car.id, at(i / 10));
    mix[(i + 1) % 3].client.addObject('sphere', at(i / 20));
    gap[i % 2].client.addObject('torus', at(i / 20));
    run(all, now + 170);
  }
  run(all, now + 1500);
  for (const p of all) {
    p.reporter.finish();
    p.leftAt = now;
  }
  recorder.close();

  const results = recordingToResults(await readRecording(dir));
  const mixRuns = results.runs.filter((r) => r.groupName === 'mix' && r.browser === 'all');
  assert.deepEqual(mixRuns.map((r) => r.transport).sort(), ['p2p', 'relay'], 'one group, a run per transport');
  for (const r of mixRuns) {
    assert.equal(r.group, 3, 'one group of three across transports');
    // every 5th delivery is lost: the streams are matched across transports, and the loss shows
    const lossPct = Number(r.lossPct);
    assert.ok(lossPct > 10 && lossPct < 30, `${r.transport}: ${lossPct} % lost`);
  }
  const expected = summarizeScene([mix.map((p) => ({
    from: BASE + p.joinedAt, to: BASE + p.leftAt,
    log: p.client.sceneLog.map((e) => ({ ...e, at: e.at - p.skew })),
  }))]);
  const scene = /** @type {any} */ (mixRuns[0]).scene;
  assert.deepEqual(/** @type {any} */ (mixRuns[1]).scene, scene, 'the group\'s scene on each of its transports\' runs');
  assert.equal(scene.members, 3);
  assert.equal(scene.membersIncomplete, 0);
  assert.ok(scene.edits >= 14, `${scene.edits} edits`);
  assert.ok(scene.convergenceMs.p50 > 0 && scene.disagreementPct > 0, 'lost updates: edits took time to reach everyone');
  for (const k of /** @type {const} */ (['edits', 'converged', 'unconverged', 'convergenceMs', 'disagreementPct', 'joinSyncMs'])) {
    assert.deepEqual(scene[k], expected[k], k);
  }
  assert.equal(scene.joinSyncMs.n, 1, 'the late joiner');
  assert.equal(scene.clockErrorMs.max, 2);
  const tables = renderTables(results);
  const section = tables.slice(tables.indexOf('## Shared scene'));
  assert.ok(tables.includes('## Shared scene'), 'tables.md has the scene table');
  const rows = section.split('\n').filter((line) => line.startsWith('| recording'));
  assert.deepEqual(rows.map((line) => line.split('|')[1].trim().split(' · ')[1] + ' ' + line.split('|')[2].trim()).sort(), ['gap relay', 'mix p2p', 'mix relay'],
    'a row per transport of mix, one of gap, each named by its group');
  assert.match(renderReportHtml(results), /<section id="scene">/);
  const gapRun = /** @type {any} */ (results.runs.find((r) => r.groupName === 'gap' && r.browser === 'all'));
  assert.deepEqual([gapRun.scene.members, gapRun.scene.membersIncomplete], [1, 1], 'a member whose report was lost is left out, and counted');
  const stillRun = /** @type {any} */ (results.runs.find((r) => r.groupName === 'still' && r.browser === 'all'));
  assert.ok(stillRun && stillRun.scene === undefined, 'a group nobody edited in has no scene figures');
});
