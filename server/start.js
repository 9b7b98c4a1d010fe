/**
 * `carlab start`: build the web app when stale, serve everything on one
 * port, print where to reach it, and drain on SIGINT/SIGTERM: clients are
 * told 1001 GOING_AWAY (they reconnect), then the process exits within
 * --drain-timeout; a second signal exits at once.
 *
 * Output: on a terminal, the banner (URLs, QR) and readable log lines; to a
 * file or pipe, JSON log lines only (server/log.js), the first one included.
 *
 * @module server/start
 */

/// <reference path="./qrcode-terminal.d.ts" />

import { existsSync } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { constants as osConstants } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import qrcode from 'qrcode-terminal';

import { connectNatsBroker } from '../relay/index.js';
import { runClusterPrimary, workerCount } from './cluster.js';
import { createLogger } from './log.js';
import { precompressDir } from './precompress.js';
import { parseStartOptions, startHelp } from './options.js';
import { loadTlsCertificate } from './tls.js';
import { createCarlabServer } from './server.js';
import { randomDashboardToken } from './study.js';

/** The web app's source folder (Vite root). */
export const WEB_DIR = fileURLToPath(new URL('../web/', import.meta.url));

/** Folders under web/ that never feed the build. */
const NOT_SOURCES = new Set(['dist', 'node_modules']);

/**
 * @typedef {object} StartIo
 * @property {NodeJS.ProcessEnv} [env]
 * @property {NodeJS.WritableStream} [stdout]
 * @property {NodeJS.WritableStream} [stderr]
 */

/**
 * What a caller composing on top of `carlab start` adds (the lab's server).
 *
 * @typedef {object} StartExtras
 * @property {string[]} [extraWebRoots] more folders served at `/` after web/dist
 * @property {string} [workerCommand] what a cluster's workers run (default `start`; the lab's `lab-server`)
 */

/**
 * Run `carlab start`. Resolves with the exit code once the server has shut
 * down: 0 after a signal, 1 when starting or closing failed, 2 on bad usage.
 *
 * @param {string[]} argv arguments after `start`
 * @param {StartIo} [io]
 * @param {StartExtras} [extras]
 * @returns {Promise<number>}
 */
export async function run(argv, { env = process.env, stdout = process.stdout, stderr = process.stderr } = {}, extras = {}) {
  const parsed = parseStartOptions(argv, { env });
  if (parsed.kind === 'error') {
    stderr.write(`carlab start: ${parsed.error.message}\n\n${startHelp()}`);
    return 2;
  }
  if (parsed.kind === 'help') {
    stdout.write(startHelp());
    return 0;
  }
  const { options } = parsed;
  const outDir = path.join(WEB_DIR, 'dist');
  const logger = createLogger({ level: options.logLevel, stream: stdout });

  try {
    if (options.build && (await isBuildStale({ webDir: WEB_DIR, outDir }))) {
      logger.info({ event: 'build', outDir: path.relative(process.cwd(), outDir) || outDir }, 'building the web app (web/dist)...');
      await buildWebApp({ webDir: WEB_DIR, outDir });
    }
    // A build made by `vite build` alone has no .br/.gz twins yet; a current one costs only stats.
    if (options.build) await precompressRoots([outDir, ...(extras.extraWebRoots ?? [])], logger);
  } catch (err) {
    stderr.write(`carlab start: building the web app failed: ${/** @type {Error | null | undefined} */ (err)?.message ?? err}\n`);
    return 1;
  }
  if (!existsSync(path.join(outDir, 'index.html'))) {
    logger.warn({ event: 'no-web-build' }, 'web/dist has no index.html; pages will answer 404 (drop --no-build)');
  }
  if (options.cluster !== null) {
    // The certificate is made once here, so the workers all reuse one.
    if (!options.http) await loadTlsCertificate({ certPath: options.cert, keyPath: options.key });
    // One dashboard token for every worker, whichever one a browser reaches.
    const dashboardToken = options.dashboardToken ?? randomDashboardToken();
    return runClusterPrimary({
      argv, command: extras.workerCommand ?? 'start', workers: workerCount(options.cluster), natsUrl: options.nats, logger,
      // the workers keep scenes in JetStream (server/scene-kv.js): our own nats-server gets it, stored beside the scenes
      jetstreamDir: options.sceneStore === null ? undefined : path.join(options.sceneStore, 'nats'),
      workerEnv: { CARLAB_DASHBOARD_TOKEN: dashboardToken },
      dashboardToken,
    });
  }
  return serveNode(options, outDir, extras, { stdout, stderr, logger });
}

