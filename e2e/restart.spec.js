// Restarting the server under live browsers. `carlab start` serves the relay
// and the PeerServer from one process, so a PeerServer restart in a real
// deployment (a crash, a redeploy) takes the relay's membership sockets with
// it: the test kills that process with SIGKILL and starts it again on the same
// port, on a server of its own (e2e/server.js).
import { test, expect } from '@playwright/test';
import { ownServer } from './server.js';

const unique = (/** @type {string} */ name) => `${name}-${Date.now().toString(36)}`;

/** @param {import('@playwright/test').Page} page @param {string} url */
async function openPeer(page, url) {
  await page.goto(url);
  await page.evaluate(() => window.carlab.ready);
}

/** Client 0 of a fleet page: id, members, p2p counters, newest seq received per sender, RTs. */
const probe = (/** @type {import('@playwright/test').Page} */ page) => page.evaluate(() => {
  const c = window.carlab.clients[0];
  const t = /** @type {any} */ (c.transport);
  return {
    id: c.id,
    members: [...c.members.keys()],
    counters: { ...t.counters },
    signalingDown: Boolean(t.peer?.disconnected),
    newest: Object.fromEntries([...c.streams].map(([id, s]) => [id, s.newestSeq])),
    completed: c.cycle.completed,
    ackTimeouts: c.cycle.ackTimeouts,
  };
});

test('p2p: the PeerServer (with the relay) restarts; open channels keep delivering, a new peer meshes with both', async ({ browser }) => {
  const server = await ownServer();
  const context = await browser.newContext();
  try {
    const url = `${server.baseURL}/peer.html?group=${unique('restart')}&transport=p2p&cycle=100&ackTimeout=2000`;
    const [a, b] = [await context.newPage(), await context.newPage()];
    await openPeer(a, url);
    await openPeer(b, url);
    for (const p of [a, b]) await expect.poll(async () => (await probe(p)).members.length, { timeout: 30_000 }).toBe(1);
    const [a0, b0] = [await probe(a), await probe(b)];
    // Membership comes over the relay and can be there before the channel has
    // carried anything: wait until updates flow both ways before the kill.
    await expect.poll(async () => ((await probe(a)).newest[b0.id] ?? 0) > 3, { timeout: 30_000 }).toBe(true);
    await expect.poll(async () => ((await probe(b)).newest[a0.id] ?? 0) > 3, { timeout: 30_000 }).toBe(true);

    await server.kill();
    const downAt = Date.now();
    // Both notice: PeerJS reports 'disconnected' and starts its reconnect attempts.
    for (const p of [a, b]) await expect.poll(async () => (await probe(p)).signalingDown, { timeout: 10_000 }).toBe(true);
    const [a1, b1] = [await probe(a), await probe(b)];
    await a.waitForTimeout(3000);
    const [a2, b2] = [await probe(a), await probe(b)];
    // While the server is down the channel carries updates both ways, and each is ACKed.
    expect(a2.members).toEqual([b0.id]);
    expect(b2.members).toEqual([a0.id]);
    expect(b2.newest[a0.id] - b1.newest[a0.id]).toBeGreaterThan(10);
    expect(a2.newest[b0.id] - a1.newest[b0.id]).toBeGreaterThan(10);
    expect(a2.completed - a1.completed).toBeGreaterThan(10);
    expect(a2.ackTimeouts + b2.ackTimeouts).toBe(0);

    await server.start();
    const downMs = Date.now() - downAt;
    // Both reconnect to the PeerServer with their ids and rejoin the relay's membership.
    for (const p of [a, b]) {
      await expect.poll(async () => {
        const s = await probe(p);
        return !s.signalingDown && s.counters.signalingReconnects >= 1 && s.counters.membershipRejoins >= 1;
      }, { timeout: 30_000 }).toBe(true);
    }
    const [a3, b3] = [await probe(a), await probe(b)];
    expect(a3.id).toBe(a0.id);
    expect(b3.id).toBe(b0.id);
    // The old channel was never torn down and re-made.
    expect(a3.counters.failures + b3.counters.failures).toBe(0);
    expect(a3.counters.connectAttempts + b3.counters.connectAttempts).toBe(1);

    const c = await context.newPage();
    await openPeer(c, url);
    for (const p of [a, b, c]) await expect.poll(async () => (await probe(p)).members.length, { timeout: 30_000 }).toBe(2);
    const c0 = await probe(c);
    await c.waitForTimeout(1500);
    const [a4, b4, c4] = [await probe(a), await probe(b), await probe(c)];
    expect(c4.newest[a0.id]).toBeGreaterThan(c0.newest[a0.id] ?? 0);
    expect(c4.newest[b0.id]).toBeGreaterThan(c0.newest[b0.id] ?? 0);
    expect(a4.newest[c0.id]).toBeGreaterThan(0);
    expect(b4.newest[c0.id]).toBeGreaterThan(0);
    expect(a4.newest[b0.id]).toBeGreaterThan(a3.newest[b0.id]);
    console.log(`PeerServer restart: down ${downMs} ms; while down A->B +${b2.newest[a0.id] - b1.newest[a0.id]}, `
      + `B->A +${a2.newest[b0.id] - a1.newest[b0.id]} updates in 3 s, 0 ACK timeouts; signaling reconnect attempts `
      + `A ${a3.counters.signalingAttempts}, B ${b3.counters.signalingAttempts}; C meshed with both`);
  } finally {
    await context.close();
    await server.stop();
  }
});

