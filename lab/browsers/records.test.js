// The records of `carlab browsers` built from canned measurements, then
// rendered: the numbers each experiment reports and its tables.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePairs } from './context.js';
import { setupRecord, sideBytes } from './setup.js';
import { overheadRecord, summarizeParts, totalsOf } from './overhead.js';
import { keepaliveRates, payloadOf } from './keepalive.js';
import { assignConnections, memoryFigures, parseSmapsRollup } from './memory.js';
import { APPROACHES, approachFigures } from './transfer.js';
import { fleetsOf } from './car.js';
import { experimentSections, isLabRun, renderExperimentTables } from '../report/browsers-tables.js';
import { experimentReport } from '../report/browsers-section.js';
import { renderTables } from '../report/output.js';
import { renderReportHtml } from '../report/report-html.js';
import { browsersSchemaProblems } from '../report/browsers-schema.js';

const [CF] = parsePairs('C-F');

/**
 * A results object holding these runs. Browsers' experiment records ride in `runs` beside
 * CAR runs, but types.js's Run names only a CAR run's fields (clients, group, cycleMs
 * required): hence the cast.
 * @param {Record<string, unknown>} env @param {object[]} runs
 */
const resultsOf = (env, runs) => /** @type {import('../report/types.js').Results} */ ({ env, runs });

/**
 * A connect()/connInfo() result as the lab page returns it.
 * @param {number} sent @param {number} received @param {{ packets?: boolean, stun?: boolean }} [o]
 */
const end = (sent, received, { packets = true, stun = true } = {}) => ({
  setup: { candidateType: 'host/host', setupBytesSent: sent, setupBytesReceived: received, setupPacketsSent: packets ? 9 : 0, setupPacketsReceived: packets ? 8 : 0 },
  counters: { pairs: { packetsSent: packets ? 9 : null, packetsReceived: packets ? 8 : null, requestsSent: stun ? 2 : null, consentRequestsSent: stun ? 1 : null } },
});

/** One setup repetition that opened after `peer` ms. @param {number} peer @param {Record<string, unknown>} [extra] */
const rep = (peer, extra = {}) => {
  const wa = { bytes: 3000, packets: 12, stunRequests: 2, stunResponses: 1, stunBytes: 300 };
  const wb = { bytes: 3100, packets: 11, stunRequests: 1, stunResponses: 2, stunBytes: 310 };
  return {
    signalingMs: 10, signalingReceiverMs: 12,
    timings: { offerAnswerMs: peer / 2, iceConnectedMs: peer * 0.7, dtlsConnectedMs: peer * 0.8, channelOpenMs: peer },
    receiverTimings: { channelOpenMs: peer - 5 },
    candidateType: 'host/host',
    channel: { ordered: false, maxRetransmits: 0, negotiated: true },
    bytes: {
      initiator: sideBytes({ up: 570, down: 146, segsUp: 4, segsDown: 2 }, { up: 1900, down: 1500, segsUp: 10, segsDown: 8 }, end(2200, 2400), wa, wb),
      receiver: sideBytes({ up: 600, down: 146, segsUp: 5, segsDown: 3 }, { up: 2300, down: 2000, segsUp: 11, segsDown: 9 }, end(2400, 2200, { packets: false, stun: false }), wb, wa),
    },
    ...extra,
  };
};

test('setup: phases summarised over the repetitions that opened; failures counted by reason', () => {
  const reps = [rep(40), rep(60), { signalingMs: 11, error: 'not open after 10000 ms' }];
  const r = setupRecord(CF, false, reps, 3, 5);
  assert.equal(r.experiment, 'setup');
  assert.equal(r.pair, 'C-F');
  assert.equal(r.browser, 'chromium/firefox');
  assert.equal(r.transport, 'p2p');
  assert.deepEqual(r.channel, { ordered: false, maxRetransmits: 0, negotiated: true });
  assert.equal(r.completed, 2);
  assert.equal(r.failures, 1);
  assert.equal(r.gaveUp, false);
  assert.deepEqual(r.failureReasons, { 'not open after 10000 ms': 1 });
  assert.equal(r.setupMs.peer?.mean, 50);
  assert.equal(r.setupMs.peer?.dev, 10);
  assert.equal(r.setupMs.signaling?.n, 3); // signaling opened in every repetition
  assert.equal(r.setupMs.offerAnswer?.mean, 25);
  assert.equal(r.setupMs.peerReceiver?.mean, 45);
  assert.deepEqual(r.candidateTypes, { 'host/host': 2 });
  assert.equal(r.reps.length, 3);
  assert.ok('signaling' in r.setupMs && 'peer' in r.setupMs); // docs/architecture.md's setupMs {signaling, peer}
  const gaveUp = setupRecord(CF, true, [{ error: 'x' }, { error: 'x' }], 100, 2);
  assert.equal(gaveUp.gaveUp, true);
  assert.equal(gaveUp.setupMs.peer, null);
});

