// The namespace tests with Firefox and Chromium together (docs/turn.md):
// peers in client namespaces that cannot reach each other connect through
// coturn, Firefox to Firefox and Firefox to Chromium; and a Firefox member
// whose own UDP is blocked keeps exchanging updates with a Chromium and a
// Firefox member that stay direct between themselves: its link to the other
// Firefox is a Firefox-to-Firefox link on the relay fallback, the case a test
// of two Firefox peers without UDP repeated (29 CPU-s, dropped). Chromium
// alone on the command line (`bench --net`): e2e/turn.spec.js. The TURN point
// took over Chromium's own (4 Chromium peers, 27.5 CPU-s) and the one-no-udp
// point took over `e2e/fallback-one.spec.js` (3 Chromium peers, 18.3 CPU-s),
// with the assertions of both: a mixed point runs every browser's side of
// those links.
//
// This drives the pieces below `carlab bench --net`, to block one member's UDP
// and run points side by side: lab/net's withNetwork builds, shapes and blocks the
// namespaces, lab/bench/bench.js's runBenchPoint runs the fleet. Firefox starts
// inside its namespace through runFirefoxInNamespace (lab/bench/bench.js), which
// forwards the WebDriver BiDi port Playwright needs out of the namespace.
import { test, expect } from '@playwright/test';
import { benchLayout, runBenchPoint } from '../lab/bench/bench.js';
import { prepareNetwork, withNetwork } from '../lab/net/network.js';
import { ensureLabPages } from '../lab/pages/build.js';
import { needsNamespacesAndTurn } from './namespaces.js';
import { DEFAULT_CYCLE_MS } from '../core/defaults.js';
import { FALLBACK_AFTER_MS } from '../web/src/transport/p2p-mesh.js';
import { netEventsFlag } from '../lab/net/events.js';

/**
 * One bench point of p2p peers, one per browser process, each browser in its
 * own client namespace of `profileName`; browser b is browsers[b % length].
 * @param {string} profileName
 * @param {{ clients: number, group: number, browsers: string[], editsPerMinute?: number, durationS?: number,
 *   netEvents?: import('../lab/net/events.js').NetEventsPlan | null }} fleet
 */
async function point(profileName, { clients, group, browsers, editsPerMinute = 0, durationS = 6, netEvents = null }) {
  const profiles = await prepareNetwork({ list: profileName });
  const profile = /** @type {import('../lab/net/profiles.js').NetProfile} */ (profiles.get(profileName));
  /** @type {import('../lab/shared/flags.js').SweepPoint} */
  const p = { transport: 'p2p', clients, group, cycleMs: DEFAULT_CYCLE_MS, cycleMode: 'pipelined', relays: 0, placement: 'spread', net: profileName };
  const { peersPerBrowser } = benchLayout({ clients, peersPerPage: 1, pagesPerBrowser: 1, interleave: true });
  return withNetwork(profile, peersPerBrowser, (net) => runBenchPoint({
    point: p, net, durationS, warmupS: 1, updates: 0, ackTimeoutMs: 2000, browsers, peersPerPage: 1, pagesPerBrowser: 1, url: null, editsPerMinute, netEvents,
  }));
}

/**
 * Skips unless this is the firefox project on a machine with namespaces and coturn.
 * @param {string} browserName
 */
function needsNamespaces(browserName) {
  test.skip(browserName !== 'firefox', 'the mixed-browser run of the namespace tests (e2e/turn.spec.js is Chromium on the command line)');
  needsNamespacesAndTurn();
}

