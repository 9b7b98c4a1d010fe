// The relay fallback in network namespaces (docs/turn.md), through
// `carlab bench --net no-udp` on the command line: Chromium peers in client
// namespaces with UDP dropped everywhere and no TURN; every link falls back to
// the relay and updates keep flowing (RT recorded, no freeze past the fallback
// bound). TURN itself, and one member without UDP beside two that stay direct,
// run with Firefox and Chromium together in e2e/turn-firefox.spec.js.
import { test, expect } from '@playwright/test';
import { needsNamespacesAndTurn } from './namespaces.js';
import { benchNet } from './bench-run.js';
import { FALLBACK_AFTER_MS } from '../web/src/transport/p2p-mesh.js';

/** Skips unless this is the chromium project on a machine with namespaces and coturn. @param {string} browserName */
function needsNamespaces(browserName) {
  test.skip(browserName !== 'chromium', 'the bench launches its own browsers (once is enough: the chromium project runs it)');
  needsNamespacesAndTurn();
}

test.describe('bench --net: the relay fallback', () => {
  test('no-udp: every link on the relay fallback, updates keep flowing', async ({ browserName }) => {
    needsNamespaces(browserName);
    const fallback = await benchNet('no-udp');
    expect(fallback.error).toBeUndefined();
    expect(fallback.connected).toBe(4);
    expect(fallback.setupMs.paths.relay.links).toBe(2);
    expect(fallback.setupMs.paths.direct.links + fallback.setupMs.paths.turn.links).toBe(0);
    expect(fallback.rt.n).toBeGreaterThan(0);
    expect(fallback.lossPct).toBeLessThan(2);
    // Measured after the warm-up: the links are on the relay by then, and nothing freezes.
    expect(fallback.freshness.freezeMs.max).toBeLessThan(FALLBACK_AFTER_MS);
  });
});
