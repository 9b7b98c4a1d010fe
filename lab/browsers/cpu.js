// Experiment 5, CPU under k simultaneous transfers: one client page (the
// pair's initiator browser) connects to server peers in the other browser;
// on each of k connections a server sends a file in an endless loop over a
// reliable channel. For each k (ascending, connections added as k grows) the
// client browser's process-tree CPU is sampled over a window, with the
// server browser's CPU and the throughput the client received beside it.

import { sampleProcessTree } from '../shared/proctree.js';
import { perSecond } from './arith.js';
import { obfuscationFor, openPeer, pairFields, sleep } from './context.js';
import { assignConnections, ensureServerPeers } from './memory.js';
import { SECONDS_PER_LAUNCH } from './setup.js';

/** Seconds between starting the new transfers and the window. */
export const RAMP_S = 2;

/** @typedef {import('./memory.js').ServerPeer} ServerPeer */

/**
 * The server ends send: starts their loops on the new connections.
 * @param {ServerPeer[]} serverPeers
 * @param {{ to: string, key: string }[]} opened the client's new connections
 * @param {import('./context.js').BrowsersOptions} o
 */
async function startServerLoops(serverPeers, opened, o) {
  for (const s of serverPeers) {
    const keys = opened.filter((c) => c.to === s.id).map((c) => c.key);
    if (!keys.length) continue;
    s.load += keys.length;
    // The server's end of a connection may need a moment to register.
    await s.page.evaluate(async ([id, ks]) => {
      for (const key of ks) await window.carlabLab.connInfo(id, key, 5000);
    }, /** @type {const} */ ([s.id, keys]));
    await s.page.evaluate(([id, ks, size, chunk]) => window.carlabLab.startLoop(id, { keys: ks, fileSize: size, chunk }),
      /** @type {const} */ ([s.id, keys, o.fileSize, o.chunk]));
  }
}

/**
 * One step's record: both browsers' CPU over the window and what the client
 * received in it (received counters at its start and end).
 * @param {number} k transfers running
 * @param {{ cpuPct: number | null, rssMaxBytes: number | null }} cu client browser's process tree
 * @param {{ cpuPct: number | null }} su server browser's process tree
 * @param {{ at: number, bytes: number }} r0
 * @param {{ at: number, bytes: number }} r1
 * @param {number} fileSize
 */
export function cpuStepRecord(k, cu, su, r0, r1, fileSize) {
  const ms = r1.at - r0.at;
  const bytes = r1.bytes - r0.bytes;
  return {
    k,
    cpu: { server: null, clients: cu.cpuPct },
    clientCpuPct: cu.cpuPct,
    serverCpuPct: su.cpuPct,
    clientRssMaxBytes: cu.rssMaxBytes,
    throughputMBps: perSecond(bytes / 1e6, ms),
    filesPerS: perSecond(bytes / fileSize, ms),
    windowS: Math.round(ms / 100) / 10,
  };
}

/**
 * After the ramp, samples both browsers' CPU over the window with k transfers running.
 * @param {import('./context.js').LabContext} ctx
 * @param {{ page: import('playwright-core').Page, clientId: string, client: import('./context.js').LabBrowser, servers: import('./context.js').LabBrowser }} run
 * @param {number} k
 * @param {import('./context.js').BrowsersOptions} o
 * @param {import('./context.js').CellProgress} p
 */
async function measureCpuStep(ctx, { page, clientId, client, servers }, k, o, p) {
  await sleep(RAMP_S * 1000);
  const r0 = await page.evaluate((id) => window.carlabLab.received(id), clientId);
  const clientCpu = sampleProcessTree(() => [client.pid]);
  const serverCpu = sampleProcessTree(() => [servers.pid]);
  const end = performance.now() + o.cpuWindowS * 1000;
  while (performance.now() < end && !ctx.shouldStop()) {
    await sleep(Math.min(1000, Math.max(0, end - performance.now())));
    p.update(`k=${k}: measuring`);
  }
  const cu = clientCpu.stop();
  const su = serverCpu.stop();
  const r1 = await page.evaluate((id) => window.carlabLab.received(id), clientId);
  return cpuStepRecord(k, cu, su, r0, r1, o.fileSize);
}

