// The results.json schema docs/architecture.md fixes ("Results files"), as a checker the
// tests and `carlab report` can share. Extra fields are allowed.

const SUMMARY = ['mean', 'dev', 'p50', 'p95', 'p99', 'max', 'n'];

/** @param {any} v */
const isNumOrNull = (v) => v === null || (typeof v === 'number' && Number.isFinite(v));

/**
 * Problems with one run record, [] when it fits the schema.
 * @param {any} run
 * @returns {string[]}
 */
export function runSchemaProblems(run) {
  const p = [];
  if (typeof run?.transport !== 'string') p.push('transport is not a string');
  for (const k of ['clients', 'group', 'cycleMs']) if (typeof run?.[k] !== 'number') p.push(`${k} is not a number`);
  if (!('browser' in run) && !('sim' in run)) p.push('neither "browser" nor "sim" says what drove the run');
  if (!run.rt || typeof run.rt !== 'object') p.push('rt is missing');
  else for (const k of SUMMARY) if (!isNumOrNull(run.rt[k])) p.push(`rt.${k} is not a number or null`);
  if (run.rts !== null && (typeof run.rts !== 'object' || !isNumOrNull(run.rts?.mean) || !isNumOrNull(run.rts?.max))) p.push('rts is neither null nor {mean, max}');
  if (!run.cpu || !isNumOrNull(run.cpu.server) || !isNumOrNull(run.cpu.clients)) p.push('cpu is not {server, clients}');
  for (const k of ['lossPct', 'ackLossPct', 'dups', 'reorders', 'jitterMs']) if (!isNumOrNull(run[k])) p.push(`${k} is not a number or null`);
  if (run.setupMs !== null && (typeof run.setupMs !== 'object' || !('signaling' in run.setupMs) || !('peer' in run.setupMs))) p.push('setupMs is neither null nor {signaling, peer}');
  if (run.channel !== null && (typeof run.channel !== 'object' || (!('ordered' in run.channel) && !('mixed' in run.channel)))) p.push('channel is neither null nor {ordered, maxRetransmits}');
  p.push(...addedFieldProblems(run));
  return p;
}

/** The action cycle's modes (docs/architecture.md "The action cycle"). */
const CYCLE_MODES = ['pipelined', 'gated'];

/**
 * Fields added since the first schema: optional (older results files lack
 * them), checked when present. `cycleMode` and `freshness` come with every
 * run of `carlab sim` and `carlab bench`; `cluster` and `failover` with runs
 * on several relays (lab/sim/sim.js); `source`, `sourceName`, `groupName`,
 * `family`, `families`, `sessions` and `tracking` with the runs of a study
 * recording (lab/report/recording-results.js) and of combined reports (`carlab report A B --out C`);
 * `saturated` and `unsettled` (null, or the rule and the figures it read) with
 * sim and bench runs (lab/report/saturation.js); `serverCost` (per delivered update: CPU user and
 * system µs, frames in and out) with runs that measured a server (lab/report/aggregate.js).
 * @param {any} run
 * @returns {string[]}
 */
