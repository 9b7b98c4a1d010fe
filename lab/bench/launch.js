// How carlab launches Debian's browsers through Playwright 1.64.1 (docs/architecture.md:
// "Real parts"). Shared by the e2e tests and the bench fleet.

import { ensureWarmFirefoxProfile, warmFirefoxPath } from './firefox-profile.js';

/** Debian's binaries; browsers are never downloaded. */
export const CHROMIUM_PATH = process.env.CARLAB_CHROMIUM ?? '/usr/bin/chromium';
export const FIREFOX_PATH = process.env.CARLAB_FIREFOX ?? '/usr/bin/firefox-esr';

/**
 * Playwright 1.64.1's own --disable-features list. Chromium honours only the
 * LAST --disable-features switch, and ours comes after Playwright's, so ours
 * must repeat Playwright's list plus what we add.
 */
const PLAYWRIGHT_DISABLED_FEATURES = [
  'AvoidUnnecessaryBeforeUnloadCheckSync', 'DestroyProfileOnBrowserClose', 'DialMediaRouteProvider',
  'GlobalMediaControls', 'HttpsUpgrades', 'LensOverlay', 'MediaRouter', 'PaintHolding',
  'ThirdPartyStoragePartitioning', 'BlockOriginHeaderModificationOnRedirect',
  'AvoidCorsURLLoaderRestartOnRedirect', 'Translate', 'AutoDeElevate', 'OptimizationHints',
  'NetworkTimeServiceQuerying', 'AimEnabled', 'msForceBrowserSignIn', 'msEdgeUpdateLaunchServicesPreferredVersion',
];

/**
 * Browser UI that headless Chromium should not run. Debian's chromium 156.0.8078.108 (and upstream
 * from 151.0.7922.137 on) enables both by default: every browser start pre-renders the address
 * bar's popup (chrome://omnibox-popup.top-chrome/ and its AI-mode page) in a renderer of its own
 * that spends 10-20 % of a core for as long as the browser lives. In a fleet of browsers on 2
 * cores that alone starved the tests. Disabled, the browser has no browser_ui target at all.
 */
const IDLE_UI_FEATURES = ['WebUIOmniboxPopup', 'WebUIOmniboxAimPopup'];

/**
 * Chromium command-line switches that work on this machine.
 * @param {{ hideHostAddresses?: boolean, fakeVideo?: string }} [opts]
 *   hideHostAddresses: keep Chromium's mDNS obfuscation of host candidates
 *   (off by default: on a LAN without mDNS the candidates would not resolve);
 *   fakeVideo: absolute path of a .y4m to serve as the camera
 */
export function chromiumArgs(opts = {}) {
  const disabled = [...PLAYWRIGHT_DISABLED_FEATURES, ...IDLE_UI_FEATURES];
  if (!opts.hideHostAddresses) disabled.push('WebRtcHideLocalIpsWithMdns');
  const args = [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    `--disable-features=${disabled.join(',')}`,
  ];
  if (opts.fakeVideo) {
    args.push('--use-fake-device-for-media-stream', '--use-fake-ui-for-media-stream',
      `--use-file-for-fake-video-capture=${opts.fakeVideo}`);
  }
  return args;
}

/**
 * Playwright launch options for Debian Chromium.
 * @param {Parameters<typeof chromiumArgs>[0]} [opts]
 */
export function chromiumLaunchOptions(opts) {
  return { executablePath: CHROMIUM_PATH, args: chromiumArgs(opts), headless: true };
}

/**
 * Playwright launch options for Debian Firefox ESR over WebDriver BiDi.
 * @param {{ hideHostAddresses?: boolean }} [opts]
 */
export function firefoxLaunchOptions(opts = {}) {
  return {
    channel: 'moz-firefox',
    // a wrapper that seeds Playwright's new profile from a warm one (lab/bench/firefox-profile.js)
    executablePath: warmFirefoxPath(FIREFOX_PATH),
    headless: true,
    firefoxUserPrefs: {
      'media.peerconnection.ice.obfuscate_host_addresses': Boolean(opts.hideHostAddresses),
      'media.navigator.permission.disabled': true,
      'media.navigator.streams.fake': true,
    },
  };
}

/**
 * Makes Firefox's warm profile unless it is there (once per Firefox and Playwright
 * build, one launch: lab/bench/firefox-profile.js); call before launching Firefox.
 * @param {(line: string) => void} [log]
 * @returns {Promise<boolean>} whether Firefox now starts from it
 */
export function ensureWarmFirefox(log) {
  return ensureWarmFirefoxProfile({ firefox: FIREFOX_PATH, launchOptions: firefoxLaunchOptions(), log });
}
