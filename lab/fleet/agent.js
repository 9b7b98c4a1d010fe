// `carlab agent`: one machine's browsers for a bench run elsewhere
// (docs/fleet.md). It joins NATS, answers discovery with what it has (name,
// cores, memory, browsers), says it is alive every second, and runs the peers
// a controller gives it with the same launch settings and DevTools driver as
// a local bench (lab/bench/bench.js's launchFleet, openPages, ... by import), its
// peer pages hosted by itself (lab/bench/page-host.js) and pointed at the server
// under test. Every request must carry the shared token (compared in
// constant time); without it nothing is opened. One run at a time: a busy
// agent refuses another. A run whose controller goes quiet for LEASE_MS
// (it died, or this agent lost the broker) is stopped and its browsers closed.

import os from 'node:os';
import { readFileSync } from 'node:fs';
import { access, constants } from 'node:fs/promises';
import { connect, JSONCodec } from 'nats';

import {
  browserCapabilitiesOf, collectPeerStats, launchFleet, openPages, waitForMesh, waitUntilSettled,
} from '../bench/bench.js';
import { CHROMIUM_PATH, FIREFOX_PATH } from '../bench/launch.js';
import { webkitMissing } from '../bench/webkit.js';
import { sampleProcessTree } from '../shared/proctree.js';
import { sumReportTallies } from '../report/tallies.js';
import { checkServerAllowsOrigin, startPageHost } from '../bench/page-host.js';
import {
  DISCOVER_SUBJECT, HEARTBEAT_MS, LEASE_MS, agentPageLayout, agentSubject, heartbeatSubject, tokenMatches,
} from './fleet.js';

const jc = JSONCodec();
const VERSION = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version;

/** Bytes of one chunk of a result (NATS refuses messages over the server's max_payload, 1 MiB by default). */
const CHUNK_BYTES = 512 * 1024;

/**
 * The browsers this machine can launch for a fleet: Debian's Chromium and
 * Firefox ESR where their executables are, WebKitGTK where its WebDriver,
 * Xvfb and MiniBrowser are.
 * @returns {Promise<string[]>}
 */
export async function availableBrowsers() {
  /** @type {string[]} */
  const out = [];
  for (const [name, file] of /** @type {const} */ ([['chromium', CHROMIUM_PATH], ['firefox', FIREFOX_PATH]])) {
    if (await access(file, constants.X_OK).then(() => true, () => false)) out.push(name);
  }
  if (webkitMissing() === null) out.push('webkit');
  return out;
}

/**
 * An agent's default name: the host name as a subject token.
 * @param {string} [host]
 */
export function defaultAgentName(host = os.hostname()) {
  return host.replace(/[^A-Za-z0-9_-]/g, '-').slice(0, 64) || 'agent';
}

/**
 * The first of `base`, `base-2`, `base-3`, ... that no agent on the NATS has:
 * a second agent started on one host without --name gets a name of its own
 * instead of being refused.
 * @param {string} base the default name (defaultAgentName)
 * @param {Iterable<string>} taken names of the agents already there
 */
export function freeAgentName(base, taken) {
  const names = new Set(taken);
  if (!names.has(base)) return base;
  for (let n = 2; ; n++) {
    const suffix = `-${n}`;
    const candidate = `${base.slice(0, 64 - suffix.length)}${suffix}`;
    if (!names.has(candidate)) return candidate;
  }
}

/**
 * What a controller asks an agent to run.
 * @typedef {object} AgentJob
 * @property {import('../shared/flags.js').SweepPoint} point
 * @property {number[]} indices the population indices of this agent's peers
 * @property {string[]} servers base URLs of the server(s) under test
 * @property {string[]} browsers the fleet mix
 * @property {number} peersPerPage
 * @property {number} pagesPerBrowser
 * @property {number} warmupS
 * @property {number} updates
 * @property {number} ackTimeoutMs
 */

