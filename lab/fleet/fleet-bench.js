// `carlab bench --agents N --nats URL --token T`: one sweep point over the
// browsers of several `carlab agent`s (lab/fleet/agent.js, docs/fleet.md). The
// bench finds the agents through NATS, starts the server under test (or takes
// --url), splits the point's peers over the agents by capacity with every
// working group interleaved over them (lab/fleet/fleet.js), has them open their
// pages, mesh and start together (the start skew measured on the bench's
// clock alone), drives warm-up and the measured window, and merges every
// agent's peers into one run record with a `fleet` block. An agent that dies
// or goes silent mid-point is recorded with its peers as lost peers, and the
// point finishes with the others; one that never answers fails the point
// with its name within a bounded time; Ctrl-C finishes the point early and
// every agent closes its browsers (and an agent whose bench vanished does so
// on its own after its lease).

import { randomBytes } from 'node:crypto';
import { Empty, JSONCodec, connect, createInbox } from 'nats';

import { startServerChild } from '../target/server-process.js';
import { baseOf } from '../bench/page-host.js';
import {
  AGENT_SILENCE_MS, DISCOVER_SUBJECT, HEARTBEATS, KEEPALIVE_MS, PREPARE_MAX_MS, PREPARE_STALL_MS, agentNameProblem, agentSubject,
  mergeFleetRun, splitPeers, startSkews,
} from './fleet.js';
import { parseNatsFlag } from '../shared/flags.js';

const jc = JSONCodec();

/** The bench's flags for a fleet (added to `carlab bench`'s). */
export const FLEET_FLAGS = Object.freeze({
  agents: { type: /** @type {const} */ ('string') },
  token: { type: /** @type {const} */ ('string') },
  'server-host': { type: /** @type {const} */ ('string') },
  'prepare-stall': { type: /** @type {const} */ ('string') },
});

/** Help of the fleet flags. */
export const FLEET_HELP = `Fleet over several machines (docs/fleet.md; \`carlab agent\` on each):
  --agents N|LIST      run the peers on N \`carlab agent\`s found on --nats (the first N free ones by
                       name), or on the agents named (a,b,c); each point's peers are split by the
                       agents' capacity, every working group interleaved over them
  --nats URL           the NATS the agents joined [CARLAB_NATS]
  --token T            the agents' shared token [CARLAB_TOKEN]
  --server-host ADDR   the address the bench's own server listens on and the agents reach it by
                       (default 127.0.0.1: agents on this machine); or measure --url
  --prepare-stall S    fail the point when an agent preparing it (launching browsers, opening
                       pages) has not moved on for S seconds, naming it and the step it stopped at
                       (default ${PREPARE_STALL_MS / 1000}); how long a prepare takes is no failure while it moves`;

/**
 * The fleet settings of a bench run.
 * @typedef {object} FleetSettings
 * @property {number | string[]} agents how many, or which
 * @property {string} natsUrl
 * @property {string} token
 * @property {string} serverHost
 * @property {number} [discoverMs] how long agents have to answer (default 5000)
 * @property {number} [prepareStallMs] a preparing agent whose progress does not move this long fails
 *   the point (default PREPARE_STALL_MS)
 */

/**
 * Reads and checks the fleet flags; sets `o.fleet` (null without --agents).
 * @param {any} o the bench's parsed options
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {string | null} a usage problem
 */
