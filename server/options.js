/**
 * `carlab start` options: flags parsed with util.parseArgs (strict), each
 * falling back to a CARLAB_* environment variable, then to a default.
 *
 * The parser is a function of (argv, env, file reader) with no other effects,
 * so every kind of bad input is unit tested; start.js does the printing.
 *
 * @module server/options
 */

import { RELAY_LIMITS, REPORT_LIMITS } from '../core/defaults.js';
import { readFileSync } from 'node:fs';
import { DEFAULT_LOG_LEVEL, LOG_LEVELS } from './log.js';
import { parseArgs } from 'node:util';

/**
 * A usage mistake: the CLI prints it with the help text and exits 2.
 */
export class UsageError extends Error {
  /**
   * @param {string} message what was wrong, e.g. `--port: must be an integer 0..65535, got 'x'`
   */
  constructor(message) {
    super(message);
    this.name = 'UsageError';
    this.code = 'ERR_CARLAB_USAGE';
  }
}

/**
 * @typedef {object} IceServer
 * @property {string | string[]} urls `stun:`, `turn:` or `turns:` URLs
 * @property {string} [username]
 * @property {string} [credential]
 */

/**
 * @typedef {object} StartOptions
 * @property {number} port
 * @property {string} host
 * @property {boolean} http plain HTTP instead of HTTPS
 * @property {string} [cert] certificate file; with `key`, replaces the self-signed one
 * @property {string} [key] private key file
 * @property {IceServer[]} iceServers handed to browsers through /config.json
 * @property {boolean} [turn] run coturn beside the server (server/turn.js)
 * @property {string} peerjsPath
 * @property {string} peerjsKey
 * @property {string} relayPath
 * @property {number} [maxPayload] relay limit; undefined means the relay's default
 * @property {number} [queueSoftBytes] relay limit; undefined means the relay's default
 * @property {number} [queueHardBytes] relay limit; undefined means the relay's default
 * @property {number} [ackTimeoutMs] relay limit; undefined means the relay's default
 * @property {number} [maxMessagesPerSecond] relay per-socket message rate (burst: twice that);
 *   undefined means the relay's default
 * @property {string[]} [allowedOrigins] undefined means the servers' default
 * @property {boolean} build build web/dist when stale
 * @property {boolean} qr print a QR code of the first LAN URL
 * @property {boolean} banner print the URLs (a cluster's workers leave that to the primary)
 * @property {number | null} cluster serve the port from this many processes joined through NATS
 *   (0: one per core); null: one process, no NATS
 * @property {string | null} nats NATS server URL to join (a node of a multi-process or multi-machine system)
 * @property {string | null} record folder of the study recording; null: reports feed only the dashboard
 * @property {string | null} dashboardToken null: a random one
 * @property {number} reportIntervalMs how often clients report (0: only when leaving)
 * @property {string} logLevel one of LOG_LEVELS (server/log.js)
 * @property {number} drainTimeoutMs bound on a graceful stop after SIGTERM/SIGINT
 * @property {string | null} sceneStore folder where groups' scenes are kept across restarts; null: not kept
 * @property {number} sceneTtlMs a kept scene is dropped after this long without a member
 */

/** Default --scene-store: beside the certificates, under the folder carlab start runs in. */
export const DEFAULT_SCENE_STORE = '.carlab/scenes';
/** Default --scene-ttl in hours (7 days). */
export const DEFAULT_SCENE_TTL_H = 168;

/** Default --drain-timeout in seconds: inside the cluster primary's 10 s before it kills a worker. */
export const DEFAULT_DRAIN_TIMEOUT_S = 5;

/**
 * The parser's answer; `kind` says which field is set.
 *
 * @typedef {{ kind: 'help' } | { kind: 'options', options: StartOptions } | { kind: 'error', error: UsageError }} ParseResult
 */

/**
 * @typedef {object} ParseContext
 * @property {NodeJS.ProcessEnv} [env] environment for the CARLAB_* fallbacks
 * @property {(file: string) => string} [readFile] reads an --ice-servers file
 */

/** Default ports: 8443 is the usual unprivileged HTTPS port, 8080 its HTTP twin. */
export const DEFAULT_HTTPS_PORT = 8443;
/** Default port with --http. */
export const DEFAULT_HTTP_PORT = 8080;

