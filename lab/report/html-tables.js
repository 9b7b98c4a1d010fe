// Tables as HTML for report.html: the table itself (every cell escaped), the
// flags that colour a run's RT and loss, the notes under a table whose runs
// were saturated or unsettled, the table of every run with all its
// measurements, and the environment as key/value rows.

import { NONE, fmt, num } from './format.js';
import { escapeHtml } from './html-escape.js';
import { describeDriver, sourceLabel } from './runs.js';
import { LOSS_LIMIT_PCT, RT_LIMIT_MS, isUnreliable } from './supported.js';
import { LOAD_FLAGS_NOTE, loadFlagLabels, loadFlagNotes } from './saturation.js';

/** @typedef {import('./types.js').Run} Run */

/**
 * An HTML table.
 *
 * @param {readonly string[]} header
 * @param {{ cells: string[], classes?: string[] }[]} rows cells are text (escaped here)
 * @param {{ numeric?: boolean[], className?: string }} [opts]
 * @returns {string}
 */
export function htmlTable(header, rows, { numeric = [], className = '' } = {}) {
  const cls = (/** @type {number} */ i, extra = '') => {
    const names = [numeric[i] ? 'num' : '', extra].filter(Boolean).join(' ');
    return names ? ` class="${escapeHtml(names)}"` : '';
  };
  const head = header.map((text, i) => `<th scope="col"${cls(i)}>${escapeHtml(text)}</th>`).join('');
  const body = rows
    .map(({ cells, classes = [] }) => `<tr>${cells.map((text, i) => `<td${cls(i, classes[i] ?? '')}>${escapeHtml(text)}</td>`).join('')}</tr>`)
    .join('\n');
  return `<table${className ? ` class="${escapeHtml(className)}"` : ''}><thead><tr>${head}</tr></thead><tbody>\n${body}\n</tbody></table>`;
}

/**
 * Classes flagging a run's RT and loss: `bad` over the limits, `warn` for
 * loss on a reliable transport (a bug by docs/architecture.md).
 *
 * @param {Run} run
 * @returns {{ rt: string, loss: string }}
 */
export function flags(run) {
  const rt = num(run.rt?.mean);
  const loss = num(run.lossPct);
  let lossClass = '';
  if (loss !== null && loss > 0) lossClass = isUnreliable(run) ? (loss >= LOSS_LIMIT_PCT ? 'bad' : '') : 'warn';
  return { rt: rt !== null && rt >= RT_LIMIT_MS ? 'bad' : '', loss: lossClass };
}

/**
 * The notes under a table whose runs were flagged saturated or unsettled
 * (lab/report/saturation.js): one item per flag, then the rules, escaped; ''
 * when no run is flagged.
 *
 * @param {Run[]} runs
 * @returns {string}
 */
export function loadFlagNotesHtml(runs) {
  const { lines, rules } = loadFlagNotes(runs);
  if (!lines.length) return '';
  const items = lines.map((line) => `<li>${escapeHtml(line)}</li>`).join('');
  const ruleText = rules.map((rule) => `Rule — ${escapeHtml(rule)}.`).join(' ');
  return `<ul class="flags">${items}</ul>\n<p class="sub">${ruleText} ${escapeHtml(LOAD_FLAGS_NOTE)}</p>`;
}

/**
 * The channel parameters in a few words.
 *
 * @param {Run} run
 * @returns {string}
 */
function describeChannel(run) {
  const channel = run.channel;
  if (!channel || typeof channel !== 'object') return NONE;
  if (Array.isArray(channel.mixed)) return `mixed (${channel.mixed.length} settings)`;
  const parts = [];
  if (typeof channel.ordered === 'boolean') parts.push(channel.ordered ? 'ordered' : 'unordered');
  if (num(channel.maxRetransmits) !== null) parts.push(`rtx ${channel.maxRetransmits}`);
  else if (channel.maxRetransmits === null) parts.push('reliable');
  return parts.join(' · ') || NONE;
}

/**
 * The table of every run with all measurements.
 *
 * @param {Run[]} runs in table order
 * @returns {string}
 */