export function addedFieldProblems(run) {
  const p = [];
  if ('cycleMode' in run && run.cycleMode !== null && !CYCLE_MODES.includes(run.cycleMode)) p.push(`cycleMode is not one of ${CYCLE_MODES.join(', ')}`);
  if ('freshness' in run && run.freshness !== null) {
    const f = run.freshness;
    if (typeof f !== 'object') p.push('freshness is not an object');
    else {
      if (!isNumOrNull(f.updatesPerStreamPerS)) p.push('freshness.updatesPerStreamPerS is not a number or null');
      if (!isNumOrNull(f.frozenPct)) p.push('freshness.frozenPct is not a number or null');
      if (!f.freezeMs || typeof f.freezeMs !== 'object') p.push('freshness.freezeMs is missing');
      else for (const k of ['p50', 'p99', 'max']) if (!isNumOrNull(f.freezeMs[k])) p.push(`freshness.freezeMs.${k} is not a number or null`);
    }
  }
  if ('drawn' in run && run.drawn !== null) p.push(...drawnProblems(run.drawn));
  if ('serverCost' in run && run.serverCost !== null) {
    if (typeof run.serverCost !== 'object') p.push('serverCost is not an object');
    else for (const k of ['usPerUpdate', 'userUsPerUpdate', 'systemUsPerUpdate', 'framesInPerUpdate', 'framesOutPerUpdate']) {
      if (!isNumOrNull(run.serverCost[k])) p.push(`serverCost.${k} is not a number or null`);
    }
  }
  for (const k of ['source', 'sourceName', 'groupName', 'family']) if (k in run && typeof run[k] !== 'string') p.push(`${k} is not a string`);
  if ('families' in run && !(Array.isArray(run.families) && run.families.every((/** @type {unknown} */ f) => typeof f === 'string'))) p.push('families is not a list of names');
  if ('sessions' in run && !isNumOrNull(run.sessions)) p.push('sessions is not a number or null');
  if ('cpuSlowdown' in run && !(typeof run.cpuSlowdown === 'number' && run.cpuSlowdown >= 1)) p.push('cpuSlowdown is not a number >= 1');
  for (const k of ['cpuThrottled', 'cpuUnthrottled']) if (k in run && !Array.isArray(run[k])) p.push(`${k} is not a list`);
  if ('tracking' in run && run.tracking !== null) {
    const t = run.tracking;
    if (typeof t !== 'object') p.push('tracking is not an object');
    else {
      for (const k of ['fps', 'msPerFrame', 'visiblePct']) if (!isNumOrNull(t[k])) p.push(`tracking.${k} is not a number or null`);
      if (typeof t.clients !== 'number') p.push('tracking.clients is not a number');
    }
  }
  if ('cluster' in run && run.cluster !== null) {
    if (typeof run.cluster !== 'object') p.push('cluster is not an object');
    else for (const k of ['nodes', 'crossNodeUpdates']) if (k in run.cluster && !isNumOrNull(run.cluster[k])) p.push(`cluster.${k} is not a number or null`);
  }
  // An object is the agents' block (bench --agents); a string is `carlab browsers`' fleet label ('chromium+firefox').
  if ('fleet' in run && run.fleet !== null && typeof run.fleet === 'object') p.push(...fleetProblems(run.fleet));
  else if ('fleet' in run && run.fleet !== null && typeof run.fleet !== 'string') p.push('fleet is neither an agents block nor a browsers label');
  if ('lostPeers' in run && typeof run.lostPeers !== 'number') p.push('lostPeers is not a number');
  for (const k of /** @type {const} */ (['saturated', 'unsettled'])) p.push(...loadFlagProblems(run, k));
  if ('failover' in run && run.failover !== null) {
    const f = run.failover;
    if (typeof f !== 'object') p.push('failover is not an object');
    else {
      for (const k of ['clientsMoved', 'lostUpdates']) if (k in f && !isNumOrNull(f[k])) p.push(`failover.${k} is not a number or null`);
      if ('reconnectMs' in f && f.reconnectMs !== null) {
        if (typeof f.reconnectMs !== 'object') p.push('failover.reconnectMs is not an object');
        else for (const k of ['p50', 'p99', 'max']) if (k in f.reconnectMs && !isNumOrNull(f.reconnectMs[k])) p.push(`failover.reconnectMs.${k} is not a number or null`);
      }
    }
  }
  return p;
}

/**
 * `drawn` (--playout): per mode the summary, and a timeline list.
 * @param {any} d
 * @returns {string[]}
 */
function drawnProblems(d) {
  if (typeof d !== 'object' || !d.modes || typeof d.modes !== 'object') return ['drawn has no modes'];
  const p = Array.isArray(d.timeline) ? [] : ['drawn.timeline is not a list'];
  for (const [mode, m] of Object.entries(d.modes)) {
    if (typeof m?.frames !== 'number') p.push(`drawn.modes.${mode}.frames is not a number`);
    for (const k of ['p50', 'p95', 'p99', 'max']) if (!isNumOrNull(m?.positionCm?.[k])) p.push(`drawn.modes.${mode}.positionCm.${k} is not a number or null`);
    if (!isNumOrNull(m?.jumpsPerMinute)) p.push(`drawn.modes.${mode}.jumpsPerMinute is not a number or null`);
  }
  return p;
}

/**
 * A load flag (lab/report/saturation.js): absent, null, or { rule, figures }.
 * @param {any} run
 * @param {'saturated' | 'unsettled'} key
 * @returns {string[]}
 */
