// The group access token in the join link: the landing page makes it part of
// the invite link and QR code, the AR view and the fleet page send it, and a
// wrong or missing one is told in words (close 4006), on a server of the
// test's own whose output is checked for the tokens afterwards.
import { test, expect } from '@playwright/test';
import { ownServer } from './server.js';

const unique = (/** @type {string} */ name) => `${name}-${Date.now().toString(36)}`;

test('join link with a token: right token joins, wrong or missing one reads "locked"; no token in the server output', async ({ browser }) => {
  const server = await ownServer();
  const context = await browser.newContext();
  try {
    const group = unique('tok');
    // The creator: landing page, Generate, the share link and QR code carry the token, Enter AR.
    const landing = await context.newPage();
    await landing.goto(`${server.baseURL}/?group=${group}&transport=relay`);
    await landing.fill('input[name=name]', 'ana');
    await landing.click('#new-token');
    const token = await landing.inputValue('#token');
    expect(token).toMatch(/^[A-Za-z0-9]{16}$/);
    const link = new URL(/** @type {string} */ (await landing.getAttribute('#share-link', 'href')));
    expect(Object.fromEntries(link.searchParams)).toEqual({ group, transport: 'relay', token });
    await expect(landing.locator('#qr')).toHaveAttribute('data-link', link.href);
    await expect(landing.locator('#share-locked')).toBeVisible();
    await landing.screenshot({ path: 'test-results/landing-token.png', fullPage: true });
    await landing.click('button[type=submit]');
    await landing.waitForURL(/\/ar\.html\?/);
    expect(new URL(landing.url()).searchParams.get('token')).toBe(token);
    await landing.evaluate(() => window.carlab.ready.then(() => true));

    // A guest who opens the invite link lands on the form with the token filled in.
    const guest = await context.newPage();
    await guest.goto(link.href);
    await expect(guest.locator('#token')).toHaveValue(token);

    // Right token: joins and sees the creator.
    const right = await context.newPage();
    await right.goto(`${server.baseURL}/ar.html?group=${group}&name=bo&token=${token}&source=none`);
    await right.evaluate(() => window.carlab.ready.then(() => true));
    await expect.poll(() => right.evaluate(() => window.carlab.client?.members.size)).toBe(1);

    // Wrong token, then none: a readable message instead of a silent failure.
    const wrong = await context.newPage();
    await wrong.goto(`${server.baseURL}/ar.html?group=${group}&name=eve&token=guessed-wrong&source=none`);
    await expect(wrong.locator('[data-error=network]')).toHaveText(/locked with another access token than the one in your link/);
    await expect(wrong.locator('[data-field=connection]')).toHaveText(/^refused/);
    await wrong.screenshot({ path: 'test-results/ar-wrong-token.png' });
    const none = await context.newPage();
    await none.goto(`${server.baseURL}/ar.html?group=${group}&name=eve&source=none`);
    await expect(none.locator('[data-error=network]')).toHaveText(/locked with an access token and your link has none/);

    // The fleet page on p2p: the membership HELLO carries the token too.
    const p2pGroup = unique('tokp');
    const owner = await context.newPage();
    await owner.goto(`${server.baseURL}/peer.html?group=${p2pGroup}&transport=p2p&token=fleet-secret-1`);
    await owner.evaluate(() => window.carlab.ready.then(() => true));
    const intruder = await context.newPage();
    await intruder.goto(`${server.baseURL}/peer.html?group=${p2pGroup}&transport=p2p&token=fleet-guess`);
    await expect(intruder.locator('#summary')).toHaveText(/^failed: Group ".*" is locked with another access token/);
    const member = await context.newPage();
    await member.goto(`${server.baseURL}/peer.html?group=${p2pGroup}&transport=p2p&token=fleet-secret-1`);
    await member.evaluate(() => window.carlab.ready.then(() => true));
    await expect.poll(() => member.evaluate(() => window.carlab.clients[0].members.size), { timeout: 30_000 }).toBe(1);

    await server.stop();
    for (const secret of [token, 'guessed-wrong', 'fleet-secret-1', 'fleet-guess']) expect(server.output).not.toContain(secret);
  } finally {
    await context.close();
    await server.stop();
  }
});
