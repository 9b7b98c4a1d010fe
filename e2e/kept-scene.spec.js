// Kept scenes with p2p phones (docs/operations.md "Kept scenes"): their scene
// records travel peer to peer, so each hands its own edits to the server on its
// membership connection (docs/protocol.md §5.14). Two Chromium phones on p2p
// place objects and leave; the server is killed (SIGKILL) and started again
// on the same store; the first phone back, on p2p, holds the same objects.
import { test, expect } from '@playwright/test';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ownServer } from './server.js';
import { unique } from './phones.js';

/** @param {import('@playwright/test').Page} page @param {string} url */
async function openPeer(page, url) {
  await page.goto(url);
  await page.evaluate(() => window.carlab.ready);
}

/** The live objects client 0 of a page holds, without the car: kind and pose, by kind. @param {import('@playwright/test').Page} page */
const objectsOn = (page) => page.evaluate(() => window.carlab.clients[0].scene.objects()
  .filter((/** @type {{ id: number }} */ o) => o.id !== 0)
  .map((/** @type {{ kind: number, pose: number[] }} */ o) => ({ kind: o.kind, pose: o.pose }))
  .sort((/** @type {{ kind: number }} */ a, /** @type {{ kind: number }} */ b) => a.kind - b.kind));

test('p2p: a group places objects, everyone leaves, the server is killed and restarted: the first phone back sees them', async ({ browser, browserName }) => {
  test.skip(browserName !== 'chromium', 'one run is enough: the server\'s side is what is tested');
  const dir = await mkdtemp(path.join(tmpdir(), 'carlab-e2e-scenes-'));
  const server = await ownServer({ args: ['--scene-store', dir] });
  const context = await browser.newContext();
  try {
    const url = `${server.baseURL}/peer.html?group=${unique('kept')}&transport=p2p&cycle=100&ackTimeout=2000`;
    const [a, b] = [await context.newPage(), await context.newPage()];
    await openPeer(a, url);
    await openPeer(b, url);
    for (const p of [a, b]) await expect.poll(() => p.evaluate(() => window.carlab.clients[0].members.size), { timeout: 30_000 }).toBe(1);
    await a.evaluate(() => {
      const c = window.carlab.clients[0];
      const cube = c.addObject('cube', [0, 0, 0, 0, 0, 0, 1]);
      c.moveSceneObject(cube.id, [0.25, 0, -0.5, 0, 0, 0, 1]);
    });
    await b.evaluate(() => window.carlab.clients[0].addObject('sphere', [-0.125, 0, 0.5, 0, 0, 0, 1]));
    await expect.poll(async () => (await objectsOn(a)).length, { timeout: 15_000 }).toBe(2);
    await expect.poll(async () => JSON.stringify(await objectsOn(b)), { timeout: 15_000 }).toBe(JSON.stringify(await objectsOn(a)));
    const held = await objectsOn(a);
    await a.waitForTimeout(300); // the last edits' KEPT_SCENE messages reach the server
    await a.close();
    await b.close();
    // the scene is on disk once the group is empty: give the write a moment, then crash the server
    await expect.poll(async () => (await import('node:fs/promises')).readdir(dir).then((f) => f.filter((n) => n.endsWith('.json')).length), { timeout: 10_000 }).toBe(1);
    await server.kill();
    await server.start();
    const c = await context.newPage();
    await openPeer(c, url);
    await expect.poll(async () => (await objectsOn(c)).length, { timeout: 15_000 }).toBe(2);
    expect(await objectsOn(c)).toEqual(held);
  } finally {
    await context.close();
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
});
