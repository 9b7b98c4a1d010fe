// A study with "real phones" (docs/study.md): four headless phones — two
// Chromium with a Pixel profile, one Chromium with an iPhone Safari user
// agent, one Firefox ESR — join one group on `p2p` against a server started
// with --record. While they are in, the dashboard (opened with its token)
// shows all four with their browsers; after they leave, `carlab report` on the
// recording gives per-browser runs whose RT counts, loss counts and freshness
// equal what each page's own client core measured. Before them, three phones
// on `relay` and three on `relay-faithful` join and leave at different times,
// sending all along: on those reliable transports the dashboard never shows
// loss into a member while it is in, and the report shows 0 for every member
// (docs/architecture.md "Loss": what was on its way to a leaver is not lost).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { devices, expect, firefox, test } from '@playwright/test';

import { aggregateStreams } from '../core/metrics.js';
import { summarizeScene } from '../core/scene-metrics.js';
import { freshnessOf } from '../lab/report/aggregate.js';
import { run as runReport } from '../lab/commands/report.js';
import { firefoxLaunchOptions } from '../lab/bench/launch.js';
import { readRecording } from '../lab/report/recording.js';
import { ownServer } from './server.js';

const TOKEN = 'e2e-study-dashboard-token-42';
const XSS_NAME = '<img src=x onerror=alert(1)>';
const { defaultBrowserType: _p, ...PIXEL } = devices['Pixel 7'];
const { defaultBrowserType: _i, ...IPHONE } = devices['iPhone 15'];

/** The phones, and the browser family `carlab report` must file each under. */
const PHONES = [
  { name: 'Ada', family: 'Chrome Android', engine: 'chromium', device: PIXEL },
  { name: XSS_NAME, family: 'Chrome Android', engine: 'chromium', device: PIXEL },
  { name: 'Ines', family: 'Safari iOS', engine: 'chromium', device: IPHONE },
  { name: 'Fritz', family: 'Firefox desktop', engine: 'firefox', device: { viewport: { width: 412, height: 839 } } },
];

/** @param {import('@playwright/test').Page} page @param {number} n */
const waitForMembers = (page, n) => page.waitForFunction((k) => window.carlab.client?.members.size === k, n, { timeout: 30_000 });

