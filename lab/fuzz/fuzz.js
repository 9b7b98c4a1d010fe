// The fuzz run behind `carlab fuzz` and its test: a real carlab server in a
// child process (relay + PeerServer, plain HTTP on loopback), well-behaved
// clients exchanging updates through it (relay mode, reliable) and two
// well-behaved PeerJS peers, while lanes of seeded cases (fuzz-cases.js)
// throw malformed, truncated, oversized and random frames, broken handshakes
// and odd HTTP requests at it. Every case's outcome is checked against what
// the documents promise; the server must not crash, must not report an
// unhandled rejection and must stay within a memory bound; the good clients'
// streams must have no gap, duplicate or reorder. The report lanes
// (fuzz-reports.js) do the same to POST /reports; the server records the
// reports it accepts into a temporary folder, which the books then read.
//
// Here: the run itself (the server, the case lanes, the scenario lanes, the
// tally and the verdict, the report); each case's driver is in
// fuzz-drivers.js, the well-behaved clients in fuzz-good-clients.js.

import { setTimeout as sleep } from 'node:timers/promises';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { RELAY_DEFAULTS } from '../../relay/index.js';
import { SIGNALING_DEFAULTS } from '../../signaling/index.js';
import { HTTP_TIMEOUTS } from '../../server/server.js';
import { generateCase } from './fuzz-cases.js';
import { makeWorld } from './fuzz-world.js';
import { runCase } from './fuzz-drivers.js';
import { settleGoodClients, startGoodClients, startSentinels } from './fuzz-good-clients.js';
import { seedOf } from '../shared/rng.js';
import { SCENARIO_NAMES, failedScenario, fairnessFigures, runFairFlood, runPeerTakeover, runSlowHeaders, scenarioPlan, skippedScenario } from './fuzz-scenarios.js';
import { REPORTS_ALIAS, REPORT_SCENARIO_NAMES, createReportLedger } from './fuzz-reports.js';
import { SLOW_CONSUMER, runSlowConsumer, slowConsumerFigures } from './fuzz-slow-consumer.js';
import { reportPlan } from './fuzz-report-plan.js';
import { runReportGarbage } from './fuzz-report-garbage.js';
import { runReportClaim, runReportFlood } from './fuzz-report-flood-claim.js';
import { fetchReportCounts, readRecordedReports, reportBooks } from './fuzz-report-books.js';
import { startServerChild } from '../target/server-process.js';

/**
 * @typedef {object} FuzzOptions
 * @property {number} [frames] stop once this many frames, handshakes and requests were sent (default 100 000)
 * @property {number | string} [seed] default 1
 * @property {number} [lanes] cases in flight at once (default 8)
 * @property {number} [maxRssGrowthBytes] server RSS may grow this much over its start (default 96 MiB)
 * @property {number} [caseTimeoutMs] a case that has not ended by then is a failure (default 5000)
 * @property {string[]} [only] run only cases with these names or targets (the others are skipped,
 *   not sent), and only these scenarios (by name, `reports` for the three report lanes, or
 *   `scenario` for all): to home in on one kind of failure with the same seed
 * @property {number} [floodSeconds] how long the fair-flood scenarios' steady flood lasts (default 8)
 * @property {number} [reportFloodSeconds] how long report-flood's tight loop lasts (default 2)
 * @property {(p: { units: number, target: number, cases: number, failures: number, elapsedS: number }) => void} [onProgress]
 * @property {() => boolean} [shouldStop]
 */

/** @typedef {import('./fuzz-drivers.js').CaseResult} CaseResult */

const MIB = 1024 * 1024;


/**
 * The server's RSS from its own process.memoryUsage(): `sample()` records
 * one reading (and resolves with the metrics, or null without RSS).
 * @param {import('../target/server-process.js').ServerChild} server
 */
