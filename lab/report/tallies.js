// What a population's client reports did (--reports), as the clients counted
// them: added up over generators, pages and agents, and written into a run
// record. Shared by every runner (sim, bench, fleets).

/**
 * What the clients' reports did (--reports), as the clients counted: sent
 * (POSTed, or for a bench page's last report, queued as a beacon), failed (not
 * answered 2xx, or not queued), those by HTTP status (or 'network', 'timeout',
 * 'beacon'), and skipped: periodic ones not sent because the client's
 * previous one was unanswered or answered less than the server's minimum
 * interval before (the server would have refused them).
 * @typedef {{ sent: number, failed: number, skipped: number, failedBy: Record<string, number> }} ReportTally
 */

/**
 * The report tallies of the generators added up; null when none reported.
 * @param {(ReportTally | null | undefined)[]} tallies
 * @returns {ReportTally | null}
 */
export function sumReportTallies(tallies) {
  const present = tallies.filter((t) => t != null);
  if (present.length === 0) return null;
  /** @type {ReportTally} */
  const sum = { sent: 0, failed: 0, skipped: 0, failedBy: {} };
  for (const t of present) {
    sum.sent += t.sent;
    sum.failed += t.failed;
    sum.skipped += t.skipped ?? 0;
    for (const [why, n] of Object.entries(t.failedBy ?? {})) sum.failedBy[why] = (sum.failedBy[why] ?? 0) + n;
  }
  return sum;
}

/**
 * The run record's report fields: `reportsIntervalS` always (0 when off) and,
 * with reports on, `reports: { sent, failed, skipped, failedBy }` as the
 * clients counted them ({@link ReportTally}; the final reports are in).
 * Shared by every runner.
 * @param {number} reportsIntervalS
 * @param {ReportTally | null} reports
 */
export function reportFields(reportsIntervalS, reports) {
  return {
    reportsIntervalS,
    ...(reportsIntervalS > 0 ? { reports: reports ?? { sent: 0, failed: 0, skipped: 0, failedBy: {} } } : {}),
  };
}
