import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  LAB_FLAGS_HELP, START_CLUSTER_FLAG, UsageError, expandSweep, failedConditions, parseFailIf, parseLabFlags, parseNameList, parseNumberList,
  parseReportIntervals, parseStartClusterCounts, reportPeriodMs, reportsIntervalOf,
} from './flags.js';

const spec = { transports: ['relay', 'relay-faithful', 'p2p'], defaults: { transport: 'relay', clients: '10', group: '5' } };

test('number lists: values, ranges, mixes; errors say what is wrong', () => {
  assert.deepEqual(parseNumberList('100,200', '--clients'), [100, 200]);
  assert.deepEqual(parseNumberList('100..1000:100', '--clients'), [100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]);
  assert.deepEqual(parseNumberList('5, 10..12', '--group'), [5, 10, 11, 12]);
  assert.throws(() => parseNumberList('abc', '--clients'), /--clients: "abc" is not a positive number/);
  assert.throws(() => parseNumberList('0', '--clients'), UsageError);
  assert.throws(() => parseNumberList('10..5', '--clients'), /bad range/);
  assert.throws(() => parseNumberList('', '--clients'), /empty list/);
});

test('name lists are checked against the known names', () => {
  assert.deepEqual(parseNameList('relay,p2p', '--transport', spec.transports), ['relay', 'p2p']);
  assert.throws(() => parseNameList('relay,udp', '--transport', spec.transports), /unknown "udp" \(one of relay, relay-faithful, p2p\)/);
});

test('sweep expansion: the cross product, transports outermost, clients ascending', () => {
  const points = expandSweep({ transports: ['relay', 'p2p'], clients: [200, 100], groups: [5, 10], cycles: [167] });
  assert.equal(points.length, 8);
  assert.deepEqual(points.slice(0, 2), [
    { transport: 'relay', clients: 100, group: 5, cycleMs: 167, cycleMode: 'pipelined', relays: 0, placement: 'spread' },
    { transport: 'relay', clients: 200, group: 5, cycleMs: 167, cycleMode: 'pipelined', relays: 0, placement: 'spread' },
  ]);
  assert.equal(points[4].transport, 'p2p');
});

test('sweep expansion over cycle modes, relay counts and placements (placement only where there are relays)', () => {
  const points = expandSweep({
    transports: ['relay'], clients: [10], groups: [5], cycles: [167],
    cycleModes: ['pipelined', 'gated'], relays: [0, 2], placements: ['spread', 'group'],
  });
  assert.deepEqual(points.map((p) => `${p.relays}/${p.placement}/${p.cycleMode}`),
    ['0/spread/pipelined', '0/spread/gated', '2/spread/pipelined', '2/spread/gated', '2/group/pipelined', '2/group/gated']);
});

test('scale-out flags: --relays, --placement, --nats, --kill-relay-at, with clear errors', () => {
  const ok = parseLabFlags(['--transport', 'relay', '--clients', '10', '--relays', '1,2', '--placement', 'group', '--nats', 'nats://127.0.0.1:4222', '--kill-relay-at', '6', '--cycle-mode', 'gated'], spec);
  assert.equal(ok.kind, 'options');
  if (ok.kind === 'options') {
    assert.deepEqual(ok.options.relays, [1, 2]);
    assert.deepEqual(ok.options.placements, ['group']);
    assert.equal(ok.options.nats, 'nats://127.0.0.1:4222');
    assert.equal(ok.options.killRelayAtS, 6);
    assert.deepEqual(ok.options.cycleModes, ['gated']);
  }
  const plain = parseLabFlags(['--transport', 'relay', '--clients', '10'], spec);
  assert.ok(plain.kind === 'options' && plain.options.relays[0] === 0 && plain.options.killRelayAtS === null, 'default: one relay, no NATS');
  /** @param {string[]} argv */
  const error = (argv) => { const r = parseLabFlags(['--transport', 'relay', '--clients', '10', ...argv], spec); return r.kind === 'error' ? r.error.message : ''; };
  assert.match(error(['--kill-relay-at', '5']), /--kill-relay-at needs --relays 2 or more/);
  assert.match(error(['--nats', 'nats://x:1']), /--nats needs --relays N/);
  assert.match(error(['--relays', '2', '--nats', 'http://x']), /--nats: expected nats:\/\/host:port/);
  assert.match(error(['--relays', '-1']), /--relays/);
  assert.match(error(['--cycle-mode', 'lazy']), /--cycle-mode/);
  assert.match(error(['--relays', '2', '--placement', 'random']), /--placement/);
});