/**
 * @typedef {object} FlagSpec
 * @property {'string' | 'boolean'} type
 * @property {string} [short]
 * @property {string} [placeholder] shown in help for string flags
 * @property {string} help
 * @property {boolean} [noEnv] no CARLAB_* fallback (e.g. --help)
 */

/**
 * Every flag, in help order. The env name is derived: --queue-soft-bytes ->
 * CARLAB_QUEUE_SOFT_BYTES, --no-build -> CARLAB_NO_BUILD.
 *
 * @type {Record<string, FlagSpec>}
 */
const FLAGS = {
  port: { type: 'string', placeholder: '<n>', help: `port to listen on, 0 for any free one (default ${DEFAULT_HTTPS_PORT}, ${DEFAULT_HTTP_PORT} with --http)` },
  host: { type: 'string', placeholder: '<addr>', help: 'address to listen on (default 0.0.0.0: every interface)' },
  http: { type: 'boolean', help: 'serve plain HTTP (phones then refuse the camera except on localhost)' },
  cert: { type: 'string', placeholder: '<file>', help: 'PEM certificate to use instead of the generated self-signed one' },
  key: { type: 'string', placeholder: '<file>', help: 'PEM private key belonging to --cert' },
  'ice-servers': { type: 'string', placeholder: '<json|file>', help: 'JSON array of RTCIceServer, or a file holding one (default [])' },
  turn: { type: 'boolean', help: 'also run coturn (turnserver) on port 3478 with short-lived TURN REST credentials in /config.json (docs/turn.md)' },
  'peerjs-path': { type: 'string', placeholder: '<path>', help: 'mount path of the PeerJS server (default /peerjs)' },
  'peerjs-key': { type: 'string', placeholder: '<key>', help: 'PeerJS API key (default peerjs)' },
  'relay-path': { type: 'string', placeholder: '<path>', help: 'WebSocket path of the relay (default /relay)' },
  'max-payload': { type: 'string', placeholder: '<bytes>', help: 'largest relay message accepted (default: the relay\'s)' },
  'queue-soft-bytes': { type: 'string', placeholder: '<bytes>', help: 'relay send queue size at which frames are dropped (default: the relay\'s)' },
  'queue-hard-bytes': { type: 'string', placeholder: '<bytes>', help: 'relay send queue size at which a client is cut off (default: the relay\'s)' },
  'ack-timeout-ms': { type: 'string', placeholder: '<ms>', help: 'relay wait for an ACK before counting it lost (default: the relay\'s)' },
  'max-messages-per-second': { type: 'string', placeholder: '<n>', help: `per-socket relay message rate, bursts of twice that; above it a client is closed with 4005 (default: the relay\'s, ${RELAY_LIMITS.maxMessagesPerSecond})` },
  'allowed-origins': { type: 'string', placeholder: '<list>', help: 'comma-separated origins allowed to open WebSockets, * for any (default: the page\'s own)' },
  cluster: { type: 'string', placeholder: '<n>', help: 'serve the port from n processes joined through NATS, 0 for one per core (default: one process, no NATS)' },
  nats: { type: 'string', placeholder: '<url>', help: 'join the system on this NATS server (nats://host:4222); with --cluster, use it instead of starting one' },
  record: { type: 'string', placeholder: '<dir>', help: 'record every client report for a study under <dir> (one study per folder; a restart adds to it; docs/study.md)' },
  'dashboard-token': { type: 'string', placeholder: '<token>', help: 'token of the live dashboard at /dashboard?token=... (default: a random one, printed at start)' },
  'report-interval': { type: 'string', placeholder: '<s>', help: `seconds between a client's reports, 0 for only when it leaves (default ${REPORT_LIMITS.intervalMs / 1000}, at least ${REPORT_LIMITS.minIntervalMs / 1000})` },
  'log-level': { type: 'string', placeholder: '<level>', help: `log level: ${LOG_LEVELS.join(', ')} (default ${DEFAULT_LOG_LEVEL}; JSON lines unless stdout is a terminal)` },
  'drain-timeout': { type: 'string', placeholder: '<s>', help: `on SIGTERM/SIGINT, seconds to let clients leave (told 1001: reconnect) before cutting them off (default ${DEFAULT_DRAIN_TIMEOUT_S})` },
  'scene-store': { type: 'string', placeholder: '<dir>', help: `keep each group's objects in <dir> when its last member leaves, across restarts, for its next first member (default ${DEFAULT_SCENE_STORE}; with --cluster or --nats the scenes are in NATS JetStream)` },
  'scene-ttl': { type: 'string', placeholder: '<h>', help: `hours a kept scene waits for a member before it is dropped (default ${DEFAULT_SCENE_TTL_H})` },
  'no-scene-store': { type: 'boolean', help: 'keep no scene: a group\'s objects go with its last member' },
  'no-build': { type: 'boolean', help: 'do not build web/dist, even when it is missing or stale' },
  'no-qr': { type: 'boolean', help: 'do not print a QR code' },
  'no-banner': { type: 'boolean', help: 'do not print the URLs (a cluster\'s workers)' },
  help: { type: 'boolean', short: 'h', help: 'show this help', noEnv: true },
};

