/**
 * A `nats-server` of carlab's own (Debian package `nats-server`), for
 * `carlab start --cluster N` without `--nats`, and for the tests: started on
 * a free loopback port, stopped with the process that started it.
 *
 * @module server/nats-process
 */

import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';

/** Where Debian puts it; CARLAB_NATS_SERVER overrides. */
export const NATS_SERVER_BIN = process.env.CARLAB_NATS_SERVER ?? 'nats-server';

/** Error code when the binary is not installed. */
export const ERR_NATS_MISSING = 'ERR_NATS_MISSING';

/**
 * @typedef {object} NatsProcess
 * @property {string} url e.g. `nats://127.0.0.1:4222`
 * @property {number} port
 * @property {number} pid
 * @property {string} version e.g. `2.9.10`
 * @property {() => Promise<void>} stop SIGTERM, then SIGKILL after 3 s
 * @property {() => void} kill SIGKILL at once (fault tests)
 * @property {Promise<NatsExit>} exited resolves when the process is gone, however it went
 */

/**
 * How a nats-server process ended.
 * @typedef {{ code: number | null, signal: NodeJS.Signals | null }} NatsExit
 */

/**
 * The installed nats-server's version, or an error with code ERR_NATS_MISSING
 * that says how to install it.
 *
 * @returns {string}
 */
export function natsServerVersion() {
  const probe = spawnSync(NATS_SERVER_BIN, ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    const error = new Error(`${NATS_SERVER_BIN} not found: install it (apt-get install nats-server) or name an existing server with --nats URL`);
    Object.assign(error, { code: ERR_NATS_MISSING });
    throw error;
  }
  return (probe.stdout.match(/v?(\d+\.\d+\.\d+)/) ?? [])[1] ?? probe.stdout.trim();
}

/**
 * A free TCP port on the host.
 *
 * @param {string} [host]
 * @returns {Promise<number>}
 */
export async function freePort(host = '127.0.0.1') {
  const srv = createServer();
  await new Promise((resolve, reject) => { srv.once('error', reject); srv.listen(0, host, () => resolve(undefined)); });
  const address = srv.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  await new Promise((resolve) => srv.close(() => resolve(undefined)));
  return port;
}

/**
 * Starts nats-server and resolves once it accepts clients.
 *
 * @param {{ port?: number, host?: string, timeoutMs?: number, netns?: string, jetstreamDir?: string }} [options] `port`: reuse one (a
 *   restart test); `netns`: run it in this network namespace (the lab's multi-machine tests; give `host` an address there);
 *   `jetstreamDir`: turn JetStream on (`-js`) with its store there (`-sd`): the cluster's kept scenes live in it
 * @returns {Promise<NatsProcess>}
 */
export async function startNatsServer(options = {}) {
  const version = natsServerVersion();
  const host = options.host ?? '127.0.0.1';
  // In a namespace the port cannot be probed from here: any high port will do there.
  const port = options.port ?? (options.netns ? 4222 : await freePort(host));
  const argv = [NATS_SERVER_BIN, '-a', host, '-p', String(port), ...(options.jetstreamDir ? ['-js', '-sd', options.jetstreamDir] : [])];
  const [bin, ...args] = options.netns ? ['ip', 'netns', 'exec', options.netns, ...argv] : argv;
  const child = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr?.on('data', (d) => { log = (log + d).slice(-4000); });
  /** @type {Promise<NatsExit>} */
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  try {
    await waitForLine(() => log, /Server is ready/, exited, options.timeoutMs ?? 10_000);
  } catch (err) {
    child.kill('SIGKILL');
    throw new Error(`nats-server did not start on ${host}:${port}: ${/** @type {Error} */ (err).message}\n${log}`);
  }
  return {
    url: `nats://${host}:${port}`,
    port,
    pid: /** @type {number} */ (child.pid),
    version,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const force = setTimeout(() => child.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(force);
    },
    kill() { child.kill('SIGKILL'); },
    exited,
  };
}

