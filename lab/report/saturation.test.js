import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  SATURATED_RULE, UNSETTLED_RULE, describeSaturated, loadFlagLabels, loadFlagRules, loadFlagSentences, loadFlagsText,
  saturatedFlag, unsettledFlag, withLoadFlags,
} from './saturation.js';
import { runSchemaProblems } from './schema.js';

/** @typedef {import('./types.js').Run} Run */

/**
 * A bench run of the shape; `over` replaces fields.
 * @param {Partial<Run> & Record<string, unknown>} [over]
 * @returns {Run}
 */
function benchRun(over = {}) {
  return {
    transport: 'relay', clients: 300, group: 5, cycleMs: 167, browser: 'chromium',
    rt: { mean: 10242, dev: 1, p50: 1, p95: 20992, p99: 1, max: 1, n: 1 }, rts: null,
    cpu: { server: 8, clients: 172 }, lossPct: 11.65, ackLossPct: 0, dups: 0, reorders: 0, jitterMs: 0, setupMs: null, channel: null,
    ...over,
  };
}

const TWO_CORES = { cores: 2 };

test('saturated: browsers at 85 % of what the machine left them or more', () => {
  const flag = saturatedFlag(benchRun(), TWO_CORES);
  assert.ok(flag);
  assert.equal(flag.rule, SATURATED_RULE);
  assert.deepEqual(flag.figures, { generator: 'browsers', eventLoops: null, generatorCpuPct: 172, cores: 2, serverCpuPct: 8, leftPct: 192 });
  assert.equal(describeSaturated(flag), 'browsers at 172 % of the 192 % left to them');
  // 0.85 × (200 − 20) = 153: at the threshold it holds, just below it does not
  assert.ok(saturatedFlag(benchRun({ cpu: { server: 20, clients: 153 } }), TWO_CORES));
  assert.equal(saturatedFlag(benchRun({ cpu: { server: 20, clients: 152.9 } }), TWO_CORES), null);
  // the same browsers on four cores have room left
  assert.equal(saturatedFlag(benchRun(), { cores: 4 }), null);
});

test('saturated: a sim generator uses at most one core per worker', () => {
  const sim = (/** @type {number} */ clients, /** @type {number} */ workers, generator = 'thread') => benchRun({
    browser: undefined, sim: { workers, generator, clientsPerProcess: 100 }, cpu: { server: 30, clients },
  });
  // one worker thread: 100 % is all it can use, however many cores are idle
  const one = saturatedFlag(sim(90, 1), TWO_CORES);
  assert.equal(one?.figures.leftPct, 100);
  assert.equal(describeSaturated(/** @type {any} */ (one)), '1 worker thread at 90 % of the 100 % left to them');
  assert.equal(saturatedFlag(sim(84, 1), TWO_CORES), null);
  // two worker processes on two cores: the machine's 170 % is the lower bound
  const two = saturatedFlag(sim(150, 2, 'process'), TWO_CORES);
  assert.equal(two?.figures.leftPct, 170);
  assert.match(describeSaturated(/** @type {any} */ (two)), /^2 worker processes at 150 %/);
  assert.match(loadFlagSentences(benchRun({ ...sim(90, 1), saturated: one }))[0], /capped at 1 × 100 % \(one event loop per worker\)/);
});

test('saturated: cannot tell without the figures, and a failed run or a fleet is not judged', () => {
  assert.equal(saturatedFlag(benchRun({ cpu: { server: 8, clients: null } }), TWO_CORES), null);
  assert.equal(saturatedFlag(benchRun({ cpu: null }), TWO_CORES), null);
  assert.equal(saturatedFlag(benchRun(), { cores: 0 }), null);
  assert.equal(saturatedFlag(benchRun({ error: 'boom' }), TWO_CORES), null);
  const { browser, ...noDriver } = benchRun();
  assert.equal(saturatedFlag(/** @type {Run} */ (noDriver), TWO_CORES), null, 'neither sim nor browser');
  assert.equal(saturatedFlag(benchRun({ fleet: { agents: [] } }), TWO_CORES), null, 'browsers on other machines');
  // --url: the server's CPU is not measured and counts as 0
  const url = saturatedFlag(benchRun({ cpu: { server: null, clients: 180 } }), TWO_CORES);
  assert.equal(url?.figures.leftPct, 200);
  assert.match(loadFlagSentences(benchRun({ saturated: url }))[0], /server not measured \(counted as 0\)/);
});

test('unsettled: more than 3 updates per stream in flight; a missing stream count cannot tell', () => {
  const run = (/** @type {Record<string, number>} */ updates) => benchRun({ updates });
  assert.equal(unsettledFlag(run({ inFlight: 3000, streams: 1000 })), null, 'exactly 3 per stream');
  assert.deepEqual(unsettledFlag(run({ inFlight: 3001, streams: 1000 })), { rule: UNSETTLED_RULE, figures: { inFlight: 3001, streams: 1000 } });
  assert.equal(unsettledFlag(run({ inFlight: 5000 })), null, 'no streams field');
  assert.equal(unsettledFlag(benchRun()), null, 'no updates at all');
  assert.ok(unsettledFlag(run({ inFlight: 1, streams: 0 })));
});

test('withLoadFlags adds both fields, changes no figure, and the record still fits the schema', () => {
  const before = benchRun({ updates: { inFlight: 4000, streams: 1000 } });
  const after = withLoadFlags(before, TWO_CORES);
  const { saturated, unsettled, ...rest } = after;
  assert.deepEqual(rest, before);
  assert.ok(saturated && unsettled);
  assert.deepEqual(runSchemaProblems(after), []);
  assert.deepEqual(loadFlagLabels(after), ['saturated', 'unsettled']);
  assert.equal(loadFlagsText(after), 'SATURATED: browsers at 172 % of the 192 % left to them — this point measures the load generator'
    + ' · UNSETTLED: 4000 updates still in flight over 1000 streams when loss was counted (more than 3 per stream)');
  assert.deepEqual(loadFlagRules([after, after]), [SATURATED_RULE, UNSETTLED_RULE]);
  const calm = withLoadFlags(benchRun({ cpu: { server: 8, clients: 40 } }), TWO_CORES);
  assert.equal(calm.saturated, null);
  assert.equal(calm.unsettled, null);
  assert.equal(loadFlagsText(calm), '');
  assert.deepEqual(loadFlagLabels(calm), []);
});