/**
 * @param {import('./context.js').LabContext} ctx
 * @param {import('./context.js').Pair} pair
 * @param {boolean} hide
 * @param {import('./context.js').BrowsersOptions} o
 * @param {import('./context.js').CellProgress} p
 */
async function runCpu(ctx, pair, hide, o, p) {
  const client = await ctx.launch(pair.initiator, { hideHostAddresses: hide });
  const servers = await ctx.launch(pair.receiver, { hideHostAddresses: hide });
  /** @type {ServerPeer[]} */
  const serverPeers = [];
  const spec = { mode: 'p2p-reliable', channels: 1, ackEvery: 0 };
  try {
    const page = await client.page(`${pair.label} client`);
    const clientId = ctx.newPeerId();
    await openPeer(page, clientId, o.setupTimeoutMs);
    /** @type {ReturnType<typeof cpuStepRecord>[]} */
    const steps = [];
    let k = 0;
    /** @type {{ ordered: boolean, maxRetransmits: number | null } | null} */
    let channel = null;
    /** @type {string | null} */
    let stoppedBy = null;
    for (const target of o.ks) {
      if (ctx.shouldStop()) break;
      const plan = assignConnections(serverPeers.map((s) => s.load), target - k, o.connsPerServerPage);
      await ensureServerPeers(ctx, servers, pair.label, serverPeers, plan, o.setupTimeoutMs);
      p.update(`k=${target}: connecting`);
      const targets = plan.map(({ server, n }) => ({ to: serverPeers[server].id, n }));
      const res = await page.evaluate(([id, t, s, timeoutMs]) => window.carlabLab.connectMany(id, t, s, { concurrency: 4, timeoutMs }),
        /** @type {const} */ ([clientId, targets, spec, o.setupTimeoutMs]));
      if (res.failed.length) {
        // Keep what was measured: the ramp ends here, with the reason.
        stoppedBy = `k=${target}: connection failed after ${res.total} open: ${res.failed[0].error}`;
        break;
      }
      if (!channel && res.opened[0]) {
        const info = await page.evaluate(([id, key]) => window.carlabLab.connInfo(id, key, 1000), /** @type {const} */ ([clientId, res.opened[0].key]));
        channel = info.channel ? { ordered: info.channel.ordered, maxRetransmits: info.channel.maxRetransmits } : null;
      }
      await startServerLoops(serverPeers, res.opened, o);
      k = target;
      const step = await measureCpuStep(ctx, { page, clientId, client, servers }, k, o, p);
      steps.push(step);
      p.update(`k=${k}: CPU ${step.clientCpuPct?.toFixed(0)} %`, step.clientCpuPct);
    }
    return {
      client: pair.initiator,
      server: pair.receiver,
      transport: 'p2p-reliable',
      channel,
      fileSize: o.fileSize,
      chunk: o.chunk,
      steps,
      stoppedBy,
      stoppedEarly: ctx.shouldStop(),
      pageErrors: [...client.errors, ...servers.errors].slice(0, 20),
    };
  } finally {
    for (const s of serverPeers) await s.page.evaluate((id) => window.carlabLab.stopLoop(id), s.id).catch(() => {});
    await servers.close();
    await client.close();
  }
}

/** @type {import('./context.js').Experiment} */
export const cpuExperiment = {
  name: 'cpu',
  title: 'CPU under k simultaneous transfers',
  metric: { label: 'client CPU', unit: ' %' },
  cells(o) {
    const maxK = Math.max(...o.ks);
    return obfuscationFor(o, 'cpu').flatMap((hide) => o.pairs.map((pair) => ({
      label: `cpu ${pair.label}${hide ? ', obfuscation on' : ''}: k = ${o.ks.join(',')}`,
      seconds: SECONDS_PER_LAUNCH + o.ks.length * (RAMP_S + o.cpuWindowS + 0.5) + maxK * 0.15,
      fields: { ...pairFields('cpu', pair, hide), transport: 'p2p-reliable' },
      async run(ctx, p) {
        return [{ ...pairFields('cpu', pair, hide), ...(await runCpu(ctx, pair, hide, o, p)) }];
      },
    })));
  },
};