test('--pause-relay S:D: when and how long one relay is stopped, with clear errors', () => {
  const ok = parseLabFlags(['--transport', 'relay', '--clients', '10', '--relays', '2', '--pause-relay', '2:4.5'], spec);
  assert.ok(ok.kind === 'options');
  assert.deepEqual(ok.options.pauseRelay, { atS: 2, forS: 4.5 });
  const plain = parseLabFlags(['--transport', 'relay', '--clients', '10'], spec);
  assert.ok(plain.kind === 'options' && plain.options.pauseRelay === null);
  /** @param {string[]} argv */
  const error = (argv) => { const r = parseLabFlags(['--transport', 'relay', '--clients', '10', ...argv], spec); return r.kind === 'error' ? r.error.message : ''; };
  assert.match(error(['--pause-relay', '2:4']), /--pause-relay needs --relays 2 or more/);
  for (const bad of ['2', '2:', ':4', '2:0', 'a:b', '1.2.3:2']) assert.match(error(['--relays', '2', '--pause-relay', bad]), /--pause-relay: ".*" is not S:D/, bad);
});

test('--start-cluster: process counts 1..64 swept outermost; not with --relays or --placement; only where a command declares it', () => {
  assert.deepEqual(parseStartClusterCounts('1,2'), [1, 2]);
  assert.deepEqual(parseStartClusterCounts('1..3'), [1, 2, 3]);
  for (const bad of ['0', '1.5', '65', 'two', '']) assert.throws(() => parseStartClusterCounts(bad), UsageError, bad);
  const simSpec = { ...spec, extra: { ...START_CLUSTER_FLAG } };
  const ok = parseLabFlags(['--clients', '10,20', '--start-cluster', '1,2'], simSpec);
  assert.ok(ok.kind === 'options');
  assert.deepEqual(ok.options.startClusters, [1, 2]);
  assert.deepEqual(ok.options.relays, [0], 'the lab\'s own relays stay out of it');
  const points = expandSweep({ transports: ['relay'], clients: [20, 10], groups: [5], cycles: [167], relays: ok.options.relays, startClusters: ok.options.startClusters });
  assert.deepEqual(points.map((p) => `${p.startCluster}/${p.clients}/${p.relays}`), ['1/10/0', '1/20/0', '2/10/0', '2/20/0'], 'each server in turn over the same points');
  const without = parseLabFlags(['--clients', '10'], simSpec);
  assert.ok(without.kind === 'options' && without.options.startClusters === null);
  assert.equal(expandSweep({ transports: ['relay'], clients: [10], groups: [5], cycles: [167] })[0].startCluster, undefined, 'absent unless swept');
  /** @param {string[]} argv @param {any} [s] */
  const error = (argv, s = simSpec) => { const r = parseLabFlags(['--clients', '10', ...argv], s); return r.kind === 'error' ? r.error.message : ''; };
  assert.match(error(['--start-cluster', '2', '--relays', '2']), /--start-cluster and --relays are two ways to run the server under test: give one/);
  assert.match(error(['--start-cluster', '2', '--relays', '0']), /--start-cluster and --relays/, 'any --relays, even 0');
  assert.match(error(['--start-cluster', '2', '--placement', 'group']), /under --start-cluster the primary places each group itself/);
  assert.match(error(['--start-cluster', '0']), /--start-cluster: 0 is not a process count 1\.\.64/);
  assert.match(error(['--start-cluster', '2', '--kill-relay-at', '3']), /--kill-relay-at needs --relays 2 or more/);
  assert.match(error(['--start-cluster', '2', '--nats', 'nats://x:1']), /--nats needs --relays N/);
  assert.match(error(['--start-cluster', '2'], spec), /Unknown option '--start-cluster'/, 'a command without it (bench) refuses it');
});

