// Fleet points stopped midway, over two `carlab agent` processes on loopback
// and a real nats-server: an agent killed mid-point leaves its peers as lost
// peers and the point finishes; Ctrl-C (and SIGKILL) of the bench closes every
// agent's browsers. The rest of the fleet: lab/fleet/fleet-agents.test.js.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { CARLAB, FLEET_TOKEN, assertAgentLost, killOnceMeasuring, startFleetRig, until } from './fleet-harness.js';
import { namespacesForbidden } from '../net/system.js';

/** @type {Awaited<ReturnType<typeof startFleetRig>>} */
let rig;

before(async () => { rig = await startFleetRig(['a1', 'a2']); });
after(async () => { await rig?.stop(); });

test('an agent killed mid-point: its peers are lost peers with its name and time, the point finishes with the other', {
  timeout: 120_000,
  // Where namespaces are allowed, fleet-machines.test.js kills an agent across them, with these checks (assertAgentLost).
  skip: namespacesForbidden() === null && 'run across network namespaces by lab/fleet/fleet-machines.test.js',
}, async () => {
  const a2 = rig.agent('a2');
  const mark = a2.log().length;
  const benchDone = rig.bench(['--agents', '2', '--token', FLEET_TOKEN, '--transport', 'relay', '--duration', '8']);
  const killer = killOnceMeasuring(a2, benchDone);
  const { code, stderr, results } = await benchDone;
  const killed = await killer;
  assert.equal(code, 0, stderr);
  assert.ok(killed, `the bench ended before a2 measured: ${results.runs[0]?.error}\n${stderr}\na2: ${a2.log().slice(mark)}`);
  assertAgentLost(results, { agents: ['a1', 'a2'], victim: 'a2' });
});

test('Ctrl-C on the bench stops every agent\'s browsers: once, the point ends early and is written; a bench gone for good, the lease', { timeout: 150_000 }, async () => {
  const a2 = rig.agent('a2');
  if (a2.child.exitCode !== null || a2.child.signalCode !== null) await rig.startAgent('a2');
  const out = await mkdtemp(path.join(tmpdir(), 'carlab-fleet-int-'));
  try {
    for (const [signal, expected] of /** @type {const} */ ([['SIGINT', /: finished; closing 1 browser/], ['SIGKILL', /no word from the controller for 10 s/]])) {
      const marks = new Map([...rig.agents.values()].map((a) => [a.name, a.log().length]));
      const child = spawn(process.execPath, [CARLAB, 'bench', '--agents', '2', '--nats', rig.nats.url, '--clients', '4', '--group', '2',
        '--warmup', '1', '--duration', '60', '--no-progress', '--out', out], { env: { ...process.env, CARLAB_TOKEN: FLEET_TOKEN }, stdio: ['ignore', 'ignore', 'pipe'] });
      let err = '';
      child.stderr?.on('data', (d) => { err += d; });
      const fresh = (/** @type {string} */ name) => rig.agent(name).log().slice(marks.get(name));
      // Once both measure: a signal while the pages open is another case ("interrupted while opening pages").
      const measuring = () => ['a1', 'a2'].every((n) => /peers of relay[^]*: measuring/.test(fresh(n)));
      const story = () => `\nbench: ${err}\na1: ${fresh('a1')}\na2: ${fresh('a2')}`;
      await until(() => child.exitCode !== null || measuring(), 90_000, () => `both agents to measure${story()}`);
      assert.ok(measuring(), `the bench exited (${child.exitCode}) before both agents measured${story()}`);
      await new Promise((r) => setTimeout(r, 1000));
      child.kill(signal);
      const code = await new Promise((r) => child.once('exit', (c) => r(c)));
      for (const name of ['a1', 'a2']) await until(() => expected.test(fresh(name)), 20_000, `${name} to close its browsers after ${signal}:\n${fresh(name)}`);
      if (signal === 'SIGINT') {
        assert.equal(code, 130, err);
        const results = JSON.parse(await readFile(path.join(out, 'results.json'), 'utf8'));
        assert.equal(results.runs[0].stoppedEarly, true);
        assert.equal(results.runs[0].connected, 4);
      }
    }
  } finally {
    await rm(out, { recursive: true, force: true });
  }
});
