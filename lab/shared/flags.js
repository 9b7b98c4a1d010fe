// Flags shared by `carlab sim` and `carlab bench`: every parameter of the
// papers is a flag and may be a list; the run sweeps the cross product.

import { parseArgs } from 'node:util';

import { DEFAULT_ACK_TIMEOUT_MS, DEFAULT_CYCLE_MS, REPORT_LIMITS, SLOW_CYCLE_MS } from '../../core/defaults.js';
import { PLAYOUT_MODES, parsePlayoutModes } from '../../core/playout.js';

/** A usage error: printed with the help, exit code 2. */
export class UsageError extends Error {
  /** @param {string} message */
  constructor(message) {
    super(message);
    this.name = 'UsageError';
    this.code = 'ERR_CARLAB_USAGE';
  }
}

/**
 * Parses "100,200", "100..1000:100" (start..end:step) or a mix.
 * @param {string} text
 * @param {string} flag for error messages
 * @param {boolean} [allowZero] 0 is a value (e.g. --relays 0)
 * @returns {number[]}
 */
export function parseNumberList(text, flag, allowZero = false) {
  /** @type {number[]} */
  const out = [];
  for (const part of String(text).split(',').map((s) => s.trim()).filter(Boolean)) {
    const range = /^(\d+(?:\.\d+)?)\.\.(\d+(?:\.\d+)?)(?::(\d+(?:\.\d+)?))?$/.exec(part);
    if (range) {
      const a = Number(range[1]);
      const b = Number(range[2]);
      const s = range[3] === undefined ? 1 : Number(range[3]);
      if (s <= 0 || b < a) throw new UsageError(`${flag}: bad range "${part}" (start..end:step with end >= start, step > 0)`);
      for (let v = a; v <= b + 1e-9; v += s) out.push(Math.round(v * 1e6) / 1e6);
      continue;
    }
    const v = Number(part);
    if (!Number.isFinite(v) || v < 0 || (v === 0 && !allowZero)) {
      throw new UsageError(`${flag}: "${part}" is not a ${allowZero ? 'number >= 0' : 'positive number'}`);
    }
    out.push(v);
  }
  if (out.length === 0) throw new UsageError(`${flag}: empty list`);
  return out;
}

/**
 * Parses a comma list of names against the allowed ones.
 * @param {string} text
 * @param {string} flag
 * @param {readonly string[]} allowed
 */
export function parseNameList(text, flag, allowed) {
  const names = String(text).split(',').map((s) => s.trim()).filter(Boolean);
  if (names.length === 0) throw new UsageError(`${flag}: empty list`);
  for (const n of names) {
    if (!allowed.includes(n)) throw new UsageError(`${flag}: unknown "${n}" (one of ${allowed.join(', ')})`);
  }
  return names;
}

/**
 * @typedef {object} FailCondition
 * @property {string} path e.g. 'rt.mean'
 * @property {'>' | '<' | '>=' | '<='} op
 * @property {number} value
 * @property {string} text as written
 */

/**
 * Parses `--pause-relay S:D`: pause one relay S seconds into the measured window for D seconds
 * (and `--pause-nats S:D`, the same for the run's nats-server).
 * @param {string} text
 * @param {string} [flag] the flag's name, for the error
 * @returns {{ atS: number, forS: number }}
 */
export function parsePauseRelay(text, flag = 'pause-relay') {
  const m = /^\s*([0-9.]+)\s*:\s*([0-9.]+)\s*$/.exec(text);
  const atS = m ? Number(m[1]) : NaN;
  const forS = m ? Number(m[2]) : NaN;
  if (!Number.isFinite(atS) || !Number.isFinite(forS) || forS <= 0) {
    throw new UsageError(`--${flag}: "${text}" is not S:D (seconds into the window : seconds paused, e.g. 2:4.5)`);
  }
  return { atS, forS };
}

