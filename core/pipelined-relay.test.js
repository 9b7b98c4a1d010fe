// The reliable relay under the pipelined action cycle: updates overlap in
// flight (a short cycle on loopback), yet every update reaches every
// neighbour once and in order, and every update completes with its own ACKs.
// (Like relay/index.test.js's mode tests, with cycleMode 'pipelined'.)
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { once } from 'node:events';
import WebSocket from 'ws';
import { createRelay } from '../relay/index.js';
import { createRelayTransport } from '../web/src/transport/relay.js';
import { CarClient } from './client.js';
import { waitFor as until } from '../lab/shared/loop-stall.js';

const pose = () => /** @type {import('./protocol.js').Pose} */ ([0, 0, 0, 0, 0, 0, 1]);
const UPDATES = 40;

for (const batched of [true, false]) {
  const mode = batched ? 'relay' : 'relay-faithful';
  describe(`pipelined over ${mode}: 3 groups x 5 clients x ${UPDATES} updates`, () => {
    const server = http.createServer();
    const relay = createRelay({ server, path: '/relay' });
    /** @type {CarClient[]} */
    const clients = [];
    /** Most updates one client had in flight at once. */
    let maxInFlight = 0;
    before(async () => {
      server.listen(0, '127.0.0.1');
      await once(server, 'listening');
      const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
      for (let g = 0; g < 3; g++) {
        for (let i = 0; i < 5; i++) {
          const c = new CarClient({
            transport: createRelayTransport({ url: `ws://127.0.0.1:${port}/relay`, batched, WebSocket }),
            group: `p${g}`, name: `c${g}.${i}`, cycleMs: 4, ackTimeoutMs: 5000, maxUpdates: UPDATES, pose,
            cycleMode: 'pipelined',
          });
          await c.connect();
          clients.push(c);
        }
      }
      await until(() => clients.every((c) => c.members.size === 4));
      relay.resetWindow();
      for (const c of clients) c.start(0);
      const watch = setInterval(() => { for (const c of clients) maxInFlight = Math.max(maxInFlight, c.cycle.inFlight()); }, 1);
      await until(() => clients.every((c) => c.cycle.completed === UPDATES));
      clearInterval(watch);
    });
    after(async () => {
      for (const c of clients) c.close();
      await relay.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    });

    test('nothing lost, duplicated or reordered; every update fresh at every neighbour', () => {
      for (const sender of clients) {
        assert.equal(sender.cycle.updatesSent, UPDATES);
        for (const receiver of clients) {
          if (receiver === sender || receiver.options.group !== sender.options.group) continue;
          assert.equal(sender.cycle.sentTo[receiver.id], UPDATES);
          const stream = receiver.streams.get(sender.id);
          assert.ok(stream, `a stream ${sender.id} -> ${receiver.id}`);
          assert.deepEqual([stream.received, stream.duplicates, stream.reorders], [UPDATES, 0, 0]);
          assert.equal(stream.freshness.n, UPDATES, 'a reliable ordered stream: every update is fresh');
        }
      }
    });

    test('every update completes on its own ACKs: an RT each, no timeout, the cycle never skipped', () => {
      for (const c of clients) {
        assert.equal(c.rt.length, UPDATES);
        assert.equal(c.cycle.ackTimeouts, 0);
        assert.equal(c.cycle.skippedCycles, 0);
        assert.equal(c.cycle.inFlight(), 0);
        assert.equal(c.stats().cycleMode, 'pipelined');
      }
      const m = /** @type {any} */ (relay.metrics());
      assert.equal(m.updatesIn, 15 * UPDATES);
      assert.equal(m.updatesForwarded, 15 * UPDATES * 4);
      assert.ok(maxInFlight >= 1, `${maxInFlight} in flight at most`);
    });
  });
}
