import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Writable } from 'node:stream';

import { COMMANDS } from '../../scripts/carlab.js';
import { churnProblems } from '../sim/churn.js';
import { run } from './churn.js';

const sink = () => {
  let text = '';
  return { stream: new Writable({ write(c, _e, cb) { text += String(c); cb(); } }), text: () => text };
};

/** A churn report's fields churnProblems reads, healthy. @returns {any} */
const healthy = () => ({
  maxGapMs: 1200,
  stable: { lost: 0, dups: 0, reorders: 0, closed: 0 },
  relay: { before: { clients: 0, groups: 0 }, after: { clients: 0, groups: 0 } },
  heapUsedBytes: { baseline: 10e6, after: 10.5e6 },
  serverFaults: 0,
});

test('carlab churn is a command; --help explains it; a bad flag prints what was wrong and the help, exit 2', async () => {
  assert.ok(COMMANDS.churn?.load);
  const out = sink();
  assert.equal(await run(['--help'], { stdout: out.stream, stderr: sink().stream }), 0);
  assert.match(out.text(), /Usage: carlab churn[\s\S]*--ack-timeout MS/);
  for (const bad of [['--steps', '0'], ['--cycle', 'fast'], ['--nope']]) {
    const err = sink();
    assert.equal(await run(bad, { stdout: sink().stream, stderr: err.stream }), 2, bad.join(' '));
    assert.match(err.text(), /^carlab churn: [\s\S]*Usage: carlab churn/);
  }
});

test('churnProblems: none for a healthy churn; broken streams, a closed member, a member that never sent, kept state, a grown heap, faults each say so', () => {
  assert.deepEqual(churnProblems(healthy()), []);
  const r = healthy();
  Object.assign(r.stable, { lost: 2, closed: 1 });
  r.maxGapMs = Infinity;
  r.relay.after = { clients: 1, groups: 0 };
  r.heapUsedBytes.after = 13e6;
  r.serverFaults = 1;
  assert.deepEqual(churnProblems(r), [
    'stable members\' streams: 2 lost, 0 duplicated, 0 reordered',
    '1 stable member(s) closed',
    'a stable member never sent during the churn',
    'the relay kept state: {"clients":1,"groups":0} against {"clients":0,"groups":0}',
    'the server\'s heap after GC grew by 2930 KiB',
    'the server reported 1 fault(s)',
  ]);
});
