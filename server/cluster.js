/**
 * `carlab start --cluster N`: one port served by N worker processes joined
 * through NATS. The primary owns the port (Node 20 cannot set SO_REUSEPORT,
 * and one listener keeps the port open while a worker dies and is replaced).
 * With `--http` it reads each connection's request head (bounded in bytes and
 * time) and hands a WebSocket upgrade naming a group (`/relay?g=<group>`) to
 * the worker rendezvous hashing picks for that group among the live ones, so
 * a group lives on one process; everything else, and every HTTPS connection
 * (TLS hides the URL; see docs/scale-out.md), is handed on round-robin, its
 * bytes untouched. Each worker is `carlab start --nats URL` on a private
 * loopback port, the same node as one machine of a multi-machine deployment;
 * server/cluster-worker.js takes the handed sockets there. The primary starts
 * nats-server itself unless `--nats` names one, and restarts it if it dies.
 *
 * @module server/cluster
 */

import cluster from 'node:cluster';
import net from 'node:net';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';

import { startSupervisedNatsServer } from './nats-process.js';
import { parseStartOptions } from './options.js';
import { HEAD_LIMITS, ROUTED_CONNECTION, ROUTED_TAKEN, parseRequestHead, pickRendezvous } from './route.js';

/** The CLI the workers run. */
const CARLAB_BIN = fileURLToPath(new URL('../scripts/carlab.js', import.meta.url));

/** Loaded into every worker before the CLI (`--import`): takes the sockets the primary hands over. */
const WORKER_MODULE = new URL('./cluster-worker.js', import.meta.url).href;

/** Where a worker's own server listens: nobody connects there, the primary hands it sockets instead. */
const WORKER_HOST = '127.0.0.1';

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
 * The arguments a worker runs with: the user's own, minus `--cluster`,
 * `--nats`, `--host` and `--port` (and their values), plus `--nats URL`, a
 * private loopback port (the public one is the primary's) and `--no-build
 * --no-qr --no-banner`.
 *
 * @param {string[]} argv the arguments after `start`
 * @param {string} natsUrl
 * @returns {string[]}
 */
export function workerArgv(argv, natsUrl) {
  const replaced = ['--cluster', '--nats', '--host', '--port'];
  /** @type {string[]} */
  const out = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (replaced.includes(arg)) { i++; continue; }
    if (replaced.some((flag) => arg.startsWith(`${flag}=`))) continue;
    out.push(arg);
  }
  return [...out, '--nats', natsUrl, '--host', WORKER_HOST, '--port', '0', '--no-build', '--no-qr', '--no-banner'];
}

/**
 * Where the primary listens and whether it may read request heads: the
 * user's `--host`, `--port` and `--http` (flags or environment, as `carlab
 * start` reads them; start.js has validated them already).
 *
 * @param {string[]} argv the arguments after `start`
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {{ host: string, port: number, http: boolean }}
 */
export function publicAddress(argv, env = process.env) {
  const parsed = parseStartOptions(argv, { env });
  if (parsed.kind !== 'options') throw new Error(`carlab start: cannot read the listening address from ${argv.join(' ')}`);
  const { host, port, http } = parsed.options;
  return { host, port, http };
}

/**
 * Runs the primary: NATS (ours unless given, restarted if it dies), N
 * workers, restarts of workers that die, the public port and its routing,
 * and on SIGTERM/SIGINT an orderly stop of all of them, NATS last.
 *
 * @param {{ argv: string[], command: string, workers: number, natsUrl: string | null, logger: import('./log.js').Logger,
 *   workerEnv?: Record<string, string>, dashboardToken?: string, jetstreamDir?: string }} o
 *   jetstreamDir: our own nats-server runs JetStream with its store there (the workers' kept scenes)
 *   logger: the primary logs like its workers (JSON lines unless on a terminal); workerEnv: more
 *   environment for every worker (the shared dashboard token: never in argv, where `ps` shows it)
 * @returns {Promise<number>} exit code
 */
export async function runClusterPrimary(o) {
  const address = publicAddress(o.argv);
  const nats = o.natsUrl ? null : await startOwnNats(o.logger, o.jetstreamDir);
  if (nats === undefined) return 1;
  const natsUrl = o.natsUrl ?? /** @type {NonNullable<typeof nats>} */ (nats).url;
  cluster.setupPrimary({
    exec: CARLAB_BIN, args: [o.command, ...workerArgv(o.argv, natsUrl)], silent: false,
    execArgv: [...process.execArgv, '--import', WORKER_MODULE],
  });
  const pool = createWorkerPool(o.workers, o.logger, o.workerEnv ?? {});
  const firstUp = await pool.started;
  const router = firstUp ? await listenPublicly(pool, address, o.logger) : null;
  if (!router) {
    await pool.stop();
    await nats?.stop();
    if (!firstUp) o.logger.error({ event: 'no-worker' }, 'no worker came up; see the errors above');
    return 1;
  }
  const url = `${address.http ? 'http' : 'https'}://${displayHost(address.host)}:${router.port}/`;
  // Handlers before the announcement, as in start.js: a supervisor may signal as soon as it reads it.
  const signalled = waitForSignal(o.logger);
  o.logger.info({ event: 'cluster-up', workers: o.workers, natsUrl, url, routing: address.http ? 'group' : 'round-robin' },
    `${o.workers} relay processes serve ${url}, joined through ${natsUrl}; ${address.http
      ? 'each group\'s WebSockets on one process' : 'HTTPS: connections round-robin (the primary does not decrypt)'}. Press Ctrl+C to stop.`);
  // The dashboard's URL carries its token: the person who started the cluster needs it once.
  if (o.dashboardToken) o.logger.info({ event: 'dashboard', url: `${url}dashboard?token=${encodeURIComponent(o.dashboardToken)}` }, `dashboard: ${url}dashboard?token=${encodeURIComponent(o.dashboardToken)}`);
  const code = await signalled;
  await router.close();
  await pool.stop();
  await nats?.stop();
  return code;
}

