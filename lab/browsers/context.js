// What every `carlab browsers` experiment shares: the browser pairs, the
// server child behind the counting signaling proxy, wire counters, browser
// launching (C = Debian Chromium, F = Debian Firefox ESR over WebDriver BiDi)
// with or without host-address obfuscation, lab pages and PeerJS ids.

import { chromium, firefox } from 'playwright-core';
import { CHROMIUM_PATH, FIREFOX_PATH, chromiumLaunchOptions, ensureWarmFirefox, firefoxLaunchOptions } from '../bench/launch.js';
import { peerIdOf } from '../../web/src/transport/p2p.js';
import { startServerChild } from '../target/server-process.js';
import { UsageError } from '../shared/flags.js';
import { startSignalingProxy } from './proxy.js';
import { createWireCounter } from './wire.js';

/** Browser letters of the study. */
export const BROWSER_OF = Object.freeze({ C: 'chromium', F: 'firefox' });
/** The four pairs, initiator first. */
export const ALL_PAIRS = Object.freeze(['C-C', 'F-F', 'C-F', 'F-C']);

/**
 * @typedef {object} Pair
 * @property {string} label e.g. 'C-F'
 * @property {'chromium' | 'firefox'} initiator
 * @property {'chromium' | 'firefox'} receiver
 */

/**
 * Parses `--pairs C-C,F-F,C-F,F-C` (case-insensitive; 'CF' works too).
 * @param {string} text
 * @returns {Pair[]}
 */
export function parsePairs(text) {
  const labels = String(text).split(',').map((s) => s.trim().toUpperCase()).filter(Boolean);
  if (labels.length === 0) throw new UsageError('--pairs: empty list');
  /** @type {Pair[]} */
  const out = [];
  for (const raw of labels) {
    const m = /^([CF])-?([CF])$/.exec(raw);
    if (!m) throw new UsageError(`--pairs: "${raw}" is not a pair like C-F (C = Chromium, F = Firefox, initiator first)`);
    const label = `${m[1]}-${m[2]}`;
    if (out.some((p) => p.label === label)) continue;
    out.push({ label, initiator: BROWSER_OF[/** @type {'C' | 'F'} */ (m[1])], receiver: BROWSER_OF[/** @type {'C' | 'F'} */ (m[2])] });
  }
  return out;
}

/**
 * @typedef {object} BrowsersOptions what `carlab browsers` was asked to do
 * @property {Pair[]} pairs
 * @property {string[]} experiments in run order
 * @property {number} repeat setup/overhead repetitions per pair
 * @property {number} transferRepeat file-transfer repetitions per approach and pair
 * @property {boolean[] | null} obfuscation host-address obfuscation values to run (null: setup both, others off)
 * @property {number} setupTimeoutMs
 * @property {number} giveUpAfter a cell whose first N repetitions all fail stops there
 * @property {number} keepaliveS
 * @property {number} keepaliveConnections
 * @property {number} maxConnections memory ramp ceiling
 * @property {number} memoryStep connections added per memory step
 * @property {number} connsPerServerPage
 * @property {number[]} ks concurrent transfers of the CPU experiment
 * @property {number} cpuWindowS
 * @property {number} fileSize bytes (1 MB = 1,000,000)
 * @property {number} pieces the file is sent as this many pieces
 * @property {number} chunk bytes per channel message
 * @property {{ transports: string[], clients: number, group: number, cycleMs: number, durationS: number, warmupS: number }} car
 * @property {boolean} wire
 * @property {boolean} progress
 * @property {string | null} out
 */

/**
 * The obfuscation values an experiment runs: setup runs off and on unless
 * --obfuscation says otherwise; the others run off.
 * @param {BrowsersOptions} o
 * @param {string} experiment
 * @returns {boolean[]}
 */
export function obfuscationFor(o, experiment) {
  if (o.obfuscation) return o.obfuscation;
  return experiment === 'setup' ? [false, true] : [false];
}

/**
 * Fields every record of a pair carries.
 * @param {string} experiment
 * @param {Pair} pair
 * @param {boolean} hideHostAddresses
 */
export function pairFields(experiment, pair, hideHostAddresses) {
  return {
    experiment,
    pair: pair.label,
    initiatorBrowser: pair.initiator,
    receiverBrowser: pair.receiver,
    browser: `${pair.initiator}/${pair.receiver}`,
    hideHostAddresses,
  };
}

/**
 * @typedef {object} CellProgress
 * @property {(phase: string, value?: number | null) => void} update
 */

