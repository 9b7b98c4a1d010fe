// Experiment 5, CPU under k simultaneous transfers: one client page (the
// pair's initiator browser) connects to server peers in the other browser;
// on each of k connections a server sends a file in an endless loop over a
// reliable channel. For each k (ascending, connections added as k grows) the
// client browser's process-tree CPU is sampled over a window, with the
// server browser's CPU and the throughput the client received beside it.

import { sampleProcessTree } from '../proctree.js';
import { perSecond } from './arith.js';
import { obfuscationFor, openPeer, pairFields, sleep } from './context.js';
import { assignConnections } from './memory.js';
import { SECONDS_PER_LAUNCH } from './setup.js';

/** Seconds between starting the new transfers and the window. */
export const RAMP_S = 2;

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
  /** @type {{ page: import('playwright-core').Page, id: string, load: number }[]} */
  const serverPeers = [];
  const spec = { mode: 'p2p-reliable', channels: 1, ackEvery: 0 };
  try {
    const page = await client.page(`${pair.label} client`);
    const clientId = ctx.newPeerId();
    await openPeer(page, clientId, o.setupTimeoutMs);
    /** @type {any[]} */
    const steps = [];
    let k = 0;
    let channel = null;
    /** @type {string | null} */
    let stoppedBy = null;
    for (const target of o.ks) {
      if (ctx.shouldStop()) break;
      const plan = assignConnections(serverPeers.map((s) => s.load), target - k, o.connsPerServerPage);
      for (const { server } of plan) {
        while (serverPeers.length <= server) {
          const sp = await servers.page(`${pair.label} server ${serverPeers.length + 1}`);
          const id = ctx.newPeerId();
          await openPeer(sp, id, o.setupTimeoutMs);
          serverPeers.push({ page: sp, id, load: 0 });
        }
      }
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
      // The server ends send: start their loops on the new connections.
      for (const s of serverPeers) {
        const keys = res.opened.filter((c) => c.to === s.id).map((c) => c.key);
        if (!keys.length) continue;
        s.load += keys.length;
        // The server's end of a connection may need a moment to register.
        await s.page.evaluate(async ([id, ks]) => {
          for (const key of ks) await window.carlabLab.connInfo(id, key, 5000);
        }, /** @type {const} */ ([s.id, keys]));
        await s.page.evaluate(([id, ks, size, chunk]) => window.carlabLab.startLoop(id, { keys: ks, fileSize: size, chunk }),
          /** @type {const} */ ([s.id, keys, o.fileSize, o.chunk]));
      }
      k = target;
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
      const ms = r1.at - r0.at;
      const bytes = r1.bytes - r0.bytes;
      steps.push({
        k,
        cpu: { server: null, clients: cu.cpuPct },
        clientCpuPct: cu.cpuPct,
        serverCpuPct: su.cpuPct,
        clientRssMaxBytes: cu.rssMaxBytes,
        throughputMBps: perSecond(bytes / 1e6, ms),
        filesPerS: perSecond(bytes / o.fileSize, ms),
        windowS: Math.round(ms / 100) / 10,
      });
      p.update(`k=${k}: CPU ${cu.cpuPct?.toFixed(0)} %`, cu.cpuPct);
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