/**
 * Starts carlab's own nats-server under supervision, logging its start and
 * every unasked exit and restart. Undefined when it cannot start (logged).
 *
 * @param {import('./log.js').Logger} logger
 * @param {string} [jetstreamDir] JetStream on, stored there
 */
async function startOwnNats(logger, jetstreamDir) {
  try {
    const nats = await startSupervisedNatsServer(jetstreamDir ? { jetstreamDir } : {}, {
      onExit: (e) => logger.warn({ event: 'nats-exit', pid: e.pid, code: e.code, signal: e.signal, restartInMs: e.restartInMs },
        `nats-server (pid ${e.pid}) exited (${e.signal ?? e.code}); restarting it on the same port in ${e.restartInMs} ms`),
      onRestart: (p) => logger.warn({ event: 'nats-restarted', natsUrl: p.url, pid: p.pid },
        `nats-server restarted on ${p.url} (pid ${p.pid}); the workers reconnect to it`),
      onRestartFailed: (err, retryInMs) => logger.error({ event: 'nats-restart-failed', retryInMs }, `${err.message}; trying again in ${retryInMs} ms`),
    });
    logger.info({ event: 'nats-started', natsUrl: nats.url, version: nats.version, pid: nats.pid }, `nats-server ${nats.version} on ${nats.url} (pid ${nats.pid})`);
    return nats;
  } catch (err) {
    logger.error({ event: 'nats-start-failed' }, /** @type {Error} */ (err).message);
    return undefined;
  }
}

/**
 * A host for the URL the primary prints: the wildcard addresses as localhost.
 *
 * @param {string} host
 */
function displayHost(host) {
  if (host === '0.0.0.0' || host === '::') return 'localhost';
  return host.includes(':') ? `[${host}]` : host;
}

/**
 * A worker that serves: its slot (the key rendezvous hashing uses: the same
 * for the worker that replaces it) and the worker.
 * @typedef {{ slot: number, worker: import('node:cluster').Worker }} LiveWorker
 */

