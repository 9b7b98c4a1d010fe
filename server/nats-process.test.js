// carlab's own nats-server under supervision: one that dies unasked comes
// back on the same port, paced; one that is stopped stays stopped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startSupervisedNatsServer } from './nats-process.js';
import { waitFor as until } from '../lab/shared/loop-stall.js';

/** @param {number} pid */
function alive(pid) {
  try { process.kill(pid, 0); return true; } catch { return false; }
}

test('a supervised nats-server killed with SIGKILL is restarted on its port, with growing waits; stop() ends it for good', { timeout: 30_000 }, async () => {
  /** @type {string[]} */
  const events = [];
  /** @type {number[]} */
  const waits = [];
  const nats = await startSupervisedNatsServer({}, {
    onExit: (e) => { events.push(`exit ${e.signal}`); waits.push(e.restartInMs); },
    onRestart: (p) => events.push(`restart ${p.port}`),
    onRestartFailed: (err) => events.push(`failed ${err.message}`),
  }, { baseMs: 50, maxMs: 400, stableMs: 60_000 });
  const pids = [nats.pid];
  try {
    for (let round = 1; round <= 3; round++) {
      process.kill(nats.pid, 'SIGKILL');
      await until(() => events.length === 2 * round);
      assert.notEqual(nats.pid, pids.at(-1), 'a new process');
      pids.push(nats.pid);
      assert.ok(alive(nats.pid));
    }
    assert.deepEqual(events, ['exit SIGKILL', `restart ${nats.port}`, 'exit SIGKILL', `restart ${nats.port}`, 'exit SIGKILL', `restart ${nats.port}`]);
    assert.deepEqual(waits, [50, 100, 200], 'each restart in a row waits twice as long');
    assert.equal(nats.url, `nats://127.0.0.1:${nats.port}`, 'the URL every client holds stays right');
  } finally {
    await nats.stop();
  }
  await new Promise((r) => setTimeout(r, 200));
  assert.ok(!alive(nats.pid), 'stopped');
  assert.equal(events.length, 6, 'a stop is not an exit to restart after');
});
