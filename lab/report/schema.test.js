import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addedFieldProblems, recordingProblems, resultsSchemaProblems, runSchemaProblems } from './schema.js';

const base = {
  transport: 'relay-udp', clients: 20, group: 5, cycleMs: 167, sim: {},
  rt: { mean: 1, dev: 0, p50: 1, p95: 1, p99: 1, max: 1, n: 1 }, rts: null, cpu: { server: 1, clients: 1 },
  lossPct: 0, ackLossPct: 0, dups: 0, reorders: 0, jitterMs: 0, setupMs: null, channel: null,
};

test('the added fields: cycleMode, freshness, cluster and failover are optional and checked when present', () => {
  assert.deepEqual(runSchemaProblems(base), [], 'an older record without them');
  const run = {
    ...base, cycleMode: 'pipelined',
    freshness: { updatesPerStreamPerS: 5.8, freezeMs: { p50: 167, p99: 400, max: 900 }, frozenPct: 0 },
    cluster: { nodes: 3, crossNodeUpdates: 1200, natsVersion: '2.10.0' },
    failover: { clientsMoved: 7, reconnectMs: { p50: 300, p99: 900, max: 950 }, lostUpdates: 12 },
  };
  assert.deepEqual(runSchemaProblems(run), []);
  assert.deepEqual(addedFieldProblems({ ...run, cycleMode: 'eager' }), ['cycleMode is not one of pipelined, gated']);
  assert.deepEqual(addedFieldProblems({ ...run, freshness: { updatesPerStreamPerS: 'x', frozenPct: null, freezeMs: { p50: 1, p99: null, max: 2 } } }),
    ['freshness.updatesPerStreamPerS is not a number or null']);
  assert.deepEqual(addedFieldProblems({ ...run, failover: { clientsMoved: '7', reconnectMs: { p99: 'no' } } }),
    ['failover.clientsMoved is not a number or null', 'failover.reconnectMs.p99 is not a number or null']);
});

test('the fields of recordings and combined reports are checked when present', () => {
  const run = {
    ...base, sim: undefined, browser: 'Chrome Android', source: 'recording', sourceName: 'study', groupName: 'lab1', family: 'Chrome Android', sessions: 3,
    tracking: { fps: 24.5, msPerFrame: 11, visiblePct: 80, clients: 2 },
  };
  assert.deepEqual(runSchemaProblems(run), []);
  assert.deepEqual(runSchemaProblems({ ...run, family: undefined, families: ['Chrome Android', 'Safari iOS'], tracking: null }), ['family is not a string']);
  assert.deepEqual(addedFieldProblems({ source: 3, families: 'x', sessions: '2', tracking: { fps: 'fast', msPerFrame: 1, visiblePct: null, clients: null } }), [
    'source is not a string', 'families is not a list of names', 'sessions is not a number or null',
    'tracking.fps is not a number or null', 'tracking.clients is not a number',
  ]);
  const results = { env: { cpus: 2 }, runs: [run], devices: [{ name: '<b>', reports: 2, clientId: 1 }], recording: { name: 'study', sessions: 1, counts: { lines: 3, tornLines: 1 } } };
  assert.deepEqual(resultsSchemaProblems(results), []);
  assert.deepEqual(recordingProblems({ devices: [null, { reports: '2' }], recordings: [{ name: 1, counts: { lines: 'x' } }] }), [
    'devices[0] is not an object', 'devices[1].reports is not a number', 'recordings[0].name is not a string', 'recordings[0].counts.lines is not a number',
  ]);
});

test('fleet: an agents block is checked; the string label of `carlab browsers` car runs is allowed', () => {
  const run = {
    transport: 'relay', clients: 2, group: 2, cycleMs: 167, browser: 'chromium',
    rt: { mean: 1, dev: 0, p50: 1, p95: 1, p99: 1, max: 1, n: 1 }, rts: null, cpu: { server: null, clients: null },
    lossPct: 0, ackLossPct: 0, dups: 0, reorders: 0, jitterMs: 0, setupMs: null, channel: null,
  };
  assert.deepEqual(runSchemaProblems({ ...run, fleet: 'chromium+firefox' }), []);
  assert.deepEqual(runSchemaProblems({ ...run, fleet: { agents: [] } }), []);
  assert.deepEqual(runSchemaProblems({ ...run, fleet: { pages: 3 } }), ['fleet.agents is not a list']);
  assert.deepEqual(runSchemaProblems({ ...run, fleet: 7 }), ['fleet is neither an agents block nor a browsers label']);
});

test('the load flags (lab/report/saturation.js) are optional: null or { rule, figures }', () => {
  const saturated = { rule: 'saturated: ...', figures: { generator: 'browsers', generatorCpuPct: 172, cores: 2, serverCpuPct: 8, eventLoops: null, leftPct: 192 } };
  assert.deepEqual(runSchemaProblems({ ...base, saturated, unsettled: null }), []);
  assert.deepEqual(runSchemaProblems({ ...base, saturated: null, unsettled: { rule: 'unsettled: ...', figures: { inFlight: 40, streams: 10 } } }), []);
  assert.deepEqual(addedFieldProblems({ saturated: true }), ['saturated is neither null nor {rule, figures}']);
  assert.deepEqual(addedFieldProblems({ unsettled: { rule: 3, figures: { inFlight: [] } } }), ['unsettled.rule is not a string', 'unsettled.figures.inFlight is not a number, null or a name']);
  assert.deepEqual(addedFieldProblems({ saturated: { rule: 'r' } }), ['saturated.figures is not an object']);
});

test('drawn (--playout) is optional: null, or per mode its figures and a timeline', () => {
  const mode = { frames: 10, positionCm: { p50: 1, p95: 2, p99: 3, max: 4 }, jumpsPerMinute: 0 };
  assert.deepEqual(addedFieldProblems({ ...base, drawn: null }), []);
  assert.deepEqual(addedFieldProblems({ ...base, drawn: { renderFps: 60, modes: { predict: mode }, timeline: [] } }), []);
  assert.deepEqual(addedFieldProblems({ ...base, drawn: { modes: { ease: { ...mode, positionCm: { ...mode.positionCm, p95: '2' } } }, timeline: {} } }),
    ['drawn.timeline is not a list', 'drawn.modes.ease.positionCm.p95 is not a number or null']);
  assert.deepEqual(addedFieldProblems({ ...base, drawn: 'fine' }), ['drawn has no modes']);
});
