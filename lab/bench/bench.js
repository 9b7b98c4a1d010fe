// Runs one sweep point of `carlab bench`: the server in a child process,
// the population as simulated peers in headless Debian browsers (web/peer.html),
// then aggregation. Chromium runs under our own DevTools driver (cdp.js),
// Firefox as a Playwright browser server, WebKit (WebKitGTK's MiniBrowser) under
// its WebDriver on a display of its own (webkit.js); each browser's process tree
// is measured, and per browser in a mixed fleet.

import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { TRANSPORTS, WEBRTC_TRANSPORTS, transportInfo } from '../../core/transports.js';
import { CHROMIUM_PATH, FIREFOX_PATH, chromiumArgs, ensureWarmFirefox, firefoxLaunchOptions } from './launch.js';
import { warmFirefoxPath } from './firefox-profile.js';
import { driverSwitches, launchChromium } from './cdp.js';
import { namespaceWrapperScript } from '../net/commands.js';
import { DEFAULT_RENDER_FPS, reportPeriodMs } from '../shared/flags.js';
import { drawnRecord } from '../report/drawn.js';
import { finishArPair, openArPair, startArPair } from './ar-pair.js';
import { DEFAULT_PLAYOUT } from '../../core/playout.js';
import { ipPath } from '../net/network.js';
import { aggregateRun } from '../report/aggregate.js';
import { withLoadFlags } from '../report/saturation.js';
import { sceneRecord } from '../report/scene-record.js';
import { SCENE_SETTLE_S } from '../shared/edits.js';
import { HORIZON_MAX_MS } from '../../core/cycle.js';
import { reportFields, sumReportTallies } from '../report/tallies.js';
import { startServerChild } from '../target/server-process.js';
import { clusterRunFields, startRelayCluster } from '../target/cluster.js';
import { sampleProcessTree } from '../shared/proctree.js';
import { baseOf, checkServerAllowsOrigin, sharedPageHost } from './page-host.js';
import { SELENIUM_VERSION, launchWebKitFleetBrowser, webkitMissing } from './webkit.js';
import { openTrackingPage, sampleTracking, slowdownFields, throttlePage, trackingFigures } from './throttle.js';
import { benchNetEventsFields, movingIndices, startBenchNetEvents } from './net-events.js';

/** Transports a browser peer can run. */
export const BENCH_TRANSPORTS = TRANSPORTS;
/** Browsers a fleet can mix. */
export const BENCH_BROWSERS = Object.freeze(['chromium', 'firefox', 'webkit']);

/**
 * Browsers of the fleet built without WebRTC: Debian's WebKitGTK has no
 * RTCPeerConnection, so it runs the relay transports only. (Each run also
 * records what the pages report: `browserCapabilities`.)
 */
export const NO_WEBRTC_BROWSERS = Object.freeze(['webkit']);

/**
 * Why a fleet cannot run these transports (or this way), or null when it can.
 * @param {readonly string[]} browsers the --browsers mix
 * @param {readonly string[]} transports the --transport list
 * @param {{ net?: boolean }} [o] net: --net (namespaces): WebKit's WebDriver and display stay outside them
 * @returns {string | null}
 */
export function fleetProblem(browsers, transports, o = {}) {
  const noRtc = browsers.filter((b) => NO_WEBRTC_BROWSERS.includes(b));
  const needRtc = transports.filter((t) => WEBRTC_TRANSPORTS.includes(t));
  if (noRtc.length && needRtc.length) {
    return `--browsers ${noRtc.join(',')} runs the relay transports only: Debian's WebKitGTK has no WebRTC `
      + `(no RTCPeerConnection), so it cannot run ${needRtc.join(', ')}. Use --transport relay,relay-faithful, or leave `
      + `${noRtc.join(',')} out of --browsers for ${needRtc.join(', ')}.`;
  }
  if (noRtc.length && o.net) return '--net runs browsers in network namespaces; WebKit (its WebDriver and display) is not supported there: drop webkit';
  if (browsers.includes('webkit')) return webkitMissing();
  return null;
}

