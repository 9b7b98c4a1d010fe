// Runs one sweep point of `carlab bench`: the server in a child process,
// the population as simulated peers in headless Debian browsers (web/peer.html),
// then aggregation. The browsers are launched as Playwright browser servers
// so their process trees can be measured.

import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { chromium, firefox } from '@playwright/test';
import { CHROMIUM_PATH, chromiumLaunchOptions, firefoxLaunchOptions } from '../../e2e/browsers.js';
import { namespaceWrapperScript } from './net/commands.js';
import { ipPath } from './net/network.js';
import { aggregateRun } from './aggregate.js';
import { startServerChild } from './sim.js';
import { sampleProcessTree } from './proctree.js';

/** Transports a browser peer can run. */
export const BENCH_TRANSPORTS = Object.freeze(['relay', 'relay-faithful', 'relay-udp', 'p2p', 'p2p-reliable']);
/** Browsers a fleet can mix. */
export const BENCH_BROWSERS = Object.freeze(['chromium', 'firefox']);

/**
 * @typedef {object} BenchPointOptions
 * @property {import('./flags.js').SweepPoint} point
 * @property {number} durationS
 * @property {number} warmupS
 * @property {number} updates
 * @property {number} ackTimeoutMs
 * @property {string[]} browsers fleet mix; pages take them in turn
 * @property {number} peersPerPage
 * @property {number} pagesPerBrowser
 * @property {string | null} url a running carlab server instead of our own (no server CPU/RTS then)
 * @property {(p: { phase: string, elapsedS: number, rtMean: number | null }) => void} [onProgress]
 * @property {() => boolean} [shouldStop]
 * @property {import('./net/network.js').PointNetwork | null} [net] --net: the server in
 *   net.serverNs, browser b in net.clientNs[b] (Chromium only); pages interleave peers
 *   so a group's members sit in different namespaces
 */

/**
 * How a point's peers fill pages and browser processes. Interleaved: page p
 * hosts peers p, p + pages, p + 2 pages, ... (a group spans pages).
 * @param {{ clients: number, peersPerPage: number, pagesPerBrowser: number, interleave: boolean }} o
 */
export function benchLayout({ clients, peersPerPage, pagesPerBrowser, interleave }) {
  const pageCount = Math.ceil(clients / peersPerPage);
  const browserCount = Math.max(1, Math.ceil(pageCount / pagesPerBrowser));
  const pages = Array.from({ length: pageCount }, (_, p) => (interleave
    ? { offset: p, stride: pageCount, peers: Math.ceil((clients - p) / pageCount) }
    : { offset: p * peersPerPage, stride: 1, peers: Math.min(peersPerPage, clients - p * peersPerPage) }));
  const peersPerBrowser = Array.from({ length: browserCount }, (_, b) => pages.filter((_, p) => p % browserCount === b).reduce((s, x) => s + x.peers, 0));
  return { pageCount, browserCount, pages, peersPerBrowser };
}

/**
 * @param {string} name
 * @param {string | null} [executablePath] e.g. a wrapper that starts Chromium in a namespace
 * @returns {Promise<{ name: string, server: import('playwright-core').BrowserServer, browser: import('playwright-core').Browser, pid: number }>}
 */
async function launchBrowser(name, executablePath = null) {
  const type = name === 'firefox' ? firefox : chromium;
  const options = name === 'firefox' ? firefoxLaunchOptions() : { ...chromiumLaunchOptions(), ...(executablePath ? { executablePath } : {}) };
  // Ctrl-C belongs to the lab command (it stops the point and writes results), not to Playwright.
  const server = await type.launchServer(/** @type {any} */ ({ ...options, handleSIGINT: false }));
  const browser = await type.connect(server.wsEndpoint());
  return { name, server, browser, pid: /** @type {number} */ (server.process().pid) };
}

/**
 * Runs one point and returns its run record.
 * @param {BenchPointOptions} o
 */
