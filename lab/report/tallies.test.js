import { test } from 'node:test';
import assert from 'node:assert/strict';

import { reportFields, sumReportTallies } from './tallies.js';

test('report tallies add up over generators (or pages); a run records its report interval, and its reports when on', () => {
  assert.equal(sumReportTallies([null, undefined]), null, 'nobody reported');
  assert.deepEqual(sumReportTallies([
    { sent: 10, failed: 1, skipped: 0, failedBy: { 429: 1 } },
    null,
    { sent: 5, failed: 2, skipped: 1, failedBy: { 429: 1, network: 1 } },
  ]), { sent: 15, failed: 3, skipped: 1, failedBy: { 429: 2, network: 1 } });
  assert.deepEqual(reportFields(0, null), { reportsIntervalS: 0 });
  assert.deepEqual(reportFields(5, { sent: 3, failed: 0, skipped: 0, failedBy: {} }), { reportsIntervalS: 5, reports: { sent: 3, failed: 0, skipped: 0, failedBy: {} } });
  assert.deepEqual(reportFields(5, null), { reportsIntervalS: 5, reports: { sent: 0, failed: 0, skipped: 0, failedBy: {} } }, 'on, but no client got to report');
});