function rssMonitor(server) {
  const rss = { start: 0, end: 0, max: 0, samples: 0 };
  const sample = async () => {
    const m = await server.metrics();
    if (typeof m.rssBytes === 'number') {
      rss.max = Math.max(rss.max, m.rssBytes);
      rss.samples++;
      return m;
    }
    return null;
  };
  return { rss, sample };
}

/**
 * A case that did not end as documented, as the report lists it.
 * @typedef {{ index: number, target: string, name: string, expected: string, got: string, detail?: string }} FuzzFailure
 */

/**
 * What the lanes sent and how the cases ended, by target and by case name;
 * the first 25 failures in full.
 */
export function createFuzzTally() {
  return {
    units: 0,
    /** @type {Record<string, number>} */
    unitsByTarget: { relay: 0, peer: 0, raw: 0, http: 0 },
    /** @type {Record<string, Record<string, number>>} */
    outcomes: { relay: {}, peer: {}, raw: {}, http: {} },
    /** @type {Record<string, number>} */
    cases: {},
    done: 0,
    failureCount: 0,
    /** @type {FuzzFailure[]} */
    failures: [],
  };
}

/** @typedef {ReturnType<typeof createFuzzTally>} FuzzTally */

/**
 * Counts one case's result into the tally.
 * @param {FuzzTally} tally
 * @param {number} index the case's index (it regenerates from the seed)
 * @param {{ target: string, name: string }} c
 * @param {CaseResult} result
 */
export function recordCase(tally, index, c, result) {
  tally.units += result.units;
  tally.unitsByTarget[c.target] += result.units;
  tally.cases[c.name] = (tally.cases[c.name] ?? 0) + 1;
  tally.outcomes[c.target][result.outcome] = (tally.outcomes[c.target][result.outcome] ?? 0) + 1;
  tally.done++;
  if (!result.ok) {
    tally.failureCount++;
    if (tally.failures.length < 25) tally.failures.push({ index, target: c.target, name: c.name, expected: result.expected, got: result.outcome, detail: result.detail });
  }
}


/**
 * The lanes: case i is a pure function of (seed, i); each lane takes the
 * next index until the target is sent, the server died or Ctrl-C.
 * @param {FuzzOptions} o
 * @param {{ world: import('./fuzz-world.js').FuzzWorld, server: import('../target/server-process.js').ServerChild, port: number,
 *   target: number, lanes: number, timeoutMs: number, started: number }} run
 */
async function runLanes(o, { world, server, port, target, lanes, timeoutMs, started }) {
  const tally = createFuzzTally();
  let next = 0;
  let lastProgress = 0;
  const stop = () => tally.units >= target || server.exit !== null || Boolean(o.shouldStop?.());
  const lane = async () => {
    while (!stop()) {
      const index = next++;
      const c = generateCase(world, index);
      if (o.only && !o.only.includes(c.name) && !o.only.includes(c.target)) continue;
      recordCase(tally, index, c, await runCase(c, world, port, timeoutMs));
      const now = performance.now();
      if (o.onProgress && now - lastProgress > 1000) {
        lastProgress = now;
        o.onProgress({ units: tally.units, target, cases: tally.done, failures: tally.failureCount, elapsedS: (now - started) / 1000 });
      }
    }
  };
  await Promise.all(Array.from({ length: lanes }, lane));
  return tally;
}


/**
 * Every promise that did not hold, as one line each (none: the run is ok).
 * @param {object} seen
 * @param {{ code: number | null, signal: string | null } | null} seen.exit how the server ended during the run, null if it did not
 * @param {{ kind: string, message: string }[]} seen.faults
 * @param {number} seen.failureCount
 * @param {{ start: number, max: number }} seen.rss
 * @param {number} seen.maxRssGrowthBytes
 * @param {{ lost: number, duplicates: number, reorders: number, expected: number }} seen.streams
 * @param {{ updatesSent: number }[]} seen.stats
 * @param {string[]} seen.goodClosed
 * @param {{ open: boolean, sent: number, received: number, outOfOrder: number }} seen.sentinel
 * @param {{ relay?: { clients?: number, groups?: number, pending?: number } }} seen.after server metrics after everyone left
 * @returns {string[]}
 */