test('overhead: signaling + wire per end; Firefox reports no packets in getStats', () => {
  const b = rep(50).bytes;
  assert.deepEqual(b.initiator.signalingSetup, { sent: 1330, received: 1354, packetsSent: 6, packetsReceived: 6 });
  assert.deepEqual(b.initiator.p2p, { sent: 2200, received: 2400, packetsSent: 9, packetsReceived: 8 });
  assert.equal(b.receiver.p2p?.packetsSent, null);
  assert.equal(b.receiver.stun.requestsSent, null);
  assert.deepEqual(b.initiator.wire, { sent: 3000, received: 3100, packetsSent: 12, packetsReceived: 11, stunRequestsSent: 2, stunResponsesSent: 1, stunBytesSent: 300 });
  assert.deepEqual(totalsOf(b.initiator), { sent: 570 + 1330 + 3000, received: 146 + 1354 + 3100, packetsSent: 4 + 6 + 12, packetsReceived: 2 + 6 + 11 });
  // without wire counters the total uses getStats, and unknown packets make the packet total unknown
  const noWire = { ...b.receiver, wire: null };
  assert.deepEqual(totalsOf(noWire), { sent: 600 + 1700 + 2400, received: 146 + 1854 + 2200, packetsSent: null, packetsReceived: null });
  const r = overheadRecord(CF, false, [rep(40), rep(60), { error: 'x' }], true);
  assert.equal(r.completed, 2);
  assert.equal(r.sharedWithSetup, true);
  assert.equal(r.totalIncludes, 'signaling + wire');
  assert.equal(r.initiator.browser, 'chromium');
  assert.equal(r.receiver.browser, 'firefox');
  assert.equal(r.initiator.total?.sent?.mean, 4900);
  assert.equal(r.receiver.p2p?.packetsSent, null);
  assert.deepEqual(Object.keys(summarizeParts([{ a: { x: 1 } }, { a: { x: 3, y: null } }]).a), ['x', 'y']);
});

test('keepalive: rates per second from counter deltas and wire traffic', () => {
  const counters = (/** @type {number} */ bytes, /** @type {number} */ requests) => ({ transport: { bytesSent: bytes, bytesReceived: bytes, packetsSent: 1, packetsReceived: 1 }, pairs: { requestsSent: requests, requestsReceived: requests, responsesSent: requests, consentRequestsSent: requests } });
  const rates = keepaliveRates({ before: counters(1000, 10), after: counters(1750, 34) },
    { bytes: 30000, packets: 60, stunRequests: 24, stunResponses: 24, stunBytes: 9000 },
    { bytes: 15000, packets: 30, stunRequests: 12, stunResponses: 12, stunBytes: 4000 }, 60_000);
  assert.equal(rates.payloadKbitSent, 0.1); // 750 B in 60 s
  assert.equal(rates.consentRequestsSent, 0.4);
  assert.equal(rates.wireKbitSent, 4);
  assert.equal(rates.wireKbitReceived, 2);
  assert.equal(rates.wireStunRequestsSent, 0.4);
  assert.equal(rates.wireStunRequestsReceived, 0.2);
  assert.equal(rates.wirePacketsSent, 1);
  // Firefox: no transport totals, candidate-pair sums instead, no STUN counts
  assert.equal(payloadOf({ transport: { bytesSent: null }, pairs: { bytesSent: 5 } }).source, 'candidate-pair');
  const ff = keepaliveRates({ before: { pairs: { bytesSent: 0 } }, after: { pairs: { bytesSent: 60 } } }, null, null, 60_000);
  assert.equal(ff.payloadKbitSent, 0.008);
  assert.equal(ff.requestsSent, null);
  assert.equal(ff.wireKbitSent, null);
});