export function runsTable(runs) {
  const candidates = (/** @type {Run} */ run) => {
    const types = run.setupMs?.candidateTypes;
    if (!types || typeof types !== 'object') return NONE;
    return Object.entries(types).map(([type, count]) => `${type} ${count}`).join(', ') || NONE;
  };
  /** @type {{ header: string, value: (run: Run) => string, numeric?: boolean, className?: string, present: (run: Run) => boolean }[]} */
  const optionalColumns = [
    { header: 'Candidates', value: candidates, numeric: false, present: (run) => candidates(run) !== NONE },
    { header: 'Peers/page', value: (run) => fmt(run.peersPerPage), present: (run) => num(run.peersPerPage) !== null },
    { header: 'Duration (s)', value: (run) => fmt(run.durationS, 1), present: (run) => num(run.durationS) !== null },
    { header: 'Flags', value: (run) => loadFlagLabels(run).join(', ') || NONE, numeric: false, className: 'warn', present: (run) => loadFlagLabels(run).length > 0 },
    { header: 'Error', value: (run) => String(run.error ?? ''), numeric: false, className: 'err', present: (run) => Boolean(run.error) },
  ];
  const optional = optionalColumns.filter(({ present }) => runs.some(present));
  const setup = (/** @type {Run} */ run, /** @type {'signaling' | 'peer'} */ phase) => fmt(run.setupMs?.[phase]?.p50 ?? run.setupMs?.[phase]?.mean);
  /** @type {{ header: string, value: (run: Run) => string, numeric?: boolean, flag?: 'rt' | 'loss', className?: string }[]} */
  const columns = [
    ...(runs.some((run) => sourceLabel(run) !== null) ? [{ header: 'Source', value: (/** @type {Run} */ run) => sourceLabel(run) ?? NONE }] : []),
    { header: 'Transport', value: (run) => String(run.transport ?? '?') },
    { header: 'Driver', value: (run) => describeDriver(run) || NONE },
    { header: 'Clients', value: (run) => fmt(run.clients), numeric: true },
    { header: 'Group', value: (run) => fmt(run.group), numeric: true },
    { header: 'Cycle (ms)', value: (run) => fmt(run.cycleMs), numeric: true },
    { header: 'RT mean', value: (run) => fmt(run.rt?.mean, 1), numeric: true, flag: 'rt' },
    { header: 'Dev', value: (run) => fmt(run.rt?.dev, 1), numeric: true },
    { header: 'p50', value: (run) => fmt(run.rt?.p50), numeric: true },
    { header: 'p95', value: (run) => fmt(run.rt?.p95), numeric: true },
    { header: 'p99', value: (run) => fmt(run.rt?.p99), numeric: true },
    { header: 'max', value: (run) => fmt(run.rt?.max), numeric: true },
    { header: 'n', value: (run) => fmt(run.rt?.n), numeric: true },
    { header: 'RTS mean', value: (run) => fmt(run.rts?.mean, 2), numeric: true },
    { header: 'RTS max', value: (run) => fmt(run.rts?.max, 1), numeric: true },
    { header: 'CPU server %', value: (run) => fmt(run.cpu?.server, 1), numeric: true },
    { header: 'CPU clients %', value: (run) => fmt(run.cpu?.clients, 1), numeric: true },
    { header: 'Loss %', value: (run) => fmt(run.lossPct, 2), numeric: true, flag: 'loss' },
    { header: 'ACK loss %', value: (run) => fmt(run.ackLossPct, 2), numeric: true },
    { header: 'Dups', value: (run) => fmt(run.dups), numeric: true },
    { header: 'Reorders', value: (run) => fmt(run.reorders), numeric: true },
    { header: 'Jitter (ms)', value: (run) => fmt(run.jitterMs, 2), numeric: true },
    { header: 'Channel', value: describeChannel },
    { header: 'Signaling p50', value: (run) => setup(run, 'signaling'), numeric: true },
    { header: 'Peer setup p50', value: (run) => setup(run, 'peer'), numeric: true },
    ...optional.map(({ header, value, numeric = true, className = '' }) => ({ header, value, numeric, className })),
  ];
  const rows = runs.map((run) => {
    const flagged = flags(run);
    return {
      cells: columns.map((column) => column.value(run)),
      classes: columns.map((column) => (column.flag ? flagged[column.flag] : (column.className ?? ''))),
    };
  });
  return htmlTable(
    columns.map((column) => column.header),
    rows,
    { numeric: columns.map((column) => Boolean(column.numeric)), className: 'wide' },
  );
}

/**
 * The environment as key/value rows: nested objects as dotted keys, arrays
 * of values joined, a CPU list summarised as `count × model`.
 *
 * @param {unknown} env
 * @returns {[string, string][]}
 */
export function envRows(env) {
  /** @type {[string, string][]} */
  const rows = [];
  const visit = (/** @type {unknown} */ value, /** @type {string} */ key) => {
    if (value === null || value === undefined) {
      if (key) rows.push([key, NONE]);
    } else if (Array.isArray(value)) {
      if (value.length && value.every((item) => item && typeof item === 'object' && typeof item.model === 'string')) {
        const counts = new Map();
        for (const { model } of value) counts.set(model, (counts.get(model) ?? 0) + 1);
        rows.push([key, [...counts].map(([model, count]) => `${count} × ${model.trim()}`).join(', ')]);
      } else {
        rows.push([key, value.map((item) => (item && typeof item === 'object' ? JSON.stringify(item) : String(item))).join(' ')]);
      }
    } else if (typeof value === 'object') {
      const entries = Object.entries(value);
      if (!entries.length && key) rows.push([key, '{}']);
      for (const [child, childValue] of entries) visit(childValue, key ? `${key}.${child}` : child);
    } else if (typeof value === 'number' && /bytes$/i.test(key) && value >= 2 ** 20) {
      rows.push([key, `${value} (${(value / 2 ** 30).toFixed(1)} GiB)`]);
    } else {
      rows.push([key || 'env', String(value)]);
    }
  };
  visit(env, '');
  return rows;
}
