/**
 * `POST /reports`: where clients' study reports come in (docs/study.md).
 * A report is checked (size, JSON, shape, rate, whose id it claims), then
 * handed to the live study (the dashboard), the recording when the server
 * records, and the other nodes of a cluster. A refused report costs its
 * sender one 4xx answer and nothing else; it is counted, never stored.
 *
 * Two ways in, one check: a client with an open relay session (every
 * transport has one: p2p's membership session too) sends its periodic
 * reports as STATS on it (relay/intake.js hands them to takeStats), which
 * costs the relay no HTTP request and answer per report; `POST /reports`
 * takes the rest: a page that goes away (navigator.sendBeacon only speaks
 * HTTP), a client between two relay sessions, a lab client without one.
 *
 * @module server/report-intake
 */

import { REPORT_LIMITS, reportProblem } from '../core/report.js';
import { sendJson } from './json-response.js';

/** The path clients POST reports to. */
export const REPORTS_PATH = '/reports';

/** The NATS subject every node publishes its accepted reports on (the others show them). */
export const REPORTS_SUBJECT = 'carlab.reports';

/**
 * Why a report was refused, with the HTTP status it gets (docs/security.md "Client reports").
 */
export const REFUSALS = Object.freeze({
  bad_json: 400,
  too_large: 413,
  bad_type: 415,
  bad_shape: 422,
  too_frequent: 429,
  claimed: 409,
  stale: 409,
  too_many_sessions: 503,
});

/** @typedef {keyof typeof REFUSALS | 'accepted'} ReportResult */

/**
 * @typedef {object} SessionState what the intake remembers of a page session
 * @property {string} group
 * @property {number} clientId
 * @property {number} seq newest accepted
 * @property {number} lastAt server clock (ms) of the newest accepted report
 * @property {number} tokens the rate limit's bucket right after that report (REPORT_LIMITS.burst at most)
 * @property {boolean} final its final report came
 */

/**
 * @typedef {object} ReportIntakeOptions
 * @property {{ ingest(record: import('./recorder.js').ReportLine | Omit<import('./recorder.js').ReportLine, 't'>): void,
 *   holderOf(group: string, clientId: number): string | undefined }} study the live study
 * @property {string} node this node's id (the cluster's, or a random one)
 * @property {import('./recorder.js').Recorder | null} [recorder] when the server records
 * @property {import('../relay/broker.js').Broker} [broker] in a cluster: publish and receive reports
 * @property {(result: ReportResult) => void} [onResult] counts every outcome (the metrics)
 * @property {import('./log.js').Logger} [logger]
 * @property {typeof REPORT_LIMITS} [limits]
 * @property {() => number} [now] epoch ms
 */

/**
 * Creates the intake.
 *
 * @param {ReportIntakeOptions} options
 */