/**
 * Restart pacing of a supervised nats-server: the n-th restart in a row waits
 * min(maxMs, baseMs * 2^n); a server that stayed up stableMs starts the count again.
 * @typedef {{ baseMs: number, maxMs: number, stableMs: number }} RestartPacing
 */

/**
 * The pacing the cluster primary uses: the first restart after 200 ms (the
 * workers' NATS clients retry every 250 ms, and a cluster node drops its peers
 * after 3.5 s of silence), at most one attempt every 5 s for a server that
 * keeps failing.
 * @type {Readonly<RestartPacing>}
 */
export const NATS_RESTART = Object.freeze({ baseMs: 200, maxMs: 5000, stableMs: 30_000 });

/**
 * What a supervisor reports (the cluster primary logs it).
 * @typedef {object} NatsSupervisorHooks
 * @property {(e: NatsExit & { pid: number, restartInMs: number }) => void} onExit it died unasked
 * @property {(p: NatsProcess) => void} onRestart a new one serves the same port
 * @property {(err: Error, retryInMs: number) => void} onRestartFailed
 */

/**
 * A nats-server kept running: one that exits without being asked is started
 * again on the same host and port (so the URL every client holds stays right;
 * their clients reconnect and resubscribe on their own), after a bounded,
 * growing wait so a server that cannot start does not spin.
 *
 * @param {Parameters<typeof startNatsServer>[0]} options as startNatsServer
 * @param {NatsSupervisorHooks} hooks
 * @param {RestartPacing} [pacing]
 * @returns {Promise<Omit<NatsProcess, 'exited'>>} `pid` is the current process's; `stop` ends supervision
 */
export async function startSupervisedNatsServer(options, hooks, pacing = NATS_RESTART) {
  let current = await startNatsServer(options);
  const fixed = { ...options, port: current.port };
  let stopping = false;
  let failures = 0;
  let startedAt = Date.now();
  /** @type {ReturnType<typeof setTimeout> | null} */
  let timer = null;
  const nextDelay = () => Math.min(pacing.maxMs, pacing.baseMs * 2 ** Math.min(failures++, 20));
  const restart = async () => {
    timer = null;
    try {
      const next = await startNatsServer(fixed);
      if (stopping) { await next.stop(); return; }
      current = next;
      startedAt = Date.now();
      watch(next);
      hooks.onRestart(next);
    } catch (err) {
      if (stopping) return;
      const delay = nextDelay();
      hooks.onRestartFailed(/** @type {Error} */ (err), delay);
      timer = setTimeout(restart, delay);
    }
  };
  /** @param {NatsProcess} p */
  const watch = (p) => p.exited.then((exit) => {
    if (stopping || p !== current) return;
    if (Date.now() - startedAt >= pacing.stableMs) failures = 0;
    const delay = nextDelay();
    hooks.onExit({ ...exit, pid: p.pid, restartInMs: delay });
    timer = setTimeout(restart, delay);
  });
  watch(current);
  return {
    url: current.url,
    port: current.port,
    version: current.version,
    get pid() { return current.pid; },
    async stop() {
      stopping = true;
      if (timer) clearTimeout(timer);
      await current.stop();
    },
    kill() { current.kill(); },
  };
}

/**
 * Resolves once `read()` matches, rejects when the process exits first or time runs out.
 *
 * @param {() => string} read
 * @param {RegExp} pattern
 * @param {Promise<unknown>} exited
 * @param {number} timeoutMs
 */
async function waitForLine(read, pattern, exited, timeoutMs) {
  let gone = false;
  exited.then(() => { gone = true; });
  const end = Date.now() + timeoutMs;
  while (!pattern.test(read())) {
    if (gone) throw new Error('it exited');
    if (Date.now() > end) throw new Error(`no "${pattern.source}" within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
