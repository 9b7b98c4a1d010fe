// The namespace tests of issue 17 in Firefox (docs/turn.md): Firefox peers in
// client namespaces that cannot reach each other connect through coturn, and a
// Firefox member whose own UDP is blocked keeps exchanging updates with a
// Chromium and a Firefox member that stay direct between themselves: its link
// to the other Firefox is a Firefox-to-Firefox link on the relay fallback, the
// case a test of two Firefox peers without UDP repeated (29 CPU-s, dropped).
//
// `carlab bench --net` refuses Firefox (lab/commands/bench.js), so this drives
// the same pieces below it: lab/net's withNetwork builds, shapes and blocks the
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

/**
 * One bench point of p2p peers, one per browser process, each browser in its
 * own client namespace of `profileName`; browser b is browsers[b % length].
 * @param {string} profileName
 * @param {{ clients: number, group: number, browsers: string[] }} fleet
 */
async function point(profileName, { clients, group, browsers }) {
  const profiles = await prepareNetwork({ list: profileName });
  const profile = /** @type {import('../lab/net/profiles.js').NetProfile} */ (profiles.get(profileName));
  /** @type {import('../lab/shared/flags.js').SweepPoint} */
  const p = { transport: 'p2p', clients, group, cycleMs: DEFAULT_CYCLE_MS, cycleMode: 'pipelined', relays: 0, placement: 'spread', net: profileName };
  const { peersPerBrowser } = benchLayout({ clients, peersPerPage: 1, pagesPerBrowser: 1, interleave: true });
  return withNetwork(profile, peersPerBrowser, (net) => runBenchPoint({
    point: p, net, durationS: 6, warmupS: 1, updates: 0, ackTimeoutMs: 2000, browsers, peersPerPage: 1, pagesPerBrowser: 1, url: null,
  }));
}

/**
 * Skips unless this is the firefox project on a machine with namespaces and coturn.
 * @param {string} browserName
 */
function needsNamespaces(browserName) {
  test.skip(browserName !== 'firefox', 'the Firefox run of the namespace tests (e2e/turn.spec.js is the Chromium one)');
  needsNamespacesAndTurn();
}

// Two points, each in namespaces of its own (named by process and a counter), so they run
// side by side: one after another they were the longest browser test (1.6 min).
test.describe('Firefox in namespaces @firefox', () => {
  test.describe.configure({ mode: 'parallel' });
  test.beforeAll(async () => { await ensureLabPages({ log: () => {} }); });

  test('TURN (relay pair) where the clients cannot reach each other @firefox', async ({ browserName }) => {
    needsNamespaces(browserName);
    // Nothing passes between the clients, coturn beside the server: the link goes through TURN.
    const turn = await point('p2p-blocked', { clients: 2, group: 2, browsers: ['firefox'] });
    expect(turn.error).toBeUndefined();
    expect(turn.connected).toBe(2);
    expect(Object.keys(turn.browserVersions)).toEqual(['firefox']);
    const types = Object.keys(turn.setupMs.candidateTypes);
    expect(types.length).toBeGreaterThan(0);
    // Firefox may learn the other side's allocation as prflx: the path detection reads the TURN server's IP then.
    expect(turn.setupMs.paths.turn.links, JSON.stringify(turn.setupMs.candidateTypes)).toBe(1);
    expect(turn.setupMs.paths.relay.links).toBe(0);
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
    expect(one.rt.n).toBeGreaterThan(0);
    expect(one.updates.ackTimeouts).toBeLessThanOrEqual(0.02 * one.updates.sent); // the direct link is unreliable
    expect(one.lossPct).toBeLessThan(2);
    expect(one.freshness.streams).toBe(6);
    expect(one.freshness.freezeMs.max).toBeLessThan(FALLBACK_AFTER_MS + DEFAULT_CYCLE_MS);
  });
});
