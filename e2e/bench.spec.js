// A smoke `carlab bench`: about 10 browser peers, 2 transports, end to end,
// on one server and on two relay processes joined by NATS. `bench --net` runs
// in e2e/turn.spec.js (on the command line) and e2e/turn-firefox.spec.js (a
// direct p2p link across namespaces beside two on the fallback); a test of
// `--net none` repeated what those two show (24 s of a worker, dropped).
import { test, expect } from '@playwright/test';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { run } from '../lab/commands/bench.js';
import { resultsSchemaProblems } from '../lab/report/schema.js';

const sink = () => {
  /** @type {string[]} */
  const chunks = [];
  return { stream: new Writable({ write(c, _e, cb) { chunks.push(String(c)); cb(); } }), text: () => chunks.join('') };
};

test('smoke bench: 10 Chromium peers on relay and p2p, drawn in two playout modes', async ({ browserName }) => {
  test.skip(browserName !== 'chromium', 'the bench launches its own browsers');
  test.setTimeout(180_000);
  const out = await mkdtemp(path.join(tmpdir(), 'carlab-bench-'));
  try {
    const stdout = sink();
    const stderr = sink();
    const code = await run(['--transport', 'relay,p2p', '--clients', '10', '--group', '5', '--duration', '3',
      '--warmup', '1', '--peers-per-page', '5', '--playout', 'ease,predict', '--no-progress', '--out', out], { stdout: stdout.stream, stderr: /** @type {any} */ (stderr.stream) });
    expect(code, stderr.text()).toBe(0);
    const results = JSON.parse(await readFile(path.join(out, 'results.json'), 'utf8'));
    expect(resultsSchemaProblems(results)).toEqual([]);
    expect(results.env.peersPerPage).toBe(5);
    // Chromium is driven without Playwright's per-frame WebSocket instrumentation, and the record says so.
    expect(results.env.chromiumDriver).toMatch(/DevTools pipe/);
    expect(results.env.chromiumFlags).toContain('--disable-background-timer-throttling');
    expect(results.runs[0].browserVersions.chromium).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    const [relay, p2p] = results.runs;
    for (const r of [relay, p2p]) {
      expect(r.connected).toBe(10);
      expect(r.rt.n).toBeGreaterThan(0);
      expect(r.cpu.clients).toBeGreaterThan(0);
      expect(r.pageErrors).toEqual([]);
      // every peer drew its 4 neighbours in both modes on the same frames (lab/shared/drawn-measure.js)
      expect(Object.keys(r.drawn.modes)).toEqual(['ease', 'predict']);
      expect(r.drawn.modes.ease.streams).toBe(40);
      expect(r.drawn.modes.predict.frames).toBe(r.drawn.modes.ease.frames);
      expect(r.drawn.modes.predict.frames).toBeGreaterThan(40 * 60);
      expect(r.drawn.modes.predict.positionCm.p95).toBeGreaterThan(0);
    }
    expect(relay.lossPct).toBe(0);
    expect(relay.rts.mean).toBeGreaterThanOrEqual(0);
    expect(relay.cpu.server).toBeGreaterThan(0);
    expect(p2p.channel).toMatchObject({ ordered: false, maxRetransmits: 0, uniform: true });
    expect(p2p.setupMs.signaling.n).toBe(10);
    expect(p2p.setupMs.peer.n).toBe(40); // 2 groups x 10 connections, timed on both ends
    expect(await readFile(path.join(out, 'tables.md'), 'utf8')).toContain('### p2p · group 5 · cycle 167 ms');
    expect(stdout.text()).toContain('| Size |');
  } finally {
    await rm(out, { recursive: true, force: true });
  }
});

test('bench --relays 2: Chromium peers on two relay processes joined by NATS, relay and p2p', async ({ browserName }) => {
  test.skip(browserName !== 'chromium', 'the bench launches its own browsers');
  test.setTimeout(180_000);
  const out = await mkdtemp(path.join(tmpdir(), 'carlab-bench-relays-'));
  try {
    const stderr = sink();
    // 6 peers in groups of 3 (2 pages of 3, one per relay): every group spans both relays, as 10
    // peers in groups of 5 did (42 s of a worker), for less.
    const code = await run(['--transport', 'relay,p2p', '--relays', '2', '--clients', '6', '--group', '3', '--duration', '3',
      '--warmup', '1', '--peers-per-page', '3', '--no-progress', '--out', out], { stdout: sink().stream, stderr: /** @type {any} */ (stderr.stream) });
    expect(code, stderr.text()).toBe(0);
    const results = JSON.parse(await readFile(path.join(out, 'results.json'), 'utf8'));
    expect(resultsSchemaProblems(results)).toEqual([]);
    const [relay, p2p] = results.runs;
    for (const r of [relay, p2p]) {
      expect(r.connected).toBe(6);
      expect(r.rt.n).toBeGreaterThan(0);
      expect(r.cluster.nodes).toBe(2);
      expect(r.dups).toBe(0);
    }
    // The relay is ordered end to end, across NATS too; p2p's unordered channel may reorder (counted, not wrong).
    expect(relay.reorders).toBe(0);
    // Pages alternate relays and a group's peers alternate pages: relay updates cross.
    expect(relay.cluster.crossNodeUpdates).toBeGreaterThan(0);
    expect(relay.lossPct).toBe(0);
    // p2p peers on different relays meshed: their PeerJS signaling crossed NATS
    // (2 groups x 3 connections, timed on both ends).
    expect(p2p.setupMs.peer.n).toBe(12);
  } finally {
    await rm(out, { recursive: true, force: true });
  }
});
