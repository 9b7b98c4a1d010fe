// `carlab sim`: the CAR server study at paper scale with Node clients built
// on the shared client core. Run, aggregate, print and progress are kept
// apart (scripts/lab/*).

import { LAB_FLAGS_HELP, expandSweep, failedConditions, parseLabFlags } from './lab/flags.js';
import { SIM_TRANSPORTS, runSimPoint } from './lab/sim.js';
import { describeEnvironment } from './lab/env.js';
import { createProgress } from './lab/progress.js';
import { renderTables, writeResults } from './lab/output.js';

/** Help text of `carlab sim`. */
export function simHelp() {
  return `Usage: carlab sim [flags]

Runs the location-update study with lightweight Node clients (the same
protocol, action cycle and metrics code the browser runs) against a carlab
server started in its own process on a free loopback port.

Transports: ${SIM_TRANSPORTS.join(', ')}

${LAB_FLAGS_HELP}
  --workers N          load-generator threads (default: 1 per 400 clients, at most 2)

Example:
  carlab sim --transport relay,relay-faithful --clients 100..500:100 --group 5,25 --duration 20 --out results/sim`;
}

/**
 * @param {string[]} argv
 * @param {{ stdout?: NodeJS.WritableStream, stderr?: NodeJS.WriteStream }} [io]
 * @returns {Promise<number>} exit code
 */
export async function run(argv, io = {}) {
  const stdout = io.stdout ?? process.stdout;
  const stderr = io.stderr ?? process.stderr;
  const parsed = parseLabFlags(argv, {
    transports: SIM_TRANSPORTS,
    defaults: { transport: 'relay', clients: '100', group: '5', duration: '20', warmup: '3' },
    extra: { workers: { type: 'string' } },
  });
  if (parsed.kind === 'help') {
    stdout.write(`${simHelp()}\n`);
    return 0;
  }
  if (parsed.kind === 'error') {
    stderr.write(`carlab sim: ${parsed.error.message}\n\n${simHelp()}\n`);
    return 2;
  }
  const o = parsed.options;
  let workers;
  if (o.values.workers !== undefined) {
    workers = Number(o.values.workers);
    if (!Number.isInteger(workers) || workers < 1 || workers > 16) {
      stderr.write(`carlab sim: --workers: "${o.values.workers}" is not an integer 1..16\n\n${simHelp()}\n`);
      return 2;
    }
  }
  if (o.url) {
    stderr.write('carlab sim: --url is not supported yet: sim starts its own server to measure its CPU\n');
    return 2;
  }
  const points = expandSweep({ transports: o.transports, clients: o.clients, groups: o.groups, cycles: o.cycles });
  const perPoint = o.warmupS + (o.updates > 0 ? 0 : o.durationS) + 3;
  const progress = createProgress({ enabled: o.progress, totalSeconds: points.length * perPoint, stream: /** @type {any} */ (stderr) });

  let interrupted = false;
  const onSigint = () => {
    if (interrupted) process.exit(130);
    interrupted = true;
    stderr.write('\ncarlab sim: stopping after this point (Ctrl-C again to abort)\n');
  };
  process.on('SIGINT', onSigint);

  /** @type {any[]} */
  const runs = [];
  try {
    for (const point of points) {
      if (interrupted) break;
      const label = `${point.transport} · ${point.clients} clients · group ${point.group} · ${point.cycleMs} ms`;
      progress.point(label);
      try {
        const run = await runSimPoint({
          point, durationS: o.durationS, warmupS: o.warmupS, updates: o.updates, ackTimeoutMs: o.ackTimeoutMs,
          workers, onProgress: (p) => progress.update(p), shouldStop: () => interrupted,
        });
        runs.push(run);
      } catch (err) {
        runs.push({ ...point, error: String(/** @type {Error} */ (err).message) });
        stderr.write(`\ncarlab sim: ${label}: ${/** @type {Error} */ (err).message}\n`);
      }
      progress.advance(perPoint);
    }
  } finally {
    progress.stop();
    process.off('SIGINT', onSigint);
  }

  const results = { env: describeEnvironment({ command: 'sim', workers: workers ?? 'auto' }), runs };
  stdout.write(`${renderTables(results)}\n`);
  if (o.out) {
    const files = await writeResults(o.out, results);
    stdout.write(`wrote ${Object.values(files).join(', ')}\n`);
  }
  if (runs.some((r) => r.error)) return 1;
  const broken = runs.flatMap((r) => failedConditions(o.failIf, r).map((c) => `${r.transport}/${r.clients}/${r.group}: ${c}`));
  if (broken.length) {
    stderr.write(`carlab sim: --fail-if broken:\n  ${broken.join('\n  ')}\n`);
    return 1;
  }
  return interrupted ? 130 : 0;
}
