// An agent's name on the lab's NATS: a second agent started on one host
// without --name takes the next free NAME-2, NAME-3, ...; a name given on
// purpose that another agent has is refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { startNatsServer } from '../../server/nats-process.js';
import { freeAgentName, startAgent } from './agent.js';

test('freeAgentName: the default when free, else the first free NAME-n, within 64 characters', () => {
  assert.equal(freeAgentName('box', []), 'box');
  assert.equal(freeAgentName('box', ['other']), 'box');
  assert.equal(freeAgentName('box', ['box']), 'box-2');
  assert.equal(freeAgentName('box', ['box', 'box-2', 'box-4']), 'box-3');
  const long = 'h'.repeat(64);
  const second = freeAgentName(long, [long]);
  assert.equal(second.length, 64);
  assert.ok(second.endsWith('-2'));
});

test('agents on one NATS: default names become unique, a given name that is taken is refused', { timeout: 60_000 }, async () => {
  const nats = await startNatsServer();
  /** @type {Awaited<ReturnType<typeof startAgent>>[]} */
  const agents = [];
  try {
    const common = { natsUrl: nats.url, token: 'agent-name-test-token', name: 'box' };
    agents.push(await startAgent({ ...common, nameIsDefault: true }));
    agents.push(await startAgent({ ...common, nameIsDefault: true }));
    assert.deepEqual(agents.map((a) => a.name), ['box', 'box-2']);
    assert.deepEqual(agents.map((a) => a.advert().name), ['box', 'box-2']);
    await assert.rejects(startAgent({ ...common, name: 'box-2' }), /agent name "box-2" is taken \(pid \d+ on .+\): give this one another --name/);
  } finally {
    for (const a of agents) await a.close();
    await nats.stop();
  }
});