/**
 * @typedef {object} Cell one progress-bar point of an experiment
 * @property {string} label
 * @property {number} seconds estimate, for the ETA
 * @property {(ctx: LabContext, p: CellProgress) => Promise<Record<string, any>[]>} run
 * @property {Record<string, any>} [fields] what a failed cell's record says about itself
 */

/**
 * @typedef {object} Experiment
 * @property {string} name
 * @property {string} title
 * @property {{ label: string, unit: string }} metric what the progress bar shows live
 * @property {(o: BrowsersOptions, planned: Set<string>) => Cell[]} cells planned: the experiments selected
 */

/**
 * @typedef {object} LabBrowser one launched browser process
 * @property {'chromium' | 'firefox'} name
 * @property {number} pid the browser's root process
 * @property {boolean} hideHostAddresses
 * @property {import('playwright-core').Browser} browser
 * @property {(label?: string, sink?: string[]) => Promise<import('playwright-core').Page>} page opens a lab page
 *   (own context); its errors go to `sink` (default: errors)
 * @property {string[]} errors page errors and crashes
 * @property {() => Promise<void>} close
 */

/**
 * @typedef {object} LabContext
 * @property {string} baseUrl the proxy: pages and signaling go through it
 * @property {Awaited<ReturnType<typeof startServerChild>>} server
 * @property {Awaited<ReturnType<typeof startSignalingProxy>>} proxy
 * @property {Awaited<ReturnType<typeof createWireCounter>>} wire
 * @property {{ browsers: Record<string, any> }} env filled as browsers launch
 * @property {Map<string, any>} cache results experiments share within this run
 * @property {() => string} newPeerId
 * @property {() => boolean} shouldStop
 * @property {(name: 'chromium' | 'firefox', o?: { hideHostAddresses?: boolean }) => Promise<LabBrowser>} launch a fresh browser
 * @property {(name: 'chromium' | 'firefox', o: { hideHostAddresses?: boolean }, slot: number) => Promise<LabBrowser>} pooled
 *   a browser kept between cells of one experiment (fresh pages each cell); the pool holds one obfuscation setting
 * @property {() => Promise<void>} releasePool closes the pooled browsers (between experiments)
 * @property {() => Promise<void>} close
 */

/**
 * Starts the server child, the proxy and the wire counters.
 * @param {{ shouldStop?: () => boolean, wire?: boolean }} [o]
 * @returns {Promise<LabContext>}
 */
export async function createLabContext(o = {}) {
  const server = await startServerChild({});
  const proxy = await startSignalingProxy({ target: server.url });
  const wire = o.wire === false
    ? { available: false, why: 'off (--wire off)', read: async () => null, flush: async () => {}, close() {} }
    : await createWireCounter();
  const group = `lab${Date.now().toString(36)}${process.pid.toString(36)}`;
  let next = 1;
  /** @type {Set<LabBrowser>} */
  const open = new Set();
  /** @type {Map<string, Promise<LabBrowser>>} */
  const pool = new Map();
  const drop = async (/** @type {string} */ key) => {
    const p = pool.get(key);
    pool.delete(key);
    const b = await p?.catch(() => null);
    await b?.close();
  };
  /** @type {LabContext} */
  const ctx = {
    baseUrl: proxy.url,
    server,
    proxy,
    wire,
    env: { browsers: {} },
    cache: new Map(),
    newPeerId: () => peerIdOf(group, next++),
    shouldStop: o.shouldStop ?? (() => false),
    async launch(name, lo = {}) {
      const b = await launchLabBrowser(ctx, name, lo);
      open.add(b);
      const close = b.close;
      b.close = async () => { open.delete(b); await close(); };
      return b;
    },
    async pooled(name, lo, slot) {
      const hide = Boolean(lo.hideHostAddresses);
      for (const key of [...pool.keys()]) if (!key.endsWith(`|${hide}`)) await drop(key);
      const key = `${name}|${slot}|${hide}`;
      let p = pool.get(key);
      if (!p) {
        p = ctx.launch(name, { hideHostAddresses: hide });
        pool.set(key, p);
      }
      const b = await p.catch((err) => { pool.delete(key); throw err; });
      if (b.browser.isConnected()) return b;
      await drop(key);
      return ctx.pooled(name, lo, slot);
    },
    async releasePool() {
      for (const key of [...pool.keys()]) await drop(key);
    },
    async close() {
      pool.clear();
      for (const b of [...open]) await b.close().catch(() => {});
      wire.close();
      await proxy.close();
      await server.close();
    },
  };
  return ctx;
}

