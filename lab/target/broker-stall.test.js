// A broker stall (`carlab sim --relays 2 --pause-nats`): the run's nats-server
// stopped while two relays talk through it. Within the bound the relays wait it
// out and nothing is lost; past it they give the connection up and say what
// that cost (docs/scale-out.md "A broker stall").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { run } from '../commands/sim.js';
import { resultsSchemaProblems } from '../report/schema.js';

/** @param {string[]} args */
async function sim(args) {
  const out = await mkdtemp(path.join(tmpdir(), 'carlab-stall-'));
  let err = '';
  const stderr = new Writable({ write(c, _e, cb) { err += String(c); cb(); } });
  const stdout = new Writable({ write(_c, _e, cb) { cb(); } });
  try {
    const code = await run([...args, '--no-progress', '--out', out], { stdout, stderr: /** @type {NodeJS.WriteStream} */ (/** @type {unknown} */ (stderr)) });
    assert.equal(code, 0, err);
    return { results: JSON.parse(await readFile(path.join(out, 'results.json'), 'utf8')) };
  } finally {
    await rm(out, { recursive: true, force: true });
  }
}

test('sim --relays 2 --pause-nats: a broker stopped 5 s is waited out and loses nothing; one stopped past the bound says what it cost', { timeout: 150_000 }, async () => {
  const { results } = await sim(['--transport', 'relay', '--relays', '2', '--clients', '40', '--group', '5', '--duration', '9', '--warmup', '1',
    '--pause-nats', '1:5']);
  assert.deepEqual(resultsSchemaProblems(results), []);
  const [r] = results.runs;
  const seen = `loss ${r.lossPct} %, cluster ${JSON.stringify(r.cluster)}`;
  assert.deepEqual(r.cluster.natsPause.forS, 5);
  assert.ok(r.cluster.crossNodeUpdates > 0, 'updates crossed the relays through the broker');
  assert.equal(r.cluster.nodesLost, 0, `no relay took the silent broker for its peer gone: ${seen}`);
  assert.ok(r.cluster.broker.stalls >= 2 && r.cluster.broker.stalledMs >= 3000, `each relay saw the stall and waited it out: ${seen}`);
  assert.deepEqual([r.cluster.broker.disconnects, r.cluster.broker.droppedWhileSilent, r.cluster.broker.unconfirmedAtDisconnect], [0, 0, 0], seen);
  assert.equal(r.lossPct, 0, `nothing lost within the bound: ${seen}`);
  assert.equal(r.dups + r.reorders, 0);

  // Past the bound (6 s of silence): the connection is given up, and the relays say so and count it.
  const past = (await sim(['--transport', 'relay', '--relays', '2', '--clients', '40', '--group', '5', '--duration', '14', '--warmup', '1',
    '--pause-nats', '1:9'])).results.runs[0];
  const pastSeen = `cluster ${JSON.stringify(past.cluster)}`;
  assert.ok(past.cluster.broker.disconnects >= 2, pastSeen);
  assert.ok(past.cluster.broker.unconfirmedAtDisconnect > 0, `what the given-up connection carried is counted: ${pastSeen}`);
});
