/**
 * What a user agent says about the browser that sent a client report:
 * browser, version, OS, device class and the family the study tables group
 * by ("Chrome Android", "Safari iOS", "Firefox desktop", ...). Parsed by
 * `bowser` (MIT), never by regexes of our own.
 *
 * @module server/user-agent
 */

import Bowser from 'bowser';

/**
 * @typedef {object} DeviceInfo
 * @property {string} browser e.g. 'Chrome', 'Firefox', 'Safari', 'Node.js'
 * @property {string} browserVersion '' when unknown
 * @property {string} os e.g. 'Android', 'iOS', 'Linux', 'Windows', 'macOS'
 * @property {string} osVersion '' when unknown
 * @property {'mobile' | 'tablet' | 'desktop' | 'tv' | 'server'} device
 * @property {string} engine e.g. 'Blink', 'Gecko', 'WebKit'
 * @property {string} family the study's browser family: browser and OS for phones and tablets,
 *   browser and 'desktop' for computers, 'Node.js' for the lab's Node clients
 */

/** Phones and tablets are told apart by OS in the tables; computers are one class. */
const HANDHELD = new Set(['mobile', 'tablet']);

/** At most this many distinct user agents are remembered (parsing costs ~50 µs). */
const CACHE_SIZE = 1000;
/** @type {Map<string, DeviceInfo>} */
const cache = new Map();

/**
 * Parses a User-Agent header.
 *
 * @param {string | undefined} ua
 * @returns {DeviceInfo}
 */
export function describeUserAgent(ua) {
  const text = String(ua ?? '').slice(0, 512);
  const hit = cache.get(text);
  if (hit) return hit;
  const info = parse(text);
  if (cache.size >= CACHE_SIZE) cache.delete(/** @type {string} */ (cache.keys().next().value));
  cache.set(text, info);
  return info;
}

/** @param {string} text @returns {DeviceInfo} */
function parse(text) {
  // Node's fetch (undici) and the lab's Node clients: no browser at all.
  if (text === '' || /^(node|undici)\b/i.test(text)) {
    return { browser: 'Node.js', browserVersion: '', os: '', osVersion: '', device: 'server', engine: '', family: 'Node.js' };
  }
  const r = Bowser.parse(text);
  const browser = normaliseBrowser(r.browser.name ?? 'unknown');
  const os = r.os.name ?? 'unknown';
  const device = /** @type {DeviceInfo['device']} */ (r.platform.type ?? 'desktop');
  return {
    browser,
    browserVersion: r.browser.version ?? '',
    os,
    osVersion: r.os.version ?? '',
    device,
    engine: r.engine.name ?? '',
    family: `${browser} ${HANDHELD.has(device) ? os : 'desktop'}`,
  };
}

/**
 * The names the tables use: a headless Chromium is Chrome, Firefox ESR is Firefox.
 * @param {string} name
 */
function normaliseBrowser(name) {
  if (/^(chromium|headless ?chrome|chrome)$/i.test(name)) return 'Chrome';
  return name;
}
