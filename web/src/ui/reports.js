// The phone's study reports (docs/study.md): the client core's Reporter
// (core/report.js) with the browser's ways to deliver them: every few seconds
// on the page's relay session (STATS), or a keepalive fetch while it has none
// open; sendBeacon when the page goes away (the one request a browser still
// sends while it unloads); and the one-line notice that the server records.

import { Reporter, overSession } from '../../../core/report.js';

/** What the pages say when the server records (landing page and AR view). */
export const RECORDING_NOTICE = 'This server records measurements for a study; no camera images.';

/**
 * @typedef {object} ReportsConfig what /config.json says about reports
 * @property {number} [intervalMs]
 * @property {boolean} [recording]
 */

/**
 * POSTs one report as JSON; resolves once the server answered (a refusal rejects).
 * @param {string} url
 * @param {object} report
 * @returns {Promise<void>}
 */
export async function postReport(url, report) {
  const res = await fetch(url, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(report), keepalive: true, cache: 'no-store',
  });
  if (!res.ok) throw new Error(`report refused: HTTP ${res.status}`);
}

/**
 * Sends one report while the page unloads: sendBeacon where there is one
 * (queued by the browser, survives the page), else a keepalive fetch.
 * @param {string} url
 * @param {object} report
 */
export function beaconReport(url, report) {
  const body = JSON.stringify(report);
  const queued = typeof navigator.sendBeacon === 'function'
    && navigator.sendBeacon(url, new Blob([body], { type: 'application/json' }));
  if (!queued) postReport(url, report).catch(() => {});
}

/**
 * The network class the browser reports, where it has one (Chrome on Android: '4g', '3g'...).
 * @returns {string | null}
 */
export function effectiveType() {
  const connection = /** @type {{ connection?: { effectiveType?: unknown } }} */ (navigator).connection;
  return typeof connection?.effectiveType === 'string' ? connection.effectiveType.slice(0, 20) : null;
}

/**
 * AR.js tracking counts for a report, from the tracker's stats.
 * @param {{ stats: { processed: number, detected: number, processMsSum: number, startedAt: number } } | null} tracking
 * @returns {import('../../../core/report.js').TrackingCounts | null}
 */
export function trackingCounts(tracking) {
  if (!tracking) return null;
  const s = tracking.stats;
  return {
    frames: s.processed,
    visibleFrames: Math.min(s.detected, s.processed),
    processMsSum: Math.round(s.processMsSum * 10) / 10,
    spanMs: Math.max(0, Math.round(performance.now() - s.startedAt)),
  };
}

/**
 * Starts a client's reports to the server it joined.
 * @param {import('../../../core/client.js').CarClient} client
 * @param {{ baseUrl: string, config?: ReportsConfig, kind?: 'app' | 'bench',
 *   tracking?: () => import('../../../core/report.js').TrackingCounts | null,
 *   playout?: () => import('../../../core/report.js').PlayoutReport | null }} options
 * @returns {Reporter}
 */
export function startReports(client, { baseUrl, config = {}, kind = 'app', tracking = () => null, playout = () => null }) {
  const url = new URL('/reports', baseUrl).href;
  const reporter = new Reporter({
    client,
    kind,
    intervalMs: config.intervalMs,
    // STATS on the page's relay session while it is open, a keepalive fetch otherwise
    send: overSession(client, (report) => postReport(url, report)),
    sendFinal: (report) => beaconReport(url, report),
    extras: () => ({ tracking: tracking(), effectiveType: effectiveType(), playout: playout() }),
  });
  reporter.start();
  return reporter;
}

/**
 * Shows the recording notice in `element` when the server records.
 * @param {HTMLElement | null} element
 * @param {ReportsConfig | undefined} config
 */
export function showRecordingNotice(element, config) {
  if (!element || !config?.recording) return;
  element.textContent = RECORDING_NOTICE;
  element.hidden = false;
}