/**
 * Precompress the web roots that exist (server/precompress.js), logging what it saved.
 *
 * @param {string[]} roots
 * @param {import('./log.js').Logger} logger
 */
async function precompressRoots(roots, logger) {
  for (const root of roots) {
    if (!existsSync(root)) continue;
    const r = await precompressDir(root);
    logger.debug({ event: 'precompress', root: path.relative(process.cwd(), root) || root, ...r }, 'precompressed the web build');
  }
}

/**
 * Runs one node: the server, joined to NATS when `--nats` says so, until a signal.
 *
 * @param {import('./options.js').StartOptions} options
 * @param {string} outDir the web build
 * @param {StartExtras} extras
 * @param {{ stdout: NodeJS.WritableStream, stderr: NodeJS.WritableStream, logger: import('./log.js').Logger }} io
 * @returns {Promise<number>} exit code
 */
async function serveNode(options, outDir, extras, { stdout, stderr, logger }) {
  /** @type {import('../relay/broker.js').Broker | undefined} */
  let broker;
  if (options.nats) {
    try {
      broker = await connectNatsBroker({ url: options.nats });
    } catch (err) {
      stderr.write(`carlab start: ${/** @type {Error} */ (err).message} (is nats-server running? --nats names it)\n`);
      return 1;
    }
  }
  let carlab;
  try {
    carlab = await createCarlabServer({
      broker,
      http: options.http,
      port: options.port,
      host: options.host,
      cert: options.cert,
      key: options.key,
      webRoot: outDir,
      extraWebRoots: extras.extraWebRoots,
      iceServers: options.iceServers,
      turn: options.turn,
      relayPath: options.relayPath,
      peerjsPath: options.peerjsPath,
      peerjsKey: options.peerjsKey,
      maxPayload: options.maxPayload,
      queueSoftBytes: options.queueSoftBytes,
      queueHardBytes: options.queueHardBytes,
      ackTimeoutMs: options.ackTimeoutMs,
      maxMessagesPerSecond: options.maxMessagesPerSecond,
      allowedOrigins: options.allowedOrigins,
      closeTimeoutMs: options.drainTimeoutMs,
      record: options.record ?? undefined,
      dashboardToken: options.dashboardToken ?? undefined,
      reportIntervalMs: options.reportIntervalMs,
      keptScenes: options.sceneStore === null ? null : { dir: options.sceneStore, ttlMs: options.sceneTtlMs },
      logger,
    });
  } catch (err) {
    await broker?.close();
    stderr.write(`carlab start: ${describeStartError(err, options.host, options.port)}\n`);
    return 1;
  }

  // Signal handlers before the announcement: a supervisor may send SIGTERM as soon as it reads
  // the listening line, and without a handler that would kill the process undrained (a test that
  // did so on a starved machine once caught it between the two).
  const shutdown = waitForShutdown(carlab, { logger, drainTimeoutMs: options.drainTimeoutMs });
  // The banner is for a person at a terminal; a file or a log shipper gets
  // the same facts as one JSON line (its text keeps `local: URL` for scripts).
  if (options.banner && isTerminal(stdout)) printBanner(carlab, options, stdout);
  else logListening(carlab, logger, options.banner);
  const code = await shutdown;
  await broker?.close();
  logger.flush?.();
  return code;
}

/**
 * @param {NodeJS.WritableStream} stream
 * @returns {boolean}
 */
function isTerminal(stream) {
  return /** @type {{ isTTY?: boolean }} */ (stream).isTTY === true;
}