/**
 * @typedef {object} BenchPointOptions
 * @property {import('../shared/flags.js').SweepPoint} point
 * @property {string | null} [nats] --nats: the NATS the relays join (with point.relays; default one of the run's own)
 * @property {number} durationS
 * @property {number} warmupS
 * @property {number} updates
 * @property {number} ackTimeoutMs
 * @property {number} [editsPerMinute] every peer edits the shared scene this often (lab/shared/edits.js; 0: never)
 * @property {import('../net/events.js').NetEventsPlan | null} [netEvents] --net-events (with net): the timeline on the
 *   moving peers' links
 * @property {import('../../core/playout.js').PlayoutMode[] | null} [playout] --playout: the modes every peer draws
 * @property {number} [renderFps] --render-fps: at this rate
 * @property {boolean} [arPair] --ar-pair: two AR pages on the synthetic camera draw each other, judged against the truth (ar-pair.js)
 * @property {string[]} browsers fleet mix; pages take them in turn
 * @property {number} peersPerPage
 * @property {number} pagesPerBrowser
 * @property {string | null} url a running carlab server instead of our own (no server CPU/RTS then);
 *   the pages then come from the lab's page host (lab/bench/page-host.js), so the server must allow its origin
 * @property {number} [pagesPort] the page host's port with --url (0 or absent: a free one, kept for the whole run)
 * @property {boolean} [tracking] --tracking: one AR page tracking the synthetic camera in a browser of the fleet
 *   (lab/bench/throttle.js), its frame rate over the measured window in the run's `tracking`
 * @property {'chromium' | 'firefox' | 'webkit'} [trackingBrowser] --tracking-browser: which (default chromium)
 * @property {(p: { phase: string, elapsedS: number, rtMean: number | null }) => void} [onProgress]
 * @property {() => boolean} [shouldStop]
 * @property {import('../net/network.js').PointNetwork | null} [net] --net: the server in
 *   net.serverNs, browser b in net.clientNs[b] (Firefox with its BiDi port forwarded out,
 *   runFirefoxInNamespace); pages interleave peers
 *   so a group's members sit in different namespaces
 */

/**
 * How a point's peers fill pages and browser processes. Interleaved: page p
 * hosts peers p, p + pages, p + 2 pages, ... (a group spans pages). A mix of
 * `browsers` kinds gets a process of each kind as long as there are pages for
 * them (pages take the processes in turn), however few pages that is.
 * @param {{ clients: number, peersPerPage: number, pagesPerBrowser: number, interleave: boolean, browsers?: number }} o
 */
export function benchLayout({ clients, peersPerPage, pagesPerBrowser, interleave, browsers = 1 }) {
  const pageCount = Math.ceil(clients / peersPerPage);
  const browserCount = Math.max(1, Math.ceil(pageCount / pagesPerBrowser), Math.min(pageCount, browsers));
  const pages = Array.from({ length: pageCount }, (_, p) => (interleave
    ? { offset: p, stride: pageCount, peers: Math.ceil((clients - p) / pageCount) }
    : { offset: p * peersPerPage, stride: 1, peers: Math.min(peersPerPage, clients - p * peersPerPage) }));
  const peersPerBrowser = Array.from({ length: browserCount }, (_, b) => pages.filter((_, p) => p % browserCount === b).reduce((s, x) => s + x.peers, 0));
  return { pageCount, browserCount, pages, peersPerBrowser };
}

/**
 * Pages per machine core of the default layout: 300 peers in 10 pages on 2
 * cores (30 per page) measured the relay at 181 ms with no loss where one peer
 * per page measured the browsers (docs/results.md "Browser fleet"): every page
 * is a renderer with its own event loop and threads, and more of them than the
 * cores can run compete for the CPU the peers need.
 */
export const DEFAULT_PAGES_PER_CORE = 5;
/** The fullest page the default makes: the fullest measured (50 peers at 400 and 500, docs/results.md). */
export const DEFAULT_MAX_PEERS_PER_PAGE = 50;
/** Pages per browser process with the default peers per page, as in the measured layouts. */
export const DEFAULT_PAGES_PER_BROWSER = 5;
/** Chromium refuses more peer connections than this in one page ("Cannot create so many PeerConnections"). */
const PEER_CONNECTIONS_PER_PAGE = 500;

/** The default layout in words, for the help and the results' environment. */
export const DEFAULT_LAYOUT_RULE = `peers per page = clients / (${DEFAULT_PAGES_PER_CORE} pages per core), `
  + `at least 1 and at most ${DEFAULT_MAX_PEERS_PER_PAGE} (on p2p at most ${PEER_CONNECTIONS_PER_PAGE} peer connections a page), `
  + `${DEFAULT_PAGES_PER_BROWSER} pages per browser process`;