/**
 * The CARLAB_* variable a flag falls back to.
 *
 * @param {string} flag flag name without dashes, e.g. `queue-soft-bytes`
 * @returns {string}
 */
export function envNameFor(flag) {
  return `CARLAB_${flag.toUpperCase().replaceAll('-', '_')}`;
}

/**
 * Help text for `carlab start`, generated from the flag table.
 *
 * @returns {string}
 */
export function startHelp() {
  const rows = Object.entries(FLAGS).map(([name, spec]) => {
    const short = spec.short ? `-${spec.short}, ` : '';
    const left = `${short}--${name}${spec.placeholder ? ` ${spec.placeholder}` : ''}`;
    const env = spec.noEnv ? '' : ` [${envNameFor(name)}]`;
    return `  ${left.padEnd(30)}${spec.help}${env}`;
  });
  return [
    'Usage: carlab start [options]',
    '',
    'Serve the web app, the relay and PeerJS signaling on one HTTPS port.',
    'Each option falls back to the environment variable in brackets.',
    '',
    'Options:',
    ...rows,
    '',
  ].join('\n');
}

/**
 * Parse `carlab start` arguments.
 *
 * @param {string[]} argv arguments after `start`
 * @param {ParseContext} [context]
 * @returns {ParseResult}
 */
export function parseStartOptions(argv, { env = process.env, readFile = (file) => readFileSync(file, 'utf8') } = {}) {
  try {
    return parseOrThrow(argv, env, readFile);
  } catch (err) {
    if (err instanceof UsageError) return { kind: 'error', error: err };
    throw err;
  }
}

/**
 * @param {string[]} argv
 * @param {NodeJS.ProcessEnv} env
 * @param {(file: string) => string} readFile
 * @returns {ParseResult}
 */
function parseOrThrow(argv, env, readFile) {
  const values = parseFlagValues(argv);
  if (values.help) return { kind: 'help' };
  const source = createOptionSource(values, env);
  const options = readStartOptions(source, readFile);
  checkStartOptions(options, source);
  return { kind: 'options', options };
}

/**
 * The flags given on the command line, by name (util.parseArgs, strict).
 *
 * @param {string[]} argv
 * @returns {Record<string, string | boolean | undefined>}
 * @throws {UsageError} on an unknown flag, a missing value or a positional
 */
export function parseFlagValues(argv) {
  try {
    return parseArgs({ args: argv, options: FLAGS, strict: true, allowPositionals: false }).values;
  } catch (err) {
    const error = /** @type {NodeJS.ErrnoException | null | undefined} */ (err);
    if (typeof error?.code === 'string' && error.code.startsWith('ERR_PARSE_ARGS_')) {
      // Node's messages are multi-line advice; the first line says what was wrong.
      throw new UsageError(String(error.message).split('\n')[0]);
    }
    throw err;
  }
}

/**
 * A setting's raw text and the name to blame in messages (`--flag` or the
 * CARLAB_* variable it came from).
 *
 * @typedef {{ raw: string | undefined, label: string }} RawSetting
 */

/**
 * @typedef {object} OptionSource
 * @property {(name: string) => RawSetting} stringOf the flag's value, else its env variable's
 * @property {(name: string) => boolean} booleanOf the flag, else its env variable read as a boolean
 */

