// The relay transport's reconnect policy alone: which closes it retries, the
// numbering and waits of the attempts, ID_TAKEN handling, and its limits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CloseCode } from '../../../core/protocol.js';
import { ID_TAKEN_RETRIES, ReconnectPolicy } from './relay-reconnect.js';

test('without the option it never reconnects', () => {
  for (const option of [undefined, false]) {
    const p = new ReconnectPolicy(option);
    assert.equal(p.options, null);
    assert.equal(p.afterClose(1001, true), null);
  }
});

test('true takes the defaults', () => {
  const p = new ReconnectPolicy(true);
  assert.deepEqual({ ...p.options, random: undefined }, { baseMs: 250, maxMs: 10000, maxAttempts: Infinity, random: undefined });
});

test('attempts are numbered from 1 and wait within the growing ceiling', () => {
  const p = new ReconnectPolicy({ baseMs: 100, maxMs: 300, random: () => 0.5 });
  assert.deepEqual([1, 2, 3, 4].map(() => p.afterClose(1006, false)), [
    { attempt: 1, delayMs: 50 }, { attempt: 2, delayMs: 100 }, { attempt: 3, delayMs: 150 }, { attempt: 4, delayMs: 150 },
  ]);
  p.welcomed();
  assert.deepEqual(p.afterClose(1001, true), { attempt: 1, delayMs: 50 }, 'a WELCOME starts the count again');
});

test('policy closes and protocol errors are final', () => {
  const p = new ReconnectPolicy({ random: () => 0 });
  for (const code of [1000, 1002, 1008, CloseCode.BAD_FRAME, CloseCode.SPOOFED_SENDER, CloseCode.RATE_LIMITED]) {
    assert.equal(p.afterClose(code, true), null, String(code));
  }
  assert.equal(p.attempt, 0);
});

test('maxAttempts ends the retries', () => {
  const p = new ReconnectPolicy({ maxAttempts: 2, random: () => 0 });
  assert.ok(p.afterClose(1006, false));
  assert.ok(p.afterClose(1006, false));
  assert.equal(p.afterClose(1006, false), null);
});

test('ID_TAKEN while rejoining is waited out, then a new id is asked for', () => {
  const p = new ReconnectPolicy({ random: () => 0 });
  assert.equal(p.rejoinId(42), 42);
  assert.equal(p.afterClose(CloseCode.ID_TAKEN, true), null, 'on a welcomed socket it is a policy close');
  for (let i = 0; i < ID_TAKEN_RETRIES; i++) {
    assert.equal(p.rejoinId(42), 42);
    assert.ok(p.afterClose(CloseCode.ID_TAKEN, false), 'retried although 4xxx');
  }
  assert.equal(p.rejoinId(42), 0);
  p.welcomed();
  assert.equal(p.rejoinId(42), 42);
});