/**
 * An integer flag: `fallback` when absent, else a whole number in min..max (a RangeError otherwise).
 * @param {string} name the flag without its dashes @param {string | undefined} raw
 * @param {number} fallback @param {number} [min] @param {number} [max]
 */
export function parseIntFlag(name, raw, fallback, min = 1, max = Number.MAX_SAFE_INTEGER) {
  if (raw === undefined) return fallback;
  const n = /^\d+$/.test(raw.trim()) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) throw new RangeError(`--${name}: "${raw}" is not an integer ${min}..${max}`);
  return n;
}

/**
 * Parses `--fail-if "rt.mean>250,lossPct>2"`.
 * @param {string} text
 * @returns {FailCondition[]}
 */
export function parseFailIf(text) {
  return String(text).split(',').map((s) => s.trim()).filter(Boolean).map((part) => {
    const m = /^([A-Za-z][\w.]*)\s*(>=|<=|>|<)\s*(-?\d+(?:\.\d+)?)$/.exec(part);
    if (!m) throw new UsageError(`--fail-if: cannot read "${part}" (write e.g. rt.mean>250)`);
    return { path: m[1], op: /** @type {any} */ (m[2]), value: Number(m[3]), text: part };
  });
}

/**
 * The value at a dotted path of a run record (`rt.p95`), undefined where the path leads nowhere.
 * @param {Record<string, any> | null} run @param {string} path
 */
export function figureAt(run, path) {
  return path.split('.').reduce((/** @type {any} */ o, k) => (o == null ? undefined : o[k]), run);
}

/**
 * The conditions a run breaks. A figure the run does not have (missing, null,
 * not a number) breaks its condition: a gate whose figure is missing has not
 * been met.
 * @param {FailCondition[]} conditions
 * @param {Record<string, any>} run
 * @returns {string[]}
 */
export function failedConditions(conditions, run) {
  const broken = [];
  for (const c of conditions) {
    const v = figureAt(run, c.path);
    if (typeof v !== 'number' || !Number.isFinite(v)) {
      broken.push(`${c.text} (${c.path} is missing)`);
      continue;
    }
    const bad = c.op === '>' ? v > c.value : c.op === '<' ? v < c.value : c.op === '>=' ? v >= c.value : v <= c.value;
    if (bad) broken.push(`${c.text} (${c.path} = ${Math.round(v * 100) / 100})`);
  }
  return broken;
}

/**
 * @typedef {object} SweepPoint
 * @property {string} transport
 * @property {number} clients
 * @property {number} group
 * @property {number} cycleMs
 * @property {CycleMode} cycleMode the action cycle's mode (docs/architecture.md "The action cycle")
 * @property {number} relays relay processes joined through NATS; 0: one relay process, no NATS
 * @property {Placement} placement how clients are put on the relays (only with relays > 0)
 * @property {number} [startCluster] --start-cluster: the server under test is the product's `carlab start`
 *   (1: one process, no NATS; N >= 2: `--cluster N`); absent without --start-cluster
 * @property {string} [net] network profile (--net); absent without --net
 * @property {number} [reportsIntervalS] --reports: every client reports every this many seconds
 *   (POST /reports, core/report.js); 0: no reports. Absent when the caller swept no report intervals.
 * @property {number} [cpuSlowdown] bench --cpu-slowdown: Chromium pages' CPU throttled this many times
 *   (lab/bench/throttle.js); absent without the flag
 */

/** @typedef {'pipelined' | 'gated'} CycleMode */
/** @typedef {'spread' | 'group' | 'haproxy'} Placement spread: a group's members round-robin over the relays (groups span them); group: each group on one relay; haproxy: every client through HAProxy in front of the relays (deploy/haproxy.cfg), which puts each group on one */

/** The action cycle's modes, the product's default first. */
export const CYCLE_MODES = Object.freeze(/** @type {CycleMode[]} */ (['pipelined', 'gated']));

