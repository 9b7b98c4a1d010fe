import { test } from 'node:test';
import assert from 'node:assert/strict';
import { judgeLink, lossFlagged, probePlan, rateFlagged, summarize } from './calibrate.js';
import { normalizeProfile } from './profiles.js';

test('probes are bounded and keep under half the link rate', () => {
  const fast = probePlan({ upKbit: null, downKbit: null });
  assert.equal(fast.datagrams, 5000);
  assert.equal(fast.upBytes, 8 << 20);
  const slow = probePlan({ upKbit: 256, downKbit: 256 });
  assert.ok(slow.pps * 848 <= 128000 + 848, `${slow.pps} pps`);
  assert.ok(slow.datagrams <= slow.pps * 1.5 + 1);
  assert.equal(slow.upBytes, 38400); // 1.2 s at 256 kbit/s
});

test('loss is flagged past 20 % off its target unless the sample cannot tell', () => {
  // at 5000 datagrams and 2 % the bound is 5.2 standard errors, 1.02 points
  assert.equal(lossFlagged(2, 2.3, 5000), false);
  assert.equal(lossFlagged(2, 2.9, 5000), false, '4.5 standard errors: chance, not a wrong link');
  assert.equal(lossFlagged(2, 3.1, 5000), true);
  assert.equal(lossFlagged(2, 1.1, 5000), false);
  assert.equal(lossFlagged(2, 0.9, 5000), true);
  assert.equal(lossFlagged(2, 4, 5000), true, 'a doubled loss');
  assert.equal(lossFlagged(2, 0, 5000), true, 'no netem at all');
  assert.equal(lossFlagged(1, 1.3, 300), false); // 300 datagrams cannot tell 1 % from 1.3 %
  assert.equal(lossFlagged(0, 0, 5000), false);
  assert.equal(lossFlagged(0, 1, 5000), true);
  assert.equal(lossFlagged(2, null, 0), true);
});

test('rate is flagged past 20 % off; no target or beyond the probe\'s range is not checked', () => {
  assert.equal(rateFlagged(256, 245), false);
  assert.equal(rateFlagged(256, 180), true);
  assert.equal(rateFlagged(null, 5), false);
  assert.equal(rateFlagged(5_000_000, 900_000), false);
  assert.equal(rateFlagged(256, null), true);
});

test('raw probe counts become per-peer figures with flags', () => {
  const profile = normalizeProfile('p', { loss: 2, rate: '1mbit' });
  const link = judgeLink({ sent: 5000, counted: 4900, echoed: 4802, up: { kbit: 1900, timedOut: false }, down: { kbit: 1200, timedOut: false } }, profile, 2);
  assert.equal(link.up.lossPct, 2);
  assert.equal(link.down.lossPct, 2);
  assert.equal(link.up.rateKbit, 950);
  assert.deepEqual(link.up.flags, []);
  assert.deepEqual(link.down.flags, ['rate down 600 vs 1000 kbit/s per peer']);
  const s = summarize([link]);
  assert.equal(s.flagged, true);
  assert.deepEqual(s.flags, ['link 0: rate down 600 vs 1000 kbit/s per peer']);
  assert.equal(s.up.rateKbit, 950);
});
