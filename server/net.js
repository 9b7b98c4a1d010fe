/**
 * Addresses of this machine that phones on the same network can reach.
 *
 * @module server/net
 */

import os from 'node:os';

/**
 * Non-internal IPv4 addresses of this machine, in interface order.
 *
 * IPv6 is left out on purpose: link-local and temporary addresses make poor
 * URLs to type or scan on a phone, and every LAN we target has IPv4.
 *
 * @param {NodeJS.Dict<os.NetworkInterfaceInfo[]>} [interfaces] defaults to
 *   `os.networkInterfaces()`; injectable for tests
 * @returns {string[]} unique addresses such as `['192.168.1.20']`
 */
export function listLanAddresses(interfaces = os.networkInterfaces()) {
  /** @type {Set<string>} */
  const addresses = new Set();
  for (const infos of Object.values(interfaces)) {
    for (const info of infos ?? []) {
      // Node 18.0-18.3 reported `family` as a number; accept both forms.
      const isIPv4 = info.family === 'IPv4' || /** @type {unknown} */ (info.family) === 4;
      if (isIPv4 && !info.internal) addresses.add(info.address);
    }
  }
  return [...addresses];
}

/**
 * Format an origin URL with a trailing slash, bracketing IPv6 literals.
 *
 * @param {'http' | 'https'} protocol
 * @param {string} host a hostname, IPv4 or IPv6 literal
 * @param {number} port
 * @returns {string} e.g. `https://192.168.1.20:8443/`
 */
export function formatUrl(protocol, host, port) {
  const hostPart = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return `${protocol}://${hostPart}:${port}/`;
}

/**
 * URLs of a server on every LAN address of this machine.
 *
 * @param {'http' | 'https'} protocol
 * @param {number} port
 * @param {NodeJS.Dict<os.NetworkInterfaceInfo[]>} [interfaces]
 * @returns {string[]}
 */
export function listLanUrls(protocol, port, interfaces) {
  return listLanAddresses(interfaces).map((address) => formatUrl(protocol, address, port));
}

/**
 * Whether `host` means "every interface" when passed to `server.listen()`.
 *
 * @param {string | undefined} host
 * @returns {boolean}
 */
export function isWildcardHost(host) {
  return host === undefined || host === '' || host === '0.0.0.0' || host === '::' || host === '[::]';
}
