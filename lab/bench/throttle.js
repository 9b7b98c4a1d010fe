// Phone-speed peers (docs/bench.md "Phone-speed peers"): `carlab bench
// --cpu-slowdown N` runs every Chromium page of a point with its CPU throttled
// N times (DevTools Emulation.setCPUThrottlingRate: script, layout and the
// tracking loop slow down as on a slower phone), and `--tracking` adds one AR
// page tracking the synthetic camera (ar.html?source=synthetic) whose frame
// rate shows what the slowdown does to tracking. Firefox and WebKit have no
// such throttle: their pages run at full speed, and the run says so.

/** The browsers whose pages can be throttled. */
export const THROTTLED_BROWSERS = Object.freeze(['chromium']);

/** The largest slowdown taken (DevTools accepts any rate >= 1; past this a peer is not a phone). */
export const MAX_CPU_SLOWDOWN = 20;

/**
 * What the run records of its slowdown: the rate, and which of its browsers
 * ran at it and which could not. Nothing without --cpu-slowdown.
 * @param {{ cpuSlowdown?: number }} point
 * @param {string[]} browsers the fleet's mix
 * @returns {{ cpuSlowdown?: number, cpuThrottled?: string[], cpuUnthrottled?: string[] }}
 */
export function slowdownFields(point, browsers) {
  if (point.cpuSlowdown === undefined) return {};
  const kinds = [...new Set(browsers)];
  return {
    cpuSlowdown: point.cpuSlowdown,
    cpuThrottled: kinds.filter((b) => THROTTLED_BROWSERS.includes(b)),
    cpuUnthrottled: kinds.filter((b) => !THROTTLED_BROWSERS.includes(b)),
  };
}

/**
 * The usage problem of --cpu-slowdown for a fleet, or null; and the line
 * that says which browsers cannot be throttled (null when all can).
 * @param {number[] | null} slowdowns
 * @param {string[]} browsers
 * @returns {{ problem: string | null, notice: string | null }}
 */
export function slowdownCheck(slowdowns, browsers) {
  if (!slowdowns) return { problem: null, notice: null };
  const bad = slowdowns.find((n) => !(n >= 1 && n <= MAX_CPU_SLOWDOWN));
  if (bad !== undefined) return { problem: `--cpu-slowdown: ${bad} is not a slowdown 1..${MAX_CPU_SLOWDOWN}`, notice: null };
  const cannot = [...new Set(browsers)].filter((b) => !THROTTLED_BROWSERS.includes(b));
  const why = 'only Chromium has a CPU throttle (DevTools Emulation.setCPUThrottlingRate)';
  if (cannot.length === new Set(browsers).size) {
    return { problem: `--cpu-slowdown: ${cannot.join(' and ')} cannot be throttled: ${why}; add chromium to --browsers`, notice: null };
  }
  return { problem: null, notice: cannot.length ? `${cannot.join(' and ')} cannot be throttled (${why}): their peers run at full speed` : null };
}

/**
 * Throttles a page's CPU when its browser can be (a no-op at 1 or without a throttle).
 * @param {{ throttleCpu?: (rate: number) => Promise<unknown> }} page
 * @param {string} browser
 * @param {number | undefined} rate
 */
export async function throttlePage(page, browser, rate) {
  if (!rate || rate === 1 || !THROTTLED_BROWSERS.includes(browser) || !page.throttleCpu) return;
  await page.throttleCpu(rate);
}

/** What a tracking page's counters say (web/src/ar/tracking.js TrackingStats). @typedef {{ processed: number, detected: number, processMsSum: number, at: number }} TrackingSample */

/**
 * The tracking figures of a window between two samples of one page, in the
 * study reports' shape (`tracking` of a run): frames processed per second,
 * ms of processing per frame, % of frames that found the marker.
 * @param {TrackingSample} from @param {TrackingSample} to
 * @returns {{ fps: number | null, msPerFrame: number | null, visiblePct: number | null, clients: number }}
 */
export function trackingFigures(from, to) {
  const frames = to.processed - from.processed;
  const spanMs = to.at - from.at;
  const round1 = (/** @type {number} */ x) => Math.round(x * 10) / 10;
  return {
    fps: spanMs > 0 ? round1((frames / spanMs) * 1000) : null,
    msPerFrame: frames > 0 ? round1((to.processMsSum - from.processMsSum) / frames) : null,
    visiblePct: frames > 0 ? round1((100 * (to.detected - from.detected)) / frames) : null,
    clients: 1,
  };
}

/**
 * Opens the tracking page: the AR view on the synthetic camera, alone in a
 * group of its own (it measures tracking, not the run's streams), throttled
 * like the peers once it tracks: loading three.js and AR.js at 4x beside 20
 * peers took over the 30 s a page load may take, and the load is not what it
 * measures.
 * @param {import('./bench.js').FleetBrowser} host
 * @param {string} baseUrl the server (it serves ar.html)
 * @param {string} runId
 * @param {number | undefined} rate
 */
export async function openTrackingPage(host, baseUrl, runId, rate) {
  const page = await host.newPage();
  const q = new URLSearchParams({ group: `${runId}-tracking`, name: 'tracking', source: 'synthetic', dpr: '1' });
  await page.goto(`${baseUrl}/ar.html?${q}`);
  await page.evaluate(() => window.carlab.trackingReady.then(() => true));
  await throttlePage(page, host.name, rate);
  return page;
}

/**
 * One sample of a tracking page's counters.
 * @param {import('./bench.js').FleetPage} page
 * @returns {Promise<TrackingSample>}
 */
export function sampleTracking(page) {
  return page.evaluate(() => {
    const s = window.carlab.tracking?.stats;
    return { processed: s?.processed ?? 0, detected: s?.detected ?? 0, processMsSum: s?.processMsSum ?? 0, at: performance.now() };
  });
}
