// `carlab bench`: the location-update study with real headless browsers.
// The sweep, progress and output are shared with `carlab sim`
// (lab/commands/sweep.js); the point runner is lab/bench/bench.js.

import { LAB_FLAGS_HELP, parseNameList, parseNumberList, reportsIntervalOf } from '../shared/flags.js';
import { MAX_CPU_SLOWDOWN, slowdownCheck } from '../bench/throttle.js';
import {
  BENCH_BROWSERS, BENCH_TRANSPORTS, DEFAULT_LAYOUT_RULE, DEFAULT_PAGES_PER_BROWSER, DEFAULT_PAGES_PER_CORE, benchLayout, defaultPeersPerPage,
  fleetDrivers, fleetProblem, runBenchPoint,
} from '../bench/bench.js';
import { runLabCommand } from './sweep.js';
import { LOAD_FLAGS_HELP } from '../report/saturation.js';
import { EDITS_FLAG_HELP, validateEdits } from '../shared/edits-flag.js';
import { ensureLabPages } from '../pages/build.js';
import { FLEET_FLAGS, FLEET_HELP, fleetEnv, fleetOptionsProblem, runFleetPoint } from '../fleet/fleet-bench.js';
import { netEventsFlag } from '../net/events.js';

/** Help text of `carlab bench`. */
export function benchHelp() {
  return `Usage: carlab bench [flags]

Drives simulated peers (scripted poses, no camera) in headless Debian
Chromium / Firefox ESR (and WebKitGTK, Safari's engine, under Xvfb: relay
transports only) against a carlab server it starts on a free loopback
port (or --url of a running one), and reports RT, RTS, CPU, loss, jitter
and setup delay per sweep point.

Transports: ${BENCH_TRANSPORTS.join(', ')}

${LAB_FLAGS_HELP}
Fleet:
  --browsers LIST      chromium, firefox, webkit or a mix (pages take them in turn, each kind
                       gets a process; default chromium). webkit: Debian's WebKitGTK, which
                       has no WebRTC, so relay and relay-faithful only (apt-get install
                       webkit2gtk-driver xvfb)
  --peers-per-page K   simulated peers hosted in one page; several per page share one
                       renderer process, its event loop and its CPU. Default: per point,
                       the clients over about ${DEFAULT_PAGES_PER_CORE} pages per core of this machine (1..50;
                       300 clients on 2 cores: 30 per page, 10 pages), since a renderer per
                       peer leaves the browsers measuring themselves (docs/results.md);
                       1 with --net (one shaped link per peer) and with --agents
  --pages-per-browser N  pages per browser process (default ${DEFAULT_PAGES_PER_BROWSER} with the default peers per
                       page, 50 with --peers-per-page, 1 with --net)
  --url URL            measure a running carlab server (no server CPU or RTS then). The peer
                       pages come from the bench's own page host, so start that server with
                       --allowed-origins naming the pages' origin (the bench says which) or '*'
  --pages-port N       the page host's port with --url (default: a free one)

Phone-speed peers (docs/bench.md):
  --cpu-slowdown LIST  run every Chromium page with its CPU throttled N times (1..${MAX_CPU_SLOWDOWN}; DevTools
                       Emulation.setCPUThrottlingRate), each N a point of its own, innermost:
                       --cpu-slowdown 1,4 measures both side by side. Firefox and WebKit cannot be
                       throttled: in a mixed fleet their peers run at full speed (the run says so)
${EDITS_FLAG_HELP}
  --tracking           add one AR page tracking the synthetic camera (ar.html?source=synthetic) in
                       a Chromium of the fleet, in a group of its own and throttled like the
                       peers; its frame rate, ms per frame and marker-found % go in the run's
                       \`tracking\` (not with --agents)
  --tracking-browser B the tracking page in chromium (default), firefox or webkit (one of
                       --browsers; implies --tracking)
  --ar-pair            what a person sees: two AR pages on the synthetic camera in a group of their
                       own on the point's transport, in two Chromium processes (under --net behind
                       two links), each drawing the other in every --playout mode (default: the
                       AR view's) at each frame, measured against where the other's video really
                       is; in the run's \`arDrawn\` (docs/architecture.md "Drawn error")

${FLEET_HELP}

With --net the server runs in a server namespace and each browser process in
its own client namespace (one link per browser; the profile's rate is per peer,
so a link with k peers gets k x rate). Pages interleave the peers so the members
of a working group sit on different links, and p2p crosses two links as between
two phones. Chromium and Firefox (whose WebDriver BiDi port is forwarded out of
its namespace); not WebKit.

  --net-events SPEC    change the moving peers' links during the measured window (needs --net),
                       as \`carlab sim --net-events\` does (see its help for the events); each peer
                       is alone behind its link, the first --net-events-members N (default 1) of
                       each group move. Runs record netEvents and recovery

${LOAD_FLAGS_HELP}

Example:
  carlab bench --transport relay,p2p --clients 50,100,200 --group 5,10 --cycle 167 --duration 60 --out results/x
  carlab bench --net none,lossy-2,3g --transport relay,relay-udp,p2p --clients 50 --group 5 --peers-per-page 10 --out results/net-bench`;
}

