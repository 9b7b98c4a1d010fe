// What a browser can run, read from fake global scopes: a full browser, one
// without WebRTC (Debian's WebKitGTK), one with half of it, an in-app browser
// without a camera; and the words the landing and AR pages show for them.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { TRANSPORTS, WEBRTC_TRANSPORTS } from '../../../core/transports.js';
import {
  browserCapabilities, canRun, cameraWarningText, isAppleMobile, missingTransports, missingTransportsText,
  missingWebRtcApis, usableTransports,
} from './capabilities.js';
import { unsupportedTransportText, withTransport } from './join-errors.js';

const camera = { mediaDevices: { getUserMedia() {} } };
const full = { RTCPeerConnection: class {}, RTCDataChannel: class {}, isSecureContext: true, navigator: { ...camera, userAgent: 'Chrome' } };
const WEBKITGTK_UA = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/60.5 Safari/605.1.15';
const noWebRtc = { isSecureContext: true, navigator: { ...camera, userAgent: WEBKITGTK_UA } };

test('a browser with WebRTC runs every transport; one without runs the relay transports only', () => {
  const caps = browserCapabilities(full);
  assert.deepEqual(caps, { peerConnection: true, dataChannel: true, webrtc: true, camera: true, secure: true, appleMobile: false });
  assert.deepEqual(usableTransports(caps), [...TRANSPORTS]);
  assert.deepEqual(missingTransports(caps), []);
  assert.equal(missingTransportsText(caps), null);

  const gtk = browserCapabilities(noWebRtc);
  assert.equal(gtk.webrtc, false);
  assert.deepEqual(usableTransports(gtk), ['relay', 'relay-faithful']);
  assert.deepEqual(missingTransports(gtk), [...WEBRTC_TRANSPORTS]);
  assert.deepEqual([...WEBRTC_TRANSPORTS].sort(), ['p2p', 'p2p-reliable', 'relay-udp']);
  const line = /** @type {string} */ (missingTransportsText(gtk));
  assert.equal(line, 'relay-udp, p2p and p2p-reliable are not offered: this browser has no WebRTC '
    + '(RTCPeerConnection and RTCDataChannel). The relay works in every browser.');
  assert.ok(!line.includes('\n'), 'one line');
});

test('half of WebRTC is none of it: RTCDataChannel alone or RTCPeerConnection alone', () => {
  const pcOnly = browserCapabilities({ ...noWebRtc, RTCPeerConnection: class {} });
  assert.equal(pcOnly.webrtc, false);
  assert.equal(missingWebRtcApis(pcOnly), 'RTCDataChannel');
  assert.equal(canRun('p2p', pcOnly), false);
  assert.equal(canRun('relay', pcOnly), true);
  const dcOnly = browserCapabilities({ ...noWebRtc, RTCDataChannel: class {} });
  assert.equal(missingWebRtcApis(dcOnly), 'RTCPeerConnection');
  assert.equal(canRun('unknown-transport', browserCapabilities(full)), false);
});

test('the AR page: a link asking for a WebRTC transport is explained, never "unreachable", and offers the relay', () => {
  const gtk = browserCapabilities(noWebRtc);
  for (const name of WEBRTC_TRANSPORTS) {
    const text = /** @type {string} */ (unsupportedTransportText(name, gtk));
    assert.ok(text.startsWith(`This link asks for ${name}, which needs WebRTC`), text);
    assert.match(text, /RTCPeerConnection and RTCDataChannel/);
    assert.match(text, /relay/);
    assert.doesNotMatch(text, /unreachable/i);
  }
  assert.equal(unsupportedTransportText('relay', gtk), null);
  assert.equal(unsupportedTransportText('relay-faithful', gtk), null);
  assert.equal(unsupportedTransportText('p2p', browserCapabilities(full)), null);
  assert.equal(unsupportedTransportText('nonsense', gtk), null, 'an unknown name has its own message');
  const href = 'https://10.0.0.5:8443/ar.html?group=g&name=Ada&transport=p2p&token=abcd1234&mode=gated';
  const relay = new URL(withTransport(href, 'relay'));
  assert.deepEqual(Object.fromEntries(relay.searchParams), { group: 'g', name: 'Ada', transport: 'relay', token: 'abcd1234', mode: 'gated' });
  assert.equal(relay.pathname, '/ar.html');
});

test('iPhones and iPads, including iPadOS saying "Macintosh"; no camera or plain http warned before the tap', () => {
  assert.equal(isAppleMobile({ userAgent: 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15' }), true);
  assert.equal(isAppleMobile({ userAgent: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7)', platform: 'MacIntel', maxTouchPoints: 5 }), true);
  assert.equal(isAppleMobile({ userAgent: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7)', platform: 'MacIntel', maxTouchPoints: 0 }), false);
  assert.equal(isAppleMobile({ userAgent: WEBKITGTK_UA, platform: 'Linux x86_64' }), false);
  assert.equal(isAppleMobile(undefined), false);

  assert.equal(cameraWarningText(browserCapabilities(full)), null);
  assert.match(/** @type {string} */ (cameraWarningText(browserCapabilities({ ...full, isSecureContext: false }))), /not secure/);
  const inApp = browserCapabilities({ ...full, navigator: { userAgent: 'Mozilla/5.0 (iPhone; CPU iPhone OS 13_3 like Mac OS X) Instagram' } });
  assert.equal(inApp.camera, false);
  assert.equal(inApp.appleMobile, true);
  assert.match(/** @type {string} */ (cameraWarningText(inApp)), /open the link in Safari/);
  const androidInApp = browserCapabilities({ ...full, navigator: { userAgent: 'Mozilla/5.0 (Linux; Android 14) wv' } });
  assert.match(/** @type {string} */ (cameraWarningText(androidInApp)), /Chrome, Firefox or Safari/);
});