export function fuzzProblems({ exit, faults, failureCount, rss, maxRssGrowthBytes, streams, stats, goodClosed, sentinel, after }) {
  const problems = [];
  const crashed = exit !== null;
  if (crashed) problems.push(`the server died during the run (${JSON.stringify(exit)})`);
  if (faults.length) problems.push(`the server reported ${faults.length} fault(s): ${faults.slice(0, 3).map((f) => `${f.kind}: ${f.message.split('\n')[0]}`).join('; ')}`);
  if (failureCount) problems.push(`${failureCount} case(s) did not end as documented`);
  if (rss.max - rss.start > maxRssGrowthBytes) problems.push(`server RSS grew by ${((rss.max - rss.start) / MIB).toFixed(1)} MiB (bound ${maxRssGrowthBytes / MIB} MiB)`);
  if (streams.lost !== 0 || streams.duplicates !== 0 || streams.reorders !== 0) {
    problems.push(`good clients' streams: ${streams.lost} lost, ${streams.duplicates} duplicated, ${streams.reorders} reordered`);
  }
  if (stats.some((s) => s.updatesSent === 0) || streams.expected === 0) problems.push('a good client sent nothing');
  if (goodClosed.length) problems.push(`good clients were closed: ${goodClosed.join(', ')}`);
  if (!sentinel.open || sentinel.received !== sentinel.sent || sentinel.outOfOrder) {
    problems.push(`PeerJS sentinels: open ${sentinel.open}, ${sentinel.received}/${sentinel.sent} offers, ${sentinel.outOfOrder} out of order`);
  }
  if (!crashed && (after.relay?.clients !== 0 || after.relay?.groups !== 0 || after.relay?.pending !== 0)) {
    problems.push(`the relay kept state after everyone left: ${JSON.stringify({ clients: after.relay?.clients, groups: after.relay?.groups, pending: after.relay?.pending })}`);
  }
  return problems;
}

/** Every scenario lane's name, as --only takes them. */
export const ALL_SCENARIO_NAMES = Object.freeze([...SCENARIO_NAMES, SLOW_CONSUMER, ...REPORT_SCENARIO_NAMES]);

/**
 * Whether `only` (the --only list) leaves scenario `name` in: no list, its
 * name, `reports` (a report lane) or `scenario` (all of them).
 * @param {string[] | undefined} only @param {string} name
 */
export function scenarioSelected(only, name) {
  return !only || only.includes(name) || only.includes('scenario') || (only.includes(REPORTS_ALIAS) && REPORT_SCENARIO_NAMES.includes(name));
}

/**
 * Whether `only` leaves any fuzz case in (a list of scenario names only does
 * not: the lanes would skip every index without end).
 * @param {string[] | undefined} only
 */
export function casesSelected(only) {
  return !only || only.some((x) => x !== 'scenario' && x !== REPORTS_ALIAS && !ALL_SCENARIO_NAMES.includes(x));
}

/**
 * The scenario lanes (lab/fuzz/fuzz-scenarios.js, lab/fuzz/fuzz-reports.js) of one
 * run. peer-takeover runs at once and alone, since it counts the PeerServer's
 * live sockets; `during()` starts the others, which run beside the case lanes
 * (the relay and the HTTP server are under fuzz while they check their
 * promises) and resolve with every scenario's result. The report lanes take
 * a few seconds each (report-garbage beside report-flood then report-claim:
 * together within the slow-headers lane); their POSTs are booked in `ledger`
 * (null when none runs) for the books after the run.
 * @param {FuzzOptions} o
 * @param {{ seed: number, world: import('./fuzz-world.js').FuzzWorld, server: import('../target/server-process.js').ServerChild, port: number }} run
 */
