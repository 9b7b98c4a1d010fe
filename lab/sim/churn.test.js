// Churn: clients join and leave every few hundred ms for 8 s in three
// groups. No stable member's cycle stalls longer than its ACK timeout allows,
// and no group state leaks: the relay is back to 0 clients, 0 groups and 0
// pending updates, and its heap after GC near its baseline, once all left.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { churnProblems, runChurn } from './churn.js';

test('churn: no stable member stalls, nothing leaks', { timeout: 90_000 }, async () => {
  // 32 steps of 100..400 ms (~8 s): by count, so the seed alone decides the churn (a busy
  // machine once made too few steps in 8 s: "enough churn" failed by chance)
  const r = await runChurn({ durationS: 8, steps: 32, groups: 3, stablePerGroup: 3, cycleMs: 100, ackTimeoutMs: 2000, seed: 8 });
  console.log(`churn: ${JSON.stringify({ counts: r.counts, maxGapMs: Math.round(r.maxGapMs), stable: r.stable, relay: r.relay.after,
    heapKiB: { baseline: Math.round(r.heapUsedBytes.baseline / 1024), after: Math.round(r.heapUsedBytes.after / 1024) } })}`);
  assert.ok(r.counts.joins >= 10 && r.counts.silentJoins >= 2 && r.counts.cleanLeaves + r.counts.abruptLeaves >= 6, `enough churn: ${JSON.stringify(r.counts)}`);
  // (the peak: at the churn's last instant every churner may just have left)
  assert.ok(r.relay.during.peakClients > r.stable.clients, `churners were there: peak ${r.relay.during.peakClients} clients`);
  // A sender waiting on a silent member is freed by the ACK timeout (2 s) or the member's leave:
  // stuck, it would send nothing for the rest of the churn. How short the gap stays (the timeout
  // and a cycle) is the gate `churn` (lab/gates/gates.js); here only that it ends.
  assert.ok(r.maxGapMs < 3 * r.ackTimeoutMs, `longest gap between two sends: ${r.maxGapMs.toFixed(0)} ms (this process stalled up to ${r.loopStallMs} ms)`);
  assert.deepEqual(churnProblems(r), []);
  // The stable members' streams among themselves are complete and in order.
  assert.equal(r.stable.lost, 0);
  assert.equal(r.stable.dups, 0);
  assert.equal(r.stable.reorders, 0);
  assert.equal(r.stable.closed, 0);
  // Everyone left: no state remains.
  assert.deepEqual(r.relay.after, { clients: 0, joined: 0, groups: 0, pending: 0, queued: 0, blocked: 0 });
  assert.deepEqual(r.relay.before, r.relay.after, 'counters and gauges back to the baseline');
  const growth = r.heapUsedBytes.after - r.heapUsedBytes.baseline;
  assert.ok(growth < 2 * 1024 * 1024, `heap after GC grew by ${(growth / 1024).toFixed(0)} KiB`);
  assert.equal(r.serverFaults, 0);
});