/**
 * The banner's facts as one log line.
 *
 * @param {import('./server.js').CarlabServer} carlab
 * @param {import('./log.js').Logger} logger
 * @param {boolean} withDashboard log the dashboard's URL too (not a cluster's workers: the
 *   primary logs the public one, and theirs would name a private port)
 */
function logListening(carlab, logger, withDashboard) {
  const [local, ...lan] = carlab.urls;
  logger.info({
    event: 'listening', url: local, lanUrls: lan,
    certificate: carlab.tls ? { source: carlab.tls.source, path: carlab.tls.certPath || null } : null,
    recording: carlab.study.recorder?.file ?? null,
  }, `carlab is running; local: ${local}${lan.length ? ` LAN: ${lan.join(' ')}` : ''} (Press Ctrl+C to stop)`);
  // The dashboard's URL carries its token: the person who started the server needs it once.
  if (withDashboard) logger.info({ event: 'dashboard', url: carlab.dashboardUrl }, `dashboard: ${carlab.dashboardUrl}`);
}

/**
 * Whether a pages folder's dist must be (re)built: it lacks one of the
 * top-level pages, or any file under the folder (outside dist) or under one of
 * `sourceDirs` is newer than the oldest built page.
 *
 * @param {{ webDir: string, outDir?: string, sourceDirs?: string[] }} dirs `sourceDirs`: more
 *   folders the pages import from (the lab's pages import web/src and core/)
 * @returns {Promise<boolean>}
 */
export async function isBuildStale({ webDir, outDir = path.join(webDir, 'dist'), sourceDirs = [] }) {
  const pages = await listHtmlPages(webDir);
  if (pages.length === 0) return false;
  let builtAt = Infinity;
  for (const page of pages) {
    const built = await statOrNull(path.join(outDir, page));
    if (!built) return true;
    builtAt = Math.min(builtAt, built.mtimeMs);
  }
  let newestSource = await newestMtimeMs(webDir, path.resolve(outDir));
  for (const dir of sourceDirs) newestSource = Math.max(newestSource, await newestMtimeMs(dir, path.resolve(outDir)));
  return newestSource > builtAt;
}

/**
 * Top-level HTML pages of the web app: each is one Vite entry.
 *
 * @param {string} webDir
 * @returns {Promise<string[]>} file names such as `['ar.html', 'index.html']`
 */
export async function listHtmlPages(webDir) {
  const entries = await readdir(webDir, { withFileTypes: true });
  return entries.filter((entry) => entry.isFile() && entry.name.endsWith('.html')).map((entry) => entry.name).sort();
}

/**
 * Build a pages folder with Vite using its own vite.config.js (web/ or lab/pages/),
 * then write the .br/.gz twins the static handler serves (server/precompress.js).
 *
 * @param {{ webDir: string, outDir?: string, logLevel?: 'info' | 'warn' | 'error' | 'silent', precompress?: boolean }} options
 * @returns {Promise<void>}
 */
export async function buildWebApp({ webDir, outDir = path.join(webDir, 'dist'), logLevel = 'warn', precompress = true }) {
  // Loaded lazily: Vite is large and not needed when dist is fresh.
  const { build } = await import('vite');
  await build({
    configFile: path.join(webDir, 'vite.config.js'),
    root: webDir,
    logLevel,
    build: { outDir, emptyOutDir: true },
  });
  if (precompress) await precompressDir(outDir);
}

/**
 * Latest modification time of any file under `dir`, skipping `skipDir`,
 * dist, node_modules and dot-folders.
 *
 * @param {string} dir
 * @param {string} skipDir absolute path
 * @returns {Promise<number>} epoch ms, 0 for an empty tree
 */
async function newestMtimeMs(dir, skipDir) {
  let newest = 0;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (full === skipDir || NOT_SOURCES.has(entry.name) || entry.name.startsWith('.')) continue;
      newest = Math.max(newest, await newestMtimeMs(full, skipDir));
    } else if (entry.isFile()) {
      const stats = await statOrNull(full);
      if (stats) newest = Math.max(newest, stats.mtimeMs);
    }
  }
  return newest;
}

/**
 * @param {string} file
 * @returns {Promise<import('node:fs').Stats | null>}
 */
