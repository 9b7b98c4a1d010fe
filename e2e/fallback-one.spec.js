// Issue 17's "done when": a p2p group where ONE member's UDP is blocked keeps
// exchanging updates with that member through the relay fallback while the
// other members stay on their direct link (docs/turn.md). Through
// `carlab bench --net one-no-udp`: three Chromium peers of one group, each in
// its own client namespace; the first namespace drops every UDP packet on its
// link (lab/net/commands.js, oneClientRuleset), no TURN.
//
// The group has three members, so every update of every sender needs the
// blocked member's ACK (or is its own): updates completed within a 2 s ACK
// timeout, RT recorded, and the freshness of all six streams (the four to and
// from the blocked member among them) show its updates kept flowing.
import { test, expect } from '@playwright/test';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { run } from '../lab/commands/bench.js';
import { resultsSchemaProblems } from '../lab/report/schema.js';
import { namespacesForbidden } from '../lab/net/system.js';
import { DEFAULT_CYCLE_MS } from '../core/defaults.js';
import { FALLBACK_AFTER_MS } from '../web/src/transport/p2p-mesh.js';

const sink = () => {
  /** @type {string[]} */
  const chunks = [];
  return { stream: new Writable({ write(c, _e, cb) { chunks.push(String(c)); cb(); } }), text: () => chunks.join('') };
};

test('bench --net one-no-udp: the member without UDP is on the relay fallback, the others stay direct, updates keep flowing', async ({ browserName }) => {
  test.skip(browserName !== 'chromium', 'the bench launches its own browsers (Chromium only under --net)');
  const forbidden = namespacesForbidden();
  test.skip(forbidden !== null, forbidden ?? '');
  test.setTimeout(180_000);
  const out = await mkdtemp(path.join(tmpdir(), 'carlab-fallback-one-'));
  try {
    const stdout = sink();
    const stderr = sink();
    // A short ACK timeout: an update the blocked member never ACKed would count as timed out in the window.
    const code = await run(['--net', 'one-no-udp', '--transport', 'p2p', '--clients', '3', '--group', '3', '--duration', '8',
      '--warmup', '1', '--peers-per-page', '1', '--ack-timeout', '2000', '--no-progress', '--out', out],
    { stdout: stdout.stream, stderr: /** @type {any} */ (stderr.stream) });
    expect(code, stderr.text()).toBe(0);
    const results = JSON.parse(await readFile(path.join(out, 'results.json'), 'utf8'));
    expect(resultsSchemaProblems(results)).toEqual([]);
    const [r] = results.runs;
    expect(r.net.profile).toBe('one-no-udp');
    expect(r.error).toBeUndefined();
    expect(r.connected).toBe(3);

    // Two links touch the blocked member: both on the relay; the third stays direct.
    const paths = r.setupMs.paths;
    expect({ direct: paths.direct.links, turn: paths.turn.links, relay: paths.relay.links }).toEqual({ direct: 1, turn: 0, relay: 2 });
    // No link waited past the bound to fall back (a second of slack for timers on a loaded machine).
    expect(paths.relay.setupMs.max).toBeLessThan(FALLBACK_AFTER_MS + 1000);

    // Updates to and from the blocked member: completed and not lost. The relayed links are
    // reliable (the WebSocket); only the direct one is unreliable, hence the 2 % allowance.
    expect(r.rt.n).toBeGreaterThan(0);
    expect(r.updates.ackTimeouts).toBeLessThanOrEqual(0.02 * r.updates.sent);
    expect(r.updates.completed).toBeGreaterThan(0.9 * r.updates.sent);
    expect(r.lossPct).toBeLessThan(2);
    expect(r.freshness.streams).toBe(6);
    // No freeze reaches the fallback bound (plus a cycle): the measured window starts after the
    // links moved, and nothing moves back (the direct path stays blocked).
    expect(r.freshness.freezeMs.max).toBeLessThan(FALLBACK_AFTER_MS + DEFAULT_CYCLE_MS);
    expect(r.freshness.frozenPct).toBe(0);
  } finally {
    await rm(out, { recursive: true, force: true });
  }
});
