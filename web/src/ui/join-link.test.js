// The join link carries the group's access token; tokens are well formed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isValidToken, joinLink, makeToken, tokenFrom } from './join-link.js';
import { closeCodeText, joinErrorText } from './join-errors.js';

test('the join link carries group, transport and token; no token for an open group', () => {
  const link = joinLink('https://10.0.0.5:8443/ar.html?x=1', { group: 'lab-k3f9', transport: 'p2p', token: 'Secret_tok-9' });
  const url = new URL(link);
  assert.equal(url.origin + url.pathname, 'https://10.0.0.5:8443/');
  assert.deepEqual(Object.fromEntries(url.searchParams), { group: 'lab-k3f9', transport: 'p2p', token: 'Secret_tok-9' });
  assert.equal(joinLink('http://h/', { group: 'g', transport: 'relay', token: '  ' }), 'http://h/?group=g&transport=relay');
  assert.equal(joinLink('http://h/', { group: 'g', transport: 'relay' }), 'http://h/?group=g&transport=relay');
  // what a page reads back is what went in, even with characters the URL encodes
  assert.equal(tokenFrom(new URL(joinLink('http://h/', { group: 'g', transport: 'relay', token: 'a b&c' })).searchParams), 'a b&c');
  assert.equal(tokenFrom(new URLSearchParams('group=g')), '');
});

test('generated tokens: 16 letters of the alphabet, valid, different each time', () => {
  const seen = new Set();
  for (let i = 0; i < 200; i++) {
    const t = makeToken();
    assert.match(t, /^[a-hjkmnp-zA-HJ-NP-Z2-9]{16}$/);
    assert.ok(isValidToken(t));
    seen.add(t);
  }
  assert.equal(seen.size, 200);
  // bytes past the rejection limit (>= 220) are skipped, not folded onto the first letters
  let calls = 0;
  const t = makeToken((b) => { b.fill(calls++ === 0 ? 255 : 0); return b; });
  assert.equal(t, 'a'.repeat(16));
  assert.equal(calls, 2);
});

test('token validity', () => {
  for (const ok of ['abcd', 'A-b_9xyz', 'x'.repeat(64)]) assert.ok(isValidToken(ok), ok);
  for (const bad of ['', 'abc', 'x'.repeat(65), 'with space', 'ümlaut', 'a/b?c']) assert.ok(!isValidToken(bad), bad);
});

test('close 4006 reads as a locked group, with or without a token in the link', () => {
  const wrong = closeCodeText(4006, { group: 'g1', hasToken: true });
  assert.match(String(wrong), /locked with another access token/);
  assert.match(String(wrong), /"g1"/);
  assert.match(String(closeCodeText(4006, { group: 'g1', hasToken: false })), /your link has none/);
  const err = Object.assign(new Error('relay closed before WELCOME: 4006 wrong or missing access token'), { code: 4006 });
  assert.equal(joinErrorText(err, { group: 'g1', transport: 'relay', hasToken: true }), wrong);
  // codes without a text of their own keep the technical message
  assert.equal(joinErrorText(new Error('no answer within 20 s'), { group: 'g', transport: 'p2p' }),
    'Could not join group "g" over p2p: no answer within 20 s.');
  assert.equal(closeCodeText(1000, { group: 'g' }), null);
  for (const code of [1001, 1006, 4004, 4005, 4007]) assert.ok(closeCodeText(code, { group: 'g' }), String(code));
});
