// Restarts: the relay process is killed (SIGKILL) mid-run and started again
// on the same port. Clients reconnect with backoff and jitter, rejoin their
// groups and resume; the run record reports the outage and what was lost.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runSimPoint } from './sim.js';
import { runSchemaProblems } from '../report/schema.js';

/**
 * A sim run record with the fields simRunRecord adds under `extra` (runSimPoint's
 * inferred type does not carry them); `restart` is there when the server was restarted.
 * @typedef {Awaited<ReturnType<typeof runSimPoint>> & { timeline: import('./timeline.js').TimelineBucket[], serverFaults: number,
 *   restart?: { atS: number, serverDownMs: number, note: string } }} RestartRun
 */

test('relay restart mid-run: every client rejoins and resumes; the outage is reported', { timeout: 90_000 }, async () => {
  const run = /** @type {RestartRun} */ (await runSimPoint({
    point: { transport: 'relay', clients: 12, group: 4, cycleMs: 100, cycleMode: 'pipelined', relays: 0, placement: 'spread' }, // the CLI's defaults
    // With the product's backoff (full jitter, ceilings doubling from 250 ms to 10 s) a client may
    // still wait up to 10 s once the relay is back, by chance; ceilings capped at 1 s make it a bound:
    // each client is back within 1 s and a handshake after the relay listens. 20 s of run with the
    // restart at 1.5 s leave 18.5 s for the restart and the handshakes: a fresh-clone run beside a busy
    // loop took 9.5 s to start the server again (10 s of run failed then). The law itself is
    // backoffDelay's test (web/src/transport/relay.test.js); how fast clients come back, the gate `restart`.
    durationS: 20, warmupS: 1, updates: 0, ackTimeoutMs: 2000, timelineS: 2,
    reconnect: { maxMs: 1000 },
    restart: { atS: 1.5, downMs: 200 },
  }));
  assert.deepEqual(runSchemaProblems(run), []);
  assert.equal(run.connected, 12);
  assert.ok(run.restart && run.restart.serverDownMs >= 200, `the server was down: ${JSON.stringify(run.restart)}`);
  assert.ok(run.outage, 'the run record has outage fields');
  assert.equal(run.outage.clientsReconnected, 12, `every client came back: restart ${JSON.stringify(run.restart)}, outage ${JSON.stringify(run.outage)}`);
  assert.equal(run.outage.reconnects, 12, 'once each');
  assert.equal(run.outage.stillDown, 0);
  const { max, mean } = run.outage.outageMs;
  assert.ok(run.outage.outageMs.n === 12 && max !== null && max >= 200 && max < 15_000,
    `outage per client ${JSON.stringify(run.outage.outageMs)}`);
  assert.equal(typeof run.outage.updatesLost, 'number');
  assert.equal(run.outage.updatesLost, run.updates.lost, 'what was lost is what the streams lack');
  // Reliable and in order on both sides of the gap: nothing twice, nothing out of order.
  assert.equal(run.dups, 0);
  assert.equal(run.reorders, 0);
  // They exchanged again after the restart: the new relay forwarded updates.
  assert.ok(run.relay && run.relay.updatesForwarded > 100, `forwarded after the restart: ${run.relay?.updatesForwarded}`);
  assert.ok((run.timeline.at(-1)?.n ?? 0) > 0, 'RTs in the last bucket, after the restart');
  assert.equal(run.serverFaults, 0);
  console.log(`restart: server down ${run.restart?.serverDownMs} ms; client outage mean ${mean?.toFixed(0)} ms, `
    + `max ${max.toFixed(0)} ms; updates lost ${run.outage.updatesLost} of ${run.updates.expected}; `
    + `abandoned ${run.outage.abandoned}; paused cycles ${run.outage.pausedCycles}`);
});