/**
 * Peers per page for a point when --peers-per-page is not given: the
 * population spread over about {@link DEFAULT_PAGES_PER_CORE} pages per core,
 * so that the browsers leave the transport something to measure.
 * @param {{ clients: number, group: number, transport: string }} point
 * @param {number} [cores] the machine's
 * @returns {number}
 */
export function defaultPeersPerPage({ clients, group, transport }, cores = availableParallelism()) {
  const fill = Math.ceil(clients / (DEFAULT_PAGES_PER_CORE * Math.max(1, cores)));
  // a p2p peer holds a connection to every other member of its group
  const connectionsPerPeer = transportInfo(transport)?.path === 'peer' ? Math.max(1, group - 1) : 1;
  const connectionCap = Math.floor(PEER_CONNECTIONS_PER_PAGE / connectionsPerPeer);
  return Math.max(1, Math.min(fill, DEFAULT_MAX_PEERS_PER_PAGE, connectionCap));
}

/**
 * A fleet browser as the bench uses it, whichever driver is under it.
 * @typedef {object} FleetBrowser
 * @property {string} name 'chromium' | 'firefox' | 'webkit'
 * @property {number} pid root of its process tree
 * @property {number[]} [pids] roots of every process tree it costs, when more than `pid`'s
 *   (WebKit: its WebDriver, with MiniBrowser and its web processes below it, and its Xvfb display)
 * @property {string} version
 * @property {() => Promise<FleetPage>} newPage a page in a browser context of its own
 * @property {() => Promise<void>} close
 *
 * @typedef {object} FleetPage
 * @property {(url: string) => Promise<unknown>} goto
 * @property {<T>(fn: () => T | Promise<T>) => Promise<T>} evaluate
 * @property {(event: 'pageerror', f: (e: Error) => void) => unknown} on
 * @property {(rate: number) => Promise<unknown>} [throttleCpu] slows its CPU (Chromium only: lab/bench/throttle.js)
 */

/**
 * What the fleet's pages reported of their browser, by browser name, as the
 * runs of this process measured them (runBenchPoint): a browser's build does
 * not change within a run, and the environment is written after the runs.
 * @type {Map<string, { webrtc: boolean, userAgent: string }>}
 */
const measuredCapabilities = new Map();

/**
 * How the fleet's browsers are driven, for the results' environment, and what
 * each could run (`browserCapabilities`, measured by the runs so far).
 * @param {string[]} browsers the fleet mix
 */
export function fleetDrivers(browsers) {
  const capabilities = browsers.filter((b) => measuredCapabilities.has(b)).map((b) => [b, measuredCapabilities.get(b)]);
  return {
    ...(browsers.includes('chromium')
      ? { chromiumDriver: 'DevTools pipe (lab/bench/cdp.js)', chromiumFlags: driverSwitches(chromiumArgs()).join(' ') }
      : {}),
    ...(browsers.includes('firefox') ? { firefoxDriver: 'Playwright (WebDriver BiDi)' } : {}),
    ...(browsers.includes('webkit')
      ? { webkitDriver: `WebKitWebDriver (selenium-webdriver ${SELENIUM_VERSION}), WebKitGTK MiniBrowser on its own Xvfb display; pages are windows of one session` }
      : {}),
    ...(capabilities.length ? { browserCapabilities: Object.fromEntries(capabilities) } : {}),
  };
}

/**
 * Chromium through our own DevTools driver (lab/bench/cdp.js: without
 * Playwright's per-frame WebSocket instrumentation); Firefox through
 * Playwright over WebDriver BiDi.
 * @param {string} name
 * @param {string | null} [executablePath] e.g. a wrapper that starts the browser in a namespace
 * @returns {Promise<FleetBrowser>}
 */
async function launchBrowser(name, executablePath = null) {
  if (name === 'webkit') {
    if (executablePath) throw new Error('webkit cannot run in a network namespace (--net)');
    return launchWebKitFleetBrowser();
  }
  if (name !== 'firefox') {
    const b = await launchChromium({ executablePath: executablePath ?? CHROMIUM_PATH, args: chromiumArgs() });
    return { name, pid: b.pid, version: b.version, newPage: () => b.newPage(), close: () => b.close() };
  }
  // Loaded here, not at the top: playwright-core costs 0.7 s of CPU to load, and every `carlab
  // agent` and `carlab bench` process loads this module, most of them never to launch Firefox.
  const { firefox } = await import('playwright-core');
  await ensureWarmFirefox();
  // Ctrl-C belongs to the lab command (it stops the point and writes results), not to Playwright.
  const server = await firefox.launchServer(/** @type {any} */ ({
    ...firefoxLaunchOptions(), ...(executablePath ? { executablePath } : {}), handleSIGINT: false,
  }));
  const browser = await firefox.connect(server.wsEndpoint());
  return {
    name,
    pid: /** @type {number} */ (server.process().pid),
    version: browser.version(),
    newPage: async () => (await browser.newContext()).newPage(),
    close: () => server.close(),
  };
}