/** Client placements on a cluster of relays. */
export const PLACEMENTS = Object.freeze(/** @type {Placement[]} */ (['spread', 'group', 'haproxy']));

/**
 * The cross product of the sweep lists: network profiles outermost (when
 * given), then transports, group, cycle and clients ascending (so a point
 * that fails is followed by bigger ones), report intervals innermost (so the
 * runs with and without reports of one population run back to back).
 * --start-cluster values are outermost after the network profiles, so the
 * same points run against each server in turn. CPU slowdowns (bench
 * --cpu-slowdown) are innermost of all: one population at each slowdown
 * back to back, side by side on the same machine state.
 * @param {{ transports: readonly string[], clients: number[], groups: number[], cycles: number[], nets?: string[] | null,
 *   cycleModes?: CycleMode[], relays?: number[], placements?: Placement[], reports?: number[], startClusters?: number[] | null,
 *   cpuSlowdowns?: number[] | null }} lists
 *   reports: client report intervals in seconds (0: none); without it the points carry no reportsIntervalS
 *   startClusters: --start-cluster values; without them the points carry no startCluster
 * @returns {SweepPoint[]}
 */
export function expandSweep(lists) {
  if (lists.cpuSlowdowns?.length) {
    const slowdowns = lists.cpuSlowdowns;
    return expandSweep({ ...lists, cpuSlowdowns: null }).flatMap((p) => slowdowns.map((cpuSlowdown) => ({ ...p, cpuSlowdown })));
  }
  if (lists.nets?.length) {
    return lists.nets.flatMap((net) => expandSweep({ ...lists, nets: null }).map((p) => ({ net, ...p })));
  }
  if (lists.startClusters?.length) {
    return lists.startClusters.flatMap((startCluster) => expandSweep({ ...lists, startClusters: null }).map((p) => ({ ...p, startCluster })));
  }
  /** @type {SweepPoint[]} */
  const points = [];
  for (const transport of lists.transports) {
    for (const relays of lists.relays ?? [0]) {
      for (const placement of relays > 0 ? (lists.placements ?? ['spread']) : /** @type {Placement[]} */ (['spread'])) {
        for (const cycleMode of lists.cycleModes ?? [CYCLE_MODES[0]]) {
          for (const group of lists.groups) {
            for (const cycleMs of lists.cycles) {
              for (const clients of [...lists.clients].sort((a, b) => a - b)) {
                if (!lists.reports) {
                  points.push({ transport, clients, group, cycleMs, cycleMode, relays, placement });
                  continue;
                }
                for (const reportsIntervalS of lists.reports) {
                  points.push({ transport, clients, group, cycleMs, cycleMode, relays, placement, reportsIntervalS });
                }
              }
            }
          }
        }
      }
    }
  }
  return points;
}

/**
 * Parses the shared lab flags plus command-specific ones.
 * @param {string[]} argv
 * @param {{ transports: readonly string[], defaults: Record<string, string>,
 *   presets?: Record<string, Record<string, string>>,
 *   extra?: Record<string, { type: 'string' | 'boolean', default?: any }> }} spec
 *   presets: named sets of flag values (e.g. the paper's sweep); explicit flags override them
 * @returns {{ kind: 'help' } | { kind: 'error', error: UsageError } | { kind: 'options', options: any }}
 */
export function parseLabFlags(argv, spec) {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, strict: true, allowPositionals: false, options: { ...LAB_FLAG_SPECS, ...(spec.extra ?? {}) } });
  } catch (err) {
    return { kind: 'error', error: new UsageError(/** @type {Error} */ (err).message) };
  }
  const v = /** @type {Record<string, any>} */ (parsed.values);
  if (v.help) return { kind: 'help' };
  try {
    // Before the defaults fill them in: given at all, --relays and --placement contradict --start-cluster.
    if (v['start-cluster'] !== undefined && v.relays !== undefined) {
      throw new UsageError('--start-cluster and --relays are two ways to run the server under test: give one '
        + '(--start-cluster N runs the product\'s `carlab start --cluster N`, --relays N the lab\'s relays on NATS)');
    }
    if (v['start-cluster'] !== undefined && v.placement !== undefined) {
      throw new UsageError('--placement places clients on --relays\' relays; under --start-cluster the primary places each group itself');
    }
    applyDefaults(v, spec);
    const options = readLabOptions(v, spec.transports);
    checkLabOptions(options);
    return { kind: 'options', options };
  } catch (err) {
    if (err instanceof UsageError) return { kind: 'error', error: err };
    throw err;
  }
}

