// Headless "phones" for the browser tests: an AR page in a browser context of
// its own, its page errors collected.

import { devices } from '@playwright/test';

/** The phone profile the tests use: Pixel 7 (the browser type is the project's). */
export const { defaultBrowserType: _pixelBrowser, ...PIXEL_7 } = devices['Pixel 7'];

/** A unique group name per run: groups of earlier runs never mix in. @param {string} name */
export const unique = (name) => `${name}-${Date.now().toString(36)}`;

/**
 * Opens the AR view in its own browser context (its own "phone") and waits until it joined.
 * @param {import('@playwright/test').Browser} browser
 * @param {string} baseURL
 * @param {string} query ar.html's query string
 * @param {object} [device] a Playwright device profile (default the Pixel 7)
 */
export async function openAr(browser, baseURL, query, device = PIXEL_7) {
  const context = await browser.newContext({ ...device, baseURL });
  const page = await context.newPage();
  /** @type {string[]} */
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`/ar.html?${query}`);
  await page.evaluate(() => window.carlab.ready.then(() => true));
  return { context, page, errors };
}
