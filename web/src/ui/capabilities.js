// What this browser can run, read from its globals: WebRTC (RTCPeerConnection
// and RTCDataChannel) for the p2p transports and relay-udp, a camera API for
// tracking. Browsers without WebRTC exist: Debian's WebKitGTK (the Safari
// engine the tests run), some in-app browsers and locked-down webviews. The
// landing page offers only what the browser can run and says why the rest is
// missing; the AR page explains a link that asks for more and offers the relay.
// Every function takes the global scope as a parameter, so this is unit-tested
// in Node with fake scopes.

import { TRANSPORTS, transportInfo } from '../../../core/transports.js';

/**
 * @typedef {object} BrowserCapabilities
 * @property {boolean} peerConnection window.RTCPeerConnection exists
 * @property {boolean} dataChannel window.RTCDataChannel exists
 * @property {boolean} webrtc both: the WebRTC transports can run
 * @property {boolean} camera navigator.mediaDevices.getUserMedia exists
 * @property {boolean} secure a secure context (https or localhost): browsers give the camera only there
 * @property {boolean} appleMobile an iPhone or iPad (every browser there is Safari's engine, WebKit)
 */

/**
 * Reads the capabilities off a global scope (a window).
 * @param {any} [scope] default globalThis
 * @returns {BrowserCapabilities}
 */
export function browserCapabilities(scope = globalThis) {
  const peerConnection = typeof scope?.RTCPeerConnection === 'function';
  const dataChannel = typeof scope?.RTCDataChannel === 'function';
  const nav = scope?.navigator;
  return {
    peerConnection,
    dataChannel,
    webrtc: peerConnection && dataChannel,
    camera: typeof nav?.mediaDevices?.getUserMedia === 'function',
    secure: scope?.isSecureContext !== false,
    appleMobile: isAppleMobile(nav),
  };
}

/**
 * An iPhone, iPod or iPad, including iPadOS, whose Safari says "Macintosh"
 * but has a touch screen.
 * @param {{ userAgent?: string, platform?: string, maxTouchPoints?: number } | undefined} nav
 */
export function isAppleMobile(nav) {
  if (!nav) return false;
  if (/\b(iPhone|iPad|iPod)\b/.test(nav.userAgent ?? '')) return true;
  return nav.platform === 'MacIntel' && (nav.maxTouchPoints ?? 0) > 1;
}

/**
 * Whether a browser with these capabilities can run a transport.
 * @param {string} name a transport name (core/transports.js)
 * @param {Pick<BrowserCapabilities, 'webrtc'>} caps
 */
export function canRun(name, caps) {
  const info = transportInfo(name);
  return Boolean(info) && (!info?.needsWebRtc || caps.webrtc);
}

/**
 * The transports this browser can run, in the registry's order.
 * @param {Pick<BrowserCapabilities, 'webrtc'>} caps
 * @returns {string[]}
 */
export function usableTransports(caps) {
  return TRANSPORTS.filter((name) => canRun(name, caps));
}

/**
 * The transports this browser cannot run.
 * @param {Pick<BrowserCapabilities, 'webrtc'>} caps
 * @returns {string[]}
 */
export function missingTransports(caps) {
  return TRANSPORTS.filter((name) => !canRun(name, caps));
}

/**
 * What of WebRTC is missing, in the API's own names, or '' when nothing is.
 * @param {Pick<BrowserCapabilities, 'peerConnection' | 'dataChannel'>} caps
 */
export function missingWebRtcApis(caps) {
  const missing = [];
  if (!caps.peerConnection) missing.push('RTCPeerConnection');
  if (!caps.dataChannel) missing.push('RTCDataChannel');
  return missing.join(' and ');
}

/** @param {string[]} names @returns {string} "a", "a and b", "a, b and c" */
function listText(names) {
  return names.length <= 1 ? names.join('') : `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
}

/**
 * One line for the landing page on why some transports are not offered, or
 * null when the browser runs them all.
 * @param {BrowserCapabilities} caps
 */
export function missingTransportsText(caps) {
  const missing = missingTransports(caps);
  if (missing.length === 0) return null;
  return `${listText(missing)} ${missing.length > 1 ? 'are' : 'is'} not offered: this browser has no WebRTC `
    + `(${missingWebRtcApis(caps)}). The relay works in every browser.`;
}

/**
 * One line for the landing page when the camera cannot work here, or null.
 * (The AR page says the same when it tries; saying it before the tap saves a trip.)
 * @param {BrowserCapabilities} caps
 */
export function cameraWarningText(caps) {
  if (!caps.secure) {
    return 'This page is not secure (plain http), so the browser will block the camera: open the https:// address '
      + 'that `carlab start` printed.';
  }
  if (!caps.camera) {
    return caps.appleMobile
      ? 'This browser gives web pages no camera (an app\'s built-in browser?): open the link in Safari.'
      : 'This browser gives web pages no camera (an app\'s built-in browser?): open the link in Chrome, Firefox or Safari.';
  }
  return null;
}