/**
 * Launches one browser as a Playwright browser server (so its process tree
 * can be measured) and connects to it.
 * @param {LabContext} ctx
 * @param {'chromium' | 'firefox'} name
 * @param {{ hideHostAddresses?: boolean }} o
 * @returns {Promise<LabBrowser>}
 */
async function launchLabBrowser(ctx, name, o) {
  const hideHostAddresses = Boolean(o.hideHostAddresses);
  const type = name === 'firefox' ? firefox : chromium;
  const options = name === 'firefox' ? firefoxLaunchOptions({ hideHostAddresses }) : chromiumLaunchOptions({ hideHostAddresses });
  if (name === 'firefox') await ensureWarmFirefox();
  // Ctrl-C is ours to handle (stop the cell, write what was measured): Playwright's own handler would exit.
  const server = await type.launchServer({ ...options, handleSIGINT: false });
  const browser = await type.connect(server.wsEndpoint());
  /** @type {string[]} */
  const errors = [];
  /** @type {LabBrowser} */
  const b = {
    name,
    pid: /** @type {number} */ (server.process().pid),
    hideHostAddresses,
    browser,
    errors,
    async page(label = name, sink = errors) {
      const context = await browser.newContext();
      const page = await context.newPage();
      page.on('pageerror', (e) => sink.push(`${label}: ${e.message}`));
      page.on('crash', () => sink.push(`${label}: page crashed`));
      await page.goto(`${ctx.baseUrl}/lab.html`);
      // The module script may be missing if web/dist was rebuilt under us: reload once.
      if (!(await page.waitForFunction(() => window.carlabLab, null, { timeout: 10000 }).then(() => true, () => false))) {
        await page.reload();
        await page.waitForFunction(() => window.carlabLab, null, { timeout: 15000 });
      }
      const info = await page.evaluate(() => window.carlabLab.ready);
      if (!ctx.env.browsers[name]) {
        ctx.env.browsers[name] = {
          version: browser.version(),
          userAgent: info.userAgent,
          executablePath: name === 'firefox' ? FIREFOX_PATH : CHROMIUM_PATH,
          ...(name === 'firefox' ? { channel: 'moz-firefox', protocol: 'WebDriver BiDi' } : {}),
        };
      }
      return page;
    },
    async close() {
      await browser.close().catch(() => {});
      await server.close().catch(() => {});
    },
  };
  return b;
}

/**
 * Runs `fn` with the pair's two browsers (separate processes, like two
 * phones; pooled between the cells of an experiment) and a fresh lab page
 * each, closing the pages whatever happens. `a.errors`/`b.errors` hold this
 * cell's page errors only.
 * @template T
 * @param {LabContext} ctx
 * @param {Pair} pair
 * @param {{ hideHostAddresses?: boolean }} o
 * @param {(side: { a: LabBrowser, b: LabBrowser, pa: import('playwright-core').Page, pb: import('playwright-core').Page }) => Promise<T>} fn
 * @returns {Promise<T>}
 */
export async function withPair(ctx, pair, o, fn) {
  // Slots: the initiator's browser is slot 0, the receiver's slot 1, so C-C gets two Chromium processes.
  const [a, b] = await Promise.all([ctx.pooled(pair.initiator, o, 0), ctx.pooled(pair.receiver, o, 1)]);
  /** @type {string[]} */
  const ea = [];
  /** @type {string[]} */
  const eb = [];
  /** @type {import('playwright-core').Page[]} */
  const pages = [];
  try {
    const [pa, pb] = await Promise.all([a.page(`${pair.label} initiator`, ea), b.page(`${pair.label} receiver`, eb)]);
    pages.push(pa, pb);
    return await fn({ a: { ...a, errors: ea }, b: { ...b, errors: eb }, pa, pb });
  } finally {
    await Promise.all(pages.map((p) => p.context().close().catch(() => {})));
  }
}

/**
 * Opens a PeerJS peer in a lab page.
 * @param {import('playwright-core').Page} page
 * @param {string} id
 * @param {number} timeoutMs
 * @returns {Promise<{ id: string, signalingMs: number }>}
 */
export function openPeer(page, id, timeoutMs) {
  return page.evaluate(([pid, t]) => window.carlabLab.openPeer(pid, { timeoutMs: t }), /** @type {const} */ ([id, timeoutMs]));
}

/**
 * The UDP ports a connection's ICE agent gathered, from pcCounters.
 * @param {any} counters
 * @returns {number[]}
 */
export function localPortsOf(counters) {
  return Array.isArray(counters?.localPorts) ? counters.localPorts : [];
}

/** @param {number} ms */
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
