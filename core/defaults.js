/**
 * Every default the client, the servers and the lab share, defined once.
 * The relay's own limits are here too, so the CLI help, the relay and the
 * fuzzer quote the same numbers.
 *
 * @module core/defaults
 */

/** Default action cycle: the paper's fast phone (ms). */
export const DEFAULT_CYCLE_MS = 167;

/** The paper's slow phone (ms). */
export const SLOW_CYCLE_MS = 698;

/** Default ACK timeout, as in the paper (ms). */
export const DEFAULT_ACK_TIMEOUT_MS = 20000;

/** RT above which a shared scene stops being usable (ms): "supported clients" is measured against it. */
export const RT_LIMIT_MS = 250;

/** The relay's limits when no option sets them. */
export const RELAY_LIMITS = Object.freeze({
  maxPayload: 64 * 1024,
  queueSoftBytes: 256 * 1024,
  queueHardBytes: 4 * 1024 * 1024,
  // A client in a group of 25 sends ~150 messages/s (an update and 24 ACKs per
  // 167 ms cycle); the bucket leaves room for groups of 100+ and for bursts.
  maxMessagesPerSecond: 2000,
  /** the token bucket holds twice the rate */
  burstFactor: 2,
});

/**
 * Client reports (core/report.js, docs/study.md): how often clients send them
 * and what the server accepts (docs/security.md "Client reports").
 */
export const REPORT_LIMITS = Object.freeze({
  /** a client reports this often by default (ms) */
  intervalMs: 5000,
  /** a session's reports closer together than this are refused (429); its final report is exempt once */
  minIntervalMs: 1000,
  /**
   * the limit is a token bucket: one report per minIntervalMs on average, this many at once. A
   * report held up on its way (a busy server, a slow network) and the next one sent on time
   * arrive close together; spacing arrivals strictly refused one of ~55 reports on a 1 s timer
   * in test runs on a loaded machine (2026-11-25), even with 200 ms of slack
   */
  burst: 2,
  /** largest report body (bytes) */
  maxBytes: 64 * 1024,
  /** receivers or senders one report may list: a working group larger than this is not a study */
  maxStreams: 128,
  /** buckets of one histogram */
  maxBuckets: 2048,
  /**
   * ranges of one seq set (sent, received, ACKed, superseded: core/seqset.js); a longer set is
   * sent with its oldest gaps closed, so only the loss of a long, very lossy session's early part blurs
   */
  maxSeqRanges: 128,
  /** how deep the free-form parts (channel, setup) may nest */
  maxDepth: 8,
  /** group and name, as the landing page allows */
  maxText: 64,
  /** page sessions a server keeps for the live dashboard (the oldest gone ones are forgotten first) */
  maxSessions: 10000,
});