test('AR page HUD: "reconnecting… attempt N, next in X s" while the server is down, then "connected"', async ({ browser }) => {
  const server = await ownServer();
  const context = await browser.newContext();
  try {
    const relayPage = await context.newPage();
    const relayPeer = await context.newPage();
    const p2pPage = await context.newPage();
    const group = unique('hud');
    await relayPage.goto(`${server.baseURL}/ar.html?group=${group}&name=r&transport=relay&source=none`);
    await relayPeer.goto(`${server.baseURL}/ar.html?group=${group}&name=s&transport=relay&source=none`);
    await p2pPage.goto(`${server.baseURL}/ar.html?group=${unique('hudp')}&name=p&transport=p2p&source=none`);
    for (const p of [relayPage, relayPeer, p2pPage]) {
      await p.evaluate(() => window.carlab.ready.then(() => true));
      await expect(p.locator('[data-field=connection]')).toHaveText(/^connected · id \d+$/);
    }
    await server.kill();
    // relay: the data path is down; the collapsed view (the brief) says so too
    await expect(relayPage.locator('.hud-brief')).toHaveText(/^reconnecting… attempt \d+, next in \d+\.\d s$/, { timeout: 10_000 });
    await expect(relayPage.locator('.hud-brief')).toHaveText(/attempt ([3-9]|\d\d)/, { timeout: 15_000 });
    await relayPage.screenshot({ path: 'test-results/hud-reconnecting.png' });
    // p2p: channels carry on; what is retried is named
    await expect(p2pPage.locator('[data-field=connection]'))
      .toHaveText(/^connected · (group list|PeerServer) reconnecting… attempt \d+.* · (group list|PeerServer) reconnecting…/, { timeout: 10_000 });
    await server.start();
    await expect(relayPage.locator('[data-field=connection]')).toHaveText(/^connected · id \d+$/, { timeout: 30_000 });
    await expect(relayPage.locator('.hud-brief')).toHaveText(/in group/);
    await expect(p2pPage.locator('[data-field=connection]')).toHaveText(/^connected · id \d+$/, { timeout: 30_000 });
    // The loss estimate re-bases at the rejoin: what a member sent while the other was not
    // back went to nobody, and is not loss on this reliable transport (only what was in flight
    // when the server died is).
    await expect.poll(() => relayPage.evaluate(() => window.carlab.client.members.size), { timeout: 30_000 }).toBe(1);
    await relayPage.waitForTimeout(2000);
    const loss = await relayPage.evaluate(() => window.carlab.hudState().lossPct);
    expect(loss).not.toBeNull();
    expect(loss).toBeLessThan(10);
  } finally {
    await context.close();
    await server.stop();
  }
});