/** What Firefox prints once its WebDriver BiDi server listens (Playwright waits for this line). */
const BIDI_LISTENING = /WebDriver BiDi listening on ws:\/\/([^:/\s]+|\[[^\]]+\]):(\d+)/;

/**
 * Node code run inside the namespace for one forwarded connection: stdin to
 * host:port (argv 1, 2) and back to stdout. Node cannot enter a namespace
 * itself (no setns), so each connection gets a child under `ip netns exec`.
 */
const PIPE_CODE = "const s=require('net').connect(Number(process.argv[2]),process.argv[1].replace(/^\\[|\\]$/g,''));"
  + "process.stdin.pipe(s);s.pipe(process.stdout);s.on('close',()=>process.exit(0));s.on('error',()=>process.exit(1));";

/**
 * A loopback TCP port in our own namespace that forwards every connection
 * to host:port inside namespace `ns`: the same port number, since Firefox's
 * BiDi server refuses a handshake whose Host header names another port (400)
 * (the two namespaces have separate port spaces, so it is almost always free;
 * if not, the launch fails with EADDRINUSE rather than hang).
 * @param {string} ns
 * @param {string} host
 * @param {number} port
 * @param {string} ip path of `ip`
 * @returns {Promise<number>} the port in our namespace
 */
function forwardIntoNamespace(ns, host, port, ip) {
  const server = createServer((socket) => {
    const child = spawn(ip, ['netns', 'exec', ns, process.execPath, '-e', PIPE_CODE, host, String(port)], { stdio: ['pipe', 'pipe', 'ignore'] });
    socket.pipe(child.stdin);
    child.stdout.pipe(socket);
    socket.on('error', () => child.kill());
    socket.on('close', () => child.kill());
    child.on('exit', () => socket.destroy());
  });
  return new Promise((resolve, reject) => {
    server.on('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(/** @type {import('node:net').AddressInfo} */ (server.address()).port));
  });
}

/**
 * The executable Playwright starts as "Firefox" under --net (the wrapper
 * script runs this in our own namespace): Firefox itself in namespace `ns`,
 * its output passed through, and its WebDriver BiDi port, which is a
 * loopback port inside the namespace and so out of Playwright's reach,
 * forwarded from the same port on our loopback (forwardIntoNamespace) before
 * Playwright reads the line (which names 127.0.0.1 for any loopback host). Only Playwright's control connection crosses; the pages'
 * traffic stays on the namespace's link. Exits with Firefox; Playwright's
 * kill of the process group reaches Firefox and the forwarders too.
 * @param {string} ns
 * @param {string} executable Firefox
 * @param {string[]} args Playwright's arguments for Firefox
 * @param {string} ip path of `ip`
 */
export function runFirefoxInNamespace(ns, executable, args, ip) {
  const child = spawn(ip, ['netns', 'exec', ns, executable, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  for (const [from, to] of /** @type {const} */ ([[child.stdout, process.stdout], [child.stderr, process.stderr]])) {
    // Lines are written in order: one after the BiDi line waits for the forwarder.
    let chain = Promise.resolve();
    createInterface({ input: from }).on('line', (line) => {
      chain = chain.then(async () => {
        const m = BIDI_LISTENING.exec(line);
        const out = m ? line.replace(`${m[1]}:${m[2]}`, `127.0.0.1:${await forwardIntoNamespace(ns, m[1], Number(m[2]), ip)}`) : line;
        to.write(`${out}\n`);
      });
    });
  }
  for (const sig of /** @type {const} */ (['SIGTERM', 'SIGINT', 'SIGHUP'])) process.on(sig, () => child.kill(sig));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}

/**
 * The wrapper script that Playwright starts as Firefox in namespace `ns`:
 * Node runs runFirefoxInNamespace from this module.
 * @param {string} ns
 * @param {string} [executable] Firefox
 * @param {string} [ip] path of `ip`
 */
export function firefoxNamespaceWrapperScript(ns, executable = FIREFOX_PATH, ip = 'ip') {
  const q = (/** @type {string} */ s) => `'${s.replace(/'/g, `'\\''`)}'`;
  const code = `import(${JSON.stringify(import.meta.url)}).then((m) => m.runFirefoxInNamespace(process.argv[1], process.argv[2], process.argv.slice(4), process.argv[3]))`;
  return `#!/bin/sh\n# carlab: Firefox in network namespace ${ns}, its WebDriver BiDi port forwarded out\n`
    + `exec ${q(process.execPath)} --input-type=module -e ${q(code)} ${q(ns)} ${q(executable)} ${q(ip)} "$@"\n`;
}

/** A page of the fleet and the browser it runs in. @typedef {{ page: FleetPage, browser: string }} FleetPageOf */

/**
 * Launches the fleet's browsers, pushing each into `browsers` as it comes up
 * (so the caller closes them even if a later one fails). Under --net each
 * browser starts through a wrapper in its client namespace (Chromium keeps its
 * DevTools pipe; Firefox's BiDi port is forwarded out: runFirefoxInNamespace).
 * @param {BenchPointOptions} o
 * @param {number} browserCount
 * @param {string | null} wrapperDir
 * @param {FleetBrowser[]} browsers
 */
export async function launchFleet(o, browserCount, wrapperDir, browsers) {
  const net = o.net ?? null;
  for (let b = 0; b < browserCount; b++) {
    let executable = null;
    const name = o.browsers[b % o.browsers.length];
    if (net && wrapperDir) {
      executable = `${wrapperDir}/${name}-${b}`;
      await writeFile(executable, name === 'firefox'
        ? firefoxNamespaceWrapperScript(net.clientNs[b], warmFirefoxPath(FIREFOX_PATH), ipPath())
        : namespaceWrapperScript(net.clientNs[b], CHROMIUM_PATH, ipPath()));
      await chmod(executable, 0o755);
    }
    browsers.push(await launchBrowser(name, executable));
    o.onProgress?.({ phase: `launched ${browsers.length}/${browserCount} browsers`, elapsedS: 0, rtMean: null });
  }
}

/**
 * Opens the pages round-robin over the browsers, each hosting its share of
 * peers (peer.html), pushing each into `pages` once ready.
 * @param {BenchPointOptions} o
 * @param {{ layout: { pageCount: number, pages: { peers: number, offset: number, stride: number, indices?: number[] }[] },
 *   browsers: FleetBrowser[], baseUrls: string[], runId: string, pageHost?: string | null }} fleet
 *   baseUrls: the servers; with --relays, page p loads from relay p mod N, so groups span relays;
 *   pageHost: the lab's page host (lab/bench/page-host.js) the pages load from instead, pointed at their
 *   server with `server=`; a page's `indices`: its peers' population indices (a fleet agent's share)
 * @param {FleetPageOf[]} pages
 * @param {string[]} pageErrors
 */
export async function openPages(o, { layout, browsers, baseUrls, runId, pageHost = null }, pages, pageErrors) {
  const { point } = o;
  for (let p = 0; p < layout.pageCount; p++) {
    if (o.shouldStop?.()) throw new Error('interrupted while opening pages');
    const host = browsers[p % browsers.length];
    const { peers, offset, stride, indices } = layout.pages[p];
    const page = await host.newPage();
    page.on('pageerror', (e) => pageErrors.push(`${host.name}: ${e.message}`));
    await throttlePage(page, host.name, point.cpuSlowdown);
    const q = new URLSearchParams({
      group: runId, transport: point.transport, peers: String(peers), size: String(point.group),
      offset: String(offset), stride: String(stride), total: String(point.clients), cycle: String(point.cycleMs), mode: point.cycleMode,
      ackTimeout: String(o.ackTimeoutMs), warmup: String(o.warmupS * 1000), updates: String(o.updates),
      autostart: '0', name: `${host.name[0]}`, reports: String(reportPeriodMs(point.reportsIntervalS ?? 0) / 1000),
    });
    if (indices) q.set('indices', indices.join(','));
    if (o.editsPerMinute) q.set('edits', String(o.editsPerMinute));
    if (o.playout) { q.set('playout', o.playout.join(',')); q.set('fps', String(o.renderFps ?? DEFAULT_RENDER_FPS)); }
    if (o.netEvents) q.set('recovery', '1');
    if (pageHost) q.set('server', baseUrls[p % baseUrls.length]);
    await page.goto(`${pageHost ?? baseUrls[p % baseUrls.length]}/peer.html?${q}`);
    await page.evaluate(() => window.carlab.ready);
    pages.push({ page, browser: host.name });
    o.onProgress?.({ phase: `opened ${pages.length}/${layout.pageCount} pages`, elapsedS: 0, rtMean: null });
  }
}

/**
 * Resolves once every page's peers are meshed; throws after 60 s.
 * @param {FleetPageOf[]} pages
 */
export async function waitForMesh(pages) {
  const meshDeadline = Date.now() + 60_000;
  for (;;) {
    const states = await Promise.all(pages.map(({ page }) => page.evaluate(() => window.carlab.meshed())));
    if (states.every(Boolean)) break;
    if (Date.now() > meshDeadline) throw new Error(`${states.filter((s) => !s).length} pages not meshed after 60 s`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * One phase (warm-up, measuring): every second, the pages' live RT mean as progress.
 * @param {BenchPointOptions} o
 * @param {FleetPageOf[]} pages
 * @param {number} started Date.now() when the peers started
 * @param {string} phase
 * @param {number} seconds
 */
export async function watchPhase(o, pages, started, phase, seconds) {
  const end = Date.now() + seconds * 1000;
  while (Date.now() < end && !o.shouldStop?.()) {
    await new Promise((r) => setTimeout(r, 1000));
    const live = await Promise.all(pages.map(({ page }) => page.evaluate(() => window.carlab.liveRt())));
    const n = live.reduce((s, l) => s + l.n, 0);
    o.onProgress?.({ phase, elapsedS: (Date.now() - started) / 1000, rtMean: n ? live.reduce((s, l) => s + l.sum, 0) / n : null });
  }
}

/**
 * What each browser of the fleet can run, as its first page reports it.
 * @param {FleetPageOf[]} pages
 * @returns {Promise<Record<string, { webrtc: boolean, userAgent: string }>>}
 */
export async function browserCapabilitiesOf(pages) {
  /** @type {Record<string, { webrtc: boolean, userAgent: string }>} */
  const out = {};
  for (const { page, browser } of pages) {
    if (out[browser]) continue;
    out[browser] = await page.evaluate(() => ({
      webrtc: typeof globalThis.RTCPeerConnection === 'function' && typeof globalThis.RTCDataChannel === 'function',
      userAgent: navigator.userAgent,
    }));
    measuredCapabilities.set(browser, out[browser]);
  }
  return out;
}

/** The longest the end of a point waits for what is on its way: the longest delivery horizon, and a second. */
export const SETTLE_MAX_MS = HORIZON_MAX_MS + 1000;

/**
 * After the stop, lets what is on its way land before the count
 * (docs/architecture.md "Loss"): until every peer's last update is one
 * delivery horizon old (window.carlab.settled), at most SETTLE_MAX_MS.
 * @param {FleetPageOf[]} pages
 */
export async function waitUntilSettled(pages) {
  const end = Date.now() + SETTLE_MAX_MS;
  while (Date.now() < end) {
    const settled = await Promise.all(pages.map(({ page }) => page.evaluate(() => window.carlab.settled()).catch(() => true)));
    if (settled.every(Boolean)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Every peer's stats, tagged with its browser.
 * @param {FleetPageOf[]} pages
 */
export async function collectPeerStats(pages) {
  const perPage = await Promise.all(pages.map(async ({ page, browser }) => {
    const stats = /** @type {Record<string, unknown>[]} */ (await page.evaluate(() => window.carlab.stats()));
    return stats.map((s) => ({ ...s, browser }));
  }));
  return perPage.flat();
}

/**
 * The server the fleet uses: `--url`'s, one server child, or (--relays) a
 * cluster of relays on NATS.
 * @param {BenchPointOptions} o
 */
async function startBenchSystem(o) {
  const net = o.net ?? null;
  if (o.url) {
    // the server under test serves no lab pages: ours do, from an origin it must allow
    const pageHost = await sharedPageHost(o.url, o.pagesPort ?? 0);
    await checkServerAllowsOrigin(o.url, pageHost.origin);
    return { server: null, cluster: null, baseUrls: [baseOf(o.url)], pageHost: pageHost.url };
  }
  // A --net profile with `turn` runs coturn beside the server (server/turn.js), in its namespace.
  const serverOptions = { ackTimeoutMs: o.ackTimeoutMs, ...(net ? { host: net.serverIp } : {}), ...(net?.turn ? { turn: true } : {}) };
  const serverPlace = net ? { netns: net.serverNs } : {};
  if (o.point.relays > 0) {
    const cluster = await startRelayCluster({ relays: o.point.relays, natsUrl: o.nats ?? null, serverOptions, serverPlace });
    /** @type {{ resetWindow(): Promise<unknown>, metrics(): Promise<any>, close(): Promise<void> }} */
    const server = cluster;
    return { server, cluster, baseUrls: cluster.urls.map((u) => u.replace(/\/$/, '')), pageHost: null };
  }
  const server = await startServerChild(serverOptions, serverPlace);
  return { server, cluster: null, baseUrls: [server.url.replace(/\/$/, '')], pageHost: null };
}

/**
 * Runs one point and returns its run record.
 * @param {BenchPointOptions} o
 */
export async function runBenchPoint(o) {
  const { point } = o;
  const net = o.net ?? null;
  const { server, cluster, baseUrls, pageHost } = await startBenchSystem(o);
  const runId = `bench${Date.now().toString(36)}`;
  // Interleaved: a group's peers sit on different pages (and so, with --relays, on different relays).
  const layout = benchLayout({
    clients: point.clients, peersPerPage: o.peersPerPage, pagesPerBrowser: o.pagesPerBrowser, interleave: Boolean(net) || point.relays > 0,
    // a mix gets a process of each kind (under --net the namespaces are counted per process: one kind per process as before)
    browsers: net ? 1 : new Set(o.browsers).size,
  });
  const { pageCount, browserCount } = layout;
  if (net && net.clientNs.length !== browserCount) throw new Error(`--net: ${net.clientNs.length} client namespaces for ${browserCount} browsers`);
  // Chromium keeps Playwright's pipe through `exec ip netns exec NS chromium`
  const wrapperDir = net ? await mkdtemp(`${tmpdir()}/carlab-netns-`) : null;
  /** @type {FleetBrowser[]} */
  const browsers = [];
  /** @type {FleetPageOf[]} */
  const pages = [];
  /** @type {string[]} */
  const pageErrors = [];
  try {
    o.onProgress?.({ phase: 'launching', elapsedS: 0, rtMean: null });
    await launchFleet(o, browserCount, wrapperDir, browsers);
    await openPages(o, { layout, browsers, baseUrls, runId, pageHost }, pages, pageErrors);
    const capabilities = await browserCapabilitiesOf(pages);
    await waitForMesh(pages);
    const trackingHost = o.tracking ? browsers.find((b) => b.name === (o.trackingBrowser ?? 'chromium')) : undefined;
    const tracker = trackingHost ? await openTrackingPage(trackingHost, baseUrls[0], runId, point.cpuSlowdown) : null;
    const arPair = o.arPair ? await openArPair({
      hosts: browsers.filter((b) => b.name === 'chromium'), baseUrl: baseUrls[0], runId, transport: point.transport, cycleMs: point.cycleMs,
      modes: o.playout ?? [DEFAULT_PLAYOUT], rate: point.cpuSlowdown,
    }) : null;

    await Promise.all(pages.map(({ page }) => page.evaluate(() => window.carlab.start())));
    const started = Date.now();
    await watchPhase(o, pages, started, 'warm-up', o.warmupS);
    await server?.resetWindow();
    const rootsOf = (/** @type {FleetBrowser} */ b) => b.pids ?? [b.pid];
    const sampler = sampleProcessTree(() => browsers.flatMap(rootsOf));
    // a mixed fleet: each kind's process trees on their own as well
    const kinds = [...new Set(browsers.map((b) => b.name))];
    const kindSamplers = kinds.length > 1
      ? kinds.map((name) => /** @type {const} */ ([name, sampleProcessTree(() => browsers.filter((b) => b.name === name).flatMap(rootsOf))]))
      : [];
    const windowStart = performance.now();
    const moving = o.netEvents ? movingIndices(point.clients, point.group, o.netEvents.movingPerGroup) : [];
    const player = o.netEvents && net ? startBenchNetEvents(o.netEvents, net, moving, pages, windowStart) : null;
    const trackingFrom = tracker ? await sampleTracking(tracker) : null;
    if (arPair) await startArPair(arPair);
    const measuringS = o.updates > 0 ? (o.updates * point.cycleMs) / 1000 + 2 : o.durationS;
    if (o.editsPerMinute) {
      // the edits stop before the window ends, so that the end-of-run check sees a settled scene
      await watchPhase(o, pages, started, 'measuring', measuringS - SCENE_SETTLE_S);
      await Promise.all(pages.map(({ page }) => page.evaluate(() => window.carlab.editsStop())));
      await watchPhase(o, pages, started, 'measuring', SCENE_SETTLE_S);
    } else {
      await watchPhase(o, pages, started, 'measuring', measuringS);
    }
    const windowMs = performance.now() - windowStart;
    player?.stop();
    const tracking = tracker && trackingFrom ? { ...trackingFigures(trackingFrom, await sampleTracking(tracker)), browser: trackingHost?.name } : null;
    const arDrawn = arPair ? await finishArPair(arPair) : null;
    const browserUsage = sampler.stop();
    /** @type {Record<string, { cpuPct: number | null, rssMaxBytes: number | null }>} */
    const usageByBrowser = kindSamplers.length
      ? Object.fromEntries(kindSamplers.map(([name, s]) => {
        const u = s.stop();
        return [name, { cpuPct: u.cpuPct, rssMaxBytes: u.rssMaxBytes }];
      }))
      : { [kinds[0]]: { cpuPct: browserUsage.cpuPct, rssMaxBytes: browserUsage.rssMaxBytes } };
    const serverMetrics = server ? await server.metrics() : null;
    await Promise.all(pages.map(({ page }) => page.evaluate(() => window.carlab.stop())));
    await waitUntilSettled(pages);
    // --reports: each peer's last report (beacon), and what the pages' reports did
    const reports = sumReportTallies(await Promise.all(pages.map(({ page }) => page.evaluate(() => window.carlab.finishReports()))));
    const clients = await collectPeerStats(pages);
    const drawn = o.playout ? await Promise.all(pages.map(({ page }) => page.evaluate(() => window.carlab.drawn()))) : [];
    const relay = serverMetrics?.relay ?? null;
    /** @type {Record<string, string>} */
    const userAgents = {};
    for (const b of browsers) userAgents[b.name] = b.version;
    // the browsers share this machine with the server: whether they had CPU to spare (lab/report/saturation.js)
    const record = withLoadFlags(aggregateRun({
      point,
      clients,
      relay: relay && point.transport.startsWith('relay') ? relay : null,
      cpu: { server: relay?.cpuPctMean ?? null, clients: browserUsage.cpuPct, serverSplit: serverMetrics?.cpuWindow ?? null },
      extra: {
        browser: o.browsers.join('+'),
        browserVersions: userAgents,
        peersPerPage: o.peersPerPage,
        pages: pageCount,
        browserProcesses: browserCount,
        browserRssMaxBytes: browserUsage.rssMaxBytes,
        // per browser kind: CPU % (100 = one core) and peak RSS of its process trees; what its pages could run
        browserUsage: usageByBrowser,
        browserCapabilities: capabilities,
        serverRssBytes: serverMetrics?.rssBytes ?? null,
        durationS: Math.round(windowMs / 100) / 10,
        ...reportFields(point.reportsIntervalS ?? 0, reports),
        pageErrors: pageErrors.slice(0, 20),
        stoppedEarly: Boolean(o.shouldStop?.()),
        ...slowdownFields(point, o.browsers),
        ...(o.tracking ? { tracking } : {}),
        ...(o.editsPerMinute ? { scene: sceneRecord(clients, o.editsPerMinute) } : {}),
        ...(o.playout ? { drawn: drawnRecord(drawn, { renderFps: o.renderFps ?? DEFAULT_RENDER_FPS }) } : {}),
        ...(o.arPair ? { arDrawn } : {}),
        ...(o.netEvents && player ? benchNetEventsFields(o.netEvents, player.played, moving, clients) : {}),
      },
    }), { cores: availableParallelism() });
    // a mixed fleet's per-browser figures carry each browser's CPU and memory too
    const byBrowser = /** @type {Record<string, any> | undefined} */ (/** @type {any} */ (record).byBrowser);
    for (const [name, figures] of Object.entries(byBrowser ?? {})) Object.assign(figures, usageByBrowser[name] ?? {});
    return cluster ? { ...record, ...clusterRunFields({ point, cluster, serverMetrics }) } : record;
  } finally {
    for (const { page } of pages) await page.evaluate(() => window.carlab.close()).catch(() => {});
    for (const b of browsers) await b.close().catch(() => {});
    await server?.close();
    if (wrapperDir) await rm(wrapperDir, { recursive: true, force: true });
  }
}