function loadFlagProblems(run, key) {
  if (!(key in run) || run[key] === null) return [];
  const flag = run[key];
  if (typeof flag !== 'object') return [`${key} is neither null nor {rule, figures}`];
  const p = [];
  if (typeof flag.rule !== 'string') p.push(`${key}.rule is not a string`);
  if (!flag.figures || typeof flag.figures !== 'object') p.push(`${key}.figures is not an object`);
  else for (const [k, v] of Object.entries(flag.figures)) if (typeof v !== 'string' && !isNumOrNull(v)) p.push(`${key}.figures.${k} is not a number, null or a name`);
  return p;
}

/**
 * The `fleet` block of a run over `carlab agent`s (lab/fleet/fleet.js fleetBlock):
 * `agents`, one per agent, each { name, host, peers, browsers, cpuPct,
 * rssMaxMb, startSkewMs }; `lost`, the agents lost mid-point.
 * @param {any} f
 * @returns {string[]}
 */
function fleetProblems(f) {
  if (typeof f !== 'object' || !Array.isArray(f.agents)) return ['fleet.agents is not a list'];
  const p = [];
  f.agents.forEach((/** @type {any} */ a, /** @type {number} */ i) => {
    for (const k of ['name', 'host']) if (typeof a?.[k] !== 'string') p.push(`fleet.agents[${i}].${k} is not a string`);
    if (typeof a?.peers !== 'number') p.push(`fleet.agents[${i}].peers is not a number`);
    if (!Array.isArray(a?.browsers)) p.push(`fleet.agents[${i}].browsers is not a list`);
    for (const k of ['cpuPct', 'rssMaxMb', 'startSkewMs']) if (!isNumOrNull(a?.[k])) p.push(`fleet.agents[${i}].${k} is not a number or null`);
  });
  if ('lost' in f && !Array.isArray(f.lost)) p.push('fleet.lost is not a list');
  return p;
}

/**
 * Problems with a whole results object.
 * @param {any} results
 * @returns {string[]}
 */
export function resultsSchemaProblems(results) {
  if (!results || typeof results !== 'object') return ['results is not an object'];
  const p = [];
  if (!results.env || typeof results.env !== 'object') p.push('env is missing');
  else if (typeof results.env.cpus !== 'number') p.push('env.cpus is missing');
  if (!Array.isArray(results.runs)) return [...p, 'runs is not an array'];
  results.runs.forEach((/** @type {unknown} */ run, /** @type {number} */ i) => { for (const q of runSchemaProblems(run)) p.push(`runs[${i}]: ${q}`); });
  p.push(...recordingProblems(results));
  return p;
}

/**
 * The parts a study recording adds to a results object (lab/report/recording-results.js),
 * optional, checked when present: `devices` (one object per page session),
 * `recording` (one recording's summary) or `recordings` (a combined report's).
 * @param {any} results
 * @returns {string[]}
 */
export function recordingProblems(results) {
  const p = [];
  const isObj = (/** @type {unknown} */ v) => typeof v === 'object' && v !== null && !Array.isArray(v);
  if ('devices' in results) {
    if (!Array.isArray(results.devices)) p.push('devices is not an array');
    else results.devices.forEach((/** @type {any} */ d, /** @type {number} */ i) => {
      if (!isObj(d)) p.push(`devices[${i}] is not an object`);
      else for (const k of ['reports', 'clientId']) if (k in d && typeof d[k] !== 'number') p.push(`devices[${i}].${k} is not a number`);
    });
  }
  /** @param {any} r @param {string} where */
  const summary = (r, where) => {
    if (!isObj(r)) return void p.push(`${where} is not an object`);
    if (typeof r.name !== 'string') p.push(`${where}.name is not a string`);
    if ('sessions' in r && typeof r.sessions !== 'number') p.push(`${where}.sessions is not a number`);
    if ('counts' in r) {
      if (!isObj(r.counts)) p.push(`${where}.counts is not an object`);
      else for (const [k, v] of Object.entries(r.counts)) if (typeof v !== 'number') p.push(`${where}.counts.${k} is not a number`);
    }
  };
  if ('recording' in results) summary(results.recording, 'recording');
  if ('recordings' in results) {
    if (!Array.isArray(results.recordings)) p.push('recordings is not an array');
    else results.recordings.forEach((/** @type {unknown} */ r, /** @type {number} */ i) => summary(r, `recordings[${i}]`));
  }
  return p;
}
