// One line describing a run, for terminals and progress logs: what ran, its
// RT, RTS, CPU, loss, freshness and setup, whether it is over the limit, and
// whether its load generators were saturated or its count unsettled.

import { RT_LIMIT_MS } from '../../core/defaults.js';
import { fmt, isObject, mdText, num } from './format.js';
import { describeDriver, reportsLabel } from './runs.js';
import { loadFlagsText } from './saturation.js';
import { LOSS_LIMIT_PCT, isUnreliable, runPasses } from './supported.js';

/** @typedef {import('./types.js').Run} Run */

/** A server that answers this much later than the window's end is named: it was overloaded. */
const SERVER_LATE_S = 2;

/**
 * One line describing a run, for terminals and progress logs, e.g.
 * `relay 100 clients · group 25 · 167 ms · RT 45 ± 12 ms (p95 80, n 1200) · RTS 1.2 ms · CPU 35.0 % · loss 0.00 %`.
 *
 * @param {Run} run
 * @returns {string}
 */
export function renderSummaryLine(run) {
  const r = run ?? /** @type {Run} */ ({});
  const driver = describeDriver(r);
  const head = [
    `${mdText(r.transport ?? '?')}${driver ? ` (${mdText(driver)})` : ''} ${fmt(r.clients)} clients`,
    `group ${fmt(r.group)}`,
    `${fmt(r.cycleMs)} ms${r.cycleMode ? ` ${mdText(r.cycleMode)}` : ''}`,
    ...(reportsLabel(r) ? [/** @type {string} */ (reportsLabel(r))] : []),
  ];
  if (r.error) return `${head.join(' · ')} · failed: ${mdText(r.error)}`;
  const rt = r.rt ?? {};
  const rtDetail = [
    num(rt.p95) !== null ? `p95 ${fmt(rt.p95)}` : '',
    num(rt.max) !== null ? `max ${fmt(rt.max)}` : '',
    num(rt.n) !== null ? `n ${fmt(rt.n)}` : '',
  ].filter(Boolean);
  const parts = [
    `RT ${fmt(rt.mean)} ± ${fmt(rt.dev)} ms${rtDetail.length ? ` (${rtDetail.join(', ')})` : ''}`,
  ];
  if (num(r.rts?.mean) !== null) parts.push(`RTS ${fmt(r.rts?.mean, 1)} ms`);
  const cpu = [
    num(r.cpu?.server) !== null ? `server ${fmt(r.cpu?.server, 1)} %` : '',
    num(r.cpu?.clients) !== null ? `clients ${fmt(r.cpu?.clients, 1)} %` : '',
  ].filter(Boolean);
  if (cpu.length) parts.push(`CPU ${cpu.join(', ')}`);
  const serverS = num(r.serverWindowS);
  const late = serverS !== null && num(r.durationS) !== null ? serverS - Number(r.durationS) : 0;
  if (late > SERVER_LATE_S) parts.push(`server answered ${fmt(late, 1)} s after the window (its counters cover ${fmt(serverS, 1)} s)`);
  parts.push(`loss ${fmt(r.lossPct, 2)} %${num(r.ackLossPct) ? ` (ACK ${fmt(r.ackLossPct, 2)} %)` : ''}`);
  if (num(r.dups)) parts.push(`dups ${fmt(r.dups)}`);
  if (num(r.reorders)) parts.push(`reorders ${fmt(r.reorders)}`);
  if (num(r.jitterMs) !== null) parts.push(`jitter ${fmt(r.jitterMs, 1)} ms`);
  if (num(r.freshness?.updatesPerStreamPerS) !== null) {
    parts.push(`fresh ${fmt(r.freshness?.updatesPerStreamPerS, 2)}/stream/s, freeze p99 ${fmt(r.freshness?.freezeMs?.p99)} ms`);
  }
  if (isObject(r.setupMs)) {
    const setup = Object.entries(r.setupMs)
      .map(([phase, stats]) => /** @type {const} */ ([phase, isObject(stats) ? num(stats.p50 ?? stats.mean) : null]))
      .filter(([, ms]) => ms !== null)
      .map(([phase, ms]) => `${mdText(phase)} ${fmt(ms)}`);
    if (setup.length) parts.push(`setup ${setup.join(', ')} ms`);
  }
  const verdict = runPasses(r) ? '' : ` · over limit (RT ≥ ${RT_LIMIT_MS} ms${isUnreliable(r) ? ` or loss ≥ ${LOSS_LIMIT_PCT} %` : ''})`;
  // after the figures, which the flags leave as measured
  const flags = loadFlagsText(r);
  return `${head.join(' · ')} · ${parts.join(' · ')}${verdict}${flags ? ` · ${flags}` : ''}`;
}
