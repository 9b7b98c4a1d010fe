import assert from 'node:assert/strict';
import { test } from 'node:test';

import { formatUrl, isWildcardHost, listLanAddresses, listLanUrls } from './net.js';

/** @type {any} */
const interfaces = {
  lo: [
    { address: '127.0.0.1', family: 'IPv4', internal: true },
    { address: '::1', family: 'IPv6', internal: true },
  ],
  eth0: [
    { address: '192.168.1.20', family: 'IPv4', internal: false },
    { address: 'fe80::1', family: 'IPv6', internal: false },
  ],
  wlan0: [{ address: '10.0.0.5', family: 4, internal: false }],
  dup: [{ address: '192.168.1.20', family: 'IPv4', internal: false }],
  down: undefined,
};

test('listLanAddresses keeps non-internal IPv4 only, once each', () => {
  assert.deepEqual(listLanAddresses(interfaces), ['192.168.1.20', '10.0.0.5']);
  assert.deepEqual(listLanAddresses({}), []);
});

test('listLanAddresses reads this machine by default', () => {
  for (const address of listLanAddresses()) assert.match(address, /^\d+\.\d+\.\d+\.\d+$/);
});

test('listLanUrls', () => {
  assert.deepEqual(listLanUrls('https', 8443, interfaces), ['https://192.168.1.20:8443/', 'https://10.0.0.5:8443/']);
});

test('formatUrl brackets IPv6', () => {
  assert.equal(formatUrl('http', 'localhost', 80), 'http://localhost:80/');
  assert.equal(formatUrl('https', '::1', 8443), 'https://[::1]:8443/');
  assert.equal(formatUrl('https', '[::1]', 8443), 'https://[::1]:8443/');
});

test('isWildcardHost', () => {
  for (const host of ['0.0.0.0', '::', '', undefined]) assert.equal(isWildcardHost(host), true, String(host));
  for (const host of ['127.0.0.1', 'localhost', '192.168.1.2']) assert.equal(isWildcardHost(host), false, host);
});