/**
 * A run in progress on this agent.
 * @typedef {object} AgentRun
 * @property {string} runId
 * @property {AgentJob} job
 * @property {import('../bench/bench.js').FleetBrowser[]} browsers
 * @property {import('../bench/bench.js').FleetPageOf[]} pages
 * @property {string[]} pageErrors
 * @property {Record<string, { webrtc: boolean, userAgent: string }>} capabilities
 * @property {number} pageCount
 * @property {number} browserCount
 * @property {number} setupMs
 * @property {ReturnType<typeof sampleProcessTree> | null} sampler
 * @property {[string, ReturnType<typeof sampleProcessTree>][]} kindSamplers a mixed fleet's, one per browser kind
 * @property {NodeJS.CpuUsage | null} cpuAtWindow
 * @property {number} windowStart
 * @property {{ windowMs: number, usage: { cpuPct: number | null, rssMaxBytes: number | null },
 *   browserUsage: Record<string, { cpuPct: number | null, rssMaxBytes: number | null }>, cpu: NodeJS.CpuUsage | null } | null} window
 *   the measured window, closed when the pages stopped
 * @property {number} lastHeard performance.now() of the controller's last request
 * @property {number} inFlight requests being worked on
 * @property {string | null} step while preparing: the step reached, said in the heartbeats (PREPARE_STALL_MS)
 * @property {Promise<void> | null} ending the closing of its browsers, once begun (endRun)
 * @property {Buffer | null} result the finished run's result, JSON, sent in chunks
 */

/**
 * @typedef {object} AgentOptions
 * @property {string} natsUrl
 * @property {string} token the shared token
 * @property {string} name
 * @property {boolean} [nameIsDefault] the name was not given: if another agent has it, take the
 *   first free `NAME-2`, `NAME-3`, ... (freeAgentName) instead of refusing to start
 * @property {number} [capacity] weight in the split (default: cores)
 * @property {number} [pagesPort] the page host's port (default: a free one)
 * @property {(line: string) => void} [log]
 * @property {number} [leaseMs]
 */

/**
 * This agent's name among those on the NATS (asked with one discovery round):
 * a given name that another agent has is refused (the agent does not start);
 * the default one is made free (freeAgentName).
 * @param {import('nats').NatsConnection} nc
 * @param {AgentOptions} o
 * @returns {Promise<string>}
 */
async function unusedName(nc, o) {
  /** @type {import('./fleet.js').AgentAdvert[]} */
  const others = [];
  try {
    for await (const m of await nc.requestMany(DISCOVER_SUBJECT, undefined, { maxWait: 600 })) {
      others.push(/** @type {import('./fleet.js').AgentAdvert} */ (jc.decode(m.data)));
    }
  } catch { /* no responders: no other agent yet */ }
  if (o.nameIsDefault) return freeAgentName(o.name, others.map((a) => a.name));
  // A name is one agent: refuse to start beside another of the same name.
  const twin = others.find((a) => a.name === o.name);
  if (!twin) return o.name;
  await nc.close();
  throw new Error(`agent name "${o.name}" is taken (pid ${twin.pid} on ${twin.host}): give this one another --name`);
}

/**
 * Starts an agent; resolves once it is on NATS and answering.
 * @param {AgentOptions} o
 */
