// Experiment 4, memory per idle connection: one client page (the pair's
// initiator browser) opens idle connections to PeerJS peers in server pages
// of the other browser, step by step, up to --max-connections or the first
// connection that fails (the browser's limit, with the reason). After each
// step the client browser's process-tree memory (PSS, and RSS) is read from
// /proc; m1 = (m_max - m_0) / d_max. Three memory measures: USS (private
// pages: what the browser itself allocated, blind to other programs), PSS
// (shared pages split among every process mapping them, machine-wide: another
// Chromium starting elsewhere lowers it) and RSS. All server pages are opened
// before m_0 so the server browser's processes do not shift PSS mid-ramp.

import { readFileSync } from 'node:fs';
import { processTree, readProc } from '../shared/proctree.js';
import { memoryPerConnection, slope } from './arith.js';
import { obfuscationFor, openPeer, pairFields, sleep } from './context.js';
import { SECONDS_PER_LAUNCH, cleanError } from './setup.js';

/** Seconds to let a step settle before memory is read. */
export const SETTLE_S = 1.5;

/**
 * PSS and USS (Private_Clean + Private_Dirty) of one process in bytes, from
 * /proc/PID/smaps_rollup text.
 * @param {string} text
 * @returns {{ pss: number, uss: number } | null}
 */
export function parseSmapsRollup(text) {
  const kb = (/** @type {string} */ name) => {
    const m = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text);
    return m ? Number(m[1]) * 1024 : null;
  };
  const pss = kb('Pss');
  const clean = kb('Private_Clean');
  const dirty = kb('Private_Dirty');
  if (pss === null || clean === null || dirty === null) return null;
  return { pss, uss: clean + dirty };
}

/**
 * PSS and USS of one process (null when /proc does not say).
 * @param {number} pid
 */