/** @type {import('./sweep.js').LabCommand} */
export const benchCommand = {
  name: 'bench',
  transports: BENCH_TRANSPORTS,
  defaults: { transport: 'relay', clients: '10', group: '5', duration: '20', warmup: '3' },
  extraFlags: {
    browsers: { type: 'string', default: 'chromium' },
    'peers-per-page': { type: 'string' },
    'pages-per-browser': { type: 'string' },
    'pages-port': { type: 'string' },
    'cpu-slowdown': { type: 'string' },
    tracking: { type: 'boolean', default: false },
    'tracking-browser': { type: 'string' },
    'ar-pair': { type: 'boolean', default: false },
    'edits-per-minute': { type: 'string' },
    'net-events': { type: 'string' }, 'net-events-members': { type: 'string' },
    ...FLEET_FLAGS,
  },
  help: benchHelp,
  validate(o) {
    try {
      o.browsers = parseNameList(o.values.browsers, '--browsers', BENCH_BROWSERS);
    } catch (err) {
      return /** @type {Error} */ (err).message;
    }
    const fleet = fleetProblem(o.browsers, o.transports, { net: Boolean(o.nets) });
    if (fleet) return fleet;
    if (o.killRelayAtS !== null) return '--kill-relay-at is a carlab sim flag (bench measures browsers across relays with --relays)';
    if (o.pauseRelay !== null) return '--pause-relay is a carlab sim flag (bench measures browsers across relays with --relays)';
    if (o.relays.some((/** @type {number} */ n) => n > 0) && (o.url || o.nets)) return '--relays starts its own relays: not with --url or --net';
    const layout = layoutProblem(o);
    if (layout) return layout;
    if (o.nets && o.url) return '--net starts its own server in the server namespace: drop --url';
    const edits = validateEdits(o);
    if (edits) return edits;
    const netEvents = netEventsFlag({
      events: o.values['net-events'], members: o.values['net-events-members'], nets: o.nets, durationS: o.durationS, groups: o.groups,
    });
    if (netEvents.problem) return netEvents.problem;
    if (netEvents.plan && (o.values.agents !== undefined || o.peersPerPage > 1)) return '--net-events needs each peer alone behind its link: no --agents, no --peers-per-page above 1';
    o.netEvents = netEvents.plan;
    if (o.editsPerMinute && o.values.agents !== undefined) return '--edits-per-minute is not carried to carlab agents yet: run it on one machine';
    if (o.playout && o.values.agents !== undefined) return '--playout is not carried to carlab agents yet: run it on one machine';
    o.arPair = Boolean(o.values['ar-pair']);
    if (o.arPair && o.values.agents !== undefined) return '--ar-pair runs on this machine: not with --agents';
    if (o.arPair && !o.browsers.includes('chromium')) return '--ar-pair opens its AR pages in Chromium: add chromium to --browsers';
    const problem = slowdownProblem(o);
    if (problem) return problem;
    o.pagesPort = Number(o.values['pages-port'] ?? 0);
    if (!Number.isInteger(o.pagesPort) || o.pagesPort < 0 || o.pagesPort > 65535) return `--pages-port: "${o.values['pages-port']}" is not a port 0..65535`;
    return fleetOptionsProblem(o);
  },
  netLinks: (point, o) => benchLayout({ clients: point.clients, peersPerPage: peersPerPageOf(point, o), pagesPerBrowser: o.pagesPerBrowser, interleave: true }).peersPerBrowser,
  describe: (o) => ({
    generator: 'browsers',
    browsers: o.browsers,
    peersPerPage: o.peersPerPage ?? 'per point: the default layout (each run says its peersPerPage)',
    ...(o.peersPerPage === null ? { defaultLayout: DEFAULT_LAYOUT_RULE } : {}),
    pagesPerBrowser: o.pagesPerBrowser,
    ...fleetDrivers(o.browsers),
    ...fleetEnv(o.fleet),
  }),
  async prepare(o, stderr) {
    if (o.slowdownNotice) stderr.write(`carlab bench: --cpu-slowdown: ${o.slowdownNotice}\n`);
    // with --url too: the bench hosts the peer pages itself (lab/bench/page-host.js)
    await ensureLabPages({ log: (line) => stderr.write(`carlab bench: ${line}\n`) });
  },
  secondsPerPoint: (o) => o.warmupS + o.durationS + 8,
  runPoint: ({ point, options, onProgress, shouldStop, net }) => (options.fleet ? runFleetPoint({
    point: { ...point, reportsIntervalS: reportsIntervalOf(point, options) }, durationS: options.durationS, warmupS: options.warmupS, updates: options.updates,
    ackTimeoutMs: options.ackTimeoutMs, browsers: options.browsers, peersPerPage: peersPerPageOf(point, options),
    pagesPerBrowser: options.pagesPerBrowser, url: options.url, fleet: options.fleet, onProgress, shouldStop,
  }) : runBenchPoint({
    net,
    point: { ...point, reportsIntervalS: reportsIntervalOf(point, options) }, durationS: options.durationS, warmupS: options.warmupS, updates: options.updates,
    ackTimeoutMs: options.ackTimeoutMs, browsers: options.browsers, peersPerPage: peersPerPageOf(point, options),
    pagesPerBrowser: options.pagesPerBrowser, url: options.url, pagesPort: options.pagesPort, onProgress, shouldStop, nats: options.nats,
    tracking: options.tracking, trackingBrowser: options.trackingBrowser, editsPerMinute: options.editsPerMinute ?? 0,
    playout: options.playout, renderFps: options.renderFps, arPair: options.arPair, netEvents: options.netEvents ?? null,
  })),
};

