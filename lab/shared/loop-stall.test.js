import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { once } from 'node:events';
import { startStallMeter, until, waitFor } from './loop-stall.js';

test('the stall meter reports the longest time the loop was held up', async () => {
  const meter = startStallMeter();
  await new Promise((r) => setTimeout(r, 30));
  const until = performance.now() + 120;
  while (performance.now() < until) { /* hold the loop */ }
  await new Promise((r) => setTimeout(r, 30));
  const soFar = meter.longest();
  assert.ok(soFar >= 100, `stall so far ${soFar} ms`);
  const stallMs = meter.stop();
  assert.ok(stallMs >= soFar, `stall ${stallMs} ms`);
  // not started yet when stopped: nothing sampled
  assert.equal(startStallMeter({ afterMs: 1000 }).stop(), 0);
});

/** Busy-waits: this process stalls, as when it is starved. @param {number} ms */
function stall(ms) {
  const end = performance.now() + ms;
  while (performance.now() < end) { /* held up */ }
}

test('a wait whose deadline passed in a stall still sees what arrived meanwhile (Node runs expired timers before I/O)', async (t) => {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => server.close());
  const address = /** @type {import('node:net').AddressInfo} */ (server.address());
  const accepted = once(server, 'connection');
  const client = net.connect(address.port, '127.0.0.1');
  t.after(() => client.destroy());
  const [peer] = /** @type {[import('node:net').Socket]} */ (await accepted);
  t.after(() => peer.destroy());
  let got = false;
  client.on('data', () => { got = true; });

  const waiting = waitFor(() => got, 50, 'the byte');
  peer.write('x'); // in the kernel now, read only once the loop polls
  stall(200);
  await waiting;
  assert.ok(got);
});

test('until resolves whether the condition held; waitFor names what it waited for', async () => {
  assert.equal(await until(() => true, 10), true);
  assert.equal(await until(() => false, 20), false);
  assert.equal(await until(async () => true, 10), true);
  await assert.rejects(waitFor(() => false, 20, 'nothing'), /timed out after 20 ms waiting for nothing/);
  await assert.rejects(waitFor(() => false, 20, () => 'read at the end'), /waiting for read at the end/);
  await assert.rejects(waitFor(() => false, 20), /^Error: timed out after 20 ms$/);
});