export async function runBenchPoint(o) {
  const { point } = o;
  const net = o.net ?? null;
  const server = o.url ? null : await startServerChild({ ackTimeoutMs: o.ackTimeoutMs, ...(net ? { host: net.serverIp } : {}) }, net ? { netns: net.serverNs } : {});
  const baseUrl = (o.url ?? server?.url ?? '').replace(/\/$/, '');
  const runId = `bench${Date.now().toString(36)}`;
  const layout = benchLayout({ clients: point.clients, peersPerPage: o.peersPerPage, pagesPerBrowser: o.pagesPerBrowser, interleave: Boolean(net) });
  const { pageCount, browserCount } = layout;
  if (net && net.clientNs.length !== browserCount) throw new Error(`--net: ${net.clientNs.length} client namespaces for ${browserCount} browsers`);
  // Chromium keeps Playwright's pipe through `exec ip netns exec NS chromium`
  const wrapperDir = net ? await mkdtemp(`${tmpdir()}/carlab-netns-`) : null;
  /** @type {Awaited<ReturnType<typeof launchBrowser>>[]} */
  const browsers = [];
  /** @type {{ page: import('playwright-core').Page, browser: string }[]} */
  const pages = [];
  const pageErrors = [];
  try {
    o.onProgress?.({ phase: 'launching', elapsedS: 0, rtMean: null });
    for (let b = 0; b < browserCount; b++) {
      let executable = null;
      if (net && wrapperDir) {
        executable = `${wrapperDir}/chromium-${b}`;
        await writeFile(executable, namespaceWrapperScript(net.clientNs[b], CHROMIUM_PATH, ipPath()));
        await chmod(executable, 0o755);
      }
      browsers.push(await launchBrowser(o.browsers[b % o.browsers.length], executable));
    }
    for (let p = 0; p < pageCount; p++) {
      if (o.shouldStop?.()) throw new Error('interrupted while opening pages');
      const host = browsers[p % browsers.length];
      const { peers, offset, stride } = layout.pages[p];
      const context = await host.browser.newContext();
      const page = await context.newPage();
      page.on('pageerror', (e) => pageErrors.push(`${host.name}: ${e.message}`));
      const q = new URLSearchParams({
        group: runId, transport: point.transport, peers: String(peers), size: String(point.group),
        offset: String(offset), stride: String(stride), total: String(point.clients), cycle: String(point.cycleMs),
        ackTimeout: String(o.ackTimeoutMs), warmup: String(o.warmupS * 1000), updates: String(o.updates),
        autostart: '0', name: `${host.name[0]}`,
      });
      await page.goto(`${baseUrl}/peer.html?${q}`);
      await page.evaluate(() => window.carlab.ready);
      pages.push({ page, browser: host.name });
      o.onProgress?.({ phase: `opened ${pages.length}/${pageCount} pages`, elapsedS: 0, rtMean: null });
    }
    const meshDeadline = Date.now() + 60_000;
    for (;;) {
      const states = await Promise.all(pages.map(({ page }) => page.evaluate(() => window.carlab.meshed())));
      if (states.every(Boolean)) break;
      if (Date.now() > meshDeadline) throw new Error(`${states.filter((s) => !s).length} pages not meshed after 60 s`);
      await new Promise((r) => setTimeout(r, 250));
    }

    await Promise.all(pages.map(({ page }) => page.evaluate(() => window.carlab.start())));
    const started = Date.now();
    const watch = async (phase, seconds) => {
      const end = Date.now() + seconds * 1000;
      while (Date.now() < end && !o.shouldStop?.()) {
        await new Promise((r) => setTimeout(r, 1000));
        const live = await Promise.all(pages.map(({ page }) => page.evaluate(() => window.carlab.liveRt())));
        const n = live.reduce((s, l) => s + l.n, 0);
        o.onProgress?.({ phase, elapsedS: (Date.now() - started) / 1000, rtMean: n ? live.reduce((s, l) => s + l.sum, 0) / n : null });
      }
    };
    await watch('warm-up', o.warmupS);
    await server?.resetWindow();
    const sampler = sampleProcessTree(() => browsers.map((b) => b.pid));
    const windowStart = performance.now();
    await watch('measuring', o.updates > 0 ? (o.updates * point.cycleMs) / 1000 + 2 : o.durationS);
    const windowMs = performance.now() - windowStart;
    const browserUsage = sampler.stop();
    const serverMetrics = server ? await server.metrics() : null;
    await Promise.all(pages.map(({ page }) => page.evaluate(() => window.carlab.stop())));
    await new Promise((r) => setTimeout(r, 1000)); // in-flight updates and ACKs land
    const perPage = await Promise.all(pages.map(async ({ page, browser }) => {
      const stats = await page.evaluate(() => window.carlab.stats());
      return stats.map((s) => ({ ...s, browser }));
    }));
    const clients = perPage.flat();
    const relay = serverMetrics?.relay ?? null;
    const userAgents = {};
    for (const b of browsers) userAgents[b.name] = b.browser.version();
    return aggregateRun({
      point,
      clients,
      relay: relay && point.transport.startsWith('relay') ? relay : null,
      cpu: { server: relay?.cpuPctMean ?? null, clients: browserUsage.cpuPct },
      extra: {
        browser: o.browsers.join('+'),
        browserVersions: userAgents,
        peersPerPage: o.peersPerPage,
        pages: pageCount,
        browserProcesses: browserCount,
        browserRssMaxBytes: browserUsage.rssMaxBytes,
        serverRssBytes: serverMetrics?.rssBytes ?? null,
        durationS: Math.round(windowMs / 100) / 10,
        pageErrors: pageErrors.slice(0, 20),
        stoppedEarly: Boolean(o.shouldStop?.()),
      },
    });
  } finally {
    for (const { page } of pages) await page.evaluate(() => window.carlab.close()).catch(() => {});
    for (const b of browsers) await b.server.close().catch(() => {});
    await server?.close();
    if (wrapperDir) await rm(wrapperDir, { recursive: true, force: true });
  }
}
