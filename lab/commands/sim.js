// `carlab sim`: the CAR server study at paper scale with Node clients built
// on the shared client core. The sweep, progress and output are shared with
// `carlab bench` (lab/commands/sweep.js); the point runner is lab/sim/sim.js.

import { LAB_FLAGS_HELP, START_CLUSTER_FLAG, parsePauseRelay, reportsIntervalOf } from '../shared/flags.js';
import { BASELINES, SIM_TRANSPORTS, runSimPoint } from '../sim/sim.js';
import { EDITS_FLAG_HELP, validateEdits } from '../shared/edits-flag.js';
import { generatorShares } from '../sim/generators.js';
import { runLabCommand } from './sweep.js';
import { LOAD_FLAGS_HELP } from '../report/saturation.js';
import { MAX_MACHINES, missingTools } from '../target/lb.js';
import { movingShares } from '../sim/net-events.js';
import { netEventsFlag } from '../net/events.js';

/** Help text of `carlab sim`. */
export function simHelp() {
  return `Usage: carlab sim [flags]

Runs the location-update study with lightweight Node clients (the same
protocol, action cycle and metrics code the browser runs) against a carlab
server started in its own process on a free loopback port, so the server's
CPU is measured apart from the load generator's.

Transports: ${SIM_TRANSPORTS.join(', ')}

${LAB_FLAGS_HELP}
  --workers N          load-generator threads (default: 1 per 400 clients, at most 2)
  --timeline S         timeline bucket in seconds: RT mean and server RSS per bucket,
                       and the run's stability (first vs last window) (default 10)
  --live-heap          force a full GC in the server as each timeline bucket closes and record
                       its live heap and external memory: the leak check of a soak
                       (stability.liveHeapGrowthPct, stability.externalGrowthBytes)
  --restart-at S       kill the server (SIGKILL) S seconds into each measured window and
                       start it again on the same port: clients reconnect, the run
                       reports the outage and the updates lost in it
  --restart-down MS    keep it down this long before restarting (default 0)
  --late-join S        the last member of every group joins S seconds into the measured window
                       (with --edits-per-minute, scene.joinSyncMs: how long until it holds every
                       edit made before it came)
${EDITS_FLAG_HELP}
  --start-cluster LIST measure the product as it runs: the server under test is a real
                       \`carlab start --http\` process, 1: plain (one process, no NATS),
                       N >= 2: \`carlab start --cluster N\` (a primary routing each group to one of
                       N workers, and its nats-server); a sweep axis, e.g. 1,2. CPU is every one of
                       its processes summed; runs record cluster { nodes, crossNodeUpdates,
                       primaryCpuPct, routed, primaryUsPerConnection, ... }. Not with --relays

With --net the server runs in a server namespace and each load generator is a
child process in its own client namespace (one link per generator; the
profile's rate is per client, so a link with k clients gets k x rate).

  --net-events SPEC    change the network of the moving clients during the measured window
                       (needs --net): events separated by ";", times from the window's start:
                         at <T>s outage <D>s          every packet of their link dropped for D s
                         at <T>s handover [<G>s]      their address removed, a new one added G s
                                                      later (default 0), as a phone changing networks
                         at <T>s loss <P>% for <D>s   P % of the packets each way dropped for D s
                         at <T>s rate <R> for <D>s    e.g. 200kbit per client for D s
                       or the name of a file holding them (one per line, # comments). Runs record
                       netEvents (each event's times) and recovery (per event: the time from the
                       network being back until the moving members' updates reach every neighbour
                       and theirs reach them, p50/p99/max; members who fell out; loss during the
                       events apart from loss outside them; docs/architecture.md "Recovery")
  --net-events-members N
                       members of each group behind the link that changes (default 1): they run
                       in one load generator on link 0, the others in a second on link 1

${LOAD_FLAGS_HELP}

Scale-out: --relays N runs N relay processes joined by a nats-server of the run's own
(or --nats URL); clients are placed by --placement (spread: every group spans the
relays; group: each group on one; haproxy: every client connects to HAProxy in front of the
relays, deploy/haproxy.cfg, which puts each group on one and moves it when its relay dies)
and fail over to the next relay when theirs goes; --kill-relay-at S kills one;
--pause-relay S:D stops one for D seconds (a starved process: the others drop it after 3.5 s);
--pause-nats S:D stops the run's own nats-server for D seconds (a broker stall: the relays wait out
up to 6 s of its silence, buffering up to 32 MiB each, docs/scale-out.md "A broker stall").
Every such run records cluster { nodes, crossNodeUpdates, natsVersion, natsCpuPct, nodesLost, ... }
and, with a kill, failover { clientsMoved, reconnectMs, lostUpdates, ... }.
--start-cluster 1,2 instead runs the product's own \`carlab start\` and \`carlab start --cluster 2\`
(docs/scale-out.md "Capacity").

Presets:
  car-paper            relay-faithful, relay, relay-udp x 100..1000 clients (step 100) x groups
                       5, 10, 20, 25 x cycles 167, 698 ms: the CAR server study's tables

Examples:
  carlab sim --transport relay,relay-faithful --clients 100..500:100 --group 5,25 --duration 20 --out results/sim
  carlab sim --net none,lossy-2,3g --transport relay,relay-udp --clients 500 --group 25 --out results/net-sim
  carlab sim --transport relay --relays 3 --clients 300 --group 5 --duration 15 --kill-relay-at 6
  carlab sim --transport relay --start-cluster 1,2 --clients 2000 --group 5 --duration 30 --out results/start-cluster
    (CPU per delivered update of one process against \`--cluster 2\`, all its processes summed)
  carlab sim --clients 1000 --group 5 --reports 0,5 --duration 20 --out results/reports-cost
    (what client reports every 5 s cost the relay: compare serverCpuUsPerUpdate of the two runs)
  carlab sim --transport relay --clients 300 --group 5 --duration 600 --warmup 30 --timeline 60 --live-heap \\
    --fail-if "lossPct>0,dups>0,reorders>0,stability.rssGrowthPct>10,stability.liveHeapGrowthPct>10,stability.rtDriftPct>20"   (soak)`;
}