/**
 * Where settings come from: a flag wins over its CARLAB_* variable.
 *
 * @param {Record<string, string | boolean | undefined>} values parsed flags
 * @param {NodeJS.ProcessEnv} env
 * @returns {OptionSource}
 */
export function createOptionSource(values, env) {
  return {
    stringOf(name) {
      const value = values[name];
      if (typeof value === 'string') return { raw: value, label: `--${name}` };
      const envName = envNameFor(name);
      const fromEnv = env[envName];
      // An empty variable is treated as unset, as shells make those easily.
      return fromEnv === undefined || fromEnv === '' ? { raw: undefined, label: envName } : { raw: fromEnv, label: envName };
    },
    booleanOf(name) {
      if (values[name] === true) return true;
      const envName = envNameFor(name);
      return parseBooleanEnv(envName, env[envName]);
    },
  };
}

/**
 * Read and validate every setting, each on its own; checkStartOptions then
 * checks them against each other. The order of the checks is the order of
 * the messages a user sees, so it stays: --http, --cert/--key, then fields.
 *
 * @param {OptionSource} source
 * @param {(file: string) => string} readFile reads an --ice-servers file
 * @returns {StartOptions}
 * @throws {UsageError}
 */
export function readStartOptions({ stringOf, booleanOf }, readFile) {
  const http = booleanOf('http');
  const port = stringOf('port');
  const host = stringOf('host');
  const cert = stringOf('cert');
  const key = stringOf('key');
  if (Boolean(cert.raw) !== Boolean(key.raw)) {
    throw new UsageError(cert.raw ? '--cert needs --key as well' : '--key needs --cert as well');
  }
  if (http && cert.raw) throw new UsageError('--cert/--key cannot be used with --http');

  const iceServers = stringOf('ice-servers');
  const peerjsPath = stringOf('peerjs-path');
  const relayPath = stringOf('relay-path');
  const peerjsKey = stringOf('peerjs-key');
  const origins = stringOf('allowed-origins');
  return {
    port: port.raw === undefined ? (http ? DEFAULT_HTTP_PORT : DEFAULT_HTTPS_PORT) : parsePort(port.label, port.raw),
    host: host.raw === undefined ? '0.0.0.0' : parseHost(host.label, host.raw),
    http,
    cert: cert.raw,
    key: key.raw,
    iceServers: iceServers.raw === undefined ? [] : parseIceServersArgument(iceServers.label, iceServers.raw, readFile),
    // only when asked, so the options of a plain start stay as they were
    ...(booleanOf('turn') ? { turn: true } : {}),
    peerjsPath: peerjsPath.raw === undefined ? '/peerjs' : parseUrlPath(peerjsPath.label, peerjsPath.raw),
    peerjsKey: peerjsKey.raw === undefined ? 'peerjs' : parsePeerjsKey(peerjsKey.label, peerjsKey.raw),
    relayPath: relayPath.raw === undefined ? '/relay' : parseUrlPath(relayPath.label, relayPath.raw),
    maxPayload: optionalPositiveInteger(stringOf('max-payload')),
    queueSoftBytes: optionalPositiveInteger(stringOf('queue-soft-bytes')),
    queueHardBytes: optionalPositiveInteger(stringOf('queue-hard-bytes')),
    ackTimeoutMs: optionalPositiveInteger(stringOf('ack-timeout-ms')),
    maxMessagesPerSecond: optionalPositiveInteger(stringOf('max-messages-per-second')),
    allowedOrigins: origins.raw === undefined ? undefined : parseOrigins(origins.label, origins.raw),
    build: !booleanOf('no-build'),
    qr: !booleanOf('no-qr'),
    banner: !booleanOf('no-banner'),
    cluster: parseClusterSize(stringOf('cluster')),
    nats: parseNatsUrl(stringOf('nats')),
    record: parseRecordDir(stringOf('record')),
    dashboardToken: parseDashboardToken(stringOf('dashboard-token')),
    reportIntervalMs: parseReportInterval(stringOf('report-interval')),
    logLevel: parseLogLevel(stringOf('log-level')),
    drainTimeoutMs: parseDrainTimeout(stringOf('drain-timeout')),
    ...parseSceneStore(stringOf('scene-store'), stringOf('scene-ttl'), booleanOf('no-scene-store')),
  };
}

