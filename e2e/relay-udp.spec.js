// relay-udp in real browsers: each page opens one unreliable data channel to
// the relay (node-datachannel on the server side) and exchanges updates
// through it; the channel parameters are read back from the live channel.
import { test, expect } from '@playwright/test';
import { aggregateStreams } from '../core/metrics.js';

/** @param {import('@playwright/test').Page} page @param {string} query */
async function openPeer(page, query) {
  /** @type {string[]} */
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`/peer.html?${query}`);
  await page.evaluate(() => window.carlab.ready);
  return errors;
}

/** @param {import('@playwright/test').Page[]} pages */
const statsOf = (pages) => Promise.all(pages.map((p) => p.evaluate(() => window.carlab.stats()[0])));

const unique = (/** @type {string} */ name) => `${name}-${Date.now().toString(36)}`;

test('relay-udp: two pages exchange updates over unordered, maxRetransmits=0 channels to the relay @firefox', async ({ browser, browserName }) => {
  const group = unique(`udp-${browserName}`);
  const context = await browser.newContext();
  const pages = [await context.newPage(), await context.newPage()];
  const errors = [];
  for (const page of pages) errors.push(...await openPeer(page, `group=${group}&transport=relay-udp&autostart=0&name=u`));
  for (const p of pages) {
    await expect.poll(() => p.evaluate(() => window.carlab.clients[0].members.size), { timeout: 30_000 }).toBe(1);
  }
  for (const p of pages) await p.evaluate(() => window.carlab.start());
  await pages[0].waitForTimeout(4_000);
  for (const p of pages) await p.evaluate(() => window.carlab.stop());
  await pages[0].waitForTimeout(500); // let in-flight updates land
  const stats = await statsOf(pages);

  for (const s of stats) {
    expect(s.transport).toBe('relay-udp');
    // read back from the browser's live channel
    expect(s.channel).toMatchObject({
      kind: 'rtcdatachannel', ordered: false, maxRetransmits: 0, maxPacketLifeTime: null,
      negotiated: true, channelId: 0, channels: 1,
    });
    expect(s.setup.signalingMs).toBeGreaterThan(0);
    expect(s.setup.peers).toHaveLength(1);
    const peer = s.setup.peers[0];
    for (const phase of ['offerAnswerMs', 'iceConnectedMs', 'dtlsConnectedMs', 'channelOpenMs']) expect(peer[phase]).toBeGreaterThan(0);
    expect(peer.candidateType).toMatch(/^host\//);
    expect(s.setup.counters).toMatchObject({ setupFailures: 0, channelDrops: 0, badFrames: 0 });
    expect(s.rt.length).toBeGreaterThan(10);
    expect(s.ackTimeouts).toBe(0);
  }
  const loss = aggregateStreams(stats);
  expect(loss.expected).toBeGreaterThan(20);
  expect(loss.received + loss.lost).toBe(loss.expected);
  expect(loss.received).toBeGreaterThan(20);
  expect(errors).toEqual([]);

  const metrics = await (await pages[0].request.get('/metrics', { headers: { Accept: 'application/json' } })).json();
  expect(metrics.relay.udp.channelsOpened).toBeGreaterThanOrEqual(2);
  expect(metrics.relay.udp.callbackErrors).toBe(0);
  expect(metrics.relay.rts.n).toBeGreaterThan(0);
  await context.close();
});
