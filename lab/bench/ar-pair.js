// `carlab bench --ar-pair`: what a person sees, against the truth. Two AR pages on
// the synthetic camera (ar.html?source=synthetic) join a group of their own on the
// point's transport, in two browsers of the fleet (under --net: behind two links),
// and each draws the other in every --playout mode at each frame it renders
// (ar.html?drawn=, web/src/ui/drawn-check.js), measured against the other
// page's video: where that phone really is. The run's `arDrawn` holds the figures.

import { DrawnErrorTally } from '../../core/drawn-error.js';
import { drawnRecord } from '../report/drawn.js';
import { throttlePage } from './throttle.js';

/** @typedef {import('./bench.js').FleetBrowser} FleetBrowser */
/** @typedef {import('./bench.js').FleetPage} FleetPage */

/** How long the pair may take to track and see each other. */
const PAIR_READY_MS = 60_000;

/**
 * Opens the pair and waits until both track the video and see each other, then tells each
 * where the other's video starts (its truth's clock).
 * @param {{ hosts: FleetBrowser[], baseUrl: string, runId: string, transport: string, cycleMs: number, modes: readonly string[], rate?: number }} o
 * @returns {Promise<FleetPage[]>}
 */
export async function openArPair({ hosts, baseUrl, runId, transport, cycleMs, modes, rate }) {
  const pages = [];
  for (let i = 0; i < 2; i++) {
    const host = hosts[i % hosts.length];
    const page = await host.newPage();
    // a quarter of the pixels per CSS pixel: nobody looks at these screens, and software WebGL is not free
    const q = new URLSearchParams({ group: `${runId}-ar`, name: `ar${i}`, transport, cycle: String(cycleMs), source: 'synthetic', dpr: '0.25', drawn: modes.join(',') });
    await page.goto(`${baseUrl}/ar.html?${q}`);
    await throttlePage(page, host.name, rate);
    pages.push(page);
  }
  const deadline = Date.now() + PAIR_READY_MS;
  for (const page of pages) {
    await page.evaluate(() => Promise.all([window.carlab.ready, window.carlab.trackingReady]).then(() => true));
    while (!(await page.evaluate(() => window.carlab.client?.members.size === 1))) {
      if (Date.now() > deadline) throw new Error(`--ar-pair: the two AR pages did not see each other within ${PAIR_READY_MS / 1000} s`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  const starts = await Promise.all(pages.map((page) => page.evaluate(() => window.carlab.syntheticStart())));
  // FleetPage.evaluate takes no argument: the values are written into the function (JSON, numbers)
  await Promise.all(pages.map((page, i) => page.evaluate(/** @type {() => void} */ (
    new Function(`window.carlab.drawnCheck.truthOf(${JSON.stringify(`ar${1 - i}`)}, ${Number(starts[1 - i])})`)))));
  return pages;
}

/** The measured window begins: both pages judge their frames from now. @param {FleetPage[]} pages */
export function startArPair(pages) {
  return Promise.all(pages.map((page) => page.evaluate(() => window.carlab.drawnCheck.start())));
}

/**
 * The window ended: both pages' figures as one record (results.json `arDrawn`), with the frame
 * rate the pages drew at.
 * @param {FleetPage[]} pages
 */
export async function finishArPair(pages) {
  const parts = await Promise.all(pages.map((page) => page.evaluate(() => { window.carlab.drawnCheck.stop(); return window.carlab.drawnCheck.toJSON(); })));
  // every mode judged the same frames: the first one's frames per second of stream are the pages' rate
  const mode = Object.keys(parts[0].modes)[0];
  const first = DrawnErrorTally.merged(parts.map((p) => p.modes[mode])).summary();
  const renderFps = first.durationMs > 0 ? Math.round((first.frames / first.durationMs) * 10_000) / 10 : 0;
  return drawnRecord(parts, { renderFps });
}
