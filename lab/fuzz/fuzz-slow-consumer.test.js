import assert from 'node:assert/strict';
import { test } from 'node:test';

import { judgeSlowConsumer, slowConsumerFigures } from './fuzz-slow-consumer.js';

/** @returns {import('./fuzz-slow-consumer.js').SlowConsumerFacts} */
const healthy = () => ({
  slowAckMs: 5000,
  good: [1, 2, 3, 4].map((id) => ({ id, closed: null, ackTimeouts: 0, rtAfter: 18, completed: 18 })),
  rtAfter: { n: 72, p95: 3.1, max: 5.2 },
  slowConsumersMarked: 1,
  updatesToSlow: 20,
});

test('judgeSlowConsumer: none for a group that goes on; a member closed, timed out or stuck, no lagging seen each say so; how fast is not judged', () => {
  assert.deepEqual(judgeSlowConsumer(healthy()), []);
  const broken = healthy();
  broken.good[0].closed = { code: 4005, reason: 'x' };
  broken.good[1].ackTimeouts = 2;
  broken.good[2].completed = 1;
  broken.rtAfter.max = 5000; // timing: the gate's, not the verdict's
  broken.slowConsumersMarked = 0;
  broken.updatesToSlow = 0;
  assert.deepEqual(judgeSlowConsumer(broken), [
    'well-behaved member 1 was closed: 4005 "x"',
    'well-behaved member 2 ran into its ACK timeout 2 time(s): the relay waited for the member that stopped reading',
    'well-behaved member 3 completed 1 updates in 33 s once the relay should have stopped waiting',
    'the relay never counted a slow consumer (metrics relay.slowConsumers)',
    'the slow member got no UPDATE before it stopped reading',
  ]);
});

test('slowConsumerFigures: the group\'s RT p95 once it is not waited for; nulls when the lane did not run', () => {
  const lane = { name: 'slow-consumer', ok: true, skipped: null, problems: [], notes: [], summary: '', facts: { ...healthy() } };
  assert.deepEqual(slowConsumerFigures([lane]), { rtP95Ms: 3.1, updatesAfter: 72 });
  assert.deepEqual(slowConsumerFigures([]), { rtP95Ms: null, updatesAfter: null });
});
