// The sweep command shared by `carlab sim` and `carlab bench`: parse the
// flags, run every point of the cross product with a progress bar and one
// summary line per finished point, stop cleanly on Ctrl-C (keeping what was
// measured), print the tables, write the results and apply --fail-if. Only
// `runPoint` differs between them.

import { expandSweep, failedConditions, parseLabFlags } from '../shared/flags.js';
import { describeEnvironment } from '../shared/env.js';
import { createProgress } from '../shared/progress.js';
import { renderTables } from '../report/output.js';
import { writeResults } from '../report/files.js';
import { renderSummaryLine } from '../report/summary-line.js';
import { isNetUsageError, prepareNetwork, withNetwork } from '../net/network.js';

/**
 * @typedef {object} LabCommand
 * @property {string} name 'sim' | 'bench'
 * @property {readonly string[]} transports
 * @property {Record<string, string>} defaults flag defaults
 * @property {Record<string, Record<string, string>>} [presets] named flag sets for --preset
 * @property {Record<string, { type: 'string' | 'boolean', default?: any }>} [extraFlags]
 * @property {() => string} help
 * @property {(options: any) => string | null} [validate] extra checks; returns an error message
 * @property {(options: any) => Record<string, any>} [describe] extra env fields for results.json
 * @property {(ctx: { point: import('../shared/flags.js').SweepPoint, options: any,
 *   onProgress: (p: any) => void, shouldStop: () => boolean,
 *   net: import('../net/network.js').PointNetwork | null }) => Promise<object>} runPoint
 *   net: where to place the server and the peers under --net (null without)
 * @property {(point: import('../shared/flags.js').SweepPoint, options: any) => number[]} [netLinks]
 *   peers per client namespace for a point under --net; without it --net is refused
 * @property {(options: any) => number} [secondsPerPoint] estimate for the ETA
 * @property {(options: any, stderr: NodeJS.WritableStream) => Promise<void>} [prepare] once before the sweep
 */

/**
 * Ctrl-C: the first one asks the run to stop (it writes what was measured),
 * the second exits at once. `off()` removes the handler.
 * @param {NodeJS.WritableStream} stderr
 * @param {string} message written on the first Ctrl-C
 */
export function stopOnSigint(stderr, message) {
  const state = { interrupted: false };
  const onSigint = () => {
    if (state.interrupted) process.exit(130);
    state.interrupted = true;
    stderr.write(message);
  };
  process.on('SIGINT', onSigint);
  return { interrupted: () => state.interrupted, off: () => { process.off('SIGINT', onSigint); } };
}

/**
 * The progress bar's label of a point.
 * @param {import('../shared/flags.js').SweepPoint} point
 */
export function pointLabel(point) {
  const relays = point.startCluster ? ` · carlab start${point.startCluster > 1 ? ` --cluster ${point.startCluster}` : ''}`
    : point.relays > 0 ? ` · ${point.relays} relays (${point.placement})` : '';
  const reports = point.reportsIntervalS ? ` · reports ${point.reportsIntervalS} s` : '';
  return `${point.net ? `${point.net} · ` : ''}${point.transport}${relays} · ${point.clients} clients · group ${point.group} · ${point.cycleMs} ms${reports}`;
}

/**
 * --net: the profiles, prepared up front, so a profile the machine cannot
 * apply stops the run before anything runs.
 * @param {LabCommand} command
 * @param {any} options parsed flags; options.netProfiles is set here
 * @param {NodeJS.WritableStream} stderr
 * @param {(message: string) => number} usage
 * @returns {Promise<number | null>} an exit code when it cannot go on
 */
async function prepareNetProfiles(command, options, stderr, usage) {
  if (!command.netLinks) return usage('--net is not supported by this command');
  try {
    options.netProfiles = await prepareNetwork({ list: options.nets.join(','), file: options.netFile });
    return null;
  } catch (err) {
    if (!isNetUsageError(err)) throw err;
    stderr.write(`carlab ${command.name}: --net: ${/** @type {Error} */ (err).message}\n`);
    return 2;
  }
}

/**
 * Runs one point, under its network profile if it has one.
 * @param {LabCommand} command
 * @param {import('../shared/flags.js').SweepPoint} point
 * @param {any} options
 * @param {{ onProgress: (p: any) => void, shouldStop: () => boolean }} hooks
 * @returns {Promise<object>} the run record
 */
function runOnePoint(command, point, options, { onProgress, shouldStop }) {
  const go = (/** @type {import('../net/network.js').PointNetwork | null} */ net) => command.runPoint({
    point, options, onProgress, shouldStop, net,
  });
  const profile = point.net ? options.netProfiles.get(point.net) : null;
  return profile
    ? withNetwork(profile, /** @type {NonNullable<LabCommand['netLinks']>} */ (command.netLinks)(point, options), go, {
      onPhase: (phase) => onProgress({ phase, elapsedS: 0, rtMean: null }),
    })
    : go(null);
}

