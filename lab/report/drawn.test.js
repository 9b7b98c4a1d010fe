import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DrawnErrorLab, PlayoutProbe } from '../../core/playout-probe.js';
import { drawnRecord, renderDrawnTable } from './drawn.js';
import { drawnCharts } from './charts-drawn.js';
import { renderReportHtml } from './report-html.js';

/** @typedef {import('../../core/protocol.js').Pose} Pose */
/** @param {number} x @returns {Pose} */
const at = (x) => [x, 0, 0, 0, 0, 0, 1];

/** One generator's tallies: `senders` walking 1 m/s, updates every 100 ms, every 5th lost, drawn at 50 fps for 3 s. */
function generator(/** @type {number[]} */ senders) {
  const lab = new DrawnErrorLab(['ease', 'predict'], 0);
  const probe = new PlayoutProbe(lab);
  let now = 0;
  for (let seq = 1; seq <= 30; seq++) {
    if (seq % 5) for (const s of senders) probe.arrive(s, seq, seq * 100, seq * 100 + 15, at(seq / 10));
    for (; now < seq * 100 + 100; now += 20) probe.render(now, () => at(now / 1000));
  }
  return lab.toJSON();
}

const run = (/** @type {any} */ drawn) => ({ transport: 'relay-udp', clients: 4, group: 4, cycleMs: 100, net: { profile: 'lossy-5' }, drawn });

test('drawnRecord merges the generators: streams and frames add up, the timeline holds both', () => {
  const a = generator([1, 2]);
  const b = generator([3]);
  const rec = /** @type {NonNullable<ReturnType<typeof drawnRecord>>} */ (drawnRecord([a, null, b], { renderFps: 50 }));
  assert.equal(rec.renderFps, 50);
  assert.equal(rec.modes.ease.streams, 3);
  assert.equal(rec.modes.predict.frames, a.modes.predict.positionCm.n + b.modes.predict.positionCm.n);
  assert.equal(rec.timeline.reduce((n, s) => n + s.missing, 0), 3 * 5, 'seqs 5, 10, ... 25 missing on each of 3 streams (30 never arrives late)');
  assert.equal(drawnRecord([null, undefined], { renderFps: 60 }), null, 'nothing measured: no record');
});

test('tables.md and report.html show a row per run and mode, p95 bars and the error over time', () => {
  const drawn = drawnRecord([generator([1, 2])], { renderFps: 50 });
  const md = renderDrawnTable([run(drawn), { transport: 'relay', clients: 4, group: 4, cycleMs: 100 }]);
  const rows = md.split('\n').filter((l) => l.startsWith('| relay'));
  assert.deepEqual(rows.map((l) => l.split('|')[6].trim()), ['ease', 'predict'], 'the run without --playout has no row');
  assert.equal(renderDrawnTable([{ transport: 'relay' }]), '');
  const pair = renderDrawnTable([{ ...run(null), drawn: undefined, arDrawn: drawn }]).split('\n').filter((l) => l.startsWith('| relay'));
  assert.deepEqual(pair.map((l) => l.split('|')[6].trim()), ['ease (AR pair)', 'predict (AR pair)'], 'bench --ar-pair rows say so');
  const charts = drawnCharts(/** @type {any} */ ([run(drawn)]));
  assert.deepEqual(charts.map((c) => c.kind), ['drawn', 'drawn-time']);
  const time = /** @type {any} */ (charts[1].spec).config.data.datasets;
  assert.deepEqual(time.map((/** @type {any} */ d) => d.label), ['ease (mean cm)', 'predict (mean cm)', 'updates missing']);
  const html = renderReportHtml(/** @type {any} */ ({ runs: [run(drawn)] }));
  assert.match(html, /<section id="drawn">/);
  assert.match(html, /<a href="#drawn">Drawn error<\/a>/);
  assert.match(html, /data-kind="drawn-time"/);
});
