// A browser without WebRTC, made from Chromium: RTCPeerConnection and
// RTCDataChannel (and their helpers) deleted from every page before it runs,
// as in Debian's WebKitGTK (e2e/webkit.spec.js) and some in-app browsers. The
// landing page offers only the relay transports and says in one line why; a
// link asking for p2p, p2p-reliable or relay-udp is explained on the AR page
// (never "unreachable", never blank) and one tap joins over the relay.
import { devices, expect, test } from '@playwright/test';

const { defaultBrowserType: _unused, ...PHONE } = devices['Pixel 7'];

const unique = (/** @type {string} */ name) => `${name}-${Date.now().toString(36)}`;

/** Runs in every page before its scripts: WebRTC's constructors are gone. */
function removeWebRtc() {
  for (const name of ['RTCPeerConnection', 'webkitRTCPeerConnection', 'RTCDataChannel', 'RTCSessionDescription', 'RTCIceCandidate']) {
    delete (/** @type {any} */ (window))[name];
  }
}

test.describe('Chromium with WebRTC removed from the page', () => {
  test.use({ ...PHONE });
  test.beforeEach(async ({ page }) => {
    test.skip(!test.info().project.name.startsWith('chromium'));
    await page.addInitScript(removeWebRtc);
  });

  test('landing page: only relay and relay-faithful, one line on why; a link asking for p2p gets relay', async ({ page }) => {
    const group = unique('nortc');
    await page.goto(`/?group=${group}&transport=p2p`);
    expect(await page.evaluate(() => typeof window.RTCPeerConnection)).toBe('undefined');
    await expect(page.locator('select[name=transport] option')).toHaveCount(2);
    expect(await page.locator('select[name=transport] option').evaluateAll((os) => os.map((o) => /** @type {HTMLOptionElement} */ (o).value)))
      .toEqual(['relay', 'relay-faithful']);
    await expect(page.locator('select[name=transport]')).toHaveValue('relay');
    const hint = page.locator('#transport-hint');
    await expect(hint).toBeVisible();
    await expect(hint).toHaveText('relay-udp, p2p and p2p-reliable are not offered: this browser has no WebRTC (RTCPeerConnection '
      + 'and RTCDataChannel). The relay works in every browser. The link asked for p2p, so relay is chosen instead.');
    await expect(page.locator('#qr')).toHaveAttribute('data-link', new RegExp(`/\\?group=${group}&transport=relay$`));
    // without a transport in the link: the same line, without the last sentence
    await page.goto(`/?group=${group}`);
    await expect(hint).toHaveText(/^relay-udp, p2p and p2p-reliable are not offered: .* The relay works in every browser\.$/);
    await page.fill('input[name=name]', 'Ada');
    await page.click('button[type=submit]');
    await page.waitForURL(/\/ar\.html\?/);
    expect(new URL(page.url()).searchParams.get('transport')).toBe('relay');
    expect(await page.evaluate(() => window.carlab.ready.then(() => window.carlab.hudState().connection))).toBe('connected');
  });

  for (const transport of ['p2p', 'p2p-reliable', 'relay-udp']) {
    test(`AR link asking for ${transport}: explained in the banner, never "unreachable", one tap joins the same group over relay`, async ({ page }) => {
      /** @type {string[]} */
      const errors = [];
      page.on('pageerror', (e) => errors.push(e.message));
      const group = unique('nortc');
      await page.goto(`/ar.html?group=${group}&name=Ada&transport=${transport}&source=none&mode=gated`);
      const banner = page.locator('.hud-banner [data-error=transport]');
      await expect(banner).toContainText(`This link asks for ${transport}, which needs WebRTC, and this browser has none`);
      await expect(banner).toContainText('join over the relay');
      await expect(page.locator('.hud [data-field=connection]')).toHaveText('unsupported');
      expect(await page.evaluate(() => window.carlab.hudState().connection)).toBe('unsupported');
      await expect(page.locator('body')).not.toContainText(/unreachable/i);
      const offer = page.locator('#use-relay');
      await expect(offer).toBeVisible();
      await offer.click();
      await page.waitForURL((url) => url.searchParams.get('transport') === 'relay');
      expect(Object.fromEntries(new URL(page.url()).searchParams)).toEqual({ group, name: 'Ada', transport: 'relay', source: 'none', mode: 'gated' });
      expect(await page.evaluate(() => window.carlab.ready.then(() => window.carlab.hudState().connection))).toBe('connected');
      await expect(page.locator('.hud-banner [data-error=transport]')).toHaveCount(0);
      expect(errors).toEqual([]);
    });
  }
});

test('Chromium with WebRTC: every transport offered, no line about missing ones, a p2p link keeps p2p', async ({ page }) => {
  test.skip(!test.info().project.name.startsWith('chromium'));
  await page.goto(`/?group=${unique('rtc')}&transport=p2p`);
  await expect(page.locator('select[name=transport] option')).toHaveCount(5);
  await expect(page.locator('select[name=transport]')).toHaveValue('p2p');
  await expect(page.locator('#transport-hint')).toBeHidden();
  await expect(page.locator('#camera-warning')).toBeHidden();
});