/**
 * Reads --peers-per-page and --pages-per-browser into `o.peersPerPage` (null:
 * the default layout, chosen per point by peersPerPageOf) and `o.pagesPerBrowser`.
 * The default fits the population to this machine; under --net each browser
 * process is one shaped link (the profile's rate is per peer), and with
 * --agents the browsers run on other machines, so both keep one peer per page.
 * @param {any} o
 * @returns {string | null} a usage problem
 */
export function layoutProblem(o) {
  const byDefault = o.values['peers-per-page'] === undefined && !o.nets && o.values.agents === undefined;
  o.values['pages-per-browser'] ??= String(o.nets ? 1 : byDefault ? DEFAULT_PAGES_PER_BROWSER : 50);
  if (!byDefault) o.values['peers-per-page'] ??= '1';
  o.peersPerPage = null;
  for (const [flag, key] of [['peers-per-page', 'peersPerPage'], ['pages-per-browser', 'pagesPerBrowser']]) {
    if (o.values[flag] === undefined) continue;
    const n = Number(o.values[flag]);
    if (!Number.isInteger(n) || n < 1 || n > 500) return `--${flag}: "${o.values[flag]}" is not an integer 1..500`;
    o[key] = n;
  }
  return null;
}

/**
 * A point's peers per page: --peers-per-page's, or the default layout's for its population.
 * @param {import('../shared/flags.js').SweepPoint} point
 * @param {{ peersPerPage: number | null }} o
 * @returns {number}
 */
export function peersPerPageOf(point, o) {
  return o.peersPerPage ?? defaultPeersPerPage(point);
}

/**
 * Reads --cpu-slowdown and --tracking into `o.cpuSlowdowns`, `o.tracking`
 * and `o.slowdownNotice` (which browsers cannot be throttled).
 * @param {any} o
 * @returns {string | null} a usage problem
 */
function slowdownProblem(o) {
  o.cpuSlowdowns = null;
  if (o.values['cpu-slowdown'] !== undefined) {
    try {
      o.cpuSlowdowns = parseNumberList(String(o.values['cpu-slowdown']), '--cpu-slowdown');
    } catch (err) {
      return /** @type {Error} */ (err).message;
    }
  }
  const { problem, notice } = slowdownCheck(o.cpuSlowdowns, o.browsers);
  if (problem) return problem;
  o.slowdownNotice = notice;
  const trackingBrowser = o.values['tracking-browser'];
  o.tracking = Boolean(o.values.tracking) || trackingBrowser !== undefined;
  o.trackingBrowser = trackingBrowser ?? 'chromium';
  if (!['chromium', 'firefox', 'webkit'].includes(o.trackingBrowser)) return `--tracking-browser: "${trackingBrowser}" is not chromium, firefox or webkit`;
  if (o.tracking && !o.browsers.includes(o.trackingBrowser)) return `--tracking opens its AR page in ${o.trackingBrowser}: add ${o.trackingBrowser} to --browsers`;
  if (o.tracking && o.values.agents !== undefined) return '--tracking runs on this machine: not with --agents';
  return null;
}

/**
 * @param {string[]} argv
 * @param {{ stdout?: NodeJS.WritableStream, stderr?: NodeJS.WriteStream }} [io]
 */
export function run(argv, io) {
  return runLabCommand(benchCommand, argv, io);
}