test.describe('a study with four phones', () => {
  test.describe.configure({ retries: 0 });

  test('relay and relay-faithful members come and go with no loss; p2p: dashboard shows all four, carlab report equals the pages', async ({ browser, browserName }, testInfo) => {
    test.skip(browserName !== 'chromium', 'drives Chromium and Firefox itself');
    test.setTimeout(180_000);
    const dir = mkdtempSync(path.join(tmpdir(), 'carlab-e2e-study-'));
    const server = await ownServer({ args: ['--record', dir, '--dashboard-token', TOKEN, '--report-interval', '1'] });
    const fx = await firefox.launch(firefoxLaunchOptions());
    const feed = watchFeed(server.baseURL);
    try {
      const reliable = await Promise.all(['relay', 'relay-faithful'].map((transport) => comeAndGo({ browser, fx, base: server.baseURL, transport, feed })));
      const measured = await studyRound({ browser, fx, base: server.baseURL, transport: 'p2p', testInfo, feed });
      const seen = feed.stop();
      for (const group of reliable) {
        const rows = seen.filter((row) => row.group === group);
        expect(rows.filter((row) => row.lossPct !== null).length, `${group}: loss shown on the dashboard`).toBeGreaterThan(5);
        expect(rows.filter((row) => row.lossPct !== 0 && row.lossPct !== null), `${group}: loss into a member while it was in`).toEqual([]);
      }
      await server.stop(); // flushes the recording
      const recording = await readRecording(dir);
      expect(recording.counts.invalid).toBe(0);
      expect(recording.sessions.length).toBe(10);
      expect(recording.sessions.filter((s) => !s.r.final).map((s) => `${s.r.group} ${s.r.name}`), 'sessions whose final report is missing').toEqual([]);
      const out = path.join(dir, 'results');
      expect(await runReport([dir, '--out', out], { stdout: sink(), stderr: sink() })).toBe(0);
      const results = JSON.parse(readFileSync(path.join(out, 'results.json'), 'utf8'));
      compareRuns(results.runs, 'p2p', measured);
      compareScene(results.runs, measured);
      for (const group of reliable) {
        const runs = results.runs.filter((/** @type {any} */ r) => r.groupName === group);
        expect(runs.map((/** @type {any} */ r) => r.browser).sort(), `${group}: a run per browser family, and all`)
          .toEqual(['Chrome Android', 'Firefox desktop', 'Safari iOS', 'all']);
        for (const run of runs) {
          expect(run.updates.expected, `${group} ${run.browser}: expected`).toBeGreaterThan(20);
          expect([run.updates.lost, run.lossPct], `${group} ${run.browser}: lost, loss %\n${streamsOf(recording.sessions, group)}`).toEqual([0, 0]);
        }
      }
      const html = readFileSync(path.join(out, 'report.html'), 'utf8');
      expect(html).not.toContain(XSS_NAME);
    } finally {
      feed.stop();
      await fx.close();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * What each session of `group` last reported, one line each: enough to tell
 * a missing report from a miscount when a loss assertion fails.
 * @param {import('../lab/report/recording.js').RecordedSession[]} sessions @param {string} group
 */
function streamsOf(sessions, group) {
  return sessions.filter((s) => s.r.group === group).map(({ r }) => {
    const recv = Object.fromEntries(Object.entries(r.recv).map(([id, stream]) => [id, stream.received]));
    return `${r.name} #${r.clientId} seq ${r.seq} final ${r.final} sentTo ${JSON.stringify(r.sentTo)} pendingTo ${JSON.stringify(r.pendingTo)} `
      + `takenBack ${r.updates.takenBack} received ${JSON.stringify(recv)} acksFrom ${JSON.stringify(r.acksFrom)}`;
  }).join('\n');
}

/** Three of the phones: one of each browser family. */
const TRIO = [PHONES[0], PHONES[2], PHONES[3]];

/**
 * Three phones on a reliable `transport` join a second apart and leave a
 * second apart (first in, first out), sending all along: each leaves while
 * the others' updates are on their way to it (unread in its socket). A phone
 * leaves as a person closes a tab: the page goes, the browser stays, so the
 * final report (a beacon) is delivered; the browser contexts close only once
 * the server has every final report (the dashboard marks the three left).
 * Closing a context at once tears its network down, and under a loaded suite
 * that could drop a beacon still on its way: the page's last periodic report
 * then stood for it, and the ACKs of the page's last second counted as lost.
 * @param {{ browser: import('@playwright/test').Browser, fx: import('@playwright/test').Browser, base: string,
 *   transport: string, feed: ReturnType<typeof watchFeed> }} o
 * @returns {Promise<string>} the group
 */
async function comeAndGo({ browser, fx, base, transport, feed }) {
  const group = `come-and-go-${transport}-${Date.now().toString(36)}`;
  /** @type {{ context: import('@playwright/test').BrowserContext, page: import('@playwright/test').Page }[]} */
  const phones = [];
  try {
    for (const phone of TRIO) {
      const context = await (phone.engine === 'firefox' ? fx : browser).newContext({ ...phone.device, baseURL: base });
      const page = await context.newPage();
      phones.push({ context, page });
      const q = new URLSearchParams({ group, name: phone.name, transport, source: 'none', pose: '0.1,0.05,0.4,0,0,0,1', dpr: '1' });
      await page.goto(`/ar.html?${q}`);
      await page.evaluate(() => window.carlab.ready.then(() => true));
      await sleep(1000);
    }
    // All three in: each has reported what it received from the other two, and has had 25 more of its
    // updates ACKed by both, however long a loaded machine takes (the loss check below needs them).
    const marks = await Promise.all(phones.map(({ page }) => page.evaluate(() => window.carlab.client.rt.length)));
    for (const [i, { page }] of phones.entries()) {
      await page.waitForFunction((mark) => (window.carlab.reporter?.seq ?? 0) >= 3 && window.carlab.client.rt.length >= mark + 25, marks[i], { timeout: 60_000 });
    }
    for (const { page } of phones) {
      // A page that unloads is busy: the others' updates of its last 400 ms
      // reach it but are never read, then it leaves (as on pagehide).
      await page.evaluate(() => {
        const end = performance.now() + 400;
        while (performance.now() < end) { /* busy, as an unloading page */ }
        window.carlab.leave();
      });
      await page.close();
      await sleep(1000);
    }
    await feed.untilLeft(group, TRIO.length);
  } finally {
    for (const { context } of phones) await context.close();
  }
  return group;
}

/**
 * Every member row the dashboard's feed carries, read as the page reads it
 * (snapshot, then deltas), until stop(): the rows of members still in.
 * @param {string} base
 */
function watchFeed(base) {
  const abort = new AbortController();
  /** @type {{ group: string, name: string, lossPct: number | null }[]} */
  const rows = [];
  /** Per group, the members whose final report the server has. @type {Map<string, Set<string>>} */
  const left = new Map();
  /** @param {any} view */
  const take = (view) => {
    for (const g of view.groups ?? []) {
      for (const m of g.members) {
        if (!m.left) rows.push({ group: g.group, name: m.name, lossPct: m.lossPct });
        else left.set(g.group, (left.get(g.group) ?? new Set()).add(m.name));
      }
    }
  };
  const reading = (async () => {
    const res = await fetch(`${base}/dashboard/feed?token=${TOKEN}`, { signal: abort.signal });
    const reader = /** @type {ReadableStream<Uint8Array>} */ (res.body).pipeThrough(/** @type {ReadableWritablePair<string, Uint8Array>} */ (/** @type {unknown} */ (new TextDecoderStream()))).getReader();
    let text = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      text += value;
      let end;
      while ((end = text.indexOf('\n\n')) >= 0) {
        const data = text.slice(0, end).split('\n').find((line) => line.startsWith('data: '));
        text = text.slice(end + 2);
        if (data) take(JSON.parse(data.slice(6)));
      }
    }
  })().catch((err) => { if (!abort.signal.aborted) throw err; });
  return {
    /**
     * Resolves once the feed has shown `n` members of `group` as left (their final reports are in).
     * @param {string} group @param {number} n
     */
    async untilLeft(group, n) {
      const end = Date.now() + 20_000;
      while ((left.get(group)?.size ?? 0) < n) {
        if (Date.now() > end) throw new Error(`${group}: the dashboard shows ${left.get(group)?.size ?? 0} of ${n} final reports after 20 s`);
        await sleep(100);
      }
    },
    /** Ends the feed; the rows seen. */
    stop() {
      abort.abort();
      reading.catch(() => {});
      return rows;
    },
  };
}

/**
 * Four phones in one group on `transport`: joined, exchanging, watched on the
 * dashboard, stopped, measured from their own pages, gone.
 * @param {{ browser: import('@playwright/test').Browser, fx: import('@playwright/test').Browser, base: string,
 *   transport: string, testInfo: import('@playwright/test').TestInfo, feed: ReturnType<typeof watchFeed> }} o
 */
async function studyRound({ browser, fx, base, transport, testInfo, feed }) {
  const group = `study-${transport}-${Date.now().toString(36)}`;
  const contexts = [];
  const pages = [];
  for (const phone of PHONES) {
    const context = await (phone.engine === 'firefox' ? fx : browser).newContext({ ...phone.device, baseURL: base });
    contexts.push(context);
    const page = await context.newPage();
    const q = new URLSearchParams({ group, name: phone.name, transport, source: 'none', pose: '0.1,0.05,0.4,0,0,0,1', dpr: '1' });
    await page.goto(`/ar.html?${q}`);
    await page.evaluate(() => window.carlab.ready.then(() => true));
    pages.push(page);
  }
  for (const page of pages) await waitForMembers(page, 3);
  await expect(pages[0].locator('#study-notice')).toHaveText(/records measurements for a study; no camera images/);
  // every page has reported at least twice
  for (const page of pages) await page.waitForFunction(() => (window.carlab.reporter?.seq ?? 0) >= 2, null, { timeout: 20_000 });
  const objects = await editScene(pages);

  await checkDashboard(browser, base, group, testInfo, transport, objects);
  const sceneMembers = [];
  for (const page of pages) sceneMembers.push(await page.evaluate(() => window.carlab.client.sceneMember(performance.timeOrigin + performance.now())));

  for (const page of pages) await page.evaluate(() => window.carlab.client.stop());
  // The last updates and ACKs land: until each page's count is settled (its cutoff past its last
  // update), so the final report it sends later counts the same updates as the stats read here. A
  // fixed 1.5 s once read one update fewer beside a busy loop than the final report did.
  for (const page of pages) await page.waitForFunction(() => window.carlab.client.cycle.settled(), null, { timeout: 35_000, polling: 100 });
  const stats = [];
  for (const page of pages) stats.push(await page.evaluate(() => window.carlab.client.stats()));
  const families = new Map(stats.map((s, i) => [s.id, PHONES[i].family]));
  for (const page of pages) {
    await page.evaluate(() => window.carlab.leave());
    await page.close();
  }
  await feed.untilLeft(group, PHONES.length); // the final reports are in: the browsers may go (see comeAndGo)
  for (const context of contexts) await context.close();
  return { stats, families, group, sceneMembers };
}

/**
 * Every phone adds an object and moves it twice, a phone every 150 ms, and
 * moves the next phone's once; then waits until every phone's neighbours
 * hold its scene (the HUD's "in sync").
 * @param {import('@playwright/test').Page[]} pages
 * @returns {Promise<number>} the objects every phone then holds
 */
async function editScene(pages) {
  /** @type {number[]} */
  const ids = [];
  for (const [i, page] of pages.entries()) {
    ids.push(await page.evaluate((k) => window.carlab.client.addObject(['cube', 'sphere', 'cone', 'torus'][k % 4], [k / 10, 0, 0.1, 0, 0, 0, 1]).id, i));
    await sleep(150);
  }
  for (const [i, page] of pages.entries()) {
    await page.evaluate(([own, next, k]) => {
      window.carlab.client.moveSceneObject(own, [k / 10, 0, 0.2, 0, 0, 0, 1]);
      setTimeout(() => window.carlab.client.moveSceneObject(next, [k / 10, 0, 0.3, 0, 0, 0, 1]), 100);
    }, [ids[i], ids[(i + 1) % ids.length], i]);
    await sleep(150);
  }
  for (const page of pages) {
    await page.waitForFunction((n) => window.carlab.sceneSync()?.objects === n && window.carlab.sceneSync()?.behind.length === 0, ids.length + 1, { timeout: 20_000 });
  }
  return ids.length + 1; // and the car
}

/**
 * The dashboard, opened with its token in a real browser, shows the four with their browsers.
 * @param {import('@playwright/test').Browser} browser @param {string} base @param {string} group
 * @param {import('@playwright/test').TestInfo} testInfo @param {string} transport
 * @param {number} objects the shared scene's objects, every member in sync
 */
async function checkDashboard(browser, base, group, testInfo, transport, objects) {
  const context = await browser.newContext({ viewport: { width: 1600, height: 1000 } });
  const page = await context.newPage();
  /** @type {string[]} */
  const dialogs = [];
  page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss().catch(() => {}); });
  expect((await page.goto(`${base}/dashboard`))?.status()).toBe(401);
  await page.goto(`${base}/dashboard?token=${TOKEN}`);
  const card = page.locator('section.group', { has: page.locator('h2', { hasText: group }) });
  await expect(card.locator('tbody tr')).toHaveCount(4, { timeout: 20_000 });
  const text = await card.innerText();
  for (const needle of ['Chrome', 'Safari', 'Firefox', 'Android', 'iOS', XSS_NAME, transport]) expect(text).toContain(needle);
  // the shared scene: every member in sync once their reports after the edits are in, the edits measured
  await expect(card.locator('.scene-line')).toHaveText(new RegExp(`^Shared scene: ${objects} objects · 4 of 4 in sync · convergence p50 \\d+ ms, p99 \\d+ ms \\(12 edits in 5 min\\) · disagreement [0-9.]+ %$`), { timeout: 20_000 });
  await expect(card.locator('td[data-label="Scene"]')).toHaveText(Array(4).fill(`${objects} · in sync`));
  expect(await page.locator('img').count()).toBe(0);
  expect(dialogs).toEqual([]);
  const shot = testInfo.outputPath(`dashboard-${transport}.png`);
  await page.screenshot({ path: shot, fullPage: true });
  await testInfo.attach(`dashboard-${transport}`, { path: shot, contentType: 'image/png' });
  // a line per member in the RT chart, labelled, beside the group's
  const rtLabels = () => card.locator('canvas').first()
    .evaluate((canvas) => /** @type {any} */ (window).Chart.getChart(canvas).data.datasets.map((/** @type {any} */ d) => d.label));
  await expect.poll(async () => {
    const labels = await rtLabels();
    return [labels[0], PHONES.filter((phone) => labels.some((/** @type {string} */ l) => l.startsWith(phone.name))).length];
  }, { message: 'the RT chart: the group\'s line, then one per phone', timeout: 15_000 }).toEqual(['group', PHONES.length]);
  // no column cut, from a wide screen to a phone's width
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 });
    await expect.poll(() => page.evaluate(() => Array.from(document.querySelectorAll('.table-wrap'), (w) => w.scrollWidth - w.clientWidth).filter((px) => px > 0)),
      { message: `${width} px: tables whose columns are cut (px)` }).toEqual([]);
    const at = testInfo.outputPath(`dashboard-${transport}-${width}.png`);
    await page.screenshot({ path: at, fullPage: true });
    await testInfo.attach(`dashboard-${transport}-${width}`, { path: at, contentType: 'image/png' });
  }
  await context.close();
}