test('memory: connections fill server pages in order; m1 over the ramp', () => {
  assert.deepEqual(assignConnections([], 7, 3), [{ server: 0, n: 3 }, { server: 1, n: 3 }, { server: 2, n: 1 }]);
  assert.deepEqual(assignConnections([3, 1], 4, 3), [{ server: 1, n: 2 }, { server: 2, n: 2 }]);
  const f = memoryFigures({ ussBytes: 50e6, pssBytes: 100e6, rssBytes: 200e6 }, [
    { connections: 10, ussBytes: 50.5e6, pssBytes: 101e6, rssBytes: 202e6 },
    { connections: 20, ussBytes: 51e6, pssBytes: 102e6, rssBytes: 204e6 },
  ]);
  assert.equal(f.dMax, 20);
  assert.equal(f.m1Bytes.uss, 50_000);
  assert.equal(f.m1Bytes.pss, 100_000);
  assert.equal(f.m1Bytes.rss, 200_000);
  assert.ok(Math.abs(/** @type {number} */ (f.slopeBytes.pss) - 100_000) < 1e-6);
  assert.deepEqual(f.mMax, { ussBytes: 51e6, pssBytes: 102e6, rssBytes: 204e6 });
  assert.equal(memoryFigures({ pssBytes: 1, rssBytes: 1 }, []).m1Bytes.pss, null);
  assert.equal(memoryFigures({ ussBytes: null, rssBytes: 1 }, [{ connections: 1, ussBytes: 5, rssBytes: 2 }]).m1Bytes.uss, null);
  assert.deepEqual(parseSmapsRollup('Rss:  100 kB\nPss:   40 kB\nPrivate_Clean:  3 kB\nPrivate_Dirty:  7 kB\n'), { pss: 40 * 1024, uss: 10 * 1024 });
  assert.equal(parseSmapsRollup('garbage'), null);
});

test('transfer: mean and Dev per approach, throughput of the mean', () => {
  const a = approachFigures(APPROACHES[0], [{ ms: 100 }, { ms: 300 }, { error: 'timeout' }], 1_000_000);
  assert.equal(a.ms?.mean, 200);
  assert.equal(a.ms?.dev, 100);
  assert.equal(a.throughputMBps, 5);
  assert.equal(a.n, 2);
  assert.deepEqual(a.errors, ['timeout']);
  assert.deepEqual(APPROACHES.map((x) => x.connections * x.channelsPerConn), [1, 5, 10, 5, 10]);
});

test('car: one fleet per browser, mixed pairs share one', () => {
  assert.deepEqual(fleetsOf(parsePairs('C-C,F-F,C-F,F-C')), [
    { label: 'C-C', pairs: ['C-C'], browsers: ['chromium'] },
    { label: 'F-F', pairs: ['F-F'], browsers: ['firefox'] },
    { label: 'C+F', pairs: ['C-F', 'F-C'], browsers: ['chromium', 'firefox'] },
  ]);
});