/**
 * Every point in turn under the progress bar, until Ctrl-C; a point that
 * throws is recorded as a run with its error.
 * @param {LabCommand} command
 * @param {import('../shared/flags.js').SweepPoint[]} points
 * @param {any} options
 * @param {{ progress: ReturnType<typeof createProgress>, perPoint: number, stderr: NodeJS.WritableStream, interrupted: () => boolean }} how
 * @returns {Promise<any[]>} run records
 */
async function runSweep(command, points, options, { progress, perPoint, stderr, interrupted }) {
  /** @type {any[]} */
  const runs = [];
  for (const point of points) {
    if (interrupted()) break;
    const label = pointLabel(point);
    progress.point(label);
    try {
      const run = await runOnePoint(command, point, options, { onProgress: (p) => progress.update(p), shouldStop: interrupted });
      runs.push(run);
      // one line per finished point, saying at once when it measured its load generator
      stderr.write(`\n${renderSummaryLine(/** @type {any} */ (run))}\n`);
    } catch (err) {
      runs.push({ ...point, error: String(/** @type {Error} */ (err)?.message ?? err) });
      stderr.write(`\ncarlab ${command.name}: ${label}: ${/** @type {Error} */ (err)?.message ?? err}\n`);
    }
    progress.advance(perPoint);
  }
  return runs;
}

/**
 * The --fail-if conditions the runs broke, one line each.
 * @param {any[]} runs
 * @param {import('../shared/flags.js').FailCondition[]} failIf
 */
export function brokenConditions(runs, failIf) {
  return runs.flatMap((r) => failedConditions(failIf, r).map((c) => `${r.transport}/${r.clients}/${r.group}: ${c}`));
}

/**
 * Runs a lab sweep command.
 * @param {LabCommand} command
 * @param {string[]} argv
 * @param {{ stdout?: NodeJS.WritableStream, stderr?: NodeJS.WriteStream }} [io]
 * @returns {Promise<number>} exit code: 0 ok, 1 a run failed or broke --fail-if, 2 usage, 130 interrupted
 */
export async function runLabCommand(command, argv, io = {}) {
  const stdout = io.stdout ?? process.stdout;
  const stderr = io.stderr ?? process.stderr;
  const parsed = parseLabFlags(argv, {
    transports: command.transports, defaults: command.defaults, presets: command.presets, extra: command.extraFlags,
  });
  if (parsed.kind === 'help') {
    stdout.write(`${command.help()}\n`);
    return 0;
  }
  const usage = (/** @type {string} */ message) => {
    stderr.write(`carlab ${command.name}: ${message}\n\n${command.help()}\n`);
    return 2;
  };
  if (parsed.kind === 'error') return usage(parsed.error.message);
  const options = parsed.options;
  const problem = command.validate?.(options);
  if (problem) return usage(problem);
  if (options.nets) {
    const code = await prepareNetProfiles(command, options, stderr, usage);
    if (code !== null) return code;
  }
  await command.prepare?.(options, stderr);
  const points = expandSweep({
    transports: options.transports, clients: options.clients, groups: options.groups, cycles: options.cycles, nets: options.nets,
    cycleModes: options.cycleModes, relays: options.relays, placements: options.placements, reports: options.reports,
    startClusters: options.startClusters, cpuSlowdowns: options.cpuSlowdowns ?? null,
  });
  const perPoint = command.secondsPerPoint?.(options) ?? options.warmupS + options.durationS + 3;
  const progress = createProgress({ enabled: options.progress, totalSeconds: points.length * perPoint, stream: stderr });

  const sigint = stopOnSigint(stderr, `\ncarlab ${command.name}: stopping this point and writing what was measured (Ctrl-C again to abort)\n`);
  /** @type {any[]} */
  let runs;
  try {
    runs = await runSweep(command, points, options, { progress, perPoint, stderr, interrupted: sigint.interrupted });
  } finally {
    progress.stop();
    sigint.off();
  }

  const netEnv = options.netProfiles ? { net: { file: options.netFile, profiles: [...options.netProfiles.values()] } } : {};
  const results = { env: describeEnvironment({ command: command.name, ...(command.describe?.(options) ?? {}), ...netEnv }), runs };
  stdout.write(`${renderTables(results)}\n`);
  if (options.out) {
    const files = await writeResults(options.out, results);
    stdout.write(`wrote ${Object.values(files).join(', ')}\n`);
  }
  if (runs.some((r) => r.error)) return 1;
  const broken = brokenConditions(runs, options.failIf);
  if (broken.length) {
    stderr.write(`carlab ${command.name}: --fail-if broken:\n  ${broken.join('\n  ')}\n`);
    return 1;
  }
  return sigint.interrupted() ? 130 : 0;
}
