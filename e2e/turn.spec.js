// TURN and the relay fallback in network namespaces (docs/turn.md), through
// `carlab bench --net` with the blocked-UDP profiles: Chromium peers in
// client namespaces whose direct UDP is dropped connect through coturn (the
// selected candidate pair read back from getStats is of type relay), and with
// UDP dropped everywhere and no TURN every link falls back to the relay and
// updates keep flowing (RT recorded, no freeze past the fallback bound).
import { test, expect } from '@playwright/test';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { run } from '../lab/commands/bench.js';
import { resultsSchemaProblems } from '../lab/schema.js';
import { namespacesForbidden } from '../lab/net/system.js';
import { turnserverMissing } from '../server/turn.js';
import { FALLBACK_AFTER_MS } from '../web/src/transport/p2p-mesh.js';

const sink = () => {
  /** @type {string[]} */
  const chunks = [];
  return { stream: new Writable({ write(c, _e, cb) { chunks.push(String(c)); cb(); } }), text: () => chunks.join('') };
};

test('bench --net p2p-blocked,no-udp: links through coturn (relay candidate pairs), then on the relay fallback', async ({ browserName }) => {
  test.skip(browserName !== 'chromium', 'the bench launches its own browsers (Chromium only under --net)');
  const forbidden = namespacesForbidden();
  test.skip(forbidden !== null, forbidden ?? '');
  test.skip(turnserverMissing() !== null, turnserverMissing() ?? '');
  test.setTimeout(240_000);
  const out = await mkdtemp(path.join(tmpdir(), 'carlab-turn-'));
  try {
    const stdout = sink();
    const stderr = sink();
    const code = await run(['--net', 'p2p-blocked,no-udp', '--transport', 'p2p', '--clients', '4', '--group', '2', '--duration', '6',
      '--warmup', '1', '--peers-per-page', '1', '--no-progress', '--out', out], { stdout: stdout.stream, stderr: /** @type {any} */ (stderr.stream) });
    expect(code, stderr.text()).toBe(0);
    const results = JSON.parse(await readFile(path.join(out, 'results.json'), 'utf8'));
    expect(resultsSchemaProblems(results)).toEqual([]);
    const byProfile = Object.fromEntries(results.runs.map((/** @type {any} */ r) => [r.net.profile, r]));

    const turn = byProfile['p2p-blocked'];
    expect(turn.error).toBeUndefined();
    expect(turn.connected).toBe(4);
    // Every link's selected pair has a TURN allocation on at least one side.
    const types = Object.keys(turn.setupMs.candidateTypes);
    expect(types.length).toBeGreaterThan(0);
    for (const t of types) expect(t).toMatch(/relay/);
    expect(turn.setupMs.paths.turn.links).toBe(2);
    expect(turn.setupMs.paths.relay.links).toBe(0);
    expect(turn.rt.n).toBeGreaterThan(0);

    const fallback = byProfile['no-udp'];
    expect(fallback.error).toBeUndefined();
    expect(fallback.connected).toBe(4);
    expect(fallback.setupMs.paths.relay.links).toBe(2);
    expect(fallback.setupMs.paths.direct.links + fallback.setupMs.paths.turn.links).toBe(0);
    expect(fallback.rt.n).toBeGreaterThan(0);
    expect(fallback.lossPct).toBeLessThan(2);
    // Measured after the warm-up: the links are on the relay by then, and nothing freezes.
    expect(fallback.freshness.freezeMs.max).toBeLessThan(FALLBACK_AFTER_MS);
  } finally {
    await rm(out, { recursive: true, force: true });
  }
});
