// Two flags on a sim or bench run record, each a stated rule with the figures
// it read: `saturated`, the point's load generators used about all the CPU the
// machine left them, so its RT and loss measure them and not the transport;
// `unsettled`, its loss was counted with more than a few cycles' worth still
// in flight. The rules are written once, here; the runners add the flags
// (lab/sim/sim.js, lab/bench/bench.js) and the tables show them. A flag
// changes no figure: it says how far to trust them.

import { fmt, isObject, num } from './format.js';

/** @typedef {import('./types.js').Run} Run */

/**
 * Share of the CPU left to the generators at which they count as saturated:
 * busier than this, their timers, frames and ACKs wait for a core and the
 * wait lands in RT (300 browser peers, one per page, at 172 % of the 192 %
 * left, 90 %, read 10 s of RT on the reliable relay).
 */
export const SATURATED_SHARE = 0.85;

/** One event loop (a sim worker thread or process) uses at most one core. */
const EVENT_LOOP_PCT = 100;

/** The saturation rule, as the run record and the tables state it. */
export const SATURATED_RULE = `saturated: the load generators used at least ${SATURATED_SHARE * 100} % of the CPU the machine left them, `
  + `generator CPU % ≥ ${SATURATED_SHARE} × (100 × cores − server CPU %), the CPU left counted at most 100 % per sim worker `
  + '(one event loop each); such a point measures its load generator, not the transport';

/** Under the rules of flagged runs: what a flag does not do. */
export const LOAD_FLAGS_NOTE = 'A flag changes no figure: the row is as measured.';

/** In-flight updates per stream above which a count is unsettled. */
export const UNSETTLED_PER_STREAM = 3;

/** The unsettled rule, as the run record and the tables state it. */
export const UNSETTLED_RULE = `unsettled: loss was counted with more than ${UNSETTLED_PER_STREAM} updates per sender->receiver stream still in flight `
  + `(updates.inFlight > ${UNSETTLED_PER_STREAM} × updates.streams); those updates are neither received nor lost, so loss covers fewer updates than were sent`;

/** The flags for `carlab sim|bench --help`, one paragraph. */
export const LOAD_FLAGS_HELP = `Every run is checked against two rules (lab/report/saturation.js) and flagged, its figures
unchanged, in its line on the terminal, in tables.md and in report.html: SATURATED when the load
generators used at least ${SATURATED_SHARE * 100} % of the CPU the machine left them (100 % x cores - server CPU;
a sim worker at most 100 %): such a point measures them, not the transport; UNSETTLED when loss
was counted with more than ${UNSETTLED_PER_STREAM} updates per stream still in flight.`;

/**
 * What `saturated` read. `generator`: 'browsers' (bench) or the sim's
 * 'threads' | 'processes'; `eventLoops`: the sim's workers (null for
 * browsers, which spread over processes); `serverCpuPct` null when not
 * measured (--url), counted as 0; `leftPct`: the CPU left to the generators.
 * @typedef {object} SaturatedFigures
 * @property {string} generator
 * @property {number} generatorCpuPct
 * @property {number} cores
 * @property {number | null} serverCpuPct
 * @property {number | null} eventLoops
 * @property {number} leftPct
 */

/** @typedef {{ rule: string, figures: SaturatedFigures }} SaturatedFlag */
/** @typedef {{ rule: string, figures: { inFlight: number, streams: number } }} UnsettledFlag */

/**
 * Which generator drove a run and how many event loops it had: a bench's
 * browsers, or a sim's worker threads or processes. (A sim's CPU also holds
 * its main thread, which only starts the workers and tallies their counts.)
 * @param {Run} run
 * @returns {{ generator: string, eventLoops: number | null } | null} null when neither
 */
function generatorOf(run) {
  if (isObject(run.sim)) {
    const workers = num(run.sim.workers);
    return { generator: run.sim.generator === 'process' ? 'processes' : 'threads', eventLoops: workers !== null && workers > 0 ? workers : null };
  }
  if ('browser' in run) return { generator: 'browsers', eventLoops: null };
  return null;
}

/**
 * The `saturated` flag: null when the rule does not hold or cannot be
 * applied (a failed run, no generator CPU, a fleet over other machines, whose
 * cores are not this machine's).
 * @param {Run} run
 * @param {{ cores: number }} machine the cores of the machine the generators ran on
 * @returns {SaturatedFlag | null}
 */
export function saturatedFlag(run, { cores }) {
  // a fleet's browsers run on its agents' machines, whose cores these are not
  const driver = run && !run.error && !isObject(/** @type {any} */ (run).fleet) ? generatorOf(run) : null;
  const generatorCpuPct = num(run?.cpu?.clients);
  if (!driver || generatorCpuPct === null || !(cores > 0)) return null;
  const serverCpuPct = num(run.cpu?.server);
  const machineLeft = Math.max(0, EVENT_LOOP_PCT * cores - (serverCpuPct ?? 0));
  const leftPct = driver.eventLoops === null ? machineLeft : Math.min(machineLeft, EVENT_LOOP_PCT * driver.eventLoops);
  if (generatorCpuPct < SATURATED_SHARE * leftPct) return null;
  return { rule: SATURATED_RULE, figures: { ...driver, generatorCpuPct, cores, serverCpuPct, leftPct } };
}

