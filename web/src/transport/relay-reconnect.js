// The relay transport's reconnect policy, apart from any socket: which closes
// are worth another attempt, how long to wait before it, and which client id a
// rejoin asks for. Its state (attempts in a row, ID_TAKEN answers in a row)
// lives in ReconnectPolicy so it can be tested alone.

import { CloseCode } from '../../../core/protocol.js';

/**
 * Reconnection after an unexpected close: exponential backoff with full
 * jitter (the n-th attempt waits a uniform random time in [0, min(maxMs,
 * baseMs * 2^n)) ), so clients that lost the same relay do not all come back
 * in the same instant.
 * @typedef {object} ReconnectOptions
 * @property {number} [baseMs] ceiling of the first wait, default 250
 * @property {number} [maxMs] largest ceiling, default 10 000
 * @property {number} [maxAttempts] give up (and report the close) after this many
 *   failed attempts in a row, default Infinity
 * @property {() => number} [random] [0, 1), default Math.random
 */

/** Defaults of ReconnectOptions. */
export const RECONNECT_DEFAULTS = Object.freeze({ baseMs: 250, maxMs: 10000, maxAttempts: Infinity });

/** After this many ID_TAKEN answers in a row a rejoining client asks for a new id. */
export const ID_TAKEN_RETRIES = 3;

/**
 * How long a rejoin waits for its WELCOME before it gives the socket up and tries again: a
 * connection that is accepted and then never answered (a server process that died holding it, a
 * middlebox that drops it) would otherwise hold the member out for good. A rejoin on a live
 * server is answered in milliseconds.
 */
export const REJOIN_WELCOME_TIMEOUT_MS = 10_000;

/**
 * The wait before reconnection attempt `attempt` (0 = the first).
 * @param {number} attempt
 * @param {{ baseMs: number, maxMs: number }} o
 * @param {() => number} [random]
 */
export function backoffDelay(attempt, o, random = Math.random) {
  return random() * Math.min(o.maxMs, o.baseMs * 2 ** Math.min(attempt, 30));
}

/**
 * Whether a close the client did not ask for is worth reconnecting after:
 * the relay going away (1001 is what a draining server sends every client on
 * SIGTERM, docs/operations.md: come back, to another node if there is one),
 * the connection dropping, a server error. Not after
 * the relay's policy closes (4000..4999: our input was refused, a retry would
 * be refused again) nor after closes that say the client broke the protocol.
 * @param {number} code
 */
export function isReconnectable(code) {
  if (code >= 4000 && code <= 4999) return false;
  return ![1000, 1002, 1003, 1007, 1008, 1009, 1010].includes(code);
}

/**
 * The next reconnection attempt.
 * @typedef {object} RetryPlan
 * @property {number} attempt its number (1 = the first of this outage)
 * @property {number} delayMs the wait before it
 */

/**
 * When and how a relay transport rejoins after an unexpected close.
 */
export class ReconnectPolicy {
  /** @param {boolean | ReconnectOptions | undefined} option false or absent: never reconnect */
  constructor(option) {
    /** Resolved options, or null when the transport does not reconnect. */
    this.options = option
      ? { ...RECONNECT_DEFAULTS, random: Math.random, ...(option === true ? {} : option) }
      : null;
    /** Attempts made since the last WELCOME. */
    this.attempt = 0;
    /** ID_TAKEN answers in a row while rejoining. */
    this.idTaken = 0;
  }

  /**
   * The client id a rejoin's HELLO asks for: our own, so the neighbours' streams
   * from us go on; 0 (a new one) once the old one stayed taken.
   * @param {number} myId
   */
  rejoinId(myId) {
    return this.idTaken >= ID_TAKEN_RETRIES ? 0 : myId;
  }

  /** A rejoin was welcomed: the next outage starts again from the first wait. */
  welcomed() {
    this.attempt = 0;
    this.idTaken = 0;
  }

  /**
   * After a close the client did not ask for: the next attempt, or null when
   * the close is final (not reconnecting, a close not worth it, or too many attempts).
   * @param {number} code the close code
   * @param {boolean} welcomed whether the socket that closed had been welcomed
   * @returns {RetryPlan | null}
   */
  afterClose(code, welcomed) {
    const o = this.options;
    if (!o) return null;
    // While rejoining, an id still held by our old session is worth waiting out.
    const taken = !welcomed && code === CloseCode.ID_TAKEN;
    if (taken) this.idTaken++;
    if (!(isReconnectable(code) || taken) || this.attempt >= o.maxAttempts) return null;
    const delayMs = backoffDelay(this.attempt++, o, o.random);
    return { attempt: this.attempt, delayMs };
  }
}
