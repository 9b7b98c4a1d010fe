/**
 * The study services of one server (docs/study.md): the live study the
 * dashboard shows, the report intake (`POST /reports`), the recording when
 * `--record DIR` is given, and the token-guarded dashboard. Composed here so
 * server/server.js attaches them with one call.
 *
 * @module server/study
 */

import { randomBytes } from 'node:crypto';

import { REPORT_LIMITS } from '../core/report.js';
import { newNodeId } from '../relay/index.js';
import { createDashboard } from './dashboard.js';
import { createLiveStudy } from './live-study.js';
import { openRecorder } from './recorder.js';
import { createReportIntake } from './report-intake.js';

/**
 * @typedef {object} StudyOptions
 * @property {string} [record] record every accepted report under this folder
 * @property {string} [dashboardToken] the dashboard's token; default: a random one
 * @property {number} [reportIntervalMs] how often clients report (told by /config.json);
 *   default REPORT_LIMITS.intervalMs; 0: only when leaving
 */

/**
 * @typedef {object} StudyServices
 * @property {(req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => boolean} handleRequest
 *   answers /reports and /dashboard*; false for every other path
 * @property {() => { intervalMs: number, recording: boolean }} clientConfig what /config.json tells clients
 * @property {string} dashboardToken
 * @property {ReturnType<typeof createLiveStudy>} study
 * @property {ReturnType<typeof createReportIntake>} intake
 * @property {import('./recorder.js').Recorder | null} recorder
 * @property {() => void} closeFeeds ends the dashboard's live feeds (a drain begins)
 * @property {() => void} close ends the feeds, stops taking reports and flushes the recording
 */

/**
 * A random dashboard token: 128 bits, URL-safe.
 * @returns {string}
 */
export function randomDashboardToken() {
  return randomBytes(16).toString('base64url');
}

/**
 * @param {StudyOptions} options
 * @param {{ broker?: import('../relay/broker.js').Broker, logger: import('./log.js').Logger, version: string,
 *   onReport?: (result: import('./report-intake.js').ReportResult) => void }} parts
 * @returns {StudyServices}
 */
export function createStudyServices(options, { broker, logger, version, onReport }) {
  const node = broker?.nodeId ?? newNodeId();
  const study = createLiveStudy();
  const recorder = options.record
    ? openRecorder({
      dir: options.record, node, version,
      onError: (err) => logger.error({ event: 'record-write-failed', err: err.message }, 'writing the study recording failed'),
    })
    : null;
  const intake = createReportIntake({ study, node, recorder, broker, logger, onResult: onReport });
  const dashboardToken = options.dashboardToken || randomDashboardToken();
  const dashboard = createDashboard({ study, token: dashboardToken, logger });
  const intervalMs = options.reportIntervalMs ?? REPORT_LIMITS.intervalMs;
  return {
    handleRequest: (req, res) => intake.handleRequest(req, res) || dashboard.handleRequest(req, res),
    clientConfig: () => ({ intervalMs, recording: recorder !== null }),
    dashboardToken,
    study,
    intake,
    recorder,
    closeFeeds: () => dashboard.close(),
    close() {
      intake.close();
      dashboard.close();
      recorder?.close();
    },
  };
}