/**
 * `--scene-store`, `--scene-ttl` and `--no-scene-store`: where scenes are kept, and for how long.
 *
 * @param {RawSetting} dir @param {RawSetting} ttl @param {boolean} off
 * @returns {{ sceneStore: string | null, sceneTtlMs: number }}
 */
export function parseSceneStore(dir, ttl, off) {
  if (off && dir.raw !== undefined) throw new UsageError(`--no-scene-store cannot be used with ${dir.label}`);
  if (dir.raw !== undefined && dir.raw.trim() === '') throw new UsageError(`${dir.label}: expected a folder, got ''`);
  let hours = DEFAULT_SCENE_TTL_H;
  if (ttl.raw !== undefined) {
    hours = /^\d+(\.\d+)?$/.test(ttl.raw.trim()) ? Number(ttl.raw.trim()) : NaN;
    if (!(hours > 0 && hours <= 24 * 365)) throw new UsageError(`${ttl.label}: expected hours above 0, at most ${24 * 365}, got '${ttl.raw}'`);
  }
  return { sceneStore: off ? null : dir.raw ?? DEFAULT_SCENE_STORE, sceneTtlMs: Math.round(hours * 3600_000) };
}

/**
 * `--log-level`: one of LOG_LEVELS.
 *
 * @param {RawSetting} setting
 * @returns {string}
 */
export function parseLogLevel({ raw, label }) {
  if (raw === undefined) return DEFAULT_LOG_LEVEL;
  const level = raw.trim().toLowerCase();
  if (!LOG_LEVELS.includes(level)) throw new UsageError(`${label}: expected one of ${LOG_LEVELS.join(', ')}, got '${raw}'`);
  return level;
}

/**
 * `--record`: a folder (created at start when missing).
 *
 * @param {RawSetting} setting
 * @returns {string | null}
 */
export function parseRecordDir({ raw, label }) {
  if (raw === undefined) return null;
  if (raw.trim() === '') throw new UsageError(`${label}: expected a folder, got ''`);
  return raw;
}

/**
 * `--dashboard-token`: 16..128 URL-safe characters (it travels in a URL).
 *
 * @param {RawSetting} setting
 * @returns {string | null}
 */
export function parseDashboardToken({ raw, label }) {
  if (raw === undefined || raw === '') return null;
  if (!/^[A-Za-z0-9_.~-]{16,128}$/.test(raw)) {
    throw new UsageError(`${label}: expected 16..128 characters of A-Z a-z 0-9 _ . ~ -, got ${raw.length} characters`);
  }
  return raw;
}

/**
 * `--report-interval`: seconds, 0 (only the final report) or at least the intake's minimum.
 *
 * @param {RawSetting} setting
 * @returns {number} ms
 */
export function parseReportInterval({ raw, label }) {
  if (raw === undefined) return REPORT_LIMITS.intervalMs;
  const seconds = /^\d+(\.\d+)?$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  const ms = Math.round(seconds * 1000);
  if (!(ms === 0 || (ms >= REPORT_LIMITS.minIntervalMs && ms <= 3_600_000))) {
    throw new UsageError(`${label}: expected 0 or seconds ${REPORT_LIMITS.minIntervalMs / 1000}..3600, got '${raw}'`);
  }
  return ms;
}

/**
 * `--drain-timeout`: seconds (fractions allowed), 0..3600, as milliseconds.
 *
 * @param {RawSetting} setting
 * @returns {number}
 */
export function parseDrainTimeout({ raw, label }) {
  if (raw === undefined) return DEFAULT_DRAIN_TIMEOUT_S * 1000;
  const seconds = /^\d+(\.\d+)?$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  if (!(seconds >= 0 && seconds <= 3600)) throw new UsageError(`${label}: expected seconds 0..3600, got '${raw}'`);
  return Math.round(seconds * 1000);
}

/**
 * `--cluster`: a process count, 0 for one per core.
 *
 * @param {RawSetting} setting
 * @returns {number | null}
 */