test('--fail-if: parsing, evaluation on nested paths, nulls break nothing', () => {
  const conditions = parseFailIf('rt.mean>250, lossPct>=2');
  assert.deepEqual(conditions.map((c) => [c.path, c.op, c.value]), [['rt.mean', '>', 250], ['lossPct', '>=', 2]]);
  assert.deepEqual(failedConditions(conditions, { rt: { mean: 100 }, lossPct: 0 }), []);
  assert.deepEqual(failedConditions(conditions, { rt: { mean: 300.123 }, lossPct: 2 }), ['rt.mean>250 (rt.mean = 300.12)', 'lossPct>=2 (lossPct = 2)']);
  // a figure the run does not have fails its condition: a gate whose figure is missing is not met
  assert.deepEqual(failedConditions(conditions, { rt: { mean: null } }), ['rt.mean>250 (rt.mean is missing)', 'lossPct>=2 (lossPct is missing)']);
  assert.throws(() => parseFailIf('rt.mean=>250'), /cannot read "rt.mean=>250"/);
});

test('parseLabFlags: defaults, values, help, and errors as results', () => {
  const ok = /** @type {any} */ (parseLabFlags(['--transport', 'relay,p2p', '--clients', '10..30:10', '--cycle', '167,698'], spec));
  assert.equal(ok.kind, 'options');
  assert.deepEqual(ok.options.transports, ['relay', 'p2p']);
  assert.deepEqual(ok.options.clients, [10, 20, 30]);
  assert.deepEqual(ok.options.groups, [5]);
  assert.deepEqual(ok.options.cycles, [167, 698]);
  assert.equal(ok.options.ackTimeoutMs, 20000);
  assert.equal(parseLabFlags(['-h'], spec).kind, 'help');
  for (const bad of [['--bogus'], ['--transport', 'tcp'], ['--duration', '0'], ['--clients'], ['--url', 'not a url'], ['--fail-if', 'x']]) {
    const r = /** @type {any} */ (parseLabFlags(bad, spec));
    assert.equal(r.kind, 'error', bad.join(' '));
    assert.ok(r.error instanceof UsageError);
    assert.ok(r.error.message.length > 0);
  }
});

test('--preset fills the sweep; explicit flags override it; unknown presets are errors', () => {
  const presets = { paper: { transport: 'relay,p2p', clients: '100..300:100', group: '5,25', cycle: '167,698' } };
  const r = /** @type {any} */ (parseLabFlags(['--preset', 'paper', '--group', '10'], { ...spec, presets }));
  assert.equal(r.kind, 'options');
  assert.deepEqual(r.options.transports, ['relay', 'p2p']);
  assert.deepEqual(r.options.clients, [100, 200, 300]);
  assert.deepEqual(r.options.groups, [10]);
  assert.deepEqual(r.options.cycles, [167, 698]);
  const bad = /** @type {any} */ (parseLabFlags(['--preset', 'nope'], { ...spec, presets }));
  assert.equal(bad.kind, 'error');
  assert.match(bad.error.message, /--preset: unknown "nope" \(one of paper\)/);
});

test('--net sweeps every point under each profile, profiles outermost', () => {
  const points = expandSweep({ transports: ['relay', 'relay-udp'], clients: [10], groups: [5], cycles: [167], nets: ['none', 'lossy-2'] });
  assert.deepEqual(points.map((p) => `${p.net}/${p.transport}`), ['none/relay', 'none/relay-udp', 'lossy-2/relay', 'lossy-2/relay-udp']);
  assert.equal(expandSweep({ transports: ['relay'], clients: [10], groups: [5], cycles: [167] })[0].net, undefined);
  const spec = { transports: ['relay'], defaults: { transport: 'relay', clients: '10', group: '5' } };
  const ok = parseLabFlags(['--net', 'lossy-1, 3g', '--net-file', 'x.json'], spec);
  assert.equal(ok.kind, 'options');
  assert.deepEqual(/** @type {any} */ (ok).options.nets, ['lossy-1', '3g']);
  assert.equal(/** @type {any} */ (ok).options.netFile, 'x.json');
  assert.equal(/** @type {any} */ (parseLabFlags([], spec)).options.nets, null);
  assert.match(/** @type {any} */ (parseLabFlags(['--net-file', 'x.json'], spec)).error.message, /--net-file needs --net/);
  assert.match(/** @type {any} */ (parseLabFlags(['--net', ','], spec)).error.message, /--net: empty list/);
});