test('tables.md and report.html: one section per experiment; CAR tables only for car runs', () => {
  const [CC] = parsePairs('C-C');
  const runs = [
    setupRecord(CF, false, [rep(40), rep(60)], 2, 5),
    setupRecord(CF, true, [rep(90), rep(110)], 2, 5),
    setupRecord(CC, false, [rep(30)], 1, 5),
    overheadRecord(CF, false, [rep(40)], true),
    { experiment: 'transfer', pair: 'C-F', hideHostAddresses: false, fileSize: 1e6, pieces: 10, pieceSize: 1e5, chunk: 16384, repetitions: 2,
      approaches: APPROACHES.map((x) => approachFigures(x, [{ ms: 80 }, { ms: 120 }], 1e6)) },
    { experiment: 'memory', pair: 'C-F', error: 'browser crashed' },
    { experiment: 'car', pair: 'C-C', transport: 'relay', clients: 10, group: 5, cycleMs: 167, browser: 'chromium',
      rt: { mean: 12, dev: 3, p50: 11, p95: 18, p99: 20, max: 25, n: 500 }, rts: { mean: 1, max: 4 }, cpu: { server: 5, clients: 40 },
      lossPct: 0, ackLossPct: 0, dups: 0, reorders: 0, jitterMs: 1.5, setupMs: null, channel: null },
    { experiment: 'car', pair: 'C+F', transport: 'p2p', clients: 10, group: 5, cycleMs: 167, browser: 'chromium+firefox',
      rt: { mean: 6, dev: 3, p50: 5, p95: 11, p99: 12, max: 15, n: 500 }, rts: null, cpu: { server: 1, clients: 60 },
      lossPct: 0, ackLossPct: 0, dups: 0, reorders: 0, jitterMs: 1.5, setupMs: null, channel: null,
      byBrowser: {
        chromium: { clients: 5, rt: { mean: 4.5, dev: 1, p95: 7 }, lossPct: 0, jitterMs: 1.2 },
        firefox: { clients: 5, rt: { mean: 7.5, dev: 2, p95: 12 }, lossPct: 0.5, jitterMs: 1.8 },
      } },
  ];
  assert.equal(runs.filter(isLabRun).length, 6);
  const sections = experimentSections(runs);
  assert.deepEqual(sections.map((s) => s.experiment), ['setup', 'overhead', 'memory', 'transfer', 'car']);
  const md = renderTables(resultsOf({}, runs));
  assert.match(md, /## Setup delay/);
  assert.match(md, /### Setup delay \(ms\), host-address obfuscation off/);
  assert.match(md, /\| C-F +\| +10\.0 ± 0\.0 \|/);
  assert.match(md, /### What host-address obfuscation changes/);
  assert.match(md, /\| C-F +\| +50\.0 \| +100\.0 \| +\+50\.0 \|/);
  assert.match(md, /initiator \(chromium\)/);
  assert.match(md, /Memory per idle connection: failed cells/);
  assert.match(md, /\| sequential, 1 channel +\| 100 ± 20 \|/);
  assert.match(md, /## Location updates per browser/);
  assert.match(md, /### relay · group 5 · cycle 167 ms/); // the car run in the CAR layout
  assert.match(md, /\| C\+F · firefox +\| p2p +\| +5 \| +5 \| +7\.5 \| +2\.0 \| +12\.0 \| +0\.50 \| +1\.80 \|/); // a mixed fleet per browser
  assert.doesNotMatch(md, /### p2p · group – /); // experiment runs stay out of it
  assert.equal(renderExperimentTables([]), '');

  const report = experimentReport(runs);
  assert.deepEqual(report.nav.map((n) => n.href), ['#lab-setup', '#lab-overhead', '#lab-memory', '#lab-transfer', '#lab-car']);
  assert.deepEqual(report.charts.map((c) => c.kind), ['setup', 'overhead', 'transfer', 'car']);
  for (const c of report.charts) {
    assert.ok(c.config.options.plugins.legend.labels && c.config.options.plugins.tooltip, c.kind); // what the report script needs
    assert.ok(c.config.data.datasets.length > 0, c.kind);
  }
  const html = renderReportHtml(resultsOf({ cpus: 2 }, runs));
  assert.match(html, /<section id="lab-setup">/);
  assert.match(html, /<a href="#lab-setup">Setup delay<\/a>/);
  assert.match(html, /<section id="charts">/); // the car run keeps the CAR sections
  /** @type {{ id: string }[]} */
  const specs = JSON.parse(/<script type="application\/json" id="carlab-charts">(.*?)<\/script>/s.exec(html)?.[1] ?? '[]');
  assert.ok(specs.some((s) => s.id.startsWith('chart-lab-')));
  for (const s of specs) assert.match(html, new RegExp(`<canvas id="${s.id}"`));
  const labOnly = renderReportHtml(resultsOf({ cpus: 2 }, runs.filter(isLabRun)));
  assert.doesNotMatch(labOnly, /<section id="charts">/);
});

test('the records fit the browsers schema; broken ones are named', () => {
  const runs = [setupRecord(CF, false, [rep(40)], 1, 5), overheadRecord(CF, false, [rep(40)], true),
    { experiment: 'memory', pair: 'C-F', initiatorBrowser: 'chromium', receiverBrowser: 'firefox', browser: 'chromium/firefox', hideHostAddresses: false, error: 'boom' }];
  const env = { cpus: 2, command: 'browsers', browsers: { firefox: { version: '153.7.0', userAgent: 'Mozilla/5.0 (X11; Linux x86_64; rv:153.0) Gecko/20100101 Firefox/153.0' } } };
  assert.deepEqual(browsersSchemaProblems({ env, runs }), []);
  const bad = browsersSchemaProblems({ env: { cpus: 2, command: 'bench', browsers: { firefox: {} } }, runs: [{ experiment: 'setup', pair: 'C-F' }, { experiment: 'car', transport: 'relay' }] });
  assert.ok(bad.includes('env.command is not "browsers"'));
  assert.ok(bad.includes('env.browsers.firefox lacks version/userAgent'));
  assert.ok(bad.some((x) => x.startsWith('runs[0] (setup C-F): setupMs')));
  assert.ok(bad.some((x) => x.startsWith('runs[1] (car ): clients is not a number')));
});
