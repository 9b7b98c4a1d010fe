import assert from 'node:assert/strict';
import { test } from 'node:test';

import { renderTables } from './output.js';
import { sceneSectionHtml } from './report-html.js';
import { SCENE_COLUMNS, renderSceneTable, sceneRow } from './scene-table.js';

const summary = (/** @type {number} */ p50) => ({ mean: p50, dev: 1, p50, p95: p50 * 2, p99: p50 * 3, max: p50 * 4, n: 10 });

/** A sim run with an edit workload. @param {string} transport @param {Record<string, any>} [scene] */
function run(transport, scene = {}) {
  return {
    transport, clients: 200, group: 5, cycleMs: 167, cycleMode: 'pipelined', sim: { workers: 1 },
    rt: summary(3), rts: null, cpu: { server: 10, clients: 20 }, lossPct: 0, dups: 0, reorders: 0, connected: 200,
    scene: {
      editsPerMinute: 30, settleS: 3, edits: 120, converged: 120, unconverged: 0, convergenceMs: summary(90), disagreementPct: 4.567,
      joinSyncMs: summary(0), atEnd: { groups: 40, members: 200, agreeing: 200, disagreeing: 0 }, repairs: 12, repairRecords: 30, ...scene,
    },
  };
}

test('the shared-scene table: one row per run with edits, convergence p50/p99 and disagreement per transport', () => {
  const runs = [run('relay'), run('relay-udp', { unconverged: 2, atEnd: { groups: 40, members: 200, agreeing: 199, disagreeing: 1 } }), { ...run('relay-faithful'), scene: undefined }];
  const md = renderSceneTable(/** @type {any} */ (runs));
  const lines = md.split('\n').filter((l) => l.startsWith('|'));
  assert.equal(lines.length, 2 + 2, 'header, rule and the two runs that edited');
  assert.deepEqual(sceneRow(/** @type {any} */ (runs[0])).slice(0, 2), ['relay', 'pipelined']);
  assert.equal(sceneRow(/** @type {any} */ (runs[0]))[SCENE_COLUMNS.indexOf('Conv. p99')], '270');
  assert.equal(sceneRow(/** @type {any} */ (runs[0]))[SCENE_COLUMNS.indexOf('% disagree')], '4.57');
  assert.equal(sceneRow(/** @type {any} */ (runs[1]))[SCENE_COLUMNS.indexOf('Agree at end')], '199 / 200');
  assert.match(renderTables(/** @type {any} */ ({ env: {}, runs })), /## Shared scene/);
  assert.equal(renderSceneTable(/** @type {any} */ ([runs[2]])), '', 'no section without edits');
  const html = sceneSectionHtml(/** @type {any} */ (runs));
  assert.match(html, /<section id="scene">/);
  assert.equal((html.match(/class="[^"]*bad/g) ?? []).length, 2, 'the unconverged edits and the member out of step are red');
});