export function parseClusterSize({ raw, label }) {
  if (raw === undefined) return null;
  if (!/^\d+$/.test(raw.trim()) || Number(raw) > 256) throw new UsageError(`${label}: expected a process count 0..256 (0: one per core), got '${raw}'`);
  return Number(raw);
}

/**
 * `--nats`: a nats:// (or tls://) URL; several, comma-separated, for a NATS cluster.
 *
 * @param {RawSetting} setting
 * @returns {string | null}
 */
export function parseNatsUrl({ raw, label }) {
  if (raw === undefined) return null;
  for (const part of raw.split(',')) {
    let url;
    try { url = new URL(part.trim()); } catch { url = null; }
    if (!url || !['nats:', 'tls:'].includes(url.protocol) || !url.hostname) {
      throw new UsageError(`${label}: expected nats://host:port (comma-separated for several), got '${part.trim()}'`);
    }
  }
  return raw.split(',').map((part) => part.trim()).join(',');
}

/**
 * Check settings against each other: queue sizes in order, and the relay
 * and PeerJS paths clear of each other and of the server's own paths.
 *
 * @param {StartOptions} options
 * @param {OptionSource} source names each setting in messages as the user gave it
 * @throws {UsageError}
 */
export function checkStartOptions(options, { stringOf }) {
  if (options.queueSoftBytes !== undefined && options.queueHardBytes !== undefined &&
      options.queueSoftBytes > options.queueHardBytes) {
    throw new UsageError(`${stringOf('queue-soft-bytes').label} (${options.queueSoftBytes}) must not exceed ${stringOf('queue-hard-bytes').label} (${options.queueHardBytes})`);
  }
  if (pathsOverlap(options.relayPath, options.peerjsPath)) {
    throw new UsageError(`the relay path ${options.relayPath} and the PeerJS path ${options.peerjsPath} must not overlap`);
  }
  /** @type {[string, string][]} */
  const mounts = [[stringOf('relay-path').label, options.relayPath], [stringOf('peerjs-path').label, options.peerjsPath]];
  for (const reserved of RESERVED_PATHS) {
    for (const [label, value] of mounts) {
      if (pathsOverlap(value, reserved)) throw new UsageError(`${label}: ${value} clashes with the server's own ${reserved}`);
    }
  }
}

/** Paths the HTTP server answers itself; the relay and PeerJS must not take them. */
const RESERVED_PATHS = ['/healthz', '/readyz', '/metrics', '/config.json', '/assets'];

/**
 * Whether one path equals the other or lies under it.
 *
 * @param {string} a
 * @param {string} b
 * @returns {boolean}
 */
function pathsOverlap(a, b) {
  return a === b || a.startsWith(`${b}/`) || b.startsWith(`${a}/`);
}

/**
 * @param {string} label
 * @param {string | undefined} raw
 * @returns {boolean}
 */
function parseBooleanEnv(label, raw) {
  if (raw === undefined) return false;
  const value = raw.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(value)) return true;
  if (['', '0', 'false', 'no', 'off'].includes(value)) return false;
  throw new UsageError(`${label}: expected 1/0, true/false, yes/no or on/off, got '${raw}'`);
}

/**
 * @param {string} label
 * @param {string} raw
 * @returns {number}
 */
function parsePort(label, raw) {
  const port = /^\d{1,5}$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  if (!(port >= 0 && port <= 65535)) throw new UsageError(`${label}: must be an integer 0..65535, got '${raw}'`);
  return port;
}

/**
 * @param {string} label
 * @param {string} raw
 * @returns {string}
 */
