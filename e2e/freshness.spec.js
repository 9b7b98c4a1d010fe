// The HUD shows per neighbour how long ago its last fresh update arrived and
// marks it stale past 1 s: a neighbour that stops sending (its cycle stopped,
// still a member) turns stale on the other phone, and fresh again when it
// sends again. Two AR pages without a camera (source=none), pipelined cycle;
// neither loads AR.js (web/src/ar/tracking.js loads it when tracking starts).
import { devices, expect, test } from '@playwright/test';

const PHONE = devices['Pixel 7'];
const { defaultBrowserType: _unused, ...PHONE_OPTIONS } = PHONE;
const unique = (/** @type {string} */ name) => `${name}-${Date.now().toString(36)}`;

test('a neighbour that stops sending is marked stale in the HUD, and fresh again when it resumes', async ({ browser, baseURL }, testInfo) => {
  const group = unique('fresh');
  const q = `group=${group}&transport=relay&mode=pipelined&source=none&pose=0,0,0.5,0,0,0,1`;
  /** @param {string} name */
  const open = async (name) => {
    const context = await browser.newContext({ ...PHONE_OPTIONS, baseURL });
    const page = await context.newPage();
    await page.goto(`/ar.html?${q}&name=${name}`);
    await page.evaluate(() => window.carlab.ready.then(() => true));
    return { context, page };
  };
  const A = await open('Ada');
  const B = await open('Bob');
  try {
    const bobOnA = A.page.locator('.hud-member', { hasText: 'Bob' });
    // fresh: updates every 167 ms, an age well under a second
    await expect(bobOnA).toHaveAttribute('data-stale', '0', { timeout: 15_000 });
    await expect(bobOnA.locator('.hud-age')).toHaveText(/^0\.\d s$/);
    expect(await A.page.evaluate(() => window.carlab.settings.cycleMode)).toBe('pipelined');
    await expect(A.page.locator('[data-field="transport"]')).toContainText('pipelined');
    // AR.js is 1.6 of the 2.2 MB of script an AR page with a camera runs; three.js and the app, 0.65
    const scriptBytes = await A.page.evaluate(() => performance.getEntriesByType('resource')
      .filter((e) => new URL(e.name).pathname.endsWith('.js'))
      .reduce((sum, e) => sum + /** @type {PerformanceResourceTiming} */ (e).decodedBodySize, 0));
    expect(scriptBytes, 'a page without a camera does not load AR.js').toBeLessThan(1e6);
    expect(scriptBytes).toBeGreaterThan(4e5);

    // Bob's cycle stops: he stays in the group, nothing fresh arrives from him
    await B.page.evaluate(() => window.carlab.client?.stop());
    const stoppedAt = Date.now();
    await expect(bobOnA).toHaveAttribute('data-stale', '1', { timeout: 5_000 });
    expect(Date.now() - stoppedAt).toBeGreaterThanOrEqual(900); // not before the 1 s limit
    await expect(bobOnA).toHaveClass(/hud-stale/);
    await expect(bobOnA.locator('.hud-age')).toHaveText(/^stale \d+\.\d s$/);
    await expect(A.page.locator('.hud-brief')).toContainText('1 stale');
    // Bob still sees Ada fresh: the marker is per neighbour
    await expect(B.page.locator('.hud-member', { hasText: 'Ada' })).toHaveAttribute('data-stale', '0');
    await A.page.screenshot({ path: testInfo.outputPath('hud-stale.png') });

    // Bob sends again: fresh again
    await B.page.evaluate(() => window.carlab.client?.start(0));
    await expect(bobOnA).toHaveAttribute('data-stale', '0', { timeout: 5_000 });
    await expect(A.page.locator('.hud-brief')).not.toContainText('stale');
  } finally {
    await A.context.close();
    await B.context.close();
  }
});
