// The join link and its optional group access token: pure functions shared by
// the landing page (which makes links), the AR view and the fleet page (which
// read them). No DOM, so they are unit-tested in Node.

/** A token as the landing page accepts it: URL-safe, 4..64 characters (the protocol allows 255 bytes). */
export const TOKEN_PATTERN = '[A-Za-z0-9_\\-]{4,64}';
const TOKEN_RE = new RegExp(`^${TOKEN_PATTERN}$`);

/** Alphabet of generated tokens: no look-alikes (0/O, 1/l/I), so one can read it out. */
const TOKEN_ALPHABET = 'abcdefghjkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789';

/**
 * A fresh random token: 16 characters of a 55-letter alphabet (about 92 bits).
 * @param {(bytes: Uint8Array) => Uint8Array} [randomBytes] default crypto.getRandomValues
 */
export function makeToken(randomBytes = (b) => globalThis.crypto.getRandomValues(b)) {
  const out = [];
  // Rejection sampling keeps every letter equally likely (256 is not a multiple of 55).
  const limit = 256 - (256 % TOKEN_ALPHABET.length);
  while (out.length < 16) {
    for (const b of randomBytes(new Uint8Array(24))) {
      if (b < limit && out.length < 16) out.push(TOKEN_ALPHABET[b % TOKEN_ALPHABET.length]);
    }
  }
  return out.join('');
}

/** @param {string} token */
export function isValidToken(token) {
  return TOKEN_RE.test(token);
}

/**
 * The link others open to join a group: the landing page with the group, the
 * transport and, for a locked group, its token (they pick their own name).
 * @param {string} base any URL of this server, e.g. location.href
 * @param {{ group: string, transport: string, token?: string }} join
 */
export function joinLink(base, join) {
  const url = new URL('/', base);
  url.searchParams.set('group', join.group);
  url.searchParams.set('transport', join.transport);
  const token = (join.token ?? '').trim();
  if (token) url.searchParams.set('token', token);
  return url.href;
}

/**
 * The access token a page was opened with ('' = none: an open group).
 * @param {URLSearchParams} params
 */
export function tokenFrom(params) {
  return (params.get('token') ?? '').trim();
}