export async function startAgent(o) {
  const log = o.log ?? (() => {});
  const leaseMs = o.leaseMs ?? LEASE_MS;
  const nc = await connect({
    servers: o.natsUrl, name: `carlab-agent-${o.name}`, maxReconnectAttempts: -1, reconnectTimeWait: 500, timeout: 5000,
    pingInterval: 2000, maxPingOut: 2,
  });
  // the name first: an agent refused for it starts nothing else
  const name = await unusedName(nc, o);
  const pageHost = await startPageHost({ port: o.pagesPort ?? 0 });
  const browsers = await availableBrowsers();
  const cores = os.availableParallelism();
  /** @type {AgentRun | null} */
  let run = null;

  /** @returns {import('./fleet.js').AgentAdvert} */
  const advert = () => ({
    name,
    host: os.hostname(),
    pid: process.pid,
    cores,
    memoryMb: Math.round(os.totalmem() / 2 ** 20),
    freeMemoryMb: Math.round(os.freemem() / 2 ** 20),
    browsers,
    capacity: o.capacity ?? cores,
    busy: run?.runId ?? null,
    closing: Boolean(run?.ending),
    progress: run?.step ? { runId: run.runId, step: run.step } : null,
    pagesOrigin: pageHost.origin,
    version: VERSION,
  });

  /** Publishes this agent's advert as a heartbeat. */
  const announce = () => {
    try { nc.publish(heartbeatSubject(name), jc.encode(advert())); } catch { /* closed */ }
  };

  /**
   * Closes the run's pages and browsers; the agent is free again once it resolves. Every caller
   * gets the same closing (the controller's `abort` waits for one a finish began).
   * @param {string} why
   */
  const endRun = (why) => {
    const r = run;
    if (!r) return Promise.resolve();
    r.ending ??= (async () => {
      r.sampler?.stop();
      for (const [, k] of r.kindSamplers) k.stop();
      log(`run ${r.runId}: ${why}; closing ${r.browsers.length} browser(s)`);
      for (const { page } of r.pages) await page.evaluate(() => window.carlab.close()).catch(() => {});
      for (const b of r.browsers) await b.close().catch(() => {});
      if (run === r) run = null;
      announce(); // free again: said at once, for a bench waiting to find this agent free (findAgents)
    })();
    return r.ending;
  };

  /** @param {any} req @param {import('nats').Msg} msg */
  const handle = async (req, msg) => {
    const reply = (/** @type {object} */ body) => { try { msg.respond(jc.encode(body)); } catch { /* gone */ } };
    if (!tokenMatches(req?.token, o.token)) {
      log(`refused "${String(req?.op).slice(0, 20)}" from a controller without the shared token`);
      reply({ ok: false, error: 'wrong token: the agent opens nothing for a controller without the shared token' });
      return;
    }
    if (req.op === 'prepare') {
      if (run) { reply({ ok: false, busy: true, error: `busy with run ${run.runId}` }); return; }
      const job = /** @type {AgentJob} */ (req.job);
      const missing = job.browsers.filter((b) => !browsers.includes(b));
      if (missing.length) { reply({ ok: false, error: `no ${missing.join(', ')} here (it has ${browsers.join(', ') || 'none'})` }); return; }
      if (!Array.isArray(job.servers) || job.servers.length === 0 || !job.servers.every((s) => /^https?:\/\//.test(s))) {
        reply({ ok: false, error: 'no http(s) server to point the pages at' });
        return;
      }
      run = {
        runId: String(req.runId), job, browsers: [], pages: [], pageErrors: [], capabilities: {}, pageCount: 0, browserCount: 0,
        setupMs: 0, sampler: null, kindSamplers: [], cpuAtWindow: null, windowStart: 0, window: null, lastHeard: performance.now(), inFlight: 1, ending: null, result: null, step: 'checking the server',
      };
      const r = run;
      try {
        const t0 = performance.now();
        pageHost.setServer(job.servers[0]);
        await checkServerAllowsOrigin(job.servers[0], pageHost.origin);
        const layout = agentPageLayout(job.indices, { peersPerPage: job.peersPerPage, pagesPerBrowser: job.pagesPerBrowser, kinds: new Set(job.browsers).size });
        r.pageCount = layout.pageCount;
        r.browserCount = layout.browserCount;
        const bench = benchOptions(r);
        log(`run ${r.runId}: ${job.indices.length} peers of ${job.point.transport} in ${layout.pageCount} page(s), ${layout.browserCount} browser(s)`);
        r.step = `launched 0/${layout.browserCount} browsers`;
        announce();
        await launchFleet(bench, layout.browserCount, null, r.browsers);
        await openPages(bench, { layout, browsers: r.browsers, baseUrls: job.servers, runId: r.runId, pageHost: pageHost.url }, r.pages, r.pageErrors);
        r.capabilities = await browserCapabilitiesOf(r.pages);
        r.setupMs = Math.round(performance.now() - t0);
        r.step = null;
        reply({ ok: true, pages: r.pageCount, browserProcesses: r.browserCount, setupMs: r.setupMs });
      } catch (err) {
        reply({ ok: false, error: /** @type {Error} */ (err).message });
        await endRun(`prepare failed: ${/** @type {Error} */ (err).message}`);
      } finally {
        r.inFlight--;
        r.lastHeard = performance.now();
      }
      return;
    }
    const r = run;
    if (!r || r.runId !== String(req.runId)) {
      reply({ ok: false, error: req.op === 'abort' ? 'no such run (already ended)' : `no run ${req.runId} here${run ? ` (busy with ${run.runId})` : ''}` });
      return;
    }
    r.lastHeard = performance.now();
    if (req.op === 'keepalive') return; // published, not asked: nothing to answer
    r.inFlight++;
    try {
      reply(await runOp(r, req));
    } catch (err) {
      reply({ ok: false, error: /** @type {Error} */ (err).message });
    } finally {
      r.inFlight--;
      r.lastHeard = performance.now();
    }
  };

  /**
   * Stops the pages' cycles and closes the measured window, once: the controller sends `stop` to
   * every agent before any `finish`, so that no agent counts its peers' streams while another's
   * peers still send into them (their late updates were counted lost, 5 % once).
   * @param {AgentRun} r
   */
  const stopPages = async (r) => {
    if (r.window) return r.window;
    const windowMs = r.windowStart ? performance.now() - r.windowStart : 0;
    const usage = r.sampler?.stop() ?? { cpuPct: null, rssMaxBytes: null };
    r.sampler = null;
    /** @type {Record<string, { cpuPct: number | null, rssMaxBytes: number | null }>} */
    const browserUsage = r.kindSamplers.length
      ? Object.fromEntries(r.kindSamplers.map(([name, k]) => { const u = k.stop(); return [name, { cpuPct: u.cpuPct, rssMaxBytes: u.rssMaxBytes }]; }))
      : Object.fromEntries([...new Set(r.browsers.map((b) => b.name))].map((name) => [name, { cpuPct: usage.cpuPct, rssMaxBytes: usage.rssMaxBytes }]));
    r.kindSamplers = [];
    const cpu = r.cpuAtWindow ? process.cpuUsage(r.cpuAtWindow) : null;
    r.window = { windowMs, usage, browserUsage, cpu };
    await Promise.all(r.pages.map(({ page }) => page.evaluate(() => window.carlab.stop())));
    return r.window;
  };

  /** What a bench.js page driver needs of the point. @param {AgentRun} r */
  const benchOptions = (r) => /** @type {import('../bench/bench.js').BenchPointOptions} */ ({
    point: r.job.point, browsers: r.job.browsers, net: null, ackTimeoutMs: r.job.ackTimeoutMs, warmupS: r.job.warmupS,
    updates: r.job.updates, durationS: 0, peersPerPage: r.job.peersPerPage, pagesPerBrowser: r.job.pagesPerBrowser, url: null,
    shouldStop: () => r.ending !== null,
    // each browser launched and page opened while preparing: said at once, the bench watches it move
    onProgress: (/** @type {{ phase: string }} */ p) => {
      if (r.step === null) return;
      r.step = p.phase;
      announce();
    },
  });

  /** @param {AgentRun} r @param {any} req @returns {Promise<object>} */
  const runOp = async (r, req) => {
    switch (req.op) {
      case 'mesh':
        await waitForMesh(r.pages);
        return { ok: true };
      case 'start': {
        const t0 = performance.now();
        await Promise.all(r.pages.map(({ page }) => page.evaluate(() => window.carlab.start())));
        return { ok: true, tookMs: performance.now() - t0 };
      }
      case 'live': {
        const live = await Promise.all(r.pages.map(({ page }) => page.evaluate(() => window.carlab.liveRt())));
        return { ok: true, sum: live.reduce((s, l) => s + l.sum, 0), n: live.reduce((s, l) => s + l.n, 0) };
      }
      case 'measure': {
        const rootsOf = (/** @type {import('../bench/bench.js').FleetBrowser} */ b) => b.pids ?? [b.pid];
        r.sampler = sampleProcessTree(() => r.browsers.flatMap(rootsOf));
        // a mixed fleet: each kind's process trees on their own as well (as lab/bench/bench.js)
        const kinds = [...new Set(r.browsers.map((b) => b.name))];
        r.kindSamplers = kinds.length > 1
          ? kinds.map((name) => [name, sampleProcessTree(() => r.browsers.filter((b) => b.name === name).flatMap(rootsOf))])
          : [];
        r.cpuAtWindow = process.cpuUsage();
        r.windowStart = performance.now();
        log(`run ${r.runId}: measuring`);
        return { ok: true };
      }
      case 'stop':
        await stopPages(r);
        return { ok: true };
      case 'finish': {
        const { windowMs, usage, browserUsage, cpu } = await stopPages(r);
        await waitUntilSettled(r.pages);
        const reports = sumReportTallies(await Promise.all(r.pages.map(({ page }) => page.evaluate(() => window.carlab.finishReports()))));
        const clients = await collectPeerStats(r.pages);
        /** @type {Record<string, string>} */
        const browserVersions = {};
        for (const b of r.browsers) browserVersions[b.name] = b.version;
        /** @type {import('./fleet.js').AgentResult} */
        const result = {
          clients,
          cpuPct: usage.cpuPct,
          rssMaxBytes: usage.rssMaxBytes,
          browserUsage,
          agentCpuPct: cpu && windowMs > 0 ? Math.round(((cpu.user + cpu.system) / 1000 / windowMs) * 1000) / 10 : null,
          browserVersions,
          browserCapabilities: r.capabilities,
          pageErrors: r.pageErrors.slice(0, 20),
          reports,
          pages: r.pageCount,
          browserProcesses: r.browserCount,
          browsers: [...new Set(r.browsers.map((b) => b.name))],
          windowMs: Math.round(windowMs),
          setupMs: r.setupMs,
        };
        r.result = Buffer.from(JSON.stringify(result));
        return { ok: true, bytes: r.result.length, chunks: Math.ceil(r.result.length / CHUNK_BYTES) };
      }
      case 'chunk': {
        if (!r.result) throw new Error('no result yet: finish first');
        const i = Number(req.index);
        const part = r.result.subarray(i * CHUNK_BYTES, (i + 1) * CHUNK_BYTES);
        const last = (i + 1) * CHUNK_BYTES >= r.result.length;
        if (last) setImmediate(() => { endRun('finished').catch(() => {}); });
        return { ok: true, data: part.toString('base64'), last };
      }
      case 'abort':
        // answered once the browsers are closed: the controller's next point finds this agent free
        await endRun('aborted by the controller');
        return { ok: true };
      default:
        throw new Error(`unknown op "${String(req.op).slice(0, 20)}"`);
    }
  };

  const sub = nc.subscribe(agentSubject(name), {
    callback: (err, msg) => {
      if (err) return;
      let req;
      try { req = jc.decode(msg.data); } catch { try { msg.respond(jc.encode({ ok: false, error: 'not JSON' })); } catch { /* gone */ } return; }
      handle(req, msg).catch((e) => log(`request failed: ${e?.message ?? e}`));
    },
  });
  const discover = nc.subscribe(DISCOVER_SUBJECT, {
    callback: (err, msg) => { if (!err) { try { msg.respond(jc.encode(advert())); } catch { /* no reply subject */ } } },
  });
  const beat = setInterval(() => {
    announce();
    // the lease: a busy agent whose controller went quiet stops its browsers
    if (run && !run.ending && run.inFlight === 0 && performance.now() - run.lastHeard > leaseMs) {
      endRun(`no word from the controller for ${Math.round(leaseMs / 1000)} s (it stopped, or this agent lost NATS)`).catch(() => {});
    }
  }, HEARTBEAT_MS);
  announce();
  (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect') log(`lost NATS (${o.natsUrl}); reconnecting`);
      else if (s.type === 'reconnect') log('back on NATS');
    }
  })().catch(() => {});

  return {
    name,
    advert,
    pagesOrigin: pageHost.origin,
    /** The run in progress, or null. */
    busy: () => run?.runId ?? null,
    /** Stops the run (browsers closed), leaves NATS, stops the page host. */
    async close() {
      clearInterval(beat);
      await endRun('the agent is stopping');
      sub.unsubscribe();
      discover.unsubscribe();
      await nc.drain().catch(() => nc.close());
      await pageHost.close();
    },
    /** Resolves when the NATS connection is closed for good. */
    closed: nc.closed(),
  };
}
