// relay-udp's SIGNAL payloads alone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MsgType } from '../../../../core/protocol.js';
import { readRelaySignal, signalToRelay } from './signal.js';

/** @param {unknown} payload @param {Partial<{ from: number, to: number }>} [addr] */
const fromRelay = (payload, addr = {}) => ({
  type: /** @type {11} */ (MsgType.SIGNAL), from: addr.from ?? 0, to: addr.to ?? 5,
  payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
});

test('ours go to the relay (id 0) as JSON', () => {
  const m = signalToRelay(5, { type: 'candidate', candidate: 'c', mid: '0', attempt: 2 });
  assert.deepEqual({ ...m, payload: JSON.parse(m.payload) },
    { type: MsgType.SIGNAL, from: 5, to: 0, payload: { type: 'candidate', candidate: 'c', mid: '0', attempt: 2 } });
});

test('answers and candidates for the current attempt', () => {
  assert.deepEqual(readRelaySignal(fromRelay({ type: 'answer', sdp: 's', attempt: 2 }), 5, 2), { kind: 'answer', sdp: 's' });
  assert.deepEqual(readRelaySignal(fromRelay({ type: 'candidate', candidate: 'c', mid: '1', attempt: 2 }), 5, 2),
    { kind: 'candidate', candidate: 'c', mid: '1' });
  assert.deepEqual(readRelaySignal(fromRelay({ type: 'candidate', candidate: 'c', attempt: 2 }), 5, 2),
    { kind: 'candidate', candidate: 'c', mid: '0' }, 'mid defaults to 0');
});

test('stale: another attempt, no attempt under way, or no attempt named', () => {
  for (const [payload, attempt] of /** @type {[unknown, number | null][]} */ ([
    [{ type: 'answer', sdp: 's', attempt: 1 }, 2], [{ type: 'answer', sdp: 's', attempt: 2 }, null],
    [{ type: 'answer', sdp: 's' }, 2], [null, 2], [7, 2], ['"text"', 2],
  ])) {
    assert.deepEqual(readRelaySignal(fromRelay(payload), 5, attempt), { kind: 'stale' }, JSON.stringify(payload));
  }
});

test('ignored: not for us, not JSON, or nothing to do', () => {
  assert.deepEqual(readRelaySignal(fromRelay({ type: 'answer', sdp: 's', attempt: 2 }, { from: 3 }), 5, 2), { kind: 'ignore' });
  assert.deepEqual(readRelaySignal(fromRelay({ type: 'answer', sdp: 's', attempt: 2 }, { to: 6 }), 5, 2), { kind: 'ignore' });
  assert.deepEqual(readRelaySignal(fromRelay('{not json'), 5, 2), { kind: 'ignore' });
  assert.deepEqual(readRelaySignal(fromRelay({ type: 'answer', attempt: 2 }), 5, 2), { kind: 'ignore' });
  assert.deepEqual(readRelaySignal(fromRelay({ type: 'candidate', candidate: '', attempt: 2 }), 5, 2), { kind: 'ignore' });
  assert.deepEqual(readRelaySignal(fromRelay({ type: 'bye', attempt: 2 }), 5, 2), { kind: 'ignore' });
});
