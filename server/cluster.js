/**
 * `carlab start --cluster N`: one port served by N worker processes joined
 * through NATS. Node's cluster module, not SO_REUSEPORT: Node 20 cannot set
 * SO_REUSEPORT on a listening socket, and the cluster module's primary keeps
 * the port open while a worker dies and is replaced, handing new connections
 * round-robin to the live workers (a client of a dead worker reconnects to
 * the same port and lands on another). Each worker is exactly `carlab start
 * --nats URL`, the same as one machine of a multi-machine deployment; the
 * primary starts nats-server itself unless `--nats` names one.
 *
 * @module server/cluster
 */

import cluster from 'node:cluster';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';

import { startNatsServer } from './nats-process.js';

/** The CLI the workers run. */
const CARLAB_BIN = fileURLToPath(new URL('../scripts/carlab.js', import.meta.url));

/** A worker that dies within this long of its start is not restarted again and again. */
const RESTART_BACKOFF_MS = 1000;

/**
 * @typedef {object} ClusterPlan
 * @property {number} workers how many processes serve the port
 * @property {string[]} workerArgs the `carlab start` arguments every worker gets (no --cluster, with --nats)
 * @property {string | null} natsUrl an existing NATS; null: start our own
 */

/**
 * How many workers `--cluster N` means: N, or one per core for 0.
 *
 * @param {number} requested
 * @returns {number}
 */
export function workerCount(requested) {
  return requested === 0 ? availableParallelism() : requested;
}

/**
 * The arguments a worker runs with: the user's own, minus `--cluster` and
 * `--nats` (and their values), plus `--nats URL --no-build --no-qr --no-banner`.
 *
 * @param {string[]} argv the arguments after `start`
 * @param {string} natsUrl
 * @returns {string[]}
 */
export function workerArgv(argv, natsUrl) {
  /** @type {string[]} */
  const out = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--cluster' || arg === '--nats') { i++; continue; }
    if (arg.startsWith('--cluster=') || arg.startsWith('--nats=')) continue;
    out.push(arg);
  }
  return [...out, '--nats', natsUrl, '--no-build', '--no-qr', '--no-banner'];
}

/**
 * Runs the primary: NATS (ours unless given), N workers, restarts of workers
 * that die, and on SIGTERM/SIGINT an orderly stop of all of them, NATS last.
 *
 * @param {{ argv: string[], command: string, workers: number, natsUrl: string | null, logger: import('./log.js').Logger,
 *   workerEnv?: Record<string, string> }} o
 *   logger: the primary logs like its workers (JSON lines unless on a terminal); workerEnv: more
 *   environment for every worker (the shared dashboard token: never in argv, where `ps` shows it)
 * @returns {Promise<number>} exit code
 */
export async function runClusterPrimary(o) {
  /** @type {Awaited<ReturnType<typeof startNatsServer>> | null} */
  let nats = null;
  let natsUrl = o.natsUrl;
  if (!natsUrl) {
    try {
      nats = await startNatsServer();
    } catch (err) {
      o.logger.error({ event: 'nats-start-failed' }, /** @type {Error} */ (err).message);
      return 1;
    }
    natsUrl = nats.url;
    o.logger.info({ event: 'nats-started', natsUrl, version: nats.version, pid: nats.pid }, `nats-server ${nats.version} on ${natsUrl} (pid ${nats.pid})`);
  }
  cluster.setupPrimary({ exec: CARLAB_BIN, args: [o.command, ...workerArgv(o.argv, natsUrl)], silent: false });
  const pool = createWorkerPool(o.workers, o.logger, o.workerEnv ?? {});
  const firstUp = await pool.started;
  if (!firstUp) {
    await pool.stop();
    await nats?.stop();
    o.logger.error({ event: 'no-worker' }, 'no worker came up; see the errors above');
    return 1;
  }
  o.logger.info({ event: 'cluster-up', workers: o.workers, natsUrl }, `${o.workers} relay processes serve the port, joined through ${natsUrl}. Press Ctrl+C to stop.`);
  const code = await waitForSignal(o.logger);
  await pool.stop();
  await nats?.stop();
  return code;
}

/**
 * N workers, each replaced when it dies (not while stopping).
 *
 * @param {number} count
 * @param {import('./log.js').Logger} logger
 * @param {Record<string, string>} env
 */
function createWorkerPool(count, logger, env) {
  let stopping = false;
  let listening = 0;
  /** @type {(ok: boolean) => void} */
  let settle = () => {};
  const started = new Promise((resolve) => { settle = resolve; });
  /** @param {number} slot */
  const spawnWorker = (slot) => {
    // CARLAB_CLUSTER emptied: a worker is one node, never a primary of its own.
    const worker = cluster.fork({ ...env, CARLAB_WORKER_SLOT: String(slot), CARLAB_CLUSTER: '' });
    const bornAt = Date.now();
    worker.once('listening', () => { if (++listening === count) settle(true); });
    worker.once('exit', (code, signal) => {
      if (stopping) return;
      logger.warn({ event: 'worker-exit', pid: worker.process.pid, code, signal }, `worker ${worker.process.pid} exited (${signal ?? code}); starting another`);
      if (listening < count && Date.now() - bornAt < RESTART_BACKOFF_MS) { settle(false); return; }
      setTimeout(() => { if (!stopping) spawnWorker(slot); }, Math.max(0, RESTART_BACKOFF_MS - (Date.now() - bornAt)));
    });
  };
  for (let slot = 0; slot < count; slot++) spawnWorker(slot);
  return {
    started,
    /** SIGTERM to every worker (each drains), SIGKILL what is left after 10 s. */
    async stop() {
      stopping = true;
      const workers = Object.values(cluster.workers ?? {}).filter((w) => w !== undefined);
      const exits = workers.map((w) => new Promise((resolve) => {
        if (w.isDead()) resolve(undefined); else w.once('exit', () => resolve(undefined));
      }));
      for (const w of workers) w.process.kill('SIGTERM');
      const force = setTimeout(() => { for (const w of workers) if (!w.isDead()) w.process.kill('SIGKILL'); }, 10_000);
      await Promise.all(exits);
      clearTimeout(force);
    },
  };
}

/**
 * Resolves with 0 on the first SIGINT/SIGTERM; a second one exits at once.
 *
 * @param {import('./log.js').Logger} logger
 * @returns {Promise<number>}
 */
function waitForSignal(logger) {
  return new Promise((resolve) => {
    let stopping = false;
    /** @param {NodeJS.Signals} signal */
    const onSignal = (signal) => {
      if (stopping) {
        logger.warn({ event: 'signal', signal }, `${signal} again, exiting without waiting`);
        process.exit(130);
      }
      stopping = true;
      logger.info({ event: 'signal', signal }, `${signal}, stopping the workers and NATS (again to force)...`);
      resolve(0);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}