export function smapsOf(pid) {
  try {
    return parseSmapsRollup(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
  } catch {
    return null;
  }
}

/**
 * Memory of a browser's process tree: PSS (shared pages split between the
 * processes that map them, so the sum is not inflated) and RSS.
 * @param {number} root
 */
export function treeMemory(root) {
  let pss = 0; let uss = 0; let rss = 0; let processes = 0; let missing = false;
  for (const pid of processTree([root])) {
    const p = readProc(pid);
    if (!p) continue;
    processes++;
    rss += p.rssBytes;
    const v = smapsOf(pid);
    if (v === null) missing = true;
    else { pss += v.pss; uss += v.uss; }
  }
  return { ussBytes: missing ? null : uss, pssBytes: missing ? null : pss, rssBytes: rss, processes };
}

/**
 * Mean memory over a few reads `gapMs` apart.
 * @param {number} root
 * @param {number} [reads]
 * @param {number} [gapMs]
 */
export async function sampleMemory(root, reads = 3, gapMs = 250) {
  /** @type {ReturnType<typeof treeMemory>[]} */
  const got = [];
  for (let i = 0; i < reads; i++) {
    if (i) await sleep(gapMs);
    got.push(treeMemory(root));
  }
  const mean = (/** @type {(m: ReturnType<typeof treeMemory>) => number | null} */ f) => {
    const vs = got.map(f);
    return vs.some((v) => v === null) ? null : vs.reduce((/** @type {number} */ s, v) => s + (v ?? 0), 0) / vs.length;
  };
  return { ussBytes: mean((m) => m.ussBytes), pssBytes: mean((m) => m.pssBytes), rssBytes: mean((m) => m.rssBytes), processes: got[got.length - 1].processes };
}

/**
 * Which server peers take the next `n` connections: fill each up to
 * `perServer` in order, opening new servers as needed.
 * @param {number[]} loads connections each existing server holds
 * @param {number} n
 * @param {number} perServer
 * @returns {{ server: number, n: number }[]} server index (may be new: >= loads.length)
 */
export function assignConnections(loads, n, perServer) {
  const out = [];
  let left = n;
  for (let s = 0; left > 0; s++) {
    const free = perServer - (loads[s] ?? 0);
    if (free <= 0) continue;
    const take = Math.min(free, left);
    out.push({ server: s, n: take });
    left -= take;
  }
  return out;
}

/** The memory measures, in the order tables show them. */
export const MEASURES = Object.freeze(['uss', 'pss', 'rss']);

/**
 * The memory record's numbers from the ramp: m_0, m_max at d_max, m1 and the
 * least-squares slope, per measure.
 * @param {{ ussBytes?: number | null, pssBytes?: number | null, rssBytes?: number | null }} m0
 * @param {{ connections: number, ussBytes?: number | null, pssBytes?: number | null, rssBytes?: number | null }[]} steps
 */
export function memoryFigures(m0, steps) {
  const last = steps[steps.length - 1];
  const dMax = last?.connections ?? 0;
  const of = (/** @type {any} */ m, /** @type {string} */ k) => (typeof m?.[`${k}Bytes`] === 'number' ? m[`${k}Bytes`] : null);
  /** @param {(k: string) => any} f */
  const each = (f) => Object.fromEntries(MEASURES.map((k) => [k, f(k)]));
  return {
    dMax,
    m0: { ussBytes: of(m0, 'uss'), pssBytes: of(m0, 'pss'), rssBytes: of(m0, 'rss') },
    mMax: last ? { ussBytes: of(last, 'uss'), pssBytes: of(last, 'pss'), rssBytes: of(last, 'rss') } : null,
    m1Bytes: each((k) => memoryPerConnection({ m0: of(m0, k), mMax: of(last, k), dMax })),
    slopeBytes: each((k) => slope([{ x: 0, y: of(m0, k) ?? NaN }, ...steps.map((s) => ({ x: s.connections, y: of(s, k) ?? NaN }))])),
  };
}

/** A server peer page and how many connections it serves. @typedef {{ page: import('playwright-core').Page, id: string, load: number }} ServerPeer */

/**
 * Opens one more server peer page in the server browser.
 * @param {import('./context.js').LabContext} ctx
 * @param {import('./context.js').LabBrowser} servers
 * @param {string} pairLabel
 * @param {ServerPeer[]} serverPeers
 * @param {number} setupTimeoutMs
 */
async function openServerPeer(ctx, servers, pairLabel, serverPeers, setupTimeoutMs) {
  const sp = await servers.page(`${pairLabel} server ${serverPeers.length + 1}`);
  const id = ctx.newPeerId();
  await openPeer(sp, id, setupTimeoutMs);
  serverPeers.push({ page: sp, id, load: 0 });
}

/**
 * Opens server peer pages until every server the plan names exists.
 * @param {import('./context.js').LabContext} ctx
 * @param {import('./context.js').LabBrowser} servers
 * @param {string} pairLabel
 * @param {ServerPeer[]} serverPeers
 * @param {{ server: number }[]} plan from assignConnections
 * @param {number} setupTimeoutMs
 */
export async function ensureServerPeers(ctx, servers, pairLabel, serverPeers, plan, setupTimeoutMs) {
  for (const { server } of plan) {
    while (serverPeers.length <= server) await openServerPeer(ctx, servers, pairLabel, serverPeers, setupTimeoutMs);
  }
}

/**
 * Counts the client's new connections on the server peers they went to;
 * failed attempts too, since they hold a server slot until the server drops them.
 * @param {ServerPeer[]} serverPeers
 * @param {{ opened: { to: string }[], failed: { to: string }[] }} res
 */
export function addLoads(serverPeers, res) {
  for (const { to } of [...res.opened, ...res.failed]) {
    const s = serverPeers.find((x) => x.id === to);
    if (s) s.load++;
  }
}

/**
 * The first errors the server pages saw, to explain a failed connection.
 * @param {ServerPeer[]} serverPeers
 * @returns {Promise<string[]>}
 */
async function serverPageErrors(serverPeers) {
  const serverSide = await Promise.all(serverPeers.map((s) => s.page.evaluate((id) => window.carlabLab.connections(id), s.id).catch(() => null)));
  return serverSide.flatMap((c) => c?.errors ?? []).slice(0, 5);
}

/**
 * The ramp: `--memory-step` more idle connections at a time, memory read
 * after each step settled, until --max-connections, Ctrl-C or the first
 * failed connection (the browser's limit, with the reason).
 * @param {import('./context.js').LabContext} ctx
 * @param {{ page: import('playwright-core').Page, clientId: string, client: import('./context.js').LabBrowser,
 *   servers: import('./context.js').LabBrowser, pairLabel: string, serverPeers: ServerPeer[] }} run
 * @param {import('./context.js').BrowsersOptions} o
 * @param {import('./context.js').CellProgress} p
 */
async function rampConnections(ctx, { page, clientId, client, servers, pairLabel, serverPeers }, o, p) {
  /** @type {({ connections: number, setupMs: number } & Awaited<ReturnType<typeof sampleMemory>>)[]} */
  const steps = [];
  let open = 0;
  /** @type {number | null} */
  let limit = null;
  let reason = `--max-connections ${o.maxConnections} reached`;
  while (open < o.maxConnections && !ctx.shouldStop()) {
    const n = Math.min(o.memoryStep, o.maxConnections - open);
    const plan = assignConnections(serverPeers.map((s) => s.load), n, o.connsPerServerPage);
    await ensureServerPeers(ctx, servers, pairLabel, serverPeers, plan, o.setupTimeoutMs);
    p.update(`connecting ${open + 1}..${open + n}`, open);
    const targets = plan.map(({ server, n: k }) => ({ to: serverPeers[server].id, n: k }));
    const res = await page.evaluate(([id, t, timeoutMs]) => window.carlabLab.connectMany(id, t, { mode: 'p2p' }, { concurrency: 4, timeoutMs }),
      /** @type {const} */ ([clientId, targets, o.setupTimeoutMs])).catch((err) => ({ opened: [], failed: [{ to: '', error: cleanError(err) }], total: open, ms: 0 }));
    addLoads(serverPeers, res);
    open = res.total;
    await sleep(SETTLE_S * 1000);
    const m = await sampleMemory(client.pid);
    steps.push({ connections: open, ...m, setupMs: res.ms });
    p.update(`${open} connections`, open);
    if (res.failed.length) {
      limit = open;
      reason = res.failed[0].error;
      const serverErrors = await serverPageErrors(serverPeers);
      if (serverErrors.length) reason += ` (server pages: ${serverErrors.join('; ')})`;
      break;
    }
  }
  return { steps, limit, reason };
}

/**
 * @param {import('./context.js').LabContext} ctx
 * @param {import('./context.js').Pair} pair
 * @param {boolean} hide
 * @param {import('./context.js').BrowsersOptions} o
 * @param {import('./context.js').CellProgress} p
 */
async function runMemory(ctx, pair, hide, o, p) {
  const client = await ctx.launch(pair.initiator, { hideHostAddresses: hide });
  const servers = await ctx.launch(pair.receiver, { hideHostAddresses: hide });
  const started = performance.now();
  try {
    const page = await client.page(`${pair.label} client`);
    /** @type {ServerPeer[]} */
    const serverPeers = [];
    const clientId = ctx.newPeerId();
    await openPeer(page, clientId, o.setupTimeoutMs);
    // Every server page the ramp may need, before m_0 (see the top of this file).
    p.update('opening server pages');
    for (let i = 0; i < Math.ceil(o.maxConnections / o.connsPerServerPage); i++) {
      await openServerPeer(ctx, servers, pair.label, serverPeers, o.setupTimeoutMs);
    }
    await sleep(2000);
    const m0 = await sampleMemory(client.pid);
    const { steps, limit, reason } = await rampConnections(ctx, { page, clientId, client, servers, pairLabel: pair.label, serverPeers }, o, p);
    // Still open at the end?
    const final = await page.evaluate((id) => window.carlabLab.connections(id), clientId).catch(() => null);
    return {
      client: pair.initiator,
      server: pair.receiver,
      ...memoryFigures(m0, steps),
      limitReached: limit,
      limitReason: reason,
      openAtEnd: final?.open ?? null,
      clientErrors: final?.errors ?? [],
      serverPages: serverPeers.length,
      connsPerServerPage: o.connsPerServerPage,
      steps,
      stoppedEarly: ctx.shouldStop(),
      pageErrors: [...client.errors, ...servers.errors].slice(0, 20),
      durationS: Math.round((performance.now() - started) / 100) / 10,
    };
  } finally {
    await servers.close();
    await client.close();
  }
}

/** @type {import('./context.js').Experiment} */
export const memoryExperiment = {
  name: 'memory',
  title: 'Memory per idle connection',
  metric: { label: 'connections', unit: '' },
  cells(o) {
    return obfuscationFor(o, 'memory').flatMap((hide) => o.pairs.map((pair) => ({
      label: `memory ${pair.label}${hide ? ', obfuscation on' : ''}: up to ${o.maxConnections} idle connections`,
      seconds: SECONDS_PER_LAUNCH + 3 + Math.ceil(o.maxConnections / o.connsPerServerPage) * 0.5
        + Math.ceil(o.maxConnections / o.memoryStep) * (SETTLE_S + 1) + o.maxConnections * 0.08,
      fields: { ...pairFields('memory', pair, hide), transport: 'p2p' },
      async run(ctx, p) {
        return [{ ...pairFields('memory', pair, hide), transport: 'p2p', ...(await runMemory(ctx, pair, hide, o, p)) }];
      },
    })));
  },
};