/**
 * The shared flags for util.parseArgs. No parseArgs defaults: explicit flags
 * win over a --preset, which wins over the defaults (applyDefaults).
 * @type {Record<string, { type: 'string' | 'boolean', short?: string, default?: boolean }>}
 */
const LAB_FLAG_SPECS = {
  transport: { type: 'string' },
  clients: { type: 'string' },
  group: { type: 'string' },
  cycle: { type: 'string' },
  duration: { type: 'string' },
  updates: { type: 'string' },
  warmup: { type: 'string' },
  'ack-timeout': { type: 'string' },
  preset: { type: 'string' },
  out: { type: 'string' },
  'fail-if': { type: 'string' },
  url: { type: 'string' },
  net: { type: 'string' },
  'net-file': { type: 'string' },
  'cycle-mode': { type: 'string' },
  relays: { type: 'string' },
  placement: { type: 'string' },
  nats: { type: 'string' },
  'kill-relay-at': { type: 'string' },
  'pause-relay': { type: 'string' },
  reports: { type: 'string' },
  playout: { type: 'string' },
  'render-fps': { type: 'string' },
  'no-progress': { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
};

/**
 * Fills the flags not given: the preset's value, else the command's default, else ours.
 * @param {Record<string, any>} v parsed flag values (changed in place)
 * @param {{ defaults: Record<string, string>, presets?: Record<string, Record<string, string>> }} spec
 */
function applyDefaults(v, spec) {
  if (v.preset !== undefined && !spec.presets?.[v.preset]) {
    const known = Object.keys(spec.presets ?? {});
    throw new UsageError(`--preset: unknown "${v.preset}"${known.length ? ` (one of ${known.join(', ')})` : ''}`);
  }
  const preset = v.preset ? (spec.presets ?? {})[v.preset] : {};
  /** @type {Record<string, string>} */
  const fallback = {
    cycle: String(DEFAULT_CYCLE_MS), duration: '30', warmup: '3', updates: '0', 'ack-timeout': String(DEFAULT_ACK_TIMEOUT_MS),
    'cycle-mode': CYCLE_MODES[0], relays: '0', placement: 'spread', reports: '0', ...spec.defaults, ...preset,
  };
  for (const name of Object.keys(fallback)) if (v[name] === undefined) v[name] = fallback[name];
}

/**
 * The options of a lab command from its flag values, each checked on its own.
 * @param {Record<string, any>} v
 * @param {readonly string[]} transports what --transport may name
 */
function readLabOptions(v, transports) {
  const num = (/** @type {string} */ name, min = 0) => {
    const n = Number(v[name]);
    if (!Number.isFinite(n) || n < min) throw new UsageError(`--${name}: "${v[name]}" is not a number >= ${min}`);
    return n;
  };
  return {
    transports: parseNameList(/** @type {string} */ (v.transport), '--transport', transports),
    clients: parseNumberList(/** @type {string} */ (v.clients), '--clients').map(Math.round),
    groups: parseNumberList(/** @type {string} */ (v.group), '--group').map(Math.round),
    cycles: parseNumberList(/** @type {string} */ (v.cycle), '--cycle'),
    durationS: num('duration', 1),
    updates: Math.round(num('updates', 0)),
    warmupS: num('warmup', 0),
    ackTimeoutMs: num('ack-timeout', 1),
    out: v.out ?? null,
    failIf: v['fail-if'] ? parseFailIf(/** @type {string} */ (v['fail-if'])) : [],
    url: v.url ?? null,
    progress: !v['no-progress'],
    preset: v.preset ?? null,
    // profile names; checked against the profiles file by the command (lab/net)
    nets: v.net === undefined ? null : String(v.net).split(',').map((x) => x.trim()).filter(Boolean),
    netFile: v['net-file'] ?? null,
    cycleModes: /** @type {CycleMode[]} */ (parseNameList(String(v['cycle-mode']), '--cycle-mode', CYCLE_MODES)),
    relays: parseRelayCounts(String(v.relays)),
    placements: /** @type {Placement[]} */ (parseNameList(String(v.placement), '--placement', PLACEMENTS)),
    nats: v.nats === undefined ? null : parseNatsFlag(String(v.nats)),
    killRelayAtS: v['kill-relay-at'] === undefined ? null : num('kill-relay-at', 0),
    pauseRelay: v['pause-relay'] === undefined ? null : parsePauseRelay(String(v['pause-relay'])),
    // a flag of `carlab sim` only (START_CLUSTER_FLAG): null for the commands without it
    startClusters: v['start-cluster'] === undefined ? null : parseStartClusterCounts(String(v['start-cluster'])),
    reports: parseReportIntervals(String(v.reports)),
    playout: v.playout === undefined ? null : playoutModesFlag(String(v.playout)),
    renderFps: intFlag('render-fps', v['render-fps'], DEFAULT_RENDER_FPS, 1, 240),
    values: v,
  };
}

/** The rate at which --playout draws every neighbour (a phone's display). */
export const DEFAULT_RENDER_FPS = 60;

/** @param {string} text */
function playoutModesFlag(text) {
  try {
    return parsePlayoutModes(text);
  } catch (err) {
    throw new UsageError(/** @type {Error} */ (err).message);
  }
}

/** parseIntFlag, its RangeError a usage error. @param {string} name @param {string | undefined} raw @param {number} fallback @param {number} min @param {number} max */
function intFlag(name, raw, fallback, min, max) {
  try {
    return parseIntFlag(name, raw, fallback, min, max);
  } catch (err) {
    throw new UsageError(/** @type {Error} */ (err).message);
  }
}

/**
 * The options checked against each other.
 * @param {ReturnType<typeof readLabOptions>} options
 */
function checkLabOptions(options) {
  if (options.killRelayAtS !== null && options.relays.every((n) => n < 2)) {
    throw new UsageError('--kill-relay-at needs --relays 2 or more (a relay to kill and one to move to)');
  }
  if (options.pauseRelay !== null && options.relays.every((n) => n < 2)) {
    throw new UsageError('--pause-relay needs --relays 2 or more (a relay to pause and one that goes on)');
  }
  // --nats is the relays' NATS, or (bench --agents) the one the fleet's agents joined
  if (options.nats && options.relays.every((n) => n === 0) && options.values.agents === undefined) throw new UsageError('--nats needs --relays N (the relays that join it)');
  if (options.nets && options.nets.length === 0) throw new UsageError('--net: empty list');
  if (options.values['render-fps'] !== undefined && !options.playout) throw new UsageError('--render-fps needs --playout (the modes to draw)');
  if (options.netFile && !options.nets) throw new UsageError('--net-file needs --net (the profiles to run)');
  if (options.url) {
    try { new URL(options.url); } catch { throw new UsageError(`--url: "${options.url}" is not a URL`); }
  }
}

/**
 * `--relays`: relay process counts, 0 for one relay without NATS.
 * @param {string} text
 * @returns {number[]}
 */
export function parseRelayCounts(text) {
  const counts = parseNumberList(text, '--relays', true).map(Math.round);
  for (const n of counts) if (n < 0 || n > 64) throw new UsageError(`--relays: ${n} is not a relay count 0..64`);
  return counts;
}

/**
 * `--start-cluster`, for the commands that have it (`carlab sim`): parseArgs's spec.
 * @type {Record<string, { type: 'string' }>}
 */
export const START_CLUSTER_FLAG = Object.freeze({ 'start-cluster': { type: 'string' } });

/**
 * `--start-cluster`: how the product's `carlab start` runs for each point:
 * 1 plain (one process, no NATS), N >= 2 `--cluster N`.
 * @param {string} text
 * @returns {number[]}
 */
export function parseStartClusterCounts(text) {
  const counts = parseNumberList(text, '--start-cluster', true);
  for (const n of counts) {
    if (!Number.isInteger(n) || n < 1 || n > 64) {
      throw new UsageError(`--start-cluster: ${n} is not a process count 1..64 (1: \`carlab start\`, N >= 2: \`carlab start --cluster N\`)`);
    }
  }
  return counts;
}

/** The longest report interval --reports takes (s): a run reports at least once an hour. */
export const MAX_REPORT_INTERVAL_S = 3600;

/**
 * Slack over the server's minimum interval between a session's reports: the
 * server times a report when it has read it, so at --reports 1 a report that
 * waited (a new connection, a busy generator or server) followed by one that
 * did not would arrive less than 1 s after it and be refused (429). A period
 * under minimum + slack runs at minimum + slack (1 s: 1.1 s).
 */
export const REPORT_SLACK_MS = 100;

/**
 * The period (ms) the lab's clients report at for a --reports value (s); 0 for none.
 * @param {number} seconds
 */
export function reportPeriodMs(seconds) {
  return seconds > 0 ? Math.max(seconds * 1000, REPORT_LIMITS.minIntervalMs + REPORT_SLACK_MS) : 0;
}

/**
 * `--reports`: client report intervals in seconds, a list or range like the
 * other sweep axes; `0` or `off` for no reports. The server refuses a
 * session's reports closer together than REPORT_LIMITS.minIntervalMs, so an
 * interval is 0 or at least that.
 * @param {string} text
 * @returns {number[]} seconds, 0 for off
 */
export function parseReportIntervals(text) {
  const minS = REPORT_LIMITS.minIntervalMs / 1000;
  const parts = String(text).split(',').map((s) => s.trim()).filter(Boolean);
  if (parts.length === 0) throw new UsageError('--reports: empty list (seconds between reports, or 0/off for none)');
  /** @type {number[]} */
  const out = [];
  for (const part of parts) {
    if (/^off$/i.test(part)) { out.push(0); continue; }
    if (!/^\d+(?:\.\d+)?(?:\.\.\d+(?:\.\d+)?(?::\d+(?:\.\d+)?)?)?$/.test(part)) {
      throw new UsageError(`--reports: "${part}" is not a number of seconds (or 0/off for no reports)`);
    }
    for (const s of parseNumberList(part, '--reports', true)) {
      if (s !== 0 && (s < minS || s > MAX_REPORT_INTERVAL_S)) {
        throw new UsageError(`--reports: ${s} s is not 0/off or an interval of ${minS}..${MAX_REPORT_INTERVAL_S} s `
          + `(the server refuses a client's reports closer together than ${minS} s)`);
      }
      out.push(s);
    }
  }
  return out;
}

/**
 * The report interval (s) of a point: its own when the sweep gave it one,
 * else the single --reports value. A list of several needs the sweep to
 * carry them (expandSweep's `reports`).
 * @param {Pick<SweepPoint, 'reportsIntervalS'>} point
 * @param {{ reports?: number[] }} options parsed flags
 * @returns {number}
 */
export function reportsIntervalOf(point, options) {
  if (typeof point.reportsIntervalS === 'number') return point.reportsIntervalS;
  const list = options.reports ?? [0];
  if (list.length > 1) throw new Error(`--reports ${list.join(',')}: this sweep did not expand the report intervals (expandSweep needs reports: options.reports)`);
  return list[0] ?? 0;
}

/**
 * `--nats`: the URL of an existing NATS server.
 * @param {string} text
 * @returns {string}
 */
export function parseNatsFlag(text) {
  let url = null;
  try { url = new URL(text); } catch { /* reported below */ }
  if (!url || !['nats:', 'tls:'].includes(url.protocol)) throw new UsageError(`--nats: expected nats://host:port, got "${text}"`);
  return text;
}

/** Help text for the shared flags. */
export const LAB_FLAGS_HELP = `Sweep (each may be a list "a,b,c" or a range "start..end:step"; the run sweeps the cross product):
  --transport LIST     transports to measure
  --clients LIST       population sizes
  --group LIST         working-group sizes (the last group of a population may be smaller)
  --cycle LIST         action cycle in ms: ${DEFAULT_CYCLE_MS} fast phone, ${SLOW_CYCLE_MS} slow phone (default ${DEFAULT_CYCLE_MS})
  --cycle-mode LIST    pipelined (send every cycle; the product's) or gated (wait for every ACK; the paper's)
                       (default pipelined)
  --reports LIST       client reports (POST /reports, as the phone app sends them) every S seconds and
                       once when leaving; 0 or off: none (default 0: the relay alone). S is 0 or
                       ${REPORT_LIMITS.minIntervalMs / 1000}..${MAX_REPORT_INTERVAL_S} (under ${reportPeriodMs(0.001) / 1000} s runs at ${reportPeriodMs(0.001) / 1000} s: the server refuses a client's
                       reports under ${REPORT_LIMITS.minIntervalMs / 1000} s apart); e.g. 0,5 runs each point without and with reports every 5 s
Scale-out (docs/scale-out.md):
  --relays LIST        relay processes joined through NATS (a nats-server of the run's own);
                       0: one relay process without NATS (default 0)
  --placement LIST     spread: each group's members round-robin over the relays (groups span them);
                       group: each group on one relay; haproxy: every client through HAProxy in
                       front of the relays (deploy/haproxy.cfg: each group on one; 2..6 relays)
                       (default spread)
  --nats URL           use this NATS server instead of starting one
  --kill-relay-at S    SIGKILL one relay process S seconds into the measured window (needs --relays 2+);
                       its clients reconnect to the others
  --pause-relay S:D    SIGSTOP one relay process S seconds into the measured window, SIGCONT it D
                       seconds later (a process starved or swapped out; needs --relays 2+)
Each point:
  --duration S         measured seconds per point (default 30)
  --updates N          or: stop each client after N updates (0 = use --duration)
  --warmup S           seconds before measuring; warm-up RTs are reported apart (default 3)
  --ack-timeout MS     give up on missing ACKs after this long (default ${DEFAULT_ACK_TIMEOUT_MS}, as in the paper)
  --preset NAME        a named sweep (flags given explicitly override it)
Network (root; docs/network.md):
  --net LIST           run every point under each network profile: server and peers in their
                       own network namespaces joined by shaped veth links, each profile
                       calibrated first (none, lossy-1, lossy-2, lossy-5, 3g, hspa, internet, ...)
  --net-file FILE      more profiles (JSON, the format of lab/net/profiles.json)
What a person sees (docs/architecture.md "Drawn error"):
  --playout MODES      every receiver draws each neighbour in each of these playout modes
                       (${PLAYOUT_MODES.join(', ')}) from the same arrivals and measures the drawn
                       pose against the sender's true pose at every frame: drawn error, jumps
  --render-fps N       frames per second of that drawing (default ${DEFAULT_RENDER_FPS})
Output:
  --out DIR            write DIR/results.json, results.csv, tables.md, report.html
  --fail-if EXPR       exit 1 if any run breaks a condition, e.g. "rt.mean>250,lossPct>2"
  --no-progress        no progress bar (for logs)
  -h, --help           this help`;