export function fleetOptionsProblem(o, env = process.env) {
  const v = o.values;
  o.fleet = null;
  if (v.agents === undefined) {
    for (const flag of ['token', 'server-host', 'prepare-stall']) if (v[flag] !== undefined) return `--${flag} goes with --agents`;
    return null;
  }
  const text = String(v.agents).trim();
  /** @type {number | string[]} */
  let agents;
  if (/^\d+$/.test(text)) {
    agents = Number(text);
    if (agents < 1 || agents > 1000) return `--agents: ${text} is not a number of agents 1..1000`;
  } else {
    agents = text.split(',').map((s) => s.trim()).filter(Boolean);
    if (agents.length === 0) return '--agents: empty list';
    for (const name of agents) { const p = agentNameProblem(name); if (p) return `--agents: ${p}`; }
    if (new Set(agents).size !== agents.length) return '--agents: a name twice';
  }
  const nats = o.nats ?? env.CARLAB_NATS;
  if (!nats) return '--agents needs --nats URL (or CARLAB_NATS): the NATS the agents joined';
  try { parseNatsFlag(nats); } catch (err) { return /** @type {Error} */ (err).message; }
  const token = v.token ?? env.CARLAB_TOKEN;
  if (!token) return '--agents needs --token T (or CARLAB_TOKEN): the agents\' shared token';
  if (o.nets) return '--agents: --net shapes links on this machine; agents run on their own machines (not with --net)';
  if (o.relays.some((/** @type {number} */ n) => n > 0)) return '--agents with --relays is not supported yet: measure a cluster with --url';
  let prepareStallMs = PREPARE_STALL_MS;
  if (v['prepare-stall'] !== undefined) {
    const seconds = Number(v['prepare-stall']);
    if (!(seconds >= 1 && seconds <= 3600)) return `--prepare-stall: ${v['prepare-stall']} is not a number of seconds 1..3600`;
    prepareStallMs = seconds * 1000;
  }
  o.fleet = /** @type {FleetSettings} */ ({ agents, natsUrl: nats, token, serverHost: v['server-host'] ?? '127.0.0.1', prepareStallMs });
  return null;
}

/**
 * The fleet's part of the results' environment (no token; no credentials of the NATS URL).
 * @param {FleetSettings | null} fleet
 */
export function fleetEnv(fleet) {
  if (!fleet) return {};
  let nats = fleet.natsUrl;
  try { const u = new URL(nats); u.username = ''; u.password = ''; nats = u.toString(); } catch { /* as given */ }
  return { fleet: { agents: fleet.agents, nats } };
}

/** How long a point waits at its end for each agent to have closed its browsers. */
export const FREE_AGAIN_MS = 30_000;

/**
 * Finds the agents of a point: the named ones, or N free ones having the
 * fleet's browsers (by name), within `discoverMs`. Agents still closing a
 * run's browsers (a bench that just ended) are waited for, FREE_AGAIN_MS more.
 * @param {import('nats').NatsConnection} nc
 * @param {FleetSettings} fleet
 * @param {string[]} browsers
 * @returns {Promise<import('./fleet.js').AgentAdvert[]>}
 */
