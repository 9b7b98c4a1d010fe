// Phone-speed peers: the --cpu-slowdown checks, what a run records, the
// tracking figures, the sweep's innermost slowdowns and the tables' section.
// The throttle itself, on a real Chromium: lab/bench/cdp.test.js.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { MAX_CPU_SLOWDOWN, slowdownCheck, slowdownFields, throttlePage, trackingFigures } from './throttle.js';
import { benchCommand } from '../commands/bench.js';
import { expandSweep, parseLabFlags } from '../shared/flags.js';
import { renderTables } from '../report/output.js';
import { runSchemaProblems } from '../report/schema.js';

/** @param {string[]} argv @returns {{ problem: string | null, o: any }} */
function benchOptions(argv) {
  const parsed = /** @type {any} */ (parseLabFlags(argv, { transports: benchCommand.transports, defaults: benchCommand.defaults, extra: benchCommand.extraFlags }));
  if (parsed.kind !== 'options') return { problem: parsed.error?.message ?? parsed.kind, o: null };
  return { problem: benchCommand.validate?.(parsed.options) ?? null, o: parsed.options };
}

test('--cpu-slowdown: Chromium only; a mixed fleet says which browsers run at full speed; a fleet without Chromium is refused', () => {
  assert.deepEqual(slowdownCheck(null, ['firefox']), { problem: null, notice: null });
  assert.deepEqual(slowdownCheck([1, 4], ['chromium']), { problem: null, notice: null });
  const mixed = slowdownCheck([4], ['chromium', 'firefox', 'webkit']);
  assert.equal(mixed.problem, null);
  assert.match(String(mixed.notice), /^firefox and webkit cannot be throttled \(only Chromium has a CPU throttle/);
  assert.match(String(slowdownCheck([4], ['firefox']).problem), /firefox cannot be throttled: .*add chromium to --browsers/);
  assert.match(String(slowdownCheck([MAX_CPU_SLOWDOWN + 1], ['chromium']).problem), /is not a slowdown 1\.\.20/);
  assert.match(String(slowdownCheck([0.5], ['chromium']).problem), /0\.5 is not a slowdown/);
});

test('bench flags: --cpu-slowdown lists, --tracking needs its browser in the fleet and no agents', () => {
  const ok = benchOptions(['--cpu-slowdown', '1,4', '--tracking', '--browsers', 'chromium,firefox']);
  assert.equal(ok.problem, null);
  assert.deepEqual(ok.o.cpuSlowdowns, [1, 4]);
  assert.equal(ok.o.tracking, true);
  assert.match(ok.o.slowdownNotice, /firefox cannot be throttled/);
  assert.equal(benchOptions([]).o.cpuSlowdowns, null);
  assert.match(String(benchOptions(['--cpu-slowdown', 'fast']).problem), /--cpu-slowdown: "fast" is not a positive number/);
  assert.match(String(benchOptions(['--cpu-slowdown', '4', '--browsers', 'firefox']).problem), /firefox cannot be throttled/);
  assert.match(String(benchOptions(['--tracking', '--browsers', 'firefox']).problem), /--tracking opens its AR page in chromium: add chromium to --browsers/);
  // --tracking-browser picks another of the fleet's browsers, and implies --tracking
  const ff = benchOptions(['--tracking-browser', 'firefox', '--browsers', 'chromium,firefox']);
  assert.deepEqual([ff.problem, ff.o.tracking, ff.o.trackingBrowser], [null, true, 'firefox']);
  assert.equal(benchOptions(['--tracking']).o.trackingBrowser, 'chromium');
  assert.match(String(benchOptions(['--tracking-browser', 'webkit']).problem), /AR page in webkit: add webkit to --browsers/);
  assert.match(String(benchOptions(['--tracking-browser', 'safari']).problem), /--tracking-browser: "safari" is not chromium, firefox or webkit/);
  assert.match(String(benchOptions(['--tracking', '--agents', '2', '--nats', 'nats://x:1', '--token', 'abcdefgh']).problem), /not with --agents/);
  assert.match(benchCommand.help(), /--cpu-slowdown LIST/);
});

test('the sweep runs each population at every slowdown back to back (innermost); without the flag, points carry none', () => {
  const points = expandSweep({ transports: ['relay', 'p2p'], clients: [20], groups: [5], cycles: [167], cpuSlowdowns: [1, 4] });
  assert.deepEqual(points.map((p) => [p.transport, p.cpuSlowdown]), [['relay', 1], ['relay', 4], ['p2p', 1], ['p2p', 4]]);
  assert.ok(expandSweep({ transports: ['relay'], clients: [20], groups: [5], cycles: [167] }).every((p) => !('cpuSlowdown' in p)));
});

test('what a run records: the rate and which browsers ran at it; throttling only where it exists', async () => {
  assert.deepEqual(slowdownFields({}, ['chromium']), {});
  assert.deepEqual(slowdownFields({ cpuSlowdown: 4 }, ['chromium', 'firefox', 'chromium']),
    { cpuSlowdown: 4, cpuThrottled: ['chromium'], cpuUnthrottled: ['firefox'] });
  /** @type {number[]} */
  const rates = [];
  const page = { throttleCpu: async (/** @type {number} */ rate) => { rates.push(rate); } };
  await throttlePage(page, 'chromium', 4);
  await throttlePage(page, 'chromium', 1);
  await throttlePage(page, 'chromium', undefined);
  await throttlePage(page, 'firefox', 4);
  await throttlePage({}, 'chromium', 4);
  assert.deepEqual(rates, [4]);
});

test('tracking figures over the window between two samples; the section shows 1x and 4x side by side', () => {
  const from = { processed: 100, detected: 90, processMsSum: 1500, at: 10_000 };
  assert.deepEqual(trackingFigures(from, { processed: 200, detected: 170, processMsSum: 3100, at: 20_000 }),
    { fps: 10, msPerFrame: 16, visiblePct: 80, clients: 1 });
  assert.deepEqual(trackingFigures(from, { ...from, at: 20_000 }), { fps: 0, msPerFrame: null, visiblePct: null, clients: 1 });
  const base = { transport: 'relay', clients: 20, group: 5, cycleMs: 167, cycleMode: 'pipelined', browser: 'chromium', cpu: { server: 5, clients: 120 }, lossPct: 0 };
  const runs = [
    { ...base, cpuSlowdown: 1, cpuThrottled: ['chromium'], cpuUnthrottled: [], rt: { mean: 10, p95: 38 }, tracking: { fps: 10, msPerFrame: 15.8, visiblePct: 82.4, clients: 1 } },
    { ...base, cpuSlowdown: 4, cpuThrottled: ['chromium'], cpuUnthrottled: [], rt: { mean: 2011, p95: 3850 }, tracking: { fps: 0.2, msPerFrame: 923.8, visiblePct: 66.7, clients: 1 } },
  ];
  for (const run of runs) assert.deepEqual(runSchemaProblems(run).filter((p) => /cpu|tracking/.test(p)), []);
  assert.deepEqual(runSchemaProblems({ ...base, cpuSlowdown: 0, cpuThrottled: 'chromium' }).filter((p) => /cpu/.test(p)),
    ['cpuSlowdown is not a number >= 1', 'cpuThrottled is not a list']);
  const tables = renderTables({ env: {}, runs });
  assert.match(tables, /## Phone-speed peers/);
  assert.match(tables, /\| relay +\| pipelined \| chromium +\| +20 \| +5 \| +1x \| chromium +\| +10 \| +38 \| +120\.0 \| +10\.0 \| +15\.8 \| +82\.4 \|/);
  assert.match(tables, /\| +4x \| chromium +\| 2011 \| +3850 \| +120\.0 \| +0\.2 \| +923\.8 \| +66\.7 \|/);
  assert.doesNotMatch(renderTables({ env: {}, runs: [{ ...base, rt: { mean: 10, p95: 38 } }] }), /Phone-speed/);
});
