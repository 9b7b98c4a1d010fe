// A smoke `carlab browsers`: experiments setup, overhead and car with two
// repetitions for the mixed pairs C-F and F-C, end to end: the results fit
// the schema and Firefox really ran (its version and user agent are recorded).
// Two, not three: every check holds per repetition, and the third cost 6.6
// CPU-s of 27.5 (measured side by side). C-F and F-C, not C-C, F-F and C-F:
// each browser is initiator once and receiver once, every page's code runs in
// both browsers, and the car runs one mixed fleet rather than three (the test
// took 70.6 CPU-s with the three pairs; lab/browsers' unit tests cover the
// single-browser fleets' shape).
import { test, expect } from '@playwright/test';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { run } from '../lab/commands/browsers.js';
import { browsersSchemaProblems } from '../lab/report/browsers-schema.js';
import { resultsSchemaProblems } from '../lab/report/schema.js';

/** Repetitions of each pair. */
const REPEAT = 2;

const sink = () => {
  /** @type {string[]} */
  const chunks = [];
  return { stream: new Writable({ write(c, _e, cb) { chunks.push(String(c)); cb(); } }), text: () => chunks.join('') };
};

test('smoke browsers: setup, overhead and car for C-F and F-C', async ({ browserName }) => {
  test.skip(browserName !== 'chromium', 'carlab browsers launches its own browsers');
  test.setTimeout(150_000);
  const out = await mkdtemp(path.join(tmpdir(), 'carlab-browsers-'));
  try {
    const stdout = sink();
    const stderr = sink();
    const code = await run(['--experiment', 'setup,overhead,car', '--pairs', 'C-F,F-C', '--repeat', String(REPEAT), '--obfuscation', 'off',
      '--car-transport', 'p2p', '--car-clients', '2', '--car-group', '2', '--car-duration', '2', '--car-warmup', '0',
      '--no-progress', '--out', out], { stdout: stdout.stream, stderr: /** @type {any} */ (stderr.stream) });
    expect(code, stderr.text()).toBe(0);
    const results = JSON.parse(await readFile(path.join(out, 'results.json'), 'utf8'));
    expect(browsersSchemaProblems(results)).toEqual([]);

    // Firefox really ran: Playwright's version and the page's own user agent.
    const ff = results.env.browsers.firefox;
    expect(ff.version).toMatch(/^\d+\.\d+/);
    expect(ff.userAgent).toMatch(/Gecko\/\d+ Firefox\/\d+/);
    expect(ff.userAgent).toContain(`rv:${ff.version.split('.')[0]}.`);
    expect(results.env.browsers.chromium.userAgent).toMatch(/Chrome\/\d+/);

    const setup = results.runs.filter((/** @type {{ experiment: string }} */ r) => r.experiment === 'setup');
    expect(setup.map((/** @type {{ pair: string }} */ r) => r.pair)).toEqual(['C-F', 'F-C']);
    for (const r of setup) {
      expect(r.completed, `${r.pair}: ${JSON.stringify(r.failureReasons)}`).toBe(REPEAT);
      expect(r.hideHostAddresses).toBe(false);
      expect(r.setupMs.signaling.n).toBe(REPEAT);
      expect(r.reps).toHaveLength(REPEAT);
      expect(r.setupMs.peer.mean).toBeGreaterThan(0);
      for (const phase of ['offerAnswer', 'iceConnected', 'dtlsConnected']) expect(r.setupMs[phase].mean, phase).toBeGreaterThan(0);
      // the channel opens only after the answer was applied (per repetition, on the initiator's clock)
      for (const rep of r.reps) {
        expect(rep.remoteDescriptionMs, `${r.pair}: answer applied`).toBeGreaterThan(0);
        expect(rep.channelOpenMs, `${r.pair}: open after the answer`).toBeGreaterThanOrEqual(rep.remoteDescriptionMs);
      }
      expect(Object.keys(r.candidateTypes).every((t) => /^host\//.test(t))).toBe(true);
      expect(r.channel).toMatchObject({ ordered: false, maxRetransmits: 0, negotiated: true });
      expect(r.pageErrors).toEqual([]);
    }
    const overhead = results.runs.filter((/** @type {{ experiment: string }} */ r) => r.experiment === 'overhead');
    expect(overhead.map((/** @type {{ pair: string, sharedWithSetup: boolean }} */ r) => [r.pair, r.sharedWithSetup])).toEqual([['C-F', true], ['F-C', true]]);
    for (const r of overhead) {
      for (const role of ['initiator', 'receiver']) {
        const e = r[role];
        expect(e.signalingOpen.sent.mean).toBeGreaterThan(100); // the HTTP upgrade at least
        expect(e.signalingSetup.sent.mean).toBeGreaterThan(100); // offer or answer
        expect(e.p2p.sent.mean).toBeGreaterThan(500); // the DTLS handshake
        expect(e.total.sent.mean).toBeGreaterThan(e.p2p.sent.mean);
      }
      expect(r.initiator.browser).toBe(r.pair[0] === 'C' ? 'chromium' : 'firefox');
      expect(r.receiver.browser).toBe(r.pair[2] === 'C' ? 'chromium' : 'firefox');
    }
    // Firefox counts no packets in getStats; Chromium does (each as initiator and as receiver)
    expect(overhead[0].initiator.p2p.packetsSent.mean).toBeGreaterThan(0);
    expect(overhead[0].receiver.p2p.packetsSent).toBeNull();
    expect(overhead[1].initiator.p2p.packetsSent).toBeNull();
    expect(overhead[1].receiver.p2p.packetsSent.mean).toBeGreaterThan(0);

    const car = results.runs.filter((/** @type {{ experiment: string }} */ r) => r.experiment === 'car');
    expect(car.map((/** @type {{ fleet: string }} */ r) => r.fleet)).toEqual(['chromium+firefox']);
    expect(resultsSchemaProblems({ env: results.env, runs: car })).toEqual([]);
    for (const r of car) {
      expect(r.connected, r.fleet).toBe(2);
      expect(r.rt.n, r.fleet).toBeGreaterThan(0);
      expect(r.channel).toMatchObject({ ordered: false, maxRetransmits: 0 });
    }
    expect(Object.keys(car[0].browserVersions).sort()).toEqual(['chromium', 'firefox']);
    // the mixed fleet is split per browser, each side with its own RT
    expect(Object.keys(car[0].byBrowser)).toEqual(['chromium', 'firefox']);
    for (const b of Object.values(car[0].byBrowser)) expect(b.rt.n).toBeGreaterThan(0);

    const md = await readFile(path.join(out, 'tables.md'), 'utf8');
    expect(md).toContain('### Setup delay (ms), host-address obfuscation off');
    expect(md).toContain('### Setup overhead per connection');
    expect(md).toContain('## Location updates per browser');
    const html = await readFile(path.join(out, 'report.html'), 'utf8');
    expect(html).toContain('<section id="lab-setup">');
    expect(html).toContain('Firefox/');
  } finally {
    await rm(out, { recursive: true, force: true });
  }
});
