// The relay fallback in network namespaces (docs/turn.md), through
// `carlab bench --net no-udp` on the command line: Chromium peers in client
// namespaces with UDP dropped everywhere and no TURN; every link falls back to
// the relay and updates keep flowing (RT recorded, no freeze past the fallback
// bound). TURN itself, and one member without UDP beside two that stay direct,
// run with Firefox and Chromium together in e2e/turn-firefox.spec.js.
import { test, expect } from '@playwright/test';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { run } from '../lab/commands/bench.js';
import { resultsSchemaProblems } from '../lab/report/schema.js';
import { needsNamespacesAndTurn } from './namespaces.js';
import { FALLBACK_AFTER_MS } from '../web/src/transport/p2p-mesh.js';

const sink = () => {
  /** @type {string[]} */
  const chunks = [];
  return { stream: new Writable({ write(c, _e, cb) { chunks.push(String(c)); cb(); } }), text: () => chunks.join('') };
};

/**
 * `carlab bench --net PROFILE` with 4 Chromium p2p peers in groups of 2; its one run, schema-checked.
 * @param {string} profile
 */
async function benchNet(profile) {
  const out = await mkdtemp(path.join(tmpdir(), 'carlab-turn-'));
  try {
    const stdout = sink();
    const stderr = sink();
    const code = await run(['--net', profile, '--transport', 'p2p', '--clients', '4', '--group', '2', '--duration', '6',
      '--warmup', '1', '--peers-per-page', '1', '--no-progress', '--out', out], { stdout: stdout.stream, stderr: /** @type {any} */ (stderr.stream) });
    expect(code, stderr.text()).toBe(0);
    const results = JSON.parse(await readFile(path.join(out, 'results.json'), 'utf8'));
    expect(resultsSchemaProblems(results)).toEqual([]);
    expect(results.runs.map((/** @type {any} */ r) => r.net.profile)).toEqual([profile]);
    return results.runs[0];
  } finally {
    await rm(out, { recursive: true, force: true });
  }
}

/** Skips unless this is the chromium project on a machine with namespaces and coturn. @param {string} browserName */
function needsNamespaces(browserName) {
  test.skip(browserName !== 'chromium', 'the bench launches its own browsers (Chromium only under --net)');
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
