import { test } from 'node:test';
import assert from 'node:assert/strict';
import { longestSendGap } from './churn.js';

test('longestSendGap: from the start to the first send, then between sends, until the churn ended', () => {
  assert.equal(longestSendGap([150, 250, 700, 800], 100, 1000), 450);
  assert.equal(longestSendGap([900, 950], 100, 1000), 800); // a late first send is a gap too
  assert.equal(longestSendGap([150, 200, 5000], 100, 1000), 50); // sends after the churn do not count
  assert.equal(longestSendGap([], 100, 1000), Infinity);
  assert.equal(longestSendGap([2000], 100, 1000), Infinity);
});
