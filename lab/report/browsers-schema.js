// The results.json schema of `carlab browsers`: docs/architecture.md's run fields where
// they apply (car runs are bench runs and must pass runSchemaProblems as they
// are), plus what each experiment's record promises. Extra fields are allowed.

import { runSchemaProblems } from './schema.js';

/** @param {any} v */
const isNum = (v) => typeof v === 'number' && Number.isFinite(v);
/** @param {any} v */
const isSummary = (v) => v === null || (typeof v === 'object' && ['mean', 'dev', 'p50', 'p95', 'max', 'n'].every((k) => k in v));

/**
 * Problems of one experiment record, [] when it fits.
 * @param {any} run
 * @returns {string[]}
 */
export function labRunProblems(run) {
  const p = [];
  if (typeof run?.experiment !== 'string') return ['experiment is not a string'];
  if (run.experiment === 'car') {
    if (run.error) return [];
    return [...runSchemaProblems(run), ...(typeof run.fleet === 'string' ? [] : ['fleet is missing'])];
  }
  for (const k of ['pair', 'initiatorBrowser', 'receiverBrowser', 'browser']) if (typeof run[k] !== 'string') p.push(`${k} is not a string`);
  if (typeof run.hideHostAddresses !== 'boolean') p.push('hideHostAddresses is not a boolean');
  if (run.error) return typeof run.error === 'string' ? p : [...p, 'error is not a string'];
  if (typeof run.transport !== 'string') p.push('transport is not a string');
  switch (run.experiment) {
    case 'setup':
      if (!run.setupMs || !('signaling' in run.setupMs) || !('peer' in run.setupMs)) p.push('setupMs is not {signaling, peer, ...}');
      else for (const [k, v] of Object.entries(run.setupMs)) if (!isSummary(v)) p.push(`setupMs.${k} is not a summary`);
      for (const k of ['repetitions', 'attempted', 'completed', 'failures']) if (!isNum(run[k])) p.push(`${k} is not a number`);
      if (run.channel !== null && typeof run.channel?.ordered !== 'boolean') p.push('channel is neither null nor {ordered, maxRetransmits}');
      if (!run.candidateTypes || typeof run.candidateTypes !== 'object') p.push('candidateTypes is missing');
      if (!Array.isArray(run.reps)) p.push('reps is not an array');
      break;
    case 'overhead':
      for (const role of ['initiator', 'receiver']) {
        const e = run[role];
        if (!e || typeof e.browser !== 'string') { p.push(`${role} is missing`); continue; }
        if (run.completed > 0) for (const part of ['signalingOpen', 'signalingSetup', 'p2p', 'total']) if (!e[part] || !isSummary(e[part].sent)) p.push(`${role}.${part}.sent is not a summary`);
      }
      break;
    case 'keepalive':
      if (!isNum(run.windowS) || !isNum(run.connections)) p.push('windowS/connections missing');
      for (const role of ['initiator', 'receiver']) if (!run[role] || !isSummary(run[role].payloadKbitSent ?? null)) p.push(`${role} rates are missing`);
      break;
    case 'memory':
      if (!isNum(run.dMax) || !run.m1Bytes || !run.m0) p.push('dMax/m0/m1Bytes missing');
      if (!Array.isArray(run.steps)) p.push('steps is not an array');
      if (typeof run.limitReason !== 'string') p.push('limitReason is not a string');
      break;
    case 'cpu':
      if (!Array.isArray(run.steps)) p.push('steps is not an array');
      else for (const s of run.steps) if (!isNum(s.k) || !s.cpu || !('clients' in s.cpu)) p.push('a step is not {k, cpu: {server, clients}}');
      break;
    case 'transfer':
      if (!Array.isArray(run.approaches)) p.push('approaches is not an array');
      else for (const a of run.approaches) if (typeof a.id !== 'string' || !isSummary(a.ms)) p.push(`approach ${a.id} has no ms summary`);
      break;
    default:
      p.push(`unknown experiment ${run.experiment}`);
  }
  return p;
}

/**
 * Problems of a `carlab browsers` results object, [] when it fits.
 * @param {any} results
 * @returns {string[]}
 */
export function browsersSchemaProblems(results) {
  if (!results || typeof results !== 'object') return ['results is not an object'];
  const p = [];
  const env = results.env;
  if (!env || typeof env !== 'object') p.push('env is missing');
  else {
    if (typeof env.cpus !== 'number') p.push('env.cpus is missing');
    if (env.command !== 'browsers') p.push('env.command is not "browsers"');
    for (const [name, b] of Object.entries(env.browsers ?? {})) {
      if (typeof b?.version !== 'string' || typeof b?.userAgent !== 'string') p.push(`env.browsers.${name} lacks version/userAgent`);
    }
  }
  if (!Array.isArray(results.runs)) return [...p, 'runs is not an array'];
  results.runs.forEach((/** @type {any} */ run, /** @type {number} */ i) => { for (const q of labRunProblems(run)) p.push(`runs[${i}] (${run?.experiment} ${run?.pair ?? ''}): ${q}`); });
  return p;
}