/**
 * Per browser family, the recording's run equals what the pages measured:
 * RT count, the loss counts of the streams into that family, freshness.
 * @param {any[]} runs @param {string} transport @param {{ stats: any[], families: Map<number, string>, group: string }} m
 */
function compareRuns(runs, transport, m) {
  const familyOf = (/** @type {{ id: number }} */ c) => m.families.get(c.id);
  for (const family of new Set(m.families.values())) {
    const run = runs.find((r) => r.groupName === m.group && r.transport === transport && r.browser === family);
    expect(run, `${transport} ${family}`).toBeTruthy();
    const own = m.stats.filter((s) => familyOf(s) === family);
    expect(run.rt.n).toBe(own.reduce((s, c) => s + c.rt.length, 0));
    const streams = aggregateStreams(m.stats, (receiver) => familyOf(receiver) === family);
    expect([run.updates.expected, run.updates.received]).toEqual([streams.expected, streams.received]);
    const fresh = freshnessOf(own);
    expect(run.freshness).toEqual(fresh);
  }
}

/**
 * The recording's shared scene equals what the pages measured from their own
 * logs (one machine: one clock), within the phones' clock estimates' error.
 * @param {any[]} runs @param {{ group: string, sceneMembers: import('../core/scene-metrics.js').SceneMember[] }} m
 */
function compareScene(runs, m) {
  const run = runs.find((r) => r.groupName === m.group && r.browser === 'all');
  const own = summarizeScene([m.sceneMembers]);
  const scene = run?.scene;
  expect(scene, 'the group\'s run has its scene').toBeTruthy();
  expect([scene.members, scene.membersIncomplete, scene.edits, scene.unconverged]).toEqual([4, 0, own.edits, 0]);
  expect(own.edits).toBe(12);
  const slack = 2 * scene.clockErrorMs.max + 2;
  for (const k of /** @type {const} */ (['p50', 'p99', 'max'])) {
    expect(Math.abs(scene.convergenceMs[k] - /** @type {number} */ (own.convergenceMs[k])), `convergence ${k}: ${scene.convergenceMs[k]} against the pages' ${own.convergenceMs[k]} (±${slack} ms)`).toBeLessThanOrEqual(slack);
  }
  expect(scene.disagreementPct).toBeGreaterThan(0);
  expect(scene.atEnd.disagreeing).toBe(0);
}

/** A sink for a command's output. */
function sink() {
  return /** @type {NodeJS.WritableStream} */ (/** @type {unknown} */ ({ write: () => true }));
}