/**
 * Checks --net-events and --net-events-members into o.netEvents; a message when they cannot run.
 * @param {any} o the parsed options
 * @returns {string | null}
 */
function validateNetEvents(o) {
  const { plan, problem } = netEventsFlag({
    events: o.values['net-events'], members: o.values['net-events-members'], nets: o.nets, durationS: o.durationS, groups: o.groups,
  });
  if (problem) return problem;
  if (plan && o.values.workers !== undefined) return '--net-events places the clients itself (a generator per link): drop --workers';
  if (plan) o.netEvents = plan;
  return null;
}

/** @type {import('./sweep.js').LabCommand} */
export const simCommand = {
  name: 'sim',
  transports: SIM_TRANSPORTS,
  defaults: { transport: 'relay', clients: '100', group: '5', duration: '20', warmup: '3' },
  presets: {
    // The CAR server study's sweep: TCP (relay-faithful), TCP-select improved
    // (relay) and UDP (relay-udp) servers, 100..1000 phones, groups 5..25,
    // fast and slow phones. 240 points: hours at the default duration.
    'car-paper': {
      transport: 'relay-faithful,relay,relay-udp', clients: '100..1000:100', group: '5,10,20,25',
      cycle: '167,698', duration: '20', warmup: '3', 'cycle-mode': 'gated', // the paper's cycle: the next update once all ACKs are in
    },
  },
  extraFlags: {
    workers: { type: 'string' }, 'edits-per-minute': { type: 'string' }, timeline: { type: 'string' }, 'live-heap': { type: 'boolean' }, 'restart-at': { type: 'string' }, 'restart-down': { type: 'string' },
    'late-join': { type: 'string' }, 'net-events': { type: 'string' }, 'net-events-members': { type: 'string' }, 'pause-nats': { type: 'string' },
    ...START_CLUSTER_FLAG,
  },
  help: simHelp,
  validate(o) {
    if (o.values.workers !== undefined) {
      const w = Number(o.values.workers);
      if (!Number.isInteger(w) || w < 1 || w > 16) return `--workers: "${o.values.workers}" is not an integer 1..16`;
      o.workers = w;
    }
    if (o.url) return '--url is not supported: sim starts its own server to measure its CPU apart';
    for (const [flag, key, min] of /** @type {const} */ ([['timeline', 'timelineS', 1], ['restart-at', 'restartAtS', 0], ['restart-down', 'restartDownMs', 0], ['late-join', 'lateJoinS', 0]])) {
      const raw = o.values[flag];
      if (raw === undefined) continue;
      const n = Number(raw);
      if (!Number.isFinite(n) || n < min) return `--${flag}: "${raw}" is not a number >= ${min}`;
      o[key] = n;
    }
    const edits = validateEdits(o, BASELINES);
    if (edits) return edits;
    const netEvents = validateNetEvents(o);
    if (netEvents) return netEvents;
    if (o.values['pause-nats'] !== undefined) {
      try {
        o.pauseNats = parsePauseRelay(String(o.values['pause-nats']), 'pause-nats');
      } catch (err) {
        return /** @type {Error} */ (err).message;
      }
      if (o.relays.every((/** @type {number} */ n) => n < 2)) return '--pause-nats needs --relays 2 or more (relays that talk through it)';
      if (o.nats) return '--pause-nats stops the run\'s own nats-server: not with --nats';
      if (o.pauseNats.atS >= o.durationS) return `--pause-nats: ${o.pauseNats.atS} s is not inside the ${o.durationS} s window`;
    }
    o.liveHeap = Boolean(o.values['live-heap']);
    if (o.liveHeap && (o.startClusters || o.relays.some((/** @type {number} */ n) => n > 0))) {
      return '--live-heap measures the one relay process; it does not go with --relays or --start-cluster';
    }
    if (o.restartDownMs !== undefined && o.restartAtS === undefined) return '--restart-down needs --restart-at';
    if (o.lateJoinS !== undefined && o.lateJoinS >= o.durationS) return `--late-join: ${o.lateJoinS} s is not inside the ${o.durationS} s window`;
    if (o.lateJoinS !== undefined && o.groups.some((/** @type {number} */ g) => g < 2)) return '--late-join holds back the last member of each group: --group must be 2 or more';
    if (o.restartAtS !== undefined && o.restartAtS >= o.durationS) return `--restart-at: ${o.restartAtS} s is not inside the ${o.durationS} s window`;
    if (o.killRelayAtS !== null && o.killRelayAtS >= o.durationS) return `--kill-relay-at: ${o.killRelayAtS} s is not inside the ${o.durationS} s window`;
    if (o.pauseRelay && o.killRelayAtS !== null) return '--pause-relay and --kill-relay-at both act on the first relay: give one of them';
    if (o.pauseRelay && o.pauseRelay.atS >= o.durationS) return `--pause-relay: ${o.pauseRelay.atS} s is not inside the ${o.durationS} s window`;
    if (o.restartAtS !== undefined && o.relays.some((/** @type {number} */ n) => n > 0)) return '--restart-at restarts the one relay; with --relays use --kill-relay-at';
    if (o.placements.includes('haproxy') && (o.relays.every((/** @type {number} */ n) => n === 0) || o.relays.some((/** @type {number} */ n) => n === 1 || n > MAX_MACHINES))) {
      return `--placement haproxy puts HAProxy in front of --relays 2..${MAX_MACHINES}`;
    }
    if (o.placements.includes('haproxy') && missingTools(['haproxy']).length) return '--placement haproxy needs haproxy (sudo apt-get install haproxy)';
    if (o.relays.some((/** @type {number} */ n) => n > 0) && o.nets) return '--relays with --net is not supported yet: the relays would need NATS inside the server namespace';
    if (o.relays.some((/** @type {number} */ n) => n > 0) && o.transports.some((/** @type {string} */ t) => BASELINES.includes(t))) {
      return `--relays: the baselines (${BASELINES.join(', ')}) have no cluster`;
    }
    if (o.startClusters) {
      if (o.restartAtS !== undefined) return '--restart-at restarts the lab\'s server child; it does not go with --start-cluster';
      if (o.nets) return '--start-cluster with --net is not supported: `carlab start` runs outside the network namespaces';
      const baselines = o.transports.filter((/** @type {string} */ t) => BASELINES.includes(t));
      if (baselines.length) return `--start-cluster: \`carlab start\` does not serve the lab's baselines (${baselines.join(', ')})`;
    }
    return null;
  },
  describe: (o) => ({ generator: 'node', workers: o.workers ?? 'auto' }),
  // one client namespace per generator process, its share of the clients on it
  netLinks: (point, o) => (o.netEvents
    ? movingShares(point.clients, point.group, o.netEvents.movingPerGroup).map((s) => s.indices.length)
    : generatorShares(point.clients, o.workers).map(({ from, to }) => to - from)),
  runPoint: ({ point, options, onProgress, shouldStop, net }) => runSimPoint({
    net,
    point: { ...point, reportsIntervalS: reportsIntervalOf(point, options) }, durationS: options.durationS, warmupS: options.warmupS, updates: options.updates,
    ackTimeoutMs: options.ackTimeoutMs, workers: options.workers, onProgress, shouldStop, editsPerMinute: options.editsPerMinute ?? 0,
    timelineS: options.timelineS, liveHeap: options.liveHeap,
    restart: options.restartAtS === undefined ? undefined : { atS: options.restartAtS, downMs: options.restartDownMs ?? 0 },
    lateJoinS: options.lateJoinS, playout: options.playout, renderFps: options.renderFps,
    nats: options.nats, killRelayAtS: options.killRelayAtS, pauseRelay: options.pauseRelay,
    netEvents: options.netEvents ?? null, pauseNats: options.pauseNats ?? null,
  }),
};

/**
 * @param {string[]} argv
 * @param {{ stdout?: NodeJS.WritableStream, stderr?: NodeJS.WriteStream }} [io]
 */
export function run(argv, io) {
  return runLabCommand(simCommand, argv, io);
}
