// `carlab browsers`: Chrome against Firefox, the WebRTC-on-mobile study redone
// and extended. Drives Debian Chromium (C) and Firefox ESR (F) through
// Playwright in pairs (initiator first) against a carlab server child, one
// experiment module per figure of the study (lab/browsers/), with a
// progress bar per experiment; writes results.json, tables.md and report.html.

import { parseArgs } from 'node:util';
import { UsageError, parseNameList, parseNumberList } from '../shared/flags.js';
import { describeEnvironment } from '../shared/env.js';
import { stopOnSigint } from './sweep.js';
import { createProgress } from '../shared/progress.js';
import { renderTables } from '../report/output.js';
import { writeResults } from '../report/files.js';
import { BENCH_TRANSPORTS } from '../bench/bench.js';
import { formatDuration } from '../browsers/arith.js';
import { ALL_PAIRS, createLabContext, parsePairs } from '../browsers/context.js';
import { setupExperiment } from '../browsers/setup.js';
import { overheadExperiment } from '../browsers/overhead.js';
import { keepaliveExperiment } from '../browsers/keepalive.js';
import { memoryExperiment } from '../browsers/memory.js';
import { cpuExperiment } from '../browsers/cpu.js';
import { transferExperiment } from '../browsers/transfer.js';
import { carExperiment } from '../browsers/car.js';
import { cleanError } from '../browsers/setup.js';
import { ensureLabPages } from '../pages/build.js';

/** Every experiment, in run order. @type {readonly import('../browsers/context.js').Experiment[]} */
export const EXPERIMENTS = Object.freeze([
  setupExperiment, overheadExperiment, keepaliveExperiment, memoryExperiment, cpuExperiment, transferExperiment, carExperiment,
]);
export const EXPERIMENT_NAMES = Object.freeze(EXPERIMENTS.map((e) => e.name));

/** Help text of `carlab browsers`. */
export function browsersHelp() {
  return `Usage: carlab browsers [flags]

Chrome against Firefox for this kind of app: the WebRTC-on-mobile study
(PeerJS + PeerServer) redone with Debian Chromium (C) and Firefox ESR (F)
driven by Playwright, each browser of a pair in its own process, against a
carlab server it starts on a free loopback port.

Selection:
  --pairs LIST           browser pairs, initiator first (default ${ALL_PAIRS.join(',')})
  --experiment LIST      ${EXPERIMENT_NAMES.join(',')} (default all)
  --obfuscation LIST     host-address obfuscation runs: off, on or off,on (Chromium mDNS /
                         Firefox obfuscate_host_addresses; default: setup off,on, others off)
Experiments:
  setup, overhead        --repeat N repetitions per pair (default 100); overhead reuses
                         setup's repetitions without obfuscation when both run
                         --setup-timeout S per connection (default 10); a cell whose first
                         --give-up N repetitions all fail stops (default 5)
  keepalive              --keepalive-duration S idle window (default 60)
                         --keepalive-connections N idle connections per pair (default 5)
  memory                 --max-connections N ramp ceiling (default 600; Chromium stops at 500
                         per page) --memory-step N connections per step (default 25)
  cpu                    --k LIST concurrent transfers (default 1,2,5,10,20,30,40,50)
                         --cpu-window S measured seconds per k (default 10)
  transfer               --transfer-repeat N per approach and pair (default min(30, --repeat))
  cpu, transfer          --file-size BYTES (default 1000000) --pieces N (default 10)
                         --chunk BYTES per channel message (default 16384)
  memory, cpu            --conns-per-server-page N (default 50)
  car                    --car-transport LIST (default relay,p2p) --car-clients N (default 10)
                         --car-group N (default 5) --car-cycle MS (default 167)
                         --car-duration S (default 20) --car-warmup S (default 3)
Output:
  --out DIR              write DIR/results.json, results.csv, tables.md, report.html
  --wire auto|off        count UDP on the wire with nftables (root; default auto)
  --no-progress          no progress bar (for logs)
  -h, --help             this help

Example:
  carlab browsers --pairs C-C,F-F,C-F,F-C --repeat 100 --out results/b
  carlab browsers --experiment setup --repeat 20 --obfuscation off`;
}

