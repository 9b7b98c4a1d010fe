// The HUD's connection line, driven by the transports' connection statuses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ageText, behindText, connectionText, pathText, sceneText } from './hud.js';

/** @typedef {import('./hud.js').HudState} HudState */
/** @typedef {NonNullable<HudState['links']>} Links */

test('connected, reconnecting with attempt and countdown, then connected again', () => {
  assert.equal(connectionText({ connection: 'connected', links: [{ state: 'connected', part: 'relay', at: 0 }], now: 5 }), 'connected');
  /** @type {{ connection: string, links: Links }} */
  const down = { connection: 'reconnecting', links: [{ state: 'reconnecting', part: 'relay', attempt: 3, delayMs: 2400, code: 1006, at: 1000 }] };
  assert.equal(connectionText({ ...down, now: 1000 }), 'reconnecting… attempt 3, next in 2.4 s');
  assert.equal(connectionText({ ...down, now: 2960 }), 'reconnecting… attempt 3, next in 0.4 s');
  assert.equal(connectionText({ ...down, now: 3500 }), 'reconnecting… attempt 3…', 'the attempt runs');
  assert.equal(connectionText({ connection: 'reconnecting', links: [], now: 0 }), 'reconnecting…');
  assert.equal(connectionText({ connection: 'closed', links: [], now: 0 }), 'closed');
});

test('p2p: the channels work while the relay and the PeerServer are retried', () => {
  /** @type {Links} */
  const links = [
    { state: 'reconnecting', part: 'membership', attempt: 2, delayMs: 1000, at: 0 },
    { state: 'reconnecting', part: 'signaling', attempt: 1, delayMs: 200, at: 0 },
  ];
  assert.equal(connectionText({ connection: 'connected', links, now: 0 }),
    'connected · group list reconnecting… attempt 2, next in 1.0 s · PeerServer reconnecting… attempt 1, next in 0.2 s');
  assert.equal(connectionText({ connection: 'connected', links: [{ ...links[0], state: 'connected' }, { ...links[1], state: 'connected' }], now: 9 }),
    'connected');
});

test('a neighbour\'s age: seconds since its last fresh update, "stale" past 1 s, none yet is not stale', () => {
  assert.equal(ageText({ ageMs: 180, stale: false }), '0.2 s');
  assert.equal(ageText({ ageMs: 3400, stale: true }), 'stale 3.4 s');
  assert.equal(ageText({ ageMs: 25_000, stale: true }), 'stale 25 s');
  assert.equal(ageText({ ageMs: null, stale: false }), 'no update yet');
});

test('how far behind an avatar is drawn: ms under a second, then seconds; nothing when not drawn', () => {
  assert.equal(behindText({ behindMs: 118.6 }), 'drawn 119 ms behind');
  assert.equal(behindText({ behindMs: 2345 }), 'drawn 2.3 s behind');
  assert.equal(behindText({ behindMs: null }), '');
  assert.equal(behindText({}), '');
});

test('a p2p link\'s path reads direct, via TURN or via relay', () => {
  assert.equal(pathText('direct'), 'direct');
  assert.equal(pathText('turn'), 'via TURN');
  assert.equal(pathText('relay'), 'via relay');
  assert.equal(pathText('connecting'), 'connecting');
});

test('the scene row: objects and "in sync", or whom it is syncing with', () => {
  assert.equal(sceneText(null), '–');
  assert.equal(sceneText({ objects: 1, behind: [] }), '1 object · in sync');
  assert.equal(sceneText({ objects: 4, behind: ['Bo', 'Cy'] }), '4 objects · syncing with Bo, Cy');
});
