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
 * @param {{ port?: number, host?: string, timeoutMs?: number, netns?: string }} [options] `port`: reuse one (a
 *   restart test); `netns`: run it in this network namespace (the lab's multi-machine tests; give `host` an address there)
 * @returns {Promise<NatsProcess>}
 */
export async function startNatsServer(options = {}) {
  const version = natsServerVersion();
  const host = options.host ?? '127.0.0.1';
  // In a namespace the port cannot be probed from here: any high port will do there.
  const port = options.port ?? (options.netns ? 4222 : await freePort(host));
  const argv = [NATS_SERVER_BIN, '-a', host, '-p', String(port)];
  const [bin, ...args] = options.netns ? ['ip', 'netns', 'exec', options.netns, ...argv] : argv;
  const child = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr?.on('data', (d) => { log = (log + d).slice(-4000); });
  const exited = new Promise((resolve) => child.once('exit', resolve));
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
