// The kept-scenes notice's words.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { keptForText, keptScenesText } from './kept-notice.js';

test('the notice says how long objects are kept, and nothing when they are not', () => {
  assert.equal(keptForText(3600), '1 hour');
  assert.equal(keptForText(5400), '2 hours');
  assert.equal(keptForText(7 * 24 * 3600), '7 days');
  assert.match(String(keptScenesText({ ttlS: 7 * 24 * 3600 })), /keeps each group's objects for 7 days after everyone leaves/);
  assert.equal(keptScenesText(null), null);
  assert.equal(keptScenesText(undefined), null);
  assert.equal(keptScenesText({ ttlS: 0 }), null);
});
