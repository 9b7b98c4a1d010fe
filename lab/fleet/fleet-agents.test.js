// One bench over two `carlab agent` processes on loopback, through a real
// nats-server: a relay and a p2p point of 4 peers (groups of 2, each group
// across both agents), every peer accounted for in one results.json with a
// fleet block; a wrong token opens nothing; a busy agent is not used; an
// agent that never answers fails the point with its name in bounded time,
// and so does one whose prepare stops moving (--prepare-stall);
// one still closing a run's browsers is waited for.
// An agent or a bench stopped mid-point: lab/fleet/fleet-interrupt.test.js.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { JSONCodec, connect } from 'nats';

import { AGENT_SILENCE_MS, DISCOVER_SUBJECT, agentSubject, heartbeatSubject } from './fleet.js';
import { findAgents } from './fleet-bench.js';
import { FLEET_TOKEN, assertFleetRuns, startFleetRig, until } from './fleet-harness.js';
import { namespacesForbidden } from '../net/system.js';

const jc = JSONCodec();

/** @type {Awaited<ReturnType<typeof startFleetRig>>} */
let rig;

before(async () => { rig = await startFleetRig(['a1', 'a2']); });
after(async () => { await rig?.stop(); });

test('a bench without the shared token opens nothing on any agent', { timeout: 60_000 }, async () => {
  const before1 = rig.agent('a1').log().length;
  const { code, results } = await rig.bench(['--agents', '2', '--token', 'not-the-token', '--duration', '2']);
  assert.equal(code, 1);
  assert.match(results.runs[0].error, /agent a[12] refused prepare: wrong token/);
  for (const name of ['a1', 'a2']) {
    const log = rig.agent(name).log();
    assert.match(log, /refused "prepare" from a controller without the shared token/);
    assert.doesNotMatch(log.slice(name === 'a1' ? before1 : 0), /peers of relay/, `${name} opened no page`);
  }
});

test('an agent that never answers fails the point with its name, not waited for for ever', { timeout: 120_000 }, async () => {
  // a "ghost" answers discovery (so it is chosen) and then nothing, not even heartbeats
  const nc = await connect({ servers: rig.nats.url });
  const ghost = { name: 'ghost', host: 'nowhere', pid: 1, cores: 2, memoryMb: 1, freeMemoryMb: 1, browsers: ['chromium'], capacity: 2, busy: null, pagesOrigin: 'http://127.0.0.1:1', version: '0' };
  nc.subscribe(DISCOVER_SUBJECT, { callback: (_e, m) => m.respond(jc.encode(ghost)) });
  nc.subscribe(agentSubject('ghost'), { callback: () => {} });
  try {
    const { code, results } = await rig.bench(['--agents', 'a1,ghost', '--token', FLEET_TOKEN, '--duration', '2']);
    assert.equal(code, 1);
    assert.match(results.runs[0].error, new RegExp(`agent ghost went silent \\(no heartbeat for ${AGENT_SILENCE_MS / 1000} s\\) during prepare`));
    // a1 was told to stop: it is free for the next point
    await until(() => /run fleet\w+: aborted by the controller/.test(rig.agent('a1').log()), 15_000, 'a1 to close its browsers');
  } finally {
    await nc.close();
  }
  const missing = await rig.bench(['--agents', 'a1,nobody', '--token', FLEET_TOKEN, '--duration', '2']);
  assert.match(missing.results.runs[0].error, /agent nobody did not answer within 5 s/);
});

test('a preparing agent whose progress stops fails the point after --prepare-stall, named with the step it stopped at', { timeout: 60_000 }, async () => {
  // a "stuck" agent: heartbeats go on, saying the same step of the bench's run, and prepare is never answered
  const nc = await connect({ servers: rig.nats.url });
  const stuck = { name: 'stuck', host: 'here', pid: 1, cores: 2, memoryMb: 1, freeMemoryMb: 1, browsers: ['chromium'], capacity: 2, busy: null, pagesOrigin: 'http://127.0.0.1:1', version: '0' };
  /** @type {{ runId: string, step: string } | null} */
  let progress = null;
  nc.subscribe(DISCOVER_SUBJECT, { callback: (_e, m) => m.respond(jc.encode(stuck)) });
  nc.subscribe(agentSubject('stuck'), {
    callback: (_e, m) => {
      const req = /** @type {any} */ (jc.decode(m.data));
      if (req.op === 'prepare') progress = { runId: req.runId, step: 'opened 1/3 pages' };
    },
  });
  const beat = setInterval(() => nc.publish(heartbeatSubject('stuck'), jc.encode({ ...stuck, busy: progress?.runId ?? null, progress })), 500);
  try {
    const { code, results } = await rig.bench(['--agents', 'a1,stuck', '--token', FLEET_TOKEN, '--duration', '2', '--prepare-stall', '3']);
    assert.equal(code, 1);
    assert.match(results.runs[0].error, /agent stuck made no progress for 3 s during prepare; it stopped at: opened 1\/3 pages/);
    await until(() => /run fleet\w+: aborted by the controller/.test(rig.agent('a1').log()), 15_000, 'a1 to close its browsers');
  } finally {
    clearInterval(beat);
    await nc.close();
  }
});