test('--reports: seconds between client reports, a sweep axis; 0 or off for none, the default', () => {
  assert.deepEqual(parseReportIntervals('0,5'), [0, 5]);
  assert.deepEqual(parseReportIntervals('off, 2.5'), [0, 2.5]);
  assert.deepEqual(parseReportIntervals('OFF'), [0]);
  assert.deepEqual(parseReportIntervals('5..15:5'), [5, 10, 15]);
  assert.deepEqual(parseReportIntervals('1'), [1], 'the server takes one report a second from a client');
  assert.throws(() => parseReportIntervals('0.5'), /--reports: 0\.5 s is not 0\/off or an interval of 1\.\.3600 s \(the server refuses/);
  assert.throws(() => parseReportIntervals('7200'), /--reports: 7200 s is not 0\/off or an interval of 1\.\.3600 s/);
  assert.throws(() => parseReportIntervals('often'), /--reports: "often" is not a number of seconds \(or 0\/off for no reports\)/);
  assert.throws(() => parseReportIntervals('-5'), /--reports: "-5" is not a number of seconds/);
  assert.throws(() => parseReportIntervals(','), /--reports: empty list/);
  assert.throws(() => parseReportIntervals('5s'), UsageError);

  const ok = /** @type {any} */ (parseLabFlags(['--reports', '0,5'], spec));
  assert.equal(ok.kind, 'options');
  assert.deepEqual(ok.options.reports, [0, 5]);
  assert.deepEqual(/** @type {any} */ (parseLabFlags([], spec)).options.reports, [0], 'default: no reports');
  for (const bad of [['--reports', '0.2'], ['--reports', 'sometimes'], ['--reports', '']]) {
    const r = /** @type {any} */ (parseLabFlags(bad, spec));
    assert.equal(r.kind, 'error', bad.join(' '));
    assert.ok(r.error instanceof UsageError);
    assert.match(r.error.message, /^--reports: /);
  }
  assert.match(LAB_FLAGS_HELP, /--reports LIST .*\n.*0 or off: none \(default 0/);
  // the clients' period: at the server's 1 s limit, 100 ms of slack so delivery jitter never gets a report refused
  assert.equal(reportPeriodMs(0), 0);
  assert.equal(reportPeriodMs(1), 1100);
  assert.equal(reportPeriodMs(1.05), 1100);
  assert.equal(reportPeriodMs(1.5), 1500);
  assert.equal(reportPeriodMs(5), 5000);
});

test('sweep expansion over report intervals: innermost, so a population runs without and with reports back to back', () => {
  const points = expandSweep({ transports: ['relay'], clients: [200, 100], groups: [5], cycles: [167], reports: [0, 5] });
  assert.deepEqual(points.map((p) => `${p.clients}/${p.reportsIntervalS}`), ['100/0', '100/5', '200/0', '200/5']);
  assert.equal(expandSweep({ transports: ['relay'], clients: [10], groups: [5], cycles: [167] })[0].reportsIntervalS, undefined,
    'a caller that sweeps no reports gets points without the field');
  assert.equal(reportsIntervalOf(points[1], { reports: [0, 5] }), 5, "the point's own interval");
  assert.equal(reportsIntervalOf({}, { reports: [5] }), 5, 'else the single --reports value');
  assert.equal(reportsIntervalOf({}, {}), 0);
  assert.throws(() => reportsIntervalOf({}, { reports: [0, 5] }), /--reports 0,5: this sweep did not expand the report intervals/);
});