/** The flags of `carlab browsers`, as node:util parseArgs options (values stay strings until checked). */
const BROWSERS_FLAGS = /** @type {const} */ ({
  pairs: { type: 'string', default: ALL_PAIRS.join(',') },
  experiment: { type: 'string', default: EXPERIMENT_NAMES.join(',') },
  obfuscation: { type: 'string' },
  repeat: { type: 'string', default: '100' },
  'transfer-repeat': { type: 'string' },
  'setup-timeout': { type: 'string', default: '10' },
  'give-up': { type: 'string', default: '5' },
  'keepalive-duration': { type: 'string', default: '60' },
  'keepalive-connections': { type: 'string', default: '5' },
  'max-connections': { type: 'string', default: '600' },
  'memory-step': { type: 'string', default: '25' },
  'conns-per-server-page': { type: 'string', default: '50' },
  k: { type: 'string', default: '1,2,5,10,20,30,40,50' },
  'cpu-window': { type: 'string', default: '10' },
  'file-size': { type: 'string', default: '1000000' },
  pieces: { type: 'string', default: '10' },
  chunk: { type: 'string', default: '16384' },
  'car-transport': { type: 'string', default: 'relay,p2p' },
  'car-clients': { type: 'string', default: '10' },
  'car-group': { type: 'string', default: '5' },
  'car-cycle': { type: 'string', default: '167' },
  'car-duration': { type: 'string', default: '20' },
  'car-warmup': { type: 'string', default: '3' },
  out: { type: 'string' },
  wire: { type: 'string', default: 'auto' },
  'no-progress': { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
});

/** @param {string[]} argv */
const parseBrowsersArgs = (argv) => parseArgs({ args: argv, strict: true, allowPositionals: false, options: BROWSERS_FLAGS });

/**
 * The flag values: booleans, strings where a default is given, else string | undefined.
 * @typedef {{ [K in keyof typeof BROWSERS_FLAGS]: (typeof BROWSERS_FLAGS)[K] extends { type: 'boolean' } ? boolean
 *   : (typeof BROWSERS_FLAGS)[K] extends { default: string } ? string : string | undefined }} BrowsersFlagValues
 */

/**
 * Number readers over the flag values: an integer in [min, max], or a
 * number >= min; both throw a UsageError naming the flag.
 * @param {BrowsersFlagValues} v
 */
export function flagNumberReaders(v) {
  const raw = /** @type {Record<string, string | boolean | undefined>} */ (v);
  const int = (/** @type {string} */ name, min = 1, max = 100000) => {
    const n = Number(raw[name]);
    if (!Number.isInteger(n) || n < min || n > max) throw new UsageError(`--${name}: "${raw[name]}" is not an integer ${min}..${max}`);
    return n;
  };
  const seconds = (/** @type {string} */ name, min = 0) => {
    const n = Number(raw[name]);
    if (!Number.isFinite(n) || n < min) throw new UsageError(`--${name}: "${raw[name]}" is not a number >= ${min}`);
    return n;
  };
  return { int, seconds };
}

/**
 * The options from checked flag values; throws a UsageError on a bad value.
 * @param {BrowsersFlagValues} v
 * @returns {import('../browsers/context.js').BrowsersOptions}
 */
function browsersOptions(v) {
  const { int, seconds } = flagNumberReaders(v);
  const selected = parseNameList(v.experiment, '--experiment', EXPERIMENT_NAMES);
  let obfuscation = null;
  if (v.obfuscation !== undefined) {
    obfuscation = [...new Set(parseNameList(v.obfuscation, '--obfuscation', ['off', 'on']))].map((x) => x === 'on');
  }
  if (!['auto', 'off'].includes(v.wire)) throw new UsageError(`--wire: "${v.wire}" is not auto or off`);
  const repeat = int('repeat');
  const ks = [...new Set(parseNumberList(v.k, '--k').map(Math.round))].sort((a, b) => a - b);
  if (ks.some((k) => k < 1 || k > 500)) throw new UsageError('--k: values must be 1..500');
  const fileSize = int('file-size', 1000, 1e9);
  const pieces = int('pieces', 1, 1000);
  if (fileSize % pieces) throw new UsageError(`--file-size ${fileSize} is not a multiple of --pieces ${pieces}`);
  return {
    pairs: parsePairs(v.pairs),
    experiments: EXPERIMENT_NAMES.filter((n) => selected.includes(n)),
    repeat,
    transferRepeat: v['transfer-repeat'] !== undefined ? int('transfer-repeat') : Math.min(30, repeat),
    obfuscation,
    setupTimeoutMs: seconds('setup-timeout', 1) * 1000,
    giveUpAfter: int('give-up', 0),
    keepaliveS: seconds('keepalive-duration', 1),
    keepaliveConnections: int('keepalive-connections', 1, 100),
    maxConnections: int('max-connections', 1, 5000),
    memoryStep: int('memory-step', 1, 1000),
    connsPerServerPage: int('conns-per-server-page', 1, 400),
    ks,
    cpuWindowS: seconds('cpu-window', 1),
    fileSize,
    pieces,
    chunk: int('chunk', 1024, 262144),
    car: {
      transports: parseNameList(v['car-transport'], '--car-transport', BENCH_TRANSPORTS),
      clients: int('car-clients', 2, 200),
      group: int('car-group', 2, 200),
      cycleMs: seconds('car-cycle', 1),
      durationS: seconds('car-duration', 1),
      warmupS: seconds('car-warmup', 0),
    },
    wire: v.wire !== 'off',
    progress: !v['no-progress'],
    out: v.out ?? null,
  };
}

/**
 * Parses the flags.
 * @param {string[]} argv
 * @returns {{ kind: 'help' } | { kind: 'error', message: string } | { kind: 'options', options: import('../browsers/context.js').BrowsersOptions }}
 */
export function parseBrowsersFlags(argv) {
  let v;
  try {
    v = /** @type {BrowsersFlagValues} */ (parseBrowsersArgs(argv).values);
  } catch (err) {
    return { kind: 'error', message: /** @type {Error} */ (err).message };
  }
  if (v.help) return { kind: 'help' };
  try {
    return { kind: 'options', options: browsersOptions(v) };
  } catch (err) {
    if (err instanceof UsageError) return { kind: 'error', message: err.message };
    throw err;
  }
}

/**
 * The planned cells of every selected experiment with their estimated seconds.
 * @param {import('../browsers/context.js').BrowsersOptions} o
 */
export function planOf(o) {
  const planned = new Set(o.experiments);
  return EXPERIMENTS.filter((e) => planned.has(e.name)).map((e) => {
    const cells = e.cells(o, planned);
    return { experiment: e, cells, seconds: cells.reduce((s, c) => s + c.seconds, 0) };
  });
}


/**
 * Runs one cell, its progress on the bar; a cell that throws is recorded as
 * a run with its error.
 * @param {import('../browsers/context.js').LabContext} ctx
 * @param {import('../browsers/context.js').Experiment} experiment
 * @param {import('../browsers/context.js').Cell} cell
 * @param {ReturnType<typeof createProgress>} progress
 * @param {NodeJS.WritableStream} stderr
 * @returns {Promise<Record<string, any>[]>}
 */
async function runCell(ctx, experiment, cell, progress, stderr) {
  progress.point(cell.label);
  const cellStart = performance.now();
  const update = (/** @type {string} */ phase, /** @type {number | null | undefined} */ value) => progress.update({
    phase, rtMean: typeof value === 'number' && Number.isFinite(value) ? value : null, elapsedS: (performance.now() - cellStart) / 1000,
  });
  try {
    return await cell.run(ctx, { update });
  } catch (err) {
    stderr.write(`\ncarlab browsers: ${cell.label}: ${cleanError(err)}\n`);
    return [{ ...(cell.fields ?? { experiment: experiment.name }), error: cleanError(err) }];
  } finally {
    progress.advance(cell.seconds);
  }
}

/**
 * Runs one experiment's cells under its own progress bar. After Ctrl-C only
 * cells that measure nothing new (under a second) still run.
 * @param {import('../browsers/context.js').LabContext} ctx
 * @param {ReturnType<typeof planOf>[number]} planned
 * @param {{ progress: boolean, stderr: NodeJS.WritableStream & { isTTY?: boolean }, interrupted: () => boolean }} io
 * @returns {Promise<Record<string, any>[]>}
 */
async function runExperiment(ctx, { experiment, cells, seconds }, { progress: showProgress, stderr, interrupted }) {
  /** @type {Record<string, any>[]} */
  const runs = [];
  stderr.write(`carlab browsers: ${experiment.title} (${cells.length} cell${cells.length === 1 ? '' : 's'}, ~${formatDuration(seconds)})\n`);
  const progress = createProgress({ enabled: showProgress, totalSeconds: seconds, stream: stderr, metric: experiment.metric });
  const t0 = performance.now();
  try {
    for (const cell of cells) {
      if (interrupted() && cell.seconds >= 1) continue;
      runs.push(...await runCell(ctx, experiment, cell, progress, stderr));
    }
  } finally {
    progress.stop();
    await ctx.releasePool();
  }
  stderr.write(`carlab browsers: ${experiment.name} took ${formatDuration((performance.now() - t0) / 1000)} (estimated ${formatDuration(seconds)})\n`);
  return runs;
}

/**
 * Every browser the pairs use gets its version and user agent in env (lab
 * pages record them; `car` alone opens none): launches the ones still missing.
 * @param {import('../browsers/context.js').LabContext} ctx
 * @param {import('../browsers/context.js').BrowsersOptions} o
 */
async function recordBrowserVersions(ctx, o) {
  for (const name of new Set(o.pairs.flatMap((p) => [p.initiator, p.receiver]))) {
    if (ctx.env.browsers[name]) continue;
    const b = await ctx.launch(name);
    try { await b.page(); } finally { await b.close(); }
  }
}

/**
 * results.json of a browsers run: the environment with every option, then the runs.
 * @param {import('../browsers/context.js').BrowsersOptions} o
 * @param {import('../browsers/context.js').LabContext} ctx
 * @param {any[]} runs experiment records
 * @param {{ durationS: number, interrupted: boolean }} how
 */
export function browsersResults(o, ctx, runs, { durationS, interrupted }) {
  return {
    env: describeEnvironment({
      command: 'browsers',
      pairs: o.pairs.map((p) => p.label),
      experiments: o.experiments,
      options: {
        repeat: o.repeat, transferRepeat: o.transferRepeat,
        obfuscation: o.obfuscation ? o.obfuscation.map((x) => (x ? 'on' : 'off')) : 'setup off,on; others off',
        setupTimeoutS: o.setupTimeoutMs / 1000, keepaliveS: o.keepaliveS, keepaliveConnections: o.keepaliveConnections,
        maxConnections: o.maxConnections, memoryStep: o.memoryStep, connsPerServerPage: o.connsPerServerPage, ks: o.ks,
        cpuWindowS: o.cpuWindowS, fileSize: o.fileSize, pieces: o.pieces, chunk: o.chunk, car: o.car,
      },
      browsers: ctx.env.browsers,
      wire: { available: ctx.wire.available, why: ctx.wire.why },
      signalingPackets: ctx.proxy.hasPackets,
      iceServers: [],
      durationS,
      interrupted,
    }),
    runs,
  };
}

/**
 * @param {string[]} argv
 * @param {{ stdout?: NodeJS.WritableStream, stderr?: NodeJS.WritableStream & { isTTY?: boolean } }} [io]
 * @returns {Promise<number>} 0 ok, 1 a cell failed, 2 usage, 130 interrupted
 */
export async function run(argv, io = {}) {
  const stdout = io.stdout ?? process.stdout;
  const stderr = io.stderr ?? process.stderr;
  const parsed = parseBrowsersFlags(argv);
  if (parsed.kind === 'help') {
    stdout.write(`${browsersHelp()}\n`);
    return 0;
  }
  if (parsed.kind === 'error') {
    stderr.write(`carlab browsers: ${parsed.message}\n\n${browsersHelp()}\n`);
    return 2;
  }
  const o = parsed.options;
  const plan = planOf(o);
  const total = plan.reduce((s, p) => s + p.seconds, 0);
  stderr.write(`carlab browsers: ${plan.map((p) => `${p.experiment.name} ~${formatDuration(p.seconds)}`).join(', ')}; about ${formatDuration(total)} in all\n`);

  await ensureLabPages({ log: (line) => stderr.write(`carlab browsers: ${line}\n`) });

  const sigint = stopOnSigint(stderr, '\ncarlab browsers: stopping this cell and writing what was measured (Ctrl-C again to abort)\n');
  const { interrupted } = sigint;
  /** Experiment records (not sweep runs: renderTables tells them apart). @type {any[]} */
  const runs = [];
  const started = performance.now();
  const ctx = await createLabContext({ shouldStop: interrupted, wire: o.wire });
  try {
    for (const planned of plan) {
      // After Ctrl-C only cells that measure nothing new (overhead from setup's repetitions) still run.
      if (interrupted() && !planned.cells.some((c) => c.seconds < 1)) continue;
      runs.push(...await runExperiment(ctx, planned, { progress: o.progress, stderr, interrupted }));
    }
    await recordBrowserVersions(ctx, o);
  } finally {
    sigint.off();
    await ctx.close();
  }

  const results = browsersResults(o, ctx, runs, { durationS: Math.round((performance.now() - started) / 1000), interrupted: interrupted() });
  stdout.write(`${renderTables(results)}\n`);
  if (o.out) {
    const files = await writeResults(o.out, results);
    stdout.write(`wrote ${Object.values(files).filter(Boolean).join(', ')}\n`);
  }
  if (interrupted()) return 130;
  return runs.some((r) => r.error) ? 1 : 0;
}