export async function findAgents(nc, fleet, browsers) {
  const discoverMs = fleet.discoverMs ?? 5000;
  /** @type {Map<string, import('./fleet.js').AgentAdvert>} */
  const seen = new Map();
  const take = (/** @type {Uint8Array} */ data) => {
    try { const a = /** @type {import('./fleet.js').AgentAdvert} */ (jc.decode(data)); if (a?.name) seen.set(a.name, a); } catch { /* not ours */ }
  };
  const inbox = createInbox();
  const replies = nc.subscribe(inbox, { callback: (err, m) => { if (!err) take(m.data); } });
  const beats = nc.subscribe(HEARTBEATS, { callback: (err, m) => { if (!err) take(m.data); } });
  const hasBrowsers = (/** @type {import('./fleet.js').AgentAdvert} */ a) => browsers.every((b) => a.browsers.includes(b));
  const fits = (/** @type {import('./fleet.js').AgentAdvert} */ a) => !a.busy && hasBrowsers(a);
  const named = Array.isArray(fleet.agents) ? fleet.agents : null;
  /** Every named agent heard and passing `ok`, or N with the browsers passing it. @param {(a: import('./fleet.js').AgentAdvert) => boolean} ok */
  const all = (ok) => (named
    ? named.every((n) => { const a = seen.get(n); return a !== undefined && ok(a); })
    : [...seen.values()].filter((a) => hasBrowsers(a) && ok(a)).length >= /** @type {number} */ (fleet.agents));
  // named: all heard, none still closing (a busy one is refused below); counted: N free ones
  const enough = () => all(named ? (a) => !a.closing : (a) => !a.busy);
  // enough once those closing a run are free: worth waiting for
  const enoughSoon = () => all((a) => !a.busy || a.closing === true);
  try {
    const start = Date.now();
    const deadline = () => start + discoverMs + (enoughSoon() ? FREE_AGAIN_MS : 0);
    let asked = start;
    nc.publish(DISCOVER_SUBJECT, Empty, { reply: inbox });
    // a moment for every agent to answer (the choice is by name), then as soon as there are enough;
    // asked again each 1.5 s while too few (heartbeats tell the rest)
    while (Date.now() < deadline() && !(enough() && Date.now() - start >= 500)) {
      await new Promise((r) => setTimeout(r, 50));
      if (Date.now() - asked > 1500 && !enough()) {
        asked = Date.now();
        nc.publish(DISCOVER_SUBJECT, Empty, { reply: inbox });
      }
    }
  } finally {
    replies.unsubscribe();
    beats.unsubscribe();
  }
  const s = (/** @type {number} */ ms) => `${Math.round(ms / 100) / 10} s`;
  if (named) {
    /** @type {import('./fleet.js').AgentAdvert[]} */
    const out = [];
    for (const name of named) {
      const a = seen.get(name);
      if (!a) throw new Error(`agent ${name} did not answer within ${s(discoverMs)} (is \`carlab agent --name ${name}\` running on ${fleet.natsUrl}?)`);
      if (a.busy) throw new Error(`agent ${name} is busy with another run (${a.busy}${a.closing ? ', still closing its browsers' : ''})`);
      const missing = browsers.filter((b) => !a.browsers.includes(b));
      if (missing.length) throw new Error(`agent ${name} has no ${missing.join(', ')} (it has ${a.browsers.join(', ') || 'none'})`);
      out.push(a);
    }
    return out;
  }
  const n = /** @type {number} */ (fleet.agents);
  const usable = [...seen.values()].filter(fits).sort((a, b) => (a.name < b.name ? -1 : 1));
  if (usable.length < n) {
    const busy = [...seen.values()].filter((a) => a.busy).map((a) => `${a.name} (busy)`);
    const lacking = [...seen.values()].filter((a) => !a.busy && !fits(a)).map((a) => `${a.name} (no ${browsers.filter((b) => !a.browsers.includes(b)).join(', ')})`);
    throw new Error(`--agents ${n}: ${usable.length} free agent(s) with ${browsers.join(', ')} answered within ${s(discoverMs)} on ${fleet.natsUrl}`
      + `${usable.length ? `: ${usable.map((a) => a.name).join(', ')}` : ''}${[...busy, ...lacking].length ? `; not used: ${[...busy, ...lacking].join(', ')}` : ''}`);
  }
  return usable.slice(0, n);
}

/**
 * @typedef {object} FleetPointOptions
 * @property {import('../shared/flags.js').SweepPoint} point
 * @property {number} durationS
 * @property {number} warmupS
 * @property {number} updates
 * @property {number} ackTimeoutMs
 * @property {string[]} browsers
 * @property {number} peersPerPage
 * @property {number} pagesPerBrowser
 * @property {string | null} url
 * @property {FleetSettings} fleet
 * @property {(p: { phase: string, elapsedS: number, rtMean: number | null }) => void} [onProgress]
 * @property {() => boolean} [shouldStop]
 */

/**
 * One agent in a point, as the bench drives it.
 * @typedef {import('./fleet.js').AgentPart & { indices: number[], pages: number }} Part
 */

/**
 * Runs one point over the agents and returns its run record.
 * @param {FleetPointOptions} o
 */
