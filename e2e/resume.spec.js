// A phone whose network drops for a few seconds (Playwright's offline mode on
// its browser context) comes back with the same id by resuming its session
// (docs/protocol.md §8.10): its neighbour never sees it leave the group.
import { test, expect } from '@playwright/test';

const unique = (/** @type {string} */ name) => `${name}-${Date.now().toString(36)}`;

/** Client 0 of a page: its id, the members it sees, reconnections. */
const probe = (/** @type {import('@playwright/test').Page} */ page) => page.evaluate(() => {
  const c = window.carlab.clients[0];
  const t = /** @type {any} */ (c.transport);
  return { id: c.id, members: [...c.members.keys()], reconnects: t.reconnectInfo?.().reconnects ?? 0 };
});

test('relay: a phone offline for 3 s comes back with its id, and its neighbour never sees it leave @firefox', async ({ browser }) => {
  const url = `/peer.html?group=${unique('resume')}&transport=relay&cycle=100&ackTimeout=2000`;
  const [ctxA, ctxB] = [await browser.newContext(), await browser.newContext()];
  try {
    const [a, b] = [await ctxA.newPage(), await ctxB.newPage()];
    for (const p of [a, b]) {
      await p.goto(url);
      await p.evaluate(() => window.carlab.ready);
    }
    await expect.poll(async () => (await probe(a)).members.length, { timeout: 30_000 }).toBe(1);
    const [a0, b0] = [await probe(a), await probe(b)];
    expect(a0.members).toEqual([b0.id]);
    const before = await (await a.request.get('/metrics', { headers: { Accept: 'application/json' } })).json();

    await ctxB.setOffline(true);
    // The neighbour's view, sampled through the outage: B is a member all along.
    /** @type {number[][]} */
    const seen = [];
    const end = Date.now() + 3000;
    while (Date.now() < end) {
      seen.push((await probe(a)).members);
      await a.waitForTimeout(100);
    }
    await ctxB.setOffline(false);
    await expect.poll(async () => (await probe(b)).reconnects, { timeout: 20_000 }).toBeGreaterThanOrEqual(1);
    for (let i = 0; i < 10; i++) {
      seen.push((await probe(a)).members);
      await a.waitForTimeout(100);
    }
    expect((await probe(b)).id).toBe(b0.id);
    expect(seen.filter((m) => !m.includes(b0.id))).toEqual([]);
    const after = await (await a.request.get('/metrics', { headers: { Accept: 'application/json' } })).json();
    expect(after.relay.resumed - (before.relay.resumed ?? 0)).toBeGreaterThanOrEqual(1);
  } finally {
    await ctxA.close();
    await ctxB.close();
  }
});