/**
 * The `unsettled` flag: null when the rule does not hold, or when the run does
 * not say how many streams it counted (older records: cannot tell).
 * @param {Run} run
 * @returns {UnsettledFlag | null}
 */
export function unsettledFlag(run) {
  const inFlight = num(run?.updates?.inFlight);
  const streams = num(run?.updates?.streams);
  if (inFlight === null || streams === null || inFlight <= UNSETTLED_PER_STREAM * streams) return null;
  return { rule: UNSETTLED_RULE, figures: { inFlight, streams } };
}

/**
 * A run record with both flags added (null when a rule does not hold); every
 * other field as it was.
 * @template {Run} R
 * @param {R} run
 * @param {{ cores: number }} machine
 * @returns {R & { saturated: SaturatedFlag | null, unsettled: UnsettledFlag | null }}
 */
export function withLoadFlags(run, machine) {
  return { ...run, saturated: saturatedFlag(run, machine), unsettled: unsettledFlag(run) };
}

/**
 * Who the generators were, for a sentence: "browsers", "2 worker threads".
 * @param {Partial<SaturatedFigures>} f
 */
function generatorLabel(f) {
  if (f.generator !== 'threads' && f.generator !== 'processes') return String(f.generator ?? 'load generators');
  const plural = f.generator === 'processes' ? 'worker processes' : 'worker threads';
  const n = num(f.eventLoops);
  if (n === null) return plural;
  return `${fmt(n)} ${n === 1 ? plural.replace(/(es|s)$/, '') : plural}`;
}

/**
 * The flags a run carries, as short labels for a table cell: e.g. ['saturated'].
 * @param {Run} run
 * @returns {string[]}
 */
export function loadFlagLabels(run) {
  return [isObject(run?.saturated) ? 'saturated' : '', isObject(run?.unsettled) ? 'unsettled' : ''].filter(Boolean);
}

/**
 * The saturation in a few words: "browsers at 172 % of the 192 % left to them".
 * @param {SaturatedFlag} flag
 */
export function describeSaturated(flag) {
  const f = flag.figures ?? {};
  return `${generatorLabel(f)} at ${fmt(f.generatorCpuPct)} % of the ${fmt(f.leftPct)} % left to them`;
}

/**
 * How the CPU left was reckoned: "2 cores × 100 % − server 8.0 %", and the event-loop cap when lower.
 * @param {SaturatedFlag} flag
 */
export function saturatedArithmetic(flag) {
  const f = flag.figures ?? {};
  const server = num(f.serverCpuPct) === null ? 'server not measured (counted as 0)' : `server ${fmt(f.serverCpuPct, 1)} %`;
  const machine = `${fmt(f.cores)} cores × 100 % − ${server}`;
  const loops = num(f.eventLoops);
  const cap = loops !== null && loops * EVENT_LOOP_PCT === f.leftPct ? `, capped at ${fmt(loops)} × 100 % (one event loop per worker)` : '';
  return `${machine}${cap}`;
}

/**
 * The unsettled count in a few words.
 * @param {UnsettledFlag} flag
 */
export function describeUnsettled(flag) {
  const f = flag.figures ?? {};
  return `${fmt(f.inFlight)} updates still in flight over ${fmt(f.streams)} streams when loss was counted (more than ${UNSETTLED_PER_STREAM} per stream)`;
}

/**
 * The terminal's words for a run's flags, '' when it has none: e.g.
 * "SATURATED: browsers at 172 % of the 192 % left to them — this point measures the load generator".
 * @param {Run} run
 * @returns {string}
 */
export function loadFlagsText(run) {
  const { saturated, unsettled } = run ?? {};
  return [
    isObject(saturated) ? `SATURATED: ${describeSaturated(saturated)} — this point measures the load generator` : '',
    isObject(unsettled) ? `UNSETTLED: ${describeUnsettled(unsettled)}` : '',
  ].filter(Boolean).join(' · ');
}

/**
 * One sentence per flag of a run, for the lines under a table: what was
 * measured and how the CPU left was reckoned.
 * @param {Run} run
 * @returns {string[]}
 */
export function loadFlagSentences(run) {
  const { saturated, unsettled } = run ?? {};
  const out = [];
  if (isObject(saturated)) {
    out.push(`saturated: ${describeSaturated(saturated)} (${saturatedArithmetic(saturated)}); this point measures the load generator, not the transport`);
  }
  if (isObject(unsettled)) out.push(`unsettled: ${describeUnsettled(unsettled)}`);
  return out;
}

/**
 * The rules the flagged runs were judged by, each once, in the words their
 * records carry.
 * @param {Run[]} runs
 * @returns {string[]}
 */
export function loadFlagRules(runs) {
  const rules = runs.flatMap((run) => [run?.saturated?.rule, run?.unsettled?.rule].filter((rule) => typeof rule === 'string'));
  return [...new Set(rules)];
}

/**
 * What a table's flagged runs say below it: one line per flag ("300
 * clients, saturated: ..."), then each rule once. Empty when no run is flagged.
 * @param {Run[]} runs the table's runs
 * @returns {{ lines: string[], rules: string[] }}
 */
export function loadFlagNotes(runs) {
  const flagged = runs.filter((run) => loadFlagLabels(run).length);
  return {
    lines: flagged.flatMap((run) => loadFlagSentences(run).map((sentence) => `${fmt(run.clients)} clients, ${sentence}`)),
    rules: loadFlagRules(flagged),
  };
}