export async function runFleetPoint(o) {
  const { point, fleet } = o;
  const nc = await connect({ servers: fleet.natsUrl, name: 'carlab-bench', timeout: 5000, maxReconnectAttempts: -1, reconnectTimeWait: 250 })
    .catch((err) => { throw new Error(`cannot reach NATS at ${fleet.natsUrl}: ${err.message}`); });
  /** When each agent was last heard (heartbeats, replies): performance.now(). @type {Map<string, number>} */
  const heard = new Map();
  /** Per agent, the prepare step its heartbeats last said, and when it changed. @type {Map<string, { step: string, at: number }>} */
  const steps = new Map();
  const beats = nc.subscribe(HEARTBEATS, {
    callback: (err, m) => {
      if (err) return;
      const name = m.subject.slice(HEARTBEATS.length - 1);
      const now = performance.now();
      heard.set(name, now);
      noteStep(name, m.data, now);
    },
  });
  /** @param {string} name @param {Uint8Array} data an advert @param {number} now */
  const noteStep = (name, data, now) => {
    let progress;
    try { progress = /** @type {any} */ (jc.decode(data))?.progress; } catch { return; }
    if (!progress || progress.runId !== runId || typeof progress.step !== 'string') return;
    const step = progress.step.slice(0, 100);
    if (steps.get(name)?.step === step) return;
    steps.set(name, { step, at: now });
    o.onProgress?.({ phase: `preparing: ${[...steps].map(([n, x]) => `${n} ${x.step}`).join(', ')}`, elapsedS: 0, rtMean: null });
  };
  const runId = `fleet${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
  let pointStart = performance.now();
  const atS = () => Math.round((performance.now() - pointStart) / 100) / 10;
  /** @type {Part[]} */
  let parts = [];
  /** @type {Awaited<ReturnType<typeof startServerChild>> | null} */
  let server = null;
  /** Parts whose run on the agent is over (finished, aborted, lost). @type {Set<Part>} */
  const settled = new Set();

  /**
   * One request to an agent; rejects with its name on a refusal, after
   * `timeoutMs`, as soon as it has been silent AGENT_SILENCE_MS, or (with
   * `stallMs`) once the step its heartbeats say has not moved for that long.
   * The error's `code`: AGENT_REFUSED, AGENT_SILENT, AGENT_STALLED,
   * AGENT_ABSENT, AGENT_SLOW (timed out while its heartbeats go on) or AGENT_FAILED.
   * @param {Part} part @param {string} op @param {Record<string, unknown>} [body] @param {number} [timeoutMs]
   * @param {number} [stallMs]
   * @returns {Promise<any>}
   */
  const call = (part, op, body = {}, timeoutMs = 10_000, stallMs = 0) => new Promise((resolve, reject) => {
    const fail = (/** @type {string} */ code, /** @type {string} */ message) => reject(Object.assign(new Error(message), { code }));
    const started = performance.now();
    const watch = setInterval(() => {
      const now = performance.now();
      if (now - Math.max(heard.get(part.name) ?? 0, started) > AGENT_SILENCE_MS) {
        clearInterval(watch);
        fail('AGENT_SILENT', `agent ${part.name} went silent (no heartbeat for ${AGENT_SILENCE_MS / 1000} s) during ${op}`);
        return;
      }
      const step = steps.get(part.name);
      if (stallMs > 0 && now - Math.max(step?.at ?? 0, started) > stallMs) {
        clearInterval(watch);
        fail('AGENT_STALLED', `agent ${part.name} made no progress for ${Math.round(stallMs / 1000)} s during ${op}; `
          + `it stopped at: ${step ? step.step : 'nothing reported'}`);
      }
    }, 250);
    nc.request(agentSubject(part.name), jc.encode({ op, token: fleet.token, runId, ...body }), { timeout: timeoutMs }).then((m) => {
      clearInterval(watch);
      heard.set(part.name, performance.now());
      const answer = /** @type {any} */ (jc.decode(m.data));
      if (answer?.ok) resolve(answer);
      else fail('AGENT_REFUSED', `agent ${part.name} refused ${op}: ${answer?.error ?? 'no reason given'}`);
    }, (err) => {
      clearInterval(watch);
      const said = String(err?.code ?? err?.message);
      if (/503|no responders/i.test(said)) fail('AGENT_ABSENT', `agent ${part.name} is not there (no responders)`);
      else if (/timeout/i.test(said)) fail('AGENT_SLOW', `agent ${part.name} did not answer ${op} within ${Math.round(timeoutMs / 1000)} s`);
      else fail('AGENT_FAILED', `agent ${part.name}: ${err?.message ?? err}`);
    });
  });

  /** Marks an agent lost mid-point (its peers become lost peers). @param {Part} part @param {string} phase @param {Error} err */
  const lose = (part, phase, err) => {
    if (part.lost || settled.has(part)) return;
    part.lost = { atS: atS(), phase, reason: err.message };
    settled.add(part);
    o.onProgress?.({ phase: `lost agent ${part.name} (${part.peers} peers) at ${part.lost.atS} s: ${err.message}`, elapsedS: atS(), rtMean: null });
  };
  const alive = () => parts.filter((p) => !p.lost && p.peers > 0);
  /**
   * The same request to every live agent at once; an agent that fails is
   * lost (mid-point) or fails the point (before the start). A poll's slow
   * answer (`slowIsLost` false) is only no answer: the agent's heartbeats say
   * whether it is there, and a loaded machine answers a page's poll late.
   * @param {string} op @param {(p: Part) => Record<string, unknown>} body @param {(p: Part) => number} timeoutMs @param {boolean} fatal
   * @param {boolean} [slowIsLost]
   * @param {number} [stallMs] see call()
   */
  const everyAgent = async (op, body, timeoutMs, fatal, slowIsLost = true, stallMs = 0) => {
    const live = alive();
    const answers = await Promise.allSettled(live.map((p) => call(p, op, body(p), timeoutMs(p), stallMs)));
    const failed = answers.map((a, i) => ({ a, p: live[i] }))
      .filter(({ a }) => a.status === 'rejected' && (slowIsLost || a.reason?.code !== 'AGENT_SLOW'));
    // a failed agent is lost either way: the abort at the end does not wait long on it
    for (const { a, p } of failed) lose(p, op, /** @type {PromiseRejectedResult} */ (a).reason);
    if (fatal && failed.length) throw new Error(failed.map(({ a }) => /** @type {PromiseRejectedResult} */ (a).reason.message).join('; '));
    if (alive().length === 0) throw new Error(`every agent was lost: ${parts.map((p) => `${p.name}: ${p.lost?.reason}`).join('; ')}`);
    return new Map(answers.map((a, i) => [live[i], a.status === 'fulfilled' ? a.value : null]));
  };

  // the agents' lease: while one waits for the others (opening pages can take long), it knows we are here
  const keepalive = setInterval(() => {
    for (const p of parts) {
      if (p.peers > 0 && !settled.has(p)) try { nc.publish(agentSubject(p.name), jc.encode({ op: 'keepalive', token: fleet.token, runId })); } catch { /* closed */ }
    }
  }, KEEPALIVE_MS);
  try {
    o.onProgress?.({ phase: 'finding agents', elapsedS: 0, rtMean: null });
    const adverts = await findAgents(nc, fleet, o.browsers);
    const now = performance.now();
    for (const a of adverts) heard.set(a.name, now);
    let servers;
    if (o.url) servers = [baseOf(o.url)];
    else {
      // our own server: the agents' pages come from their own origins
      server = await startServerChild({ ackTimeoutMs: o.ackTimeoutMs, host: fleet.serverHost, allowedOrigins: ['*'] });
      servers = [baseOf(server.url)];
    }
    const shares = splitPeers(point.clients, adverts);
    parts = adverts.map((a, i) => ({
      name: a.name, host: a.host, peers: shares[i].length, indices: shares[i], pages: Math.ceil(shares[i].length / o.peersPerPage),
      result: null, startSkewMs: null, lost: null,
    }));
    for (const p of parts) if (p.peers === 0) settled.add(p);
    const job = (/** @type {Part} */ p) => ({
      job: {
        point, indices: p.indices, servers, browsers: o.browsers, peersPerPage: o.peersPerPage, pagesPerBrowser: o.pagesPerBrowser,
        warmupS: o.warmupS, updates: o.updates, ackTimeoutMs: o.ackTimeoutMs,
      },
    });
    o.onProgress?.({ phase: `${alive().length} agents opening pages`, elapsedS: 0, rtMean: null });
    // bounded by progress, not a stopwatch: each agent says the step it reached (PREPARE_STALL_MS)
    await everyAgent('prepare', job, () => PREPARE_MAX_MS, true, true, fleet.prepareStallMs ?? PREPARE_STALL_MS);
    if (o.shouldStop?.()) throw new Error('interrupted while opening pages');
    o.onProgress?.({ phase: 'meshing', elapsedS: 0, rtMean: null });
    await everyAgent('mesh', () => ({}), () => 75_000, true);

    // Together: the start goes to every agent at once; each says how long it took on its own clock.
    /** @type {Map<Part, { sentAt: number, repliedAt: number, tookMs: number }>} */
    const timing = new Map();
    const live = alive();
    pointStart = performance.now();
    await Promise.all(live.map(async (p) => {
      const sentAt = performance.now();
      const answer = await call(p, 'start', {}, 15_000);
      timing.set(p, { sentAt, repliedAt: performance.now(), tookMs: Number(answer.tookMs) || 0 });
    })).catch((err) => { throw new Error(`start: ${err.message}`); });
    const skews = startSkews(live.map((p) => /** @type {any} */ (timing.get(p))));
    live.forEach((p, i) => { p.startSkewMs = skews[i].startSkewMs; });

    const watchPhase = async (/** @type {string} */ phase, /** @type {number} */ seconds) => {
      const end = performance.now() + seconds * 1000;
      while (performance.now() < end && !o.shouldStop?.()) {
        await new Promise((r) => setTimeout(r, Math.min(1000, Math.max(0, end - performance.now()))));
        const answers = await everyAgent('live', () => ({}), () => 4000, false, false);
        let sum = 0; let n = 0;
        for (const a of answers.values()) if (a) { sum += a.sum; n += a.n; }
        o.onProgress?.({ phase, elapsedS: atS(), rtMean: n ? sum / n : null });
      }
    };
    await watchPhase('warm-up', o.warmupS);
    await server?.resetWindow();
    await everyAgent('measure', () => ({}), () => 5000, false);
    const windowStart = performance.now();
    await watchPhase('measuring', o.updates > 0 ? (o.updates * point.cycleMs) / 1000 + 2 : o.durationS);
    const windowMs = performance.now() - windowStart;
    const serverMetrics = server ? await server.metrics() : null;
    // Every agent stops its peers before any counts what reached them (lab/fleet/agent.js stopPages).
    await everyAgent('stop', () => ({}), () => 15_000, false);
    const finished = await everyAgent('finish', () => ({}), () => 45_000, false);
    for (const [p, answer] of finished) {
      if (!answer) continue;
      try {
        const chunks = [];
        for (let i = 0; i < answer.chunks; i++) chunks.push(Buffer.from((await call(p, 'chunk', { index: i }, 15_000)).data, 'base64'));
        p.result = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        settled.add(p);
      } catch (err) {
        lose(p, 'results', /** @type {Error} */ (err));
      }
    }
    return mergeFleetRun({
      point, parts, serverMetrics, windowMs, browsers: o.browsers, peersPerPage: o.peersPerPage, stoppedEarly: Boolean(o.shouldStop?.()),
    });
  } finally {
    clearInterval(keepalive);
    // Every agent still on this point stops it; each answers once its browsers are closed (one that
    // sent its results may still be closing them), so the next point finds them free: it found both
    // busy, closing their browsers, on a loaded machine. A lost one is asked too, in case it is alive
    // but was cut off (its lease would stop it anyway), without waiting long.
    await Promise.allSettled(parts.filter((p) => p.peers > 0).map((p) => call(p, 'abort', {}, p.lost ? 3000 : FREE_AGAIN_MS)));
    beats.unsubscribe();
    await nc.drain().catch(() => nc.close());
    await server?.close();
  }
}