/**
 * N workers, each replaced when it dies (not while stopping), and which of
 * them serve right now: listening, connected, not dead.
 *
 * @param {number} count
 * @param {import('./log.js').Logger} logger
 * @param {Record<string, string>} env
 */
function createWorkerPool(count, logger, env) {
  let stopping = false;
  let listening = 0;
  /** @type {(import('node:cluster').Worker | null)[]} the serving worker of each slot */
  const slots = new Array(count).fill(null);
  /** @type {(ok: boolean) => void} */
  let settle = () => {};
  const started = new Promise((resolve) => { settle = resolve; });
  /** @param {number} slot */
  const spawnWorker = (slot) => {
    // CARLAB_CLUSTER emptied: a worker is one node, never a primary of its own.
    const worker = cluster.fork({ ...env, CARLAB_WORKER_SLOT: String(slot), CARLAB_CLUSTER: '' });
    const bornAt = Date.now();
    // A send to a worker that just died fails with EPIPE here; its exit is handled below.
    worker.on('error', (err) => logger.debug({ event: 'worker-ipc-error', pid: worker.process.pid, err: err.message }, 'worker IPC error'));
    worker.once('listening', () => {
      slots[slot] = worker;
      if (++listening === count) settle(true);
    });
    // The IPC channel closes as the worker dies, before 'exit': stop routing to it at once.
    worker.once('disconnect', () => { if (slots[slot] === worker) slots[slot] = null; });
    worker.once('exit', (code, signal) => {
      if (slots[slot] === worker) slots[slot] = null;
      if (stopping) return;
      logger.warn({ event: 'worker-exit', pid: worker.process.pid, slot, code, signal }, `worker ${worker.process.pid} exited (${signal ?? code}); starting another`);
      if (listening < count && Date.now() - bornAt < RESTART_BACKOFF_MS) { settle(false); return; }
      setTimeout(() => { if (!stopping) spawnWorker(slot); }, Math.max(0, RESTART_BACKOFF_MS - (Date.now() - bornAt)));
    });
  };
  for (let slot = 0; slot < count; slot++) spawnWorker(slot);
  return {
    started,
    /** @returns {LiveWorker[]} */
    live: () => slots.flatMap((worker, slot) => (worker && worker.isConnected() && !worker.isDead() ? [{ slot, worker }] : [])),
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
 * The public port: a router on the user's host and port. Null when it cannot
 * listen (logged, e.g. the port is taken).
 *
 * @param {{ live: () => LiveWorker[] }} pool
 * @param {{ host: string, port: number, http: boolean }} address
 * @param {import('./log.js').Logger} logger
 * @returns {Promise<{ port: number, close: () => Promise<void> } | null>}
 */
async function listenPublicly(pool, address, logger) {
  const router = createRouter({ live: pool.live, readHeads: address.http });
  // Node's cluster already reports every worker's messages and exits to the primary.
  cluster.on('message', (_worker, /** @type {any} */ message) => { if (message?.cmd === ROUTED_TAKEN) router.taken(message.id); });
  cluster.on('exit', (worker) => router.workerGone(worker));
  try {
    await new Promise((resolve, reject) => {
      router.server.once('error', reject);
      router.server.listen(address.port, address.host, () => { router.server.off('error', reject); resolve(undefined); });
    });
  } catch (err) {
    const e = /** @type {NodeJS.ErrnoException} */ (err);
    logger.error({ event: 'listen-failed', code: e.code }, e.code === 'EADDRINUSE'
      ? `port ${address.port} on ${address.host} is already in use (choose another with --port)` : e.message);
    return null;
  }
  const port = /** @type {import('node:net').AddressInfo} */ (router.server.address()).port;
  return {
    port,
    // Stops listening at once. Not waiting for close()'s callback: Node counts the
    // connections handed to workers until they end, and they end only when the
    // workers drain, which pool.stop() starts after this (waiting would deadlock).
    close: async () => {
      logger.info({ event: 'routing', ...router.stats, untaken: router.untaken() }, 'connections the primary routed');
      router.server.close();
    },
  };
}

/**
 * @typedef {object} RouterOptions
 * @property {() => LiveWorker[]} live the workers that serve, in slot order
 * @property {boolean} readHeads read request heads to route upgrades by group (plain HTTP);
 *   false (HTTPS): hand every connection on unread, round-robin
 * @property {import('./route.js').HeadLimits} [limits]
 */

/**
 * @typedef {object} Router
 * @property {import('node:net').Server} server
 * @property {RouterStats} stats
 * @property {() => number} untaken connections handed on that no worker has said it took yet
 * @property {(id: number) => void} taken a worker took connection `id` (its ROUTED_TAKEN)
 * @property {(worker: import('node:cluster').Worker) => void} workerGone a worker died: close what it never took
 */

/**
 * Counts of what the router did, for the log and the lab.
 * @typedef {{ byGroup: number, roundRobin: number, unread: number, headTimeouts: number, headTooLarge: number,
 *   clientGone: number, noWorker: number, sendFailed: number, lostWithWorker: number }} RouterStats
 */

/**
 * The primary's listener: every connection is routed to a worker and handed
 * over; the primary keeps its copy only until the worker has taken it. `pauseOnConnect`: no byte is read unless
 * routing needs it, so what it does not read reaches the worker untouched.
 *
 * @param {RouterOptions} options
 * @returns {Router}
 */
export function createRouter(options) {
  const o = { ...options, limits: options.limits ?? HEAD_LIMITS };
  /** @type {RouterStats} */
  const stats = { byGroup: 0, roundRobin: 0, unread: 0, headTimeouts: 0, headTooLarge: 0, clientGone: 0, noWorker: 0, sendFailed: 0, lostWithWorker: 0 };
  /** @type {RouterState} */
  const state = { pending: 0, next: 0, lastId: 0, untaken: new Map(), stats };
  const server = net.createServer({ pauseOnConnect: true }, (socket) => routeConnection(socket, o, state));
  return {
    server,
    stats,
    untaken: () => state.untaken.size,
    taken: (id) => closeOurCopy(state, id),
    workerGone: (worker) => closeLostWith(state, worker),
  };
}

/**
 * @typedef {object} RouterState
 * @property {number} pending heads being read
 * @property {number} next the round-robin position
 * @property {number} lastId the last handed connection's id
 * @property {Map<number, { socket: import('node:net').Socket, worker: import('node:cluster').Worker }>} untaken
 *   connections handed to a worker that has not said it took them yet; the primary keeps its copy of each
 * @property {RouterStats} stats
 */

/**
 * A worker took connection `id`: the primary closes its copy (the worker's keeps the connection open).
 * @param {RouterState} state @param {number} id
 */
function closeOurCopy(state, id) {
  const entry = state.untaken.get(id);
  if (!entry) return;
  state.untaken.delete(id);
  entry.socket.destroy();
}

/**
 * A worker died: the connections handed to it that it never took are closed, so their clients
 * reconnect now rather than wait on a socket nobody reads. (Node itself keeps a handle that
 * awaits a dead worker's acknowledgement open for as long as the primary lives.)
 * @param {RouterState} state @param {import('node:cluster').Worker} worker
 */
function closeLostWith(state, worker) {
  for (const [id, entry] of state.untaken) {
    if (entry.worker !== worker) continue;
    state.untaken.delete(id);
    state.stats.lostWithWorker++;
    entry.socket.destroy();
  }
}

/**
 * One new connection: read its head if routing needs it and there is room,
 * then hand it on.
 *
 * @param {import('node:net').Socket} socket
 * @param {Required<RouterOptions>} o
 * @param {RouterState} state
 */
function routeConnection(socket, o, state) {
  // A reset while the primary holds the socket must not take the primary (and the port) down.
  socket.on('error', () => {});
  if (!o.readHeads || state.pending >= o.limits.maxPending) {
    state.stats.unread++;
    handOff(socket, EMPTY, null, o, state);
    return;
  }
  state.pending++;
  readHead(socket, o.limits, state.stats, (head, group) => {
    state.pending--;
    if (head) handOff(socket, head, group, o, state);
  });
}

const EMPTY = Buffer.alloc(0);

/**
 * Reads until the request head is complete, then stops reading. Calls `done`
 * once: with the bytes read and the group to route by (null: round-robin,
 * also for a head over the limits, which the worker then answers), or with
 * null when the client left first.
 *
 * @param {import('node:net').Socket} socket
 * @param {import('./route.js').HeadLimits} limits
 * @param {RouterStats} stats
 * @param {(head: Buffer | null, group: string | null) => void} done
 */
function readHead(socket, limits, stats, done) {
  /** @type {Buffer[]} */
  const chunks = [];
  let size = 0;
  /** @param {'complete' | 'limit' | 'gone'} why @param {string | null} group */
  const finish = (why, group) => {
    clearTimeout(timer);
    // Listeners off first: reading the rest of the buffer below emits 'data' again.
    socket.off('data', onData);
    socket.off('close', onClose);
    done(why === 'gone' ? null : stopReading(socket, chunks), group);
  };
  const timer = setTimeout(() => { stats.headTimeouts++; finish('limit', null); }, limits.timeoutMs);
  const onClose = () => { stats.clientGone++; finish('gone', null); };
  /** @param {Buffer} chunk */
  const onData = (chunk) => {
    chunks.push(chunk);
    size += chunk.length;
    const head = parseRequestHead(chunks.length === 1 ? chunk : Buffer.concat(chunks));
    if (head.complete) finish('complete', head.group);
    else if (size >= limits.maxBytes) { stats.headTooLarge++; finish('limit', null); }
  };
  socket.on('data', onData);
  socket.once('close', onClose);
  socket.resume();
}

/**
 * Stops reading a socket for good, so every byte not read yet stays in the
 * kernel for the worker: `pause()` alone leaves the descriptor being read into
 * the stream's buffer, and once the handle is sent whatever the primary read
 * after that would be lost (a request body, say). What is already buffered is
 * taken first. Returns every byte read.
 *
 * @param {import('node:net').Socket} socket
 * @param {Buffer[]} chunks what was read so far; the buffered rest is added
 * @returns {Buffer}
 */
function stopReading(socket, chunks) {
  socket.pause();
  for (let chunk = socket.read(); chunk !== null; chunk = socket.read()) chunks.push(chunk);
  // No public API stops a net.Socket's reads at once; its libuv handle's readStop does.
  const handle = /** @type {{ _handle?: { readStop?: () => number, reading?: boolean } | null }} */ (/** @type {unknown} */ (socket))._handle;
  if (handle?.readStop) {
    handle.readStop();
    handle.reading = false;
  }
  return Buffer.concat(chunks);
}

/**
 * Hands a socket and the bytes read from it to a worker: by group when there
 * is one, round-robin otherwise. No worker serving (all restarting): the
 * client is cut off and reconnects, as from a dead worker.
 *
 * @param {import('node:net').Socket} socket
 * @param {Buffer} head
 * @param {string | null} group
 * @param {Required<RouterOptions>} o
 * @param {RouterState} state
 */
function handOff(socket, head, group, o, state) {
  const live = o.live();
  if (socket.destroyed) return;
  if (live.length === 0) {
    state.stats.noWorker++;
    socket.destroy();
    return;
  }
  let target;
  if (group === null) {
    target = live[state.next % live.length];
    state.next = (state.next + 1) % 1_000_000_007;
    state.stats.roundRobin++;
  } else {
    const key = pickRendezvous(group, live.map((w) => String(w.slot)));
    target = live.find((w) => String(w.slot) === key) ?? live[0];
    state.stats.byGroup++;
  }
  // keepOpen: the primary holds its copy until the worker says it took the connection (ROUTED_TAKEN)
  // or dies first (closeLostWith); a worker killed with the handle on its way never takes it.
  const id = ++state.lastId;
  state.untaken.set(id, { socket, worker: target.worker });
  target.worker.send({ cmd: ROUTED_CONNECTION, head: head.toString('latin1'), id }, socket, { keepOpen: true }, (err) => {
    if (!err) return;
    state.stats.sendFailed++;
    state.untaken.delete(id);
    socket.destroy();
  });
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