test('relay and p2p over two agents: 4 peers in groups of 2 across them, every peer in one run with the fleet block', {
  timeout: 180_000,
  // Where namespaces are allowed, fleet-machines.test.js runs this point across them, with these checks (assertFleetRuns).
  skip: namespacesForbidden() === null && 'run across network namespaces by lab/fleet/fleet-machines.test.js',
}, async () => {
  const { code, stderr, results } = await rig.bench(['--agents', '2', '--token', FLEET_TOKEN, '--transport', 'relay,p2p', '--duration', '3']);
  assert.equal(code, 0, stderr);
  assertFleetRuns(results, { agents: ['a1', 'a2'], natsUrl: `${rig.nats.url}` });
});

test('a busy agent is not used: a named one fails the point, --agents N finds too few', { timeout: 90_000 }, async () => {
  // keep a2 busy with a run of another controller (one peer, right token)
  const nc = await connect({ servers: rig.nats.url });
  const other = 'otherrun1';
  try {
    const cfgServer = await startPlainServer();
    const answer = /** @type {any} */ (jc.decode((await nc.request(agentSubject('a2'), jc.encode({
      op: 'prepare', token: FLEET_TOKEN, runId: other,
      job: { point: { transport: 'relay', clients: 1, group: 1, cycleMs: 167, cycleMode: 'pipelined', relays: 0, placement: 'spread' }, indices: [0],
        servers: [cfgServer.url], browsers: ['chromium'], peersPerPage: 1, pagesPerBrowser: 50, warmupS: 0, updates: 0, ackTimeoutMs: 20000 },
    }), { timeout: 60_000 })).data));
    try {
      assert.equal(answer.ok, true, answer.error);
      // a second run is refused by the agent itself
      const second = /** @type {any} */ (jc.decode((await nc.request(agentSubject('a2'), jc.encode({ op: 'prepare', token: FLEET_TOKEN, runId: 'x', job: {} }), { timeout: 5000 })).data));
      assert.deepEqual([second.ok, second.busy], [false, true]);
      const named = await rig.bench(['--agents', 'a1,a2', '--token', FLEET_TOKEN, '--duration', '2']);
      assert.match(named.results.runs[0].error, /agent a2 is busy with another run \(otherrun1\)/);
      const counted = await rig.bench(['--agents', '2', '--token', FLEET_TOKEN, '--duration', '2']);
      assert.match(counted.results.runs[0].error, /--agents 2: 1 free agent\(s\) with chromium answered within 5 s .*: a1; not used: a2 \(busy\)/);
    } finally {
      await nc.request(agentSubject('a2'), jc.encode({ op: 'abort', token: FLEET_TOKEN, runId: other }), { timeout: 5000 });
      await cfgServer.close();
    }
  } finally {
    await nc.close();
  }
  await until(() => /run otherrun1: aborted by the controller/.test(rig.agent('a2').log()), 15_000, 'a2 free again');
});

test('an agent still closing a run\'s browsers is waited for; one busy with a run is not', { timeout: 30_000 }, async () => {
  // stand-in agents' adverts on the real NATS: "closer" is closing its run and free 2 s later
  const nc = await connect({ servers: rig.nats.url });
  const advert = (/** @type {string} */ name, /** @type {object} */ state) => ({
    name, host: 'h', pid: 1, cores: 2, memoryMb: 1, freeMemoryMb: 1, browsers: ['chromium'], capacity: 2, pagesOrigin: 'http://127.0.0.1:1', version: '0', ...state,
  });
  const beat = (/** @type {string} */ name, /** @type {object} */ state) => nc.publish(heartbeatSubject(name), jc.encode(advert(name, state)));
  const timer = setInterval(() => { beat('closer', { busy: 'r1', closing: true }); beat('worker', { busy: 'r2', closing: false }); }, 200);
  try {
    const fleet = { natsUrl: rig.nats.url, token: FLEET_TOKEN, serverHost: '127.0.0.1', discoverMs: 1000 };
    // busy with a run (not closing): refused once discovery is over
    await assert.rejects(findAgents(nc, { ...fleet, agents: ['worker'] }, ['chromium']), /agent worker is busy with another run \(r2\)/);
    // closing: waited for past the 1 s of discovery, taken once it says it is free
    setTimeout(() => { clearInterval(timer); beat('closer', { busy: null, closing: false }); }, 2500);
    const t1 = Date.now();
    const found = await findAgents(nc, { ...fleet, agents: ['closer'] }, ['chromium']);
    assert.deepEqual(found.map((a) => [a.name, a.busy]), [['closer', null]]);
    assert.ok(Date.now() - t1 >= 2000, `found after ${Date.now() - t1} ms`);
  } finally {
    clearInterval(timer);
    await nc.close();
  }
});

/**
 * A carlab server that allows any origin, for the busy agent's run.
 * @returns {Promise<{ url: string, close: () => Promise<void> }>}
 */
async function startPlainServer() {
  const { startServerChild } = await import('../target/server-process.js');
  const s = await startServerChild({ allowedOrigins: ['*'] });
  return { url: s.url.replace(/\/$/, ''), close: () => s.close() };
}