async function startScenarios(o, { seed, world, server, port }) {
  const limits = {
    updatesPerSecond: RELAY_DEFAULTS.maxUpdatesPerSecond, updateBurst: RELAY_DEFAULTS.maxUpdatesBurst,
    headersTimeoutMs: HTTP_TIMEOUTS.headersTimeoutMs, checkIntervalMs: HTTP_TIMEOUTS.checkIntervalMs,
  };
  const plan = scenarioPlan(seed, limits, { floodSeconds: o.floodSeconds });
  const wsBase = `ws://127.0.0.1:${port}`;
  const metrics = () => server.metrics();
  /** @param {string} name @param {() => Promise<import('./fuzz-scenarios.js').ScenarioResult>} go */
  const guarded = (name, go) => (scenarioSelected(o.only, name) ? go().catch((err) => failedScenario(name, err)) : null);
  const takeover = await guarded('peer-takeover', () => runPeerTakeover({ wsBase, peerKey: world.peerKey, plan: plan.takeover, metrics }));
  const reports = reportPlan(seed, undefined, { floodSeconds: o.reportFloodSeconds });
  const ledger = REPORT_SCENARIO_NAMES.some((name) => scenarioSelected(o.only, name)) ? createReportLedger() : null;
  const reportArgs = { wsBase, port, plan: reports, ledger: /** @type {import('./fuzz-reports.js').ReportLedger} */ (ledger), timeoutMs: o.caseTimeoutMs ?? 5000 };
  // report-garbage sends one request at a time: beside the other two, which run one after the other
  const runReports = () => Promise.all([
    guarded('report-garbage', () => runReportGarbage(reportArgs)),
    (async () => [
      await guarded('report-flood', () => runReportFlood(reportArgs)),
      await guarded('report-claim', () => runReportClaim(reportArgs)),
    ])(),
  ]).then((done) => done.flat());
  return {
    ledger,
    during() {
      const RTCPeerConnection = world.udpAvailable ? import('node-datachannel/polyfill').then((m) => m.RTCPeerConnection) : null;
      const pending = [
        guarded('fair-flood', () => runFairFlood({ wsBase, plan: plan.flood, limits, udp: false, metrics })),
        guarded('fair-flood-udp', async () => (RTCPeerConnection
          ? runFairFlood({ wsBase, plan: plan.floodUdp, limits, udp: true, RTCPeerConnection: await RTCPeerConnection, metrics })
          : skippedScenario('fair-flood-udp', 'relay-udp is not available (node-datachannel)'))),
        guarded('slow-headers', () => runSlowHeaders({ port, plan: plan.slow })),
        guarded(SLOW_CONSUMER, () => runSlowConsumer({ wsBase, group: `${plan.flood.group}-slow`, cycleMs: plan.flood.cycleMs, slowAckMs: RELAY_DEFAULTS.slowAckMs, metrics })),
      ];
      return Promise.all([...pending, runReports()]).then((done) => [takeover, ...done.flat()].filter((x) => x !== null));
    },
  };
}

/**
 * Runs the fuzz and returns its report; `report.ok` says whether every promise held.
 * (A little over 80 lines: the report literal at its end is the report's schema, kept whole.)
 * @param {FuzzOptions} [o]
 */