export function createReportIntake({ study, node, recorder = null, broker, onResult = () => {}, logger, limits = REPORT_LIMITS, now = Date.now }) {
  /** @type {Map<string, SessionState>} by session id, oldest first (re-inserted on every report) */
  const sessions = new Map();
  /** @type {Record<string, number>} */
  const counts = { accepted: 0 };
  const count = (/** @type {ReportResult} */ result) => {
    counts[result] = (counts[result] ?? 0) + 1;
    onResult(result);
  };
  const subscription = broker?.subscribe(REPORTS_SUBJECT, (data) => ingestRemote(study, node, data));

  /**
   * The session's bucket at `at`: refilled by one per minIntervalMs since its last report.
   * @param {SessionState} state @param {number} at
   */
  function tokensAt(state, at) {
    return Math.min(limits.burst, state.tokens + (at - state.lastAt) / limits.minIntervalMs);
  }

  /**
   * Checks one parsed report against what this node knows; the refusal, or null to accept.
   * @param {import('../core/report.js').ClientReport} r
   * @param {number} at
   * @returns {{ result: keyof typeof REFUSALS, error: string } | null}
   */
  function refusal(r, at) {
    const known = sessions.get(r.session);
    if (known && known.group !== r.group) return { result: 'claimed', error: 'a session reports for one group only' };
    if (known && r.seq <= known.seq) return { result: 'stale', error: `report ${r.seq} is not newer than ${known.seq}` };
    const holder = r.clientId > 0 ? study.holderOf(r.group, r.clientId) : undefined;
    if (holder !== undefined && holder !== r.session) {
      return { result: 'claimed', error: `client id ${r.clientId} of this group belongs to another session` };
    }
    const exempt = r.final && !known?.final;
    if (known && !exempt && tokensAt(known, at) < 1) {
      return { result: 'too_frequent', error: `at most one report per ${limits.minIntervalMs} ms` };
    }
    if (!known && sessions.size >= limits.maxSessions && !forgetOne(sessions, at, limits)) {
      return { result: 'too_many_sessions', error: 'the server follows too many sessions' };
    }
    return null;
  }

  /**
   * An accepted report: remembered, shown, recorded, shared.
   * @param {import('../core/report.js').ClientReport} r
   * @param {string} ua
   * @param {number} at
   */
  function accept(r, ua, at) {
    const record = { at, node, ua, r };
    // Serialised once, before anything changes, and only when someone needs the text
    // (the recording, the cluster): a third of a report's cost otherwise.
    const text = recorder || broker ? JSON.stringify(record) : '';
    const before = sessions.get(r.session);
    const tokens = Math.max(0, (before ? tokensAt(before, at) : limits.burst) - 1);
    sessions.delete(r.session); // re-inserted: the map stays oldest first
    sessions.set(r.session, { group: r.group, clientId: r.clientId, seq: r.seq, lastAt: at, final: r.final, tokens });
    study.ingest(record);
    if (recorder) recorder.appendText(`{"t":"report",${text.slice(1)}`);
    if (broker) broker.publish(REPORTS_SUBJECT, Buffer.from(text));
    count('accepted');
  }

  /**
   * The request handler: true when the request was ours.
   * @param {import('node:http').IncomingMessage} req
   * @param {import('node:http').ServerResponse} res
   * @returns {boolean}
   */
  function handleRequest(req, res) {
    if (pathOf(req.url) !== REPORTS_PATH) return false;
    if (req.method !== 'POST') {
      sendJson(res, 405, { error: 'POST a report here' }, { Allow: 'POST', Connection: 'close' });
      return true;
    }
    const type = String(req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
    if (type !== 'application/json' && type !== 'text/plain') return refuse(res, 'bad_type', 'send application/json', true);
    const declared = Number(req.headers['content-length']);
    if (declared > limits.maxBytes) return refuse(res, 'too_large', `a report is at most ${limits.maxBytes} bytes`, true);
    readBody(req, limits.maxBytes).then((body) => {
      if (body === null) return refuse(res, 'too_large', `a report is at most ${limits.maxBytes} bytes`, true);
      takeBody(body, String(req.headers['user-agent'] ?? ''), res);
      return true;
    }, () => { res.destroy(); });
    return true;
  }

  /**
   * Checks and takes one parsed report, wherever it came from: null when
   * accepted, else the refusal (counted, never stored).
   * @param {unknown} r
   * @param {string} ua
   * @param {{ group: string, clientId: number }} [own] it came on this relay session, which
   *   proved its group and client id by joining: the report must be for them
   * @returns {{ result: keyof typeof REFUSALS, error: string } | null}
   */
  function take(r, ua, own) {
    const problem = reportProblem(r);
    if (problem) return refused('bad_shape', problem);
    const report = /** @type {import('../core/report.js').ClientReport} */ (r);
    if (own && (report.group !== own.group || report.clientId !== own.clientId)) {
      return refused('claimed', `a report on a relay session is for its own group and client id (${own.clientId})`);
    }
    const at = now();
    const no = refusal(report, at);
    if (no) return refused(no.result, no.error);
    try {
      accept(report, ua.slice(0, 512), at);
    } catch (err) {
      // reportProblem() bounds what could make this throw; should anything still, the sender hears of it
      return refused('bad_shape', `the report cannot be taken: ${/** @type {Error} */ (err).message}`);
    }
    return null;
  }

  /**
   * A refusal, counted (and logged at debug).
   * @param {keyof typeof REFUSALS} result @param {string} error
   */
  function refused(result, error) {
    count(result);
    logger?.debug?.({ event: 'report-refused', result, error }, 'client report refused');
    return { result, error };
  }

  /**
   * A report that came as STATS on a relay session (relay/intake.js): the
   * refusal as `<code>: <reason>`, or null when accepted.
   * @param {unknown} r
   * @param {{ userAgent: string, group: string, clientId: number }} from
   * @returns {string | null}
   */
  function takeStats(r, from) {
    const no = take(r, from.userAgent, from);
    return no && `${no.result}: ${no.error}`;
  }

  /**
   * @param {Buffer} body @param {string} ua
   * @param {import('node:http').ServerResponse} res
   */
  function takeBody(body, ua, res) {
    /** @type {unknown} */
    let r;
    try {
      r = JSON.parse(body.toString('utf8'));
    } catch {
      refuse(res, 'bad_json', 'the body is not JSON');
      return;
    }
    const no = take(r, ua);
    if (no) {
      answerRefusal(res, no.result, no.error);
      return;
    }
    res.writeHead(204, { 'Cache-Control': 'no-store' });
    res.end();
  }

  /**
   * @param {import('node:http').ServerResponse} res
   * @param {keyof typeof REFUSALS} result @param {string} error
   * @param {boolean} [closeConnection] the body was not read: the connection cannot be reused
   */
  function refuse(res, result, error, closeConnection = false) {
    refused(result, error);
    return answerRefusal(res, result, error, closeConnection);
  }

  /**
   * Answers a refusal already counted.
   * @param {import('node:http').ServerResponse} res
   * @param {keyof typeof REFUSALS} result @param {string} error
   * @param {boolean} [closeConnection]
   */
  function answerRefusal(res, result, error, closeConnection = false) {
    const headers = /** @type {Record<string, string>} */ ({});
    if (result === 'too_frequent') headers['Retry-After'] = String(Math.ceil(limits.minIntervalMs / 1000));
    if (closeConnection) headers.Connection = 'close';
    sendJson(res, REFUSALS[result], { error, code: result }, headers);
    return true;
  }

  return {
    path: REPORTS_PATH,
    handleRequest,
    /** The relay's report sink: reports that came as STATS on a relay session. */
    takeStats,
    /** Outcomes so far: accepted and every refusal by reason. */
    counts: () => ({ ...counts }),
    close() {
      subscription?.unsubscribe();
    },
  };
}

/**
 * A report another node accepted: shown here too (it recorded it itself).
 * @param {{ ingest(record: any): void }} study @param {string} node @param {Uint8Array} data
 */
function ingestRemote(study, node, data) {
  try {
    const record = JSON.parse(Buffer.from(data).toString('utf8'));
    if (!record || record.node === node || typeof record.at !== 'number' || reportProblem(record.r)) return;
    study.ingest({ at: record.at, node: String(record.node), ua: String(record.ua ?? '').slice(0, 512), r: record.r });
  } catch { /* a broken message from the bus: nothing to show */ }
}

/**
 * Makes room for a new session: forgets the one heard of longest ago if it
 * ended or went quiet (older than twice the minimum interval... of a report
 * period). False when every session is live.
 * @param {Map<string, SessionState>} sessions @param {number} at @param {typeof REPORT_LIMITS} limits
 */
function forgetOne(sessions, at, limits) {
  const [oldest, state] = sessions.entries().next().value ?? [];
  if (oldest === undefined || !state) return false;
  if (!state.final && at - state.lastAt < 3 * limits.intervalMs) return false;
  sessions.delete(oldest);
  return true;
}

/** A body over the limit is still read (and dropped) this far before the 413: see readBody. */
const DRAIN_BYTES = 1 << 20;
const DRAIN_MS = 2000;

/**
 * Reads a body up to `max` bytes; null when it is longer. A longer body is
 * read on to its end (dropped as it comes, up to DRAIN_BYTES or DRAIN_MS)
 * before the caller answers 413 and closes: closing while the client still
 * sends makes the kernel reset the connection, and the client would lose the
 * 413 (a fuzz case caught it under load).
 * @param {import('node:http').IncomingMessage} req @param {number} max
 * @returns {Promise<Buffer | null>}
 */
function readBody(req, max) {
  return new Promise((resolve, reject) => {
    /** @type {Buffer[]} */
    const chunks = [];
    let size = 0;
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    let drainTimer;
    const tooLarge = () => { clearTimeout(drainTimer); resolve(null); };
    req.on('data', (chunk) => {
      size += chunk.length;
      if (size <= max) {
        chunks.push(chunk);
        return;
      }
      if (drainTimer === undefined) {
        chunks.length = 0; // over the limit: nothing more is kept
        drainTimer = setTimeout(tooLarge, DRAIN_MS);
      }
      if (size > max + DRAIN_BYTES) tooLarge();
    });
    req.on('end', () => { if (size <= max) resolve(Buffer.concat(chunks)); else tooLarge(); });
    req.on('error', (err) => { clearTimeout(drainTimer); reject(err); });
  });
}

/** @param {string | undefined} url */
function pathOf(url) {
  const s = url ?? '/';
  const q = s.indexOf('?');
  return q < 0 ? s : s.slice(0, q);
}