// Two points, each in namespaces of its own (named by process and a counter), so they run
// side by side: one after another they were the longest browser test (1.6 min).
test.describe('Firefox in namespaces @firefox', () => {
  test.describe.configure({ mode: 'parallel' });
  test.beforeAll(async () => { await ensureLabPages({ log: () => {} }); });

  test('TURN (relay pair) where the clients cannot reach each other: Firefox to Firefox and to Chromium @firefox', async ({ browserName }) => {
    needsNamespaces(browserName);
    // Nothing passes between the clients, coturn beside the server: every link goes through TURN.
    // Three peers in one group, one per browser process: Firefox, Chromium, Firefox (3 links: F-C, F-F, C-F).
    const turn = await point('p2p-blocked', { clients: 3, group: 3, browsers: ['firefox', 'chromium'] });
    expect(turn.error).toBeUndefined();
    expect(turn.connected).toBe(3);
    expect(Object.keys(turn.browserVersions).sort()).toEqual(['chromium', 'firefox']);
    // Every link's selected pair has a TURN allocation on at least one side: a relay candidate, or
    // a prflx one, the other side's allocation learnt from its check before its candidate was
    // signalled (host/prflx, seen beside the busy unit tests; docs/turn.md). The path detection
    // tells that prflx by the TURN server's IP, so every link counts as TURN, none as direct.
    const types = Object.keys(turn.setupMs.candidateTypes);
    expect(types.length).toBeGreaterThan(0);
    for (const t of types) expect(t).toMatch(/relay|prflx/);
    const paths = turn.setupMs.paths;
    expect({ direct: paths.direct.links, turn: paths.turn.links, relay: paths.relay.links }, JSON.stringify(turn.setupMs.candidateTypes)).toEqual({ direct: 0, turn: 3, relay: 0 });
    expect(turn.rt.n).toBeGreaterThan(0);
  });

  test('one member without UDP beside a Chromium and a Firefox member that stay direct @firefox', async ({ browserName }) => {
    needsNamespaces(browserName);
    // One member without UDP (Firefox, in the first namespace); a Chromium and a Firefox member
    // stay direct between themselves and reach it through the relay.
    const one = await point('one-no-udp', { clients: 3, group: 3, browsers: ['firefox', 'chromium'] });
    expect(one.error).toBeUndefined();
    expect(one.connected).toBe(3);
    expect(Object.keys(one.browserVersions).sort()).toEqual(['chromium', 'firefox']);
    const paths = one.setupMs.paths;
    expect({ direct: paths.direct.links, turn: paths.turn.links, relay: paths.relay.links }).toEqual({ direct: 1, turn: 0, relay: 2 });
    // No link waited past the bound to fall back (a second of slack for timers on a loaded machine).
    expect(paths.relay.setupMs.max).toBeLessThan(FALLBACK_AFTER_MS + 1000);
    // Updates to and from the blocked member: completed and not lost. Every update of every sender
    // needs its ACK (or is its own), within the 2 s ACK timeout. The relayed links are reliable
    // (the WebSocket); only the direct one is unreliable, hence the 2 % allowance.
    expect(one.rt.n).toBeGreaterThan(0);
    expect(one.updates.ackTimeouts).toBeLessThanOrEqual(0.02 * one.updates.sent);
    expect(one.updates.completed).toBeGreaterThan(0.9 * one.updates.sent);
    expect(one.lossPct).toBeLessThan(2);
    // No freeze reaches the fallback bound (plus a cycle): the measured window starts after the
    // links moved, and nothing moves back (the direct path stays blocked).
    expect(one.freshness.streams).toBe(6);
    expect(one.freshness.freezeMs.max).toBeLessThan(FALLBACK_AFTER_MS + DEFAULT_CYCLE_MS);
    expect(one.freshness.frozenPct).toBe(0);
  });

  test('p2p with 5 % loss on every link: two Chromium phones and a Firefox phone edit the shared scene, every edit reaches every member, all hold one scene @firefox', async ({ browserName }) => {
    needsNamespaces(browserName);
    // Chromium, Firefox, Chromium, each in a namespace whose link loses 5 % each way; every member
    // edits twice a second for the first 5 s of the 8 s window (lab/shared/edits.js), lost edits are
    // repaired by the digests (core/scene.js).
    const lossy = await point('lossy-5', { clients: 3, group: 3, browsers: ['chromium', 'firefox'], editsPerMinute: 120, durationS: 8 });
    expect(lossy.error).toBeUndefined();
    expect(lossy.connected).toBe(3);
    expect(Object.keys(lossy.browserVersions).sort()).toEqual(['chromium', 'firefox']);
    expect(lossy.lossPct, 'the links do lose').toBeGreaterThan(0);
    const scene = lossy.scene;
    expect(scene.edits).toBeGreaterThan(10);
    expect(scene.unconverged, 'every edit reached every member').toBe(0);
    expect(scene.atEnd).toEqual({ groups: 1, members: 3, agreeing: 3, disagreeing: 0 });
    console.log(`p2p lossy-5 C+F+C scene: ${scene.edits} edits, convergence p50 ${scene.convergenceMs.p50?.toFixed(0)} ms p99 ${scene.convergenceMs.p99?.toFixed(0)} ms, `
      + `disagreement ${scene.disagreementPct.toFixed(1)} %, ${scene.repairs} repairs (${scene.repairRecords} records), loss ${lossy.lossPct.toFixed(1)} %`);
  });

  test('p2p, two Chromium phones and a Firefox phone: one phone changes networks, its links come back by ICE restart on the same channels @firefox', async ({ browserName }) => {
    needsNamespaces(browserName);
    // Chromium (the moving phone: the first of its group), Firefox, Chromium, each behind its link;
    // at 3 s the moving phone's address is removed and a new one added (lab/net/events.js handover).
    const plan = netEventsFlag({ events: 'at 3s handover', nets: ['none'], durationS: 11, groups: [3] }).plan;
    const run = await point('none', { clients: 3, group: 3, browsers: ['chromium', 'firefox'], durationS: 11, netEvents: plan });
    expect(run.error).toBeUndefined();
    expect(run.connected).toBe(3);
    const [event] = run.netEvents.events;
    expect(event.error).toBeNull();
    expect(event.newIps).toHaveLength(1);
    const [recovery] = run.recovery.events;
    expect(recovery.happened).toBe(true);
    expect(recovery.recovered, 'the moving phone\'s updates reach both neighbours again, and theirs reach it').toBe(1);
    expect(recovery.fellOut, 'nobody saw it leave').toBe(0);
    const back = run.recovery.linksBack;
    // Firefox's link to the moving phone comes back by ICE restart (the Chromium one by a restart
    // too, or, when Chromium's own ICE finds the new address first, by itself): never a redial.
    expect(back.redials).toBe(0);
    expect(back.fallbacks).toBe(0);
    expect(back.iceRestarts).toBeGreaterThanOrEqual(1);
    expect(back.restartsNewPair, 'the selected candidate pair changed').toBe(back.iceRestarts);
    expect(back.restartsSameChannel, 'on the channel the link had').toBe(back.iceRestarts);
    console.log(`p2p handover C+F+C: recovered in ${recovery.recoveryMs.max?.toFixed(0)} ms, ${back.iceRestarts} ICE restart(s), `
      + `${back.networkMoves} network moves, ${back.silentLinks} silent links`);
  });
});