export async function runFuzz(o = {}) {
  const target = o.frames ?? 100000;
  const seed = seedOf(o.seed ?? 1);
  const maxRssGrowthBytes = o.maxRssGrowthBytes ?? 96 * MIB;
  const udpAvailable = await import('node-datachannel').then(() => true, () => false);
  const world = makeWorld(seed, {
    maxPayload: RELAY_DEFAULTS.maxPayload, burst: RELAY_DEFAULTS.maxMessagesBurst,
    peerBurst: SIGNALING_DEFAULTS.maxMessagesBurst, udpAvailable,
  });
  const started = performance.now();
  // every report the server accepts is recorded here (`carlab start --record`): the books read it back
  const recordDir = await mkdtemp(path.join(tmpdir(), 'carlab-fuzz-record-'));
  const server = await startServerChild({ peerjsKey: world.peerKey, record: recordDir }, { execArgv: ['--expose-gc'] }).catch(async (err) => {
    await rm(recordDir, { recursive: true, force: true });
    throw err;
  });
  const port = Number(new URL(server.url).port);
  const wsBase = `ws://127.0.0.1:${port}`;

  const good = await startGoodClients(wsBase, world);
  const sentinels = await startSentinels(wsBase, world);
  await sleep(300);
  // Memory: sampled all along, from the server's own process.memoryUsage().
  const { rss, sample: sampleRss } = rssMonitor(server);
  const heapStart = await server.heap();
  const first = await sampleRss();
  rss.start = first?.rssBytes ?? 0;
  const sampler = setInterval(() => { void sampleRss(); }, 500);

  const scenarioLanes = await startScenarios(o, { seed, world, server, port });
  const scenariosDone = scenarioLanes.during();
  const tally = casesSelected(o.only)
    ? await runLanes(o, { world, server, port, target, lanes: o.lanes ?? 8, timeoutMs: o.caseTimeoutMs ?? 5000, started })
    : createFuzzTally();
  const scenarios = await scenariosDone;
  const fuzzS = (performance.now() - started) / 1000;
  clearInterval(sampler);
  const reportCounts = scenarioLanes.ledger ? await fetchReportCounts(port).catch(() => null) : null;

  const { stats, streams, goodClosed } = await settleGoodClients(good);
  const sentinel = await sentinels.stop();
  const during = await server.metrics();
  for (const c of good) c.close();
  await sleep(500);
  const after = await server.metrics();
  const heapEnd = await server.heap();
  const last = await sampleRss();
  rss.end = last?.rssBytes ?? 0;
  const exit = server.exit;
  await server.close();
  if (scenarioLanes.ledger) {
    // the books: what the server counted and recorded against what the report lanes were answered
    const recorded = await readRecordedReports(recordDir).catch(() => null);
    scenarios.push(reportBooks(scenarioLanes.ledger, reportCounts, recorded));
  }
  await rm(recordDir, { recursive: true, force: true });

  const faults = server.faults;
  const problems = [
    ...fuzzProblems({ exit, faults, failureCount: tally.failureCount, rss, maxRssGrowthBytes, streams, stats, goodClosed, sentinel, after }),
    ...scenarios.flatMap((sc) => sc.problems.map((p) => `scenario ${sc.name}: ${p}`)),
  ];
  return {
    ok: problems.length === 0,
    problems,
    scenarios,
    fairness: fairnessFigures(scenarios),
    slowConsumer: slowConsumerFigures(scenarios),
    seed,
    target,
    units: tally.units,
    unitsByTarget: tally.unitsByTarget,
    cases: tally.done,
    caseNames: tally.cases,
    outcomes: tally.outcomes,
    failureCount: tally.failureCount,
    failures: tally.failures,
    durationS: Math.round(fuzzS * 10) / 10,
    server: {
      crashed: exit !== null,
      exit,
      faults: { unhandledRejection: faults.filter((f) => f.kind === 'unhandledRejection').length, uncaughtException: faults.filter((f) => f.kind === 'uncaughtException').length },
      rssBytes: { start: rss.start, end: rss.end, max: rss.max, samples: rss.samples },
      heapUsedBytes: { start: heapStart.heapUsed ?? null, end: heapEnd.heapUsed ?? null },
      // after a GC: what RSS is made of at both ends (V8 keeps heap it grew, malloc keeps freed memory)
      memory: { start: pickMemory(heapStart), end: pickMemory(heapEnd) },
      relayClosedByCode: during.relay?.closedByCode ?? null,
      signalingClosedByCode: during.signaling?.closedByCode ?? null,
      after: after.relay ? { clients: after.relay.clients, groups: after.relay.groups, pending: after.relay.pending, queued: after.relay.queued, peerSockets: after.signaling?.sockets } : null,
    },
    good: {
      clients: good.length,
      updatesSent: stats.reduce((s, c) => s + c.updatesSent, 0),
      expected: streams.expected,
      received: streams.received,
      lossPct: streams.lossPct,
      dups: streams.duplicates,
      reorders: streams.reorders,
      ackLossPct: streams.ackLossPct,
      closed: goodClosed.length,
      rtMean: mean(stats.flatMap((c) => c.rt)),
      sentinel,
    },
  };
}