function parseHost(label, raw) {
  const host = raw.trim();
  if (host === '' || /[\s/?#@]/.test(host)) throw new UsageError(`${label}: not a host name or address: '${raw}'`);
  // Accept the bracketed form people copy from URLs; listen() wants it bare.
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/**
 * @param {{ raw: string | undefined, label: string }} source
 * @returns {number | undefined}
 */
function optionalPositiveInteger({ raw, label }) {
  if (raw === undefined) return undefined;
  const value = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  if (!Number.isSafeInteger(value) || value <= 0) throw new UsageError(`${label}: must be a positive integer, got '${raw}'`);
  return value;
}

/**
 * A URL path the servers mount on: `/x` or `/x/y`, no trailing slash.
 *
 * @param {string} label
 * @param {string} raw
 * @returns {string}
 */
function parseUrlPath(label, raw) {
  const value = raw.trim();
  if (!/^(\/[A-Za-z0-9._~-]+)+\/?$/.test(value) || value.split('/').some((s) => s === '.' || s === '..')) {
    throw new UsageError(`${label}: must be a path like /name (letters, digits, . _ ~ -), got '${raw}'`);
  }
  return value.endsWith('/') ? value.slice(0, -1) : value;
}

/**
 * @param {string} label
 * @param {string} raw
 * @returns {string}
 */
function parsePeerjsKey(label, raw) {
  // The key is a URL path segment in PeerServer's API: keep it URL-safe.
  // The value is not echoed: it is a key.
  if (!/^[A-Za-z0-9._~-]+$/.test(raw)) throw new UsageError(`${label}: must be letters, digits, . _ ~ or - (the value given has other characters)`);
  return raw;
}

/**
 * @param {string} label
 * @param {string} raw
 * @returns {string[]}
 */
function parseOrigins(label, raw) {
  const origins = raw.split(',').map((origin) => origin.trim()).filter(Boolean);
  if (origins.length === 0) throw new UsageError(`${label}: expected a comma-separated list of origins, got '${raw}'`);
  for (const origin of origins) {
    // '*' is the servers' spelling of "any origin".
    if (origin === '*') continue;
    let parsed;
    try {
      parsed = new URL(origin);
    } catch {
      parsed = null;
    }
    // An origin is scheme://host[:port] exactly; browsers send nothing else.
    if (!parsed || parsed.origin === 'null' || parsed.origin !== origin) {
      throw new UsageError(`${label}: '${origin}' is not an origin like https://host:port`);
    }
  }
  return origins;
}

/**
 * An --ice-servers argument: inline JSON when it starts with `[`, else a file.
 *
 * @param {string} label
 * @param {string} raw
 * @param {(file: string) => string} readFile
 * @returns {IceServer[]}
 */
function parseIceServersArgument(label, raw, readFile) {
  const inline = raw.trim().startsWith('[');
  let text = raw;
  if (!inline) {
    try {
      text = readFile(raw);
    } catch (err) {
      const error = /** @type {NodeJS.ErrnoException | null | undefined} */ (err);
      throw new UsageError(`${label}: cannot read ICE servers file '${raw}': ${error?.code ?? error?.message}`);
    }
  }
  let json;
  try {
    json = JSON.parse(text);
  } catch (err) {
    // Quote the parser's detail only for inline JSON: a file may hold TURN
    // credentials, and newer Node versions echo the text around the error.
    throw new UsageError(`${label}: ${inline ? `not valid JSON: ${/** @type {SyntaxError} */ (err).message}` : `'${raw}' is not valid JSON`}`);
  }
  const problem = findIceServersProblem(json);
  if (problem) throw new UsageError(`${label}: ${problem}`);
  return json;
}

/**
 * Check the shape of an RTCIceServer array.
 *
 * @param {unknown} value
 * @returns {string | null} what is wrong, or null when the shape is good
 */
export function findIceServersProblem(value) {
  if (!Array.isArray(value)) return 'expected a JSON array of ICE servers';
  for (const [index, server] of value.entries()) {
    const where = `ICE server [${index}]`;
    if (server === null || typeof server !== 'object' || Array.isArray(server)) return `${where} must be an object`;
    const { urls, username, credential } = /** @type {Record<string, unknown>} */ (server);
    const list = typeof urls === 'string' ? [urls] : urls;
    if (!Array.isArray(list) || list.length === 0 || !list.every((url) => typeof url === 'string')) {
      return `${where}.urls must be a string or a non-empty array of strings`;
    }
    const badUrl = list.find((url) => !/^(stun|stuns|turn|turns):\S+$/.test(url));
    if (badUrl !== undefined) return `${where}.urls: '${badUrl}' is not a stun:, stuns:, turn: or turns: URL`;
    if (username !== undefined && typeof username !== 'string') return `${where}.username must be a string`;
    if (credential !== undefined && typeof credential !== 'string') return `${where}.credential must be a string`;
  }
  return null;
}
