import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ackedRate, netReportSection, netRow, renderNetTables } from './net-tables.js';
import { renderTables } from './output.js';
import { supportedClients } from './supported.js';

/** @typedef {import('./net-tables.js').NetRecord} NetRecord */

/**
 * A run under a network profile; `extra` replaces fields.
 * @param {string} transport
 * @param {string} profile
 * @param {Partial<Omit<import('./types.js').Run, 'net'>>} [extra]
 * @returns {import('./types.js').Run & { net: NetRecord & { calibration: NonNullable<NetRecord['calibration']> } }}
 */
const run = (transport, profile, extra = {}) => ({
  transport, clients: 10, group: 5, cycleMs: 167, sim: {}, durationS: 10,
  rt: { mean: 20, dev: 5, p50: 18, p95: 40, p99: 90, max: 120, n: 500 }, rts: null, cpu: { server: 5, clients: 10 },
  lossPct: transport === 'relay' ? 0 : 3.1, ackLossPct: 0, dups: 0, reorders: 0, jitterMs: 0.4, setupMs: null, channel: null,
  net: {
    profile, target: { up: { lossPct: 2, rateKbit: null }, down: { lossPct: 2, rateKbit: null } },
    calibration: { up: { lossPct: 1.9, rateKbit: 900000 }, down: { lossPct: 2.1, rateKbit: 800000 }, flagged: false, flags: [] }, flagged: false,
  },
  ...extra,
});

test('ACKed updates per client per second come from the measured RTs', () => {
  assert.equal(ackedRate(run('relay', 'lossy-2')), 5);
  assert.equal(ackedRate({ rt: { n: 3 } }), null);
});

test('the network table shows the profile, the figures and the calibration; unlimited rates read –', () => {
  const cells = netRow(run('relay-udp', 'lossy-2')).cells;
  assert.deepEqual(cells.slice(0, 9), ['lossy-2', 'relay-udp', '–', '10', '20.0', '90.0', '3.10', '0.40', '5.00']);
  assert.deepEqual(cells.slice(9, 11), ['–', '–'], 'no freshness in an older record');
  assert.equal(cells[11], '1.90 / 2.10');
  assert.equal(cells[12], '–');
  assert.equal(cells[13], 'ok');
  const fresh = netRow({ ...run('relay-udp', 'lossy-2'), cycleMode: 'pipelined', freshness: { updatesPerStreamPerS: 5.66, freezeMs: { p50: 167, p99: 512, max: 900 }, frozenPct: 0 } }).cells;
  assert.deepEqual([fresh[2], fresh[9], fresh[10]], ['pipelined', '5.66', '512']);
  const off = run('relay', '3g');
  off.net.flagged = true;
  off.net.calibration.flags = ['link 0: rate up 150 vs 256 kbit/s per peer'];
  assert.match(netRow(off).cells[13], /^off: link 0: rate up 150/);
});

test('tables.md gains a Network conditions section; per-point tables carry the profile', () => {
  const results = { env: { cpus: 2 }, runs: [run('relay', 'none'), run('relay', 'lossy-2'), run('relay-udp', 'lossy-2')] };
  const md = renderTables(results);
  assert.match(md, /### relay · group 5 · cycle 167 ms · net lossy-2/);
  assert.match(md, /## Network conditions/);
  assert.equal(renderNetTables([{ transport: 'relay' }]), '');
  assert.deepEqual(supportedClients(results.runs).map((s) => s.net), ['none', 'lossy-2', 'lossy-2']);
});

test('report.html section: four charts over the profiles, a row per run, flagged ones marked', () => {
  const flagged = run('relay-udp', 'lossy-2');
  flagged.net.flagged = true;
  flagged.net.calibration.flags = ['link 0: loss up 3 % vs 2 %'];
  const section = netReportSection([run('relay', 'none'), run('relay', 'lossy-2'), flagged, { transport: 'relay', error: 'x', net: 'lossy-5', clients: 10 }]);
  assert.ok(section);
  assert.equal(section.charts.length, 4);
  assert.deepEqual(section.charts[0].config.data.labels, ['none', 'lossy-2', 'lossy-5']);
  assert.match(section.html, /1 point\(s\) ran on links more than 20 % off/);
  assert.match(section.html, /class="bad">off: link 0/);
  assert.equal(netReportSection([{ transport: 'relay' }]), null);
});

test('report.html draws each network chart once, in the Network section', async () => {
  const { renderReportHtml } = await import('./report-html.js');
  const html = renderReportHtml({ env: { cpus: 2 }, runs: [run('relay', 'none'), run('relay-udp', 'lossy-2')] });
  assert.equal(html.split('id="chart-net-1-net-p99"').length - 1, 1);
  assert.ok(html.indexOf('id="chart-net-1-net-p99"') > html.indexOf('<section id="network">'));
  assert.match(html, /<a href="#network">Network<\/a>/);
});