/** @param {any} m process.memoryUsage() */
function pickMemory(m) {
  return { rss: m.rss ?? null, heapTotal: m.heapTotal ?? null, heapUsed: m.heapUsed ?? null, external: m.external ?? null, arrayBuffers: m.arrayBuffers ?? null };
}

/** @param {number[]} values */
function mean(values) {
  return values.length ? values.reduce((a, b) => a + b, 0) / values.length : null;
}

/**
 * The report as text.
 * @param {Awaited<ReturnType<typeof runFuzz>>} r
 */
export function formatFuzzReport(r) {
  const mib = (/** @type {number} */ b) => `${(b / MIB).toFixed(1)} MiB`;
  const codes = (/** @type {Record<string, number>} */ o) => Object.entries(o).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${k}: ${v}`).join(', ') || '-';
  const lines = [
    `carlab fuzz: seed ${r.seed}, ${r.units} frames/handshakes/requests in ${r.cases} cases, ${r.durationS} s`,
    `  sent            relay ${r.unitsByTarget.relay}, PeerServer ${r.unitsByTarget.peer}, raw handshakes+framing ${r.unitsByTarget.raw}, HTTP ${r.unitsByTarget.http}`,
    `  relay closes    ${codes(r.outcomes.relay)}`,
    `  PeerServer      ${codes(r.outcomes.peer)}`,
    `  raw TCP         ${codes(r.outcomes.raw)}`,
    `  HTTP /peerjs    ${codes(r.outcomes.http)}`,
    `  not as documented: ${r.failureCount}`,
    `  server          crashed: ${r.server.crashed ? 'YES' : 'no'}, unhandled rejections: ${r.server.faults.unhandledRejection}, uncaught exceptions: ${r.server.faults.uncaughtException}`,
    `  server RSS      start ${mib(r.server.rssBytes.start)}, max ${mib(r.server.rssBytes.max)}, end ${mib(r.server.rssBytes.end)}; `
      + `heap used after GC ${mib(r.server.heapUsedBytes.start ?? 0)} -> ${mib(r.server.heapUsedBytes.end ?? 0)}, `
      + `heap total ${mib(r.server.memory.start.heapTotal ?? 0)} -> ${mib(r.server.memory.end.heapTotal ?? 0)}`,
    `  good clients    ${r.good.clients}: ${r.good.updatesSent} updates, ${r.good.received}/${r.good.expected} delivered, loss ${r.good.lossPct} %, dups ${r.good.dups}, reorders ${r.good.reorders}, closed ${r.good.closed}`,
    `  PeerJS peers    ${r.good.sentinel.received}/${r.good.sentinel.sent} offers in order, still open: ${r.good.sentinel.open}`,
    `  after           ${JSON.stringify(r.server.after)}`,
  ];
  for (const sc of r.scenarios) {
    lines.push(`  ${sc.name.padEnd(15)} ${sc.skipped ? 'skipped' : sc.ok ? 'as documented' : 'BROKEN'}: ${sc.summary}`);
    for (const note of sc.notes) lines.push(`    note: ${note}`);
  }
  for (const f of r.failures) lines.push(`  FAIL #${f.index} ${f.target}/${f.name}: expected ${f.expected}, got ${f.got}${f.detail ? ` — ${f.detail}` : ''}`);
  lines.push(r.ok ? 'every promise held' : `BROKEN:\n  ${r.problems.join('\n  ')}`);
  return `${lines.join('\n')}\n`;
}
