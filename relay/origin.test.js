// The Origin rules of docs/security.md ("Origins"), case by case: compared
// after normalisation (scheme and host case, default port).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { isOriginAllowed, normaliseOrigin } from './upgrade.js';

/**
 * A request as isOriginAllowed reads it.
 * @param {string | undefined} origin @param {string} host
 * @returns {import('node:http').IncomingMessage}
 */
const req = (origin, host) => /** @type {import('node:http').IncomingMessage} */ (/** @type {unknown} */ (
  { headers: origin === undefined ? { host } : { origin, host } }));

describe('isOriginAllowed', () => {
  /** @type {[string | undefined, string, string[] | undefined, boolean, string][]} */
  const cases = [
    [undefined, 'a:1', undefined, true, 'no Origin: not a browser'],
    ['', 'a:1', undefined, false, 'an empty Origin is not an absent one'],
    ['null', 'a:1', undefined, false, 'opaque origins'],
    ['file:///x', 'a', undefined, false, 'not http(s)'],
    ['http://u@a:1', 'a:1', undefined, false, 'credentials are no origin'],
    ['http://A:8080', 'a:8080', undefined, true, 'host case'],
    ['http://a', 'a:80', undefined, true, 'default port in Host'],
    ['https://a', 'a', undefined, true, 'no port anywhere'],
    ['https://a:443', 'a', undefined, true, 'default port in Origin'],
    ['https://a', 'a:80', undefined, false, 'https default 443 is not 80'],
    ['http://a:9000', 'a:8080', undefined, false, 'another port is another origin'],
    ['http://[::1]:8080', '[::1]:8080', undefined, true, 'IPv6'],
    ['HTTPS://Phone.Example:443', 'x', ['https://phone.example'], true, 'listed, other spelling'],
    ['https://phone.example', 'x', ['https://phone.example:443/'], true, 'listed with default port and slash'],
    ['http://phone.example', 'x', ['https://phone.example'], false, 'the scheme is part of a listed origin'],
    ['http://evil', 'a', ['*'], true, '* allows any'],
  ];
  for (const [origin, host, allowed, want, why] of cases) {
    test(`${JSON.stringify(origin)} with Host ${host}${allowed ? ` and ${allowed}` : ''}: ${want ? 'allowed' : 'refused'} (${why})`, () => {
      assert.equal(isOriginAllowed(req(origin, host), allowed), want);
    });
  }

  test('normaliseOrigin spells one origin one way', () => {
    assert.equal(normaliseOrigin('HTTP://Example.COM:80/'), 'http://example.com');
    assert.equal(normaliseOrigin('https://example.com:8443'), 'https://example.com:8443');
    assert.equal(normaliseOrigin('null'), null);
  });
});