async function statOrNull(file) {
  try {
    return await stat(file);
  } catch {
    return null;
  }
}

/**
 * A one-line explanation of a startup failure, with a hint where we have one.
 *
 * @param {unknown} err
 * @param {string} host
 * @param {number} port
 * @returns {string}
 */
function describeStartError(err, host, port) {
  const error = /** @type {NodeJS.ErrnoException | null | undefined} */ (err);
  switch (error?.code) {
    case 'EADDRINUSE':
      return `port ${port} on ${host} is already in use (choose another with --port)`;
    case 'EACCES':
      return `not allowed to listen on port ${port} (ports below 1024 need privileges; try --port 8443)`;
    case 'EADDRNOTAVAIL':
      return `${host} is not an address of this machine (--host)`;
    default:
      return `${error?.message ?? err}${error?.code ? ` (${error.code})` : ''}`;
  }
}

/**
 * Print the URLs, the certificate note and a QR code of the first LAN URL.
 *
 * @param {import('./server.js').CarlabServer} carlab
 * @param {import('./options.js').StartOptions} options
 * @param {NodeJS.WritableStream} stdout
 */
function printBanner(carlab, options, stdout) {
  const [local, ...lan] = carlab.urls;
  const lines = ['', 'carlab is running:', `  local:  ${local}`];
  for (const url of lan) lines.push(`  LAN:    ${url}`);
  if (carlab.tls && carlab.tls.source !== 'provided') {
    lines.push('', `  self-signed certificate (${path.relative(process.cwd(), carlab.tls.certPath) || carlab.tls.certPath},`,
      `  ${carlab.tls.source}): browsers warn once; accept it to continue.`);
  }
  if (options.http) lines.push('', '  plain HTTP: phones allow the camera only over HTTPS (drop --http).');
  lines.push('', `  dashboard (for you, not for phones): ${carlab.dashboardUrl}`);
  if (carlab.study.recorder) lines.push(`  recording client reports to ${carlab.study.recorder.file}`);
  stdout.write(`${lines.join('\n')}\n`);

  if (options.qr && lan.length > 0) {
    stdout.write(`\nScan to open ${lan[0]} on a phone:\n`);
    qrcode.generate(lan[0], { small: true }, (/** @type {string} */ code) => stdout.write(`${code}\n`));
  }
  stdout.write('\nPress Ctrl+C to stop.\n');
}

/** Past the drain bound, how long the last steps (NATS, log flush) may take before the process is ended anyway. */
const EXIT_GRACE_MS = 2000;

/**
 * Drain on the first SIGINT/SIGTERM; exit at once on a second. The close is
 * bounded by the drain timeout already; a timer past it (unref'd) ends the
 * process should anything still hang, so a supervisor's stop always returns.
 *
 * @param {import('./server.js').CarlabServer} carlab
 * @param {{ logger: import('./log.js').Logger, drainTimeoutMs: number }} io
 * @returns {Promise<number>} exit code
 */
function waitForShutdown(carlab, { logger, drainTimeoutMs }) {
  return new Promise((resolve) => {
    let stopping = false;
    /** @param {NodeJS.Signals} signal */
    const onSignal = (signal) => {
      if (stopping) {
        logger.warn({ event: 'signal', signal }, `${signal} again, exiting without waiting`);
        logger.flush?.();
        process.exit(128 + (osConstants.signals[signal] ?? 0));
      }
      stopping = true;
      logger.info({ event: 'signal', signal, drainTimeoutMs }, `${signal}, closing: draining clients (again to force)`);
      setTimeout(() => {
        logger.error({ event: 'drain-overrun', drainTimeoutMs }, 'drain overran its bound; exiting');
        logger.flush?.();
        process.exit(1);
      }, drainTimeoutMs + EXIT_GRACE_MS).unref();
      carlab.close().then(
        () => finish(0),
        (err) => {
          logger.error({ event: 'close-error', err }, `error while closing: ${err?.message ?? err}`);
          finish(1);
        },
      );
    };
    /** @param {number} code */
    const finish = (code) => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      resolve(code);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}
