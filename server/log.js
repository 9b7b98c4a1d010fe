/**
 * The server's structured log: pino, one JSON object a line when stdout is a
 * file or a pipe (what log shippers read), a short readable line when it is
 * a terminal (what a person reads). Levels come from --log-level /
 * CARLAB_LOG_LEVEL.
 *
 * pino-pretty would pull a dozen packages into a production install for what
 * one function does here, so the terminal format is our own.
 *
 * @module server/log
 */

import pino from 'pino';

/** The levels --log-level accepts, most severe first (pino's, plus `silent`). */
export const LOG_LEVELS = Object.freeze(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);

/** Default level: closes for violations (warn) and lifecycle (info) are shown, per-request detail is not. */
export const DEFAULT_LOG_LEVEL = 'info';

/**
 * Field names whose values are never written, wherever a caller puts them:
 * group tokens, the PeerServer key, TURN credentials, TLS keys.
 */
export const REDACTED_FIELDS = Object.freeze(['token', 'key', 'peerjsKey', 'credential', 'password', 'cert', 'tls']);

/** @typedef {import('pino').Logger} Logger */

/**
 * @typedef {object} LoggerOptions
 * @property {string} [level] one of LOG_LEVELS; default `info`
 * @property {NodeJS.WritableStream} [stream] where lines go; default process.stdout
 * @property {boolean} [pretty] readable lines instead of JSON; default: whether `stream` is a terminal
 */

/**
 * Creates the process's logger.
 *
 * Writes are synchronous (a plain stream.write per line): the server logs
 * rarely (closes, lifecycle), and a line written before process.exit must
 * not be lost in a buffer, which is what a drain's "flush" promises.
 *
 * @param {LoggerOptions} [options]
 * @returns {Logger}
 */
export function createLogger({ level = DEFAULT_LOG_LEVEL, stream = process.stdout, pretty } = {}) {
  const readable = pretty ?? isTerminal(stream);
  /** @type {import('pino').DestinationStream} */
  const destination = readable
    ? { write: (line) => { stream.write(formatReadable(line)); } }
    : { write: (line) => { stream.write(line); } };
  return pino({
    level,
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    // Level names, not pino's numbers: what people grep for and shippers map.
    formatters: { level: (label) => ({ level: label }) },
    redact: { paths: REDACTED_FIELDS.flatMap((f) => [f, `*.${f}`]), censor: '[redacted]' },
  }, destination);
}

/**
 * A logger that writes nothing (tests and library use where no logger was given).
 *
 * @returns {Logger}
 */
export function silentLogger() {
  return pino({ level: 'silent' });
}

/**
 * @param {NodeJS.WritableStream} stream
 * @returns {boolean}
 */
function isTerminal(stream) {
  return /** @type {{ isTTY?: boolean }} */ (stream).isTTY === true;
}

/** Fields every line has that the readable format shows in its own way. */
const FRAME_FIELDS = new Set(['level', 'time', 'pid', 'hostname', 'msg']);

/**
 * One pino JSON line as `HH:MM:SS.mmm LEVEL message key=value ...`.
 *
 * @param {string} line a JSON object and a newline, as pino writes it
 * @returns {string}
 */
export function formatReadable(line) {
  let entry;
  try {
    entry = /** @type {Record<string, unknown>} */ (JSON.parse(line));
  } catch {
    return line;
  }
  const time = typeof entry.time === 'string' ? entry.time.slice(11, 23) : '';
  const level = String(entry.level ?? '').toUpperCase().padEnd(5);
  const fields = Object.entries(entry)
    .filter(([name]) => !FRAME_FIELDS.has(name))
    .map(([name, value]) => `${name}=${formatValue(value)}`);
  return `${[time, level, entry.msg ?? '', ...fields].join(' ').trimEnd()}\n`;
}

/**
 * @param {unknown} value
 * @returns {string}
 */
function formatValue(value) {
  if (typeof value === 'string') return /^[\w.:/@-]+$/.test(value) ? value : JSON.stringify(value);
  return JSON.stringify(value) ?? String(value);
}
