import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { LIVENESS_FILES, LOADING_FILES, QUIET_FILES, TIMED_FILES, listTestFiles, testConcurrency, testRuns } from './test-unit.js';

/** @param {{ args: string[] } | null} run */
const filesOf = (run) => (run ? run.args.filter((a) => a.endsWith('.test.js')) : []);

test('every unit test file runs exactly once: in the pool, or with the timed, liveness, loading or quiet ones', () => {
  const files = listTestFiles();
  assert.ok(files.includes('scripts/test-unit.test.js') && files.includes('core/client.test.js') && files.includes('lab/net/net.test.js'));
  assert.ok(files.every((f) => !f.includes('node_modules') && !f.includes('/dist/')));
  for (const f of [...QUIET_FILES, ...TIMED_FILES, ...LIVENESS_FILES, ...LOADING_FILES]) assert.ok(existsSync(f) && files.includes(f), `${f} is a test file`);
  const { pool, timed, liveness, loading, quiet } = testRuns(files, 3);
  assert.deepEqual([...filesOf(pool), ...filesOf(timed), ...filesOf(liveness), ...filesOf(loading), ...filesOf(quiet)].sort(), files, 'each once');
  assert.deepEqual(filesOf(liveness), [...LIVENESS_FILES].sort());
  assert.deepEqual(filesOf(loading), [...LOADING_FILES], 'in the order given');
  assert.ok(pool?.args.includes('--test-concurrency=3'));
  assert.deepEqual(filesOf(quiet), [...QUIET_FILES].sort());
  assert.ok(quiet?.args.includes(`--test-concurrency=${QUIET_FILES.length}`), 'the quiet files beside each other only');
  assert.deepEqual(filesOf(timed), [...TIMED_FILES].sort());
  assert.ok(pool?.args.includes('--test-force-exit'), 'a PeerServer\'s leftover timers do not hold a file open');
  const one = testRuns(['core/a.test.js'], 2);
  assert.deepEqual([one.timed, one.liveness, one.loading, one.quiet], [null, null, null, null], 'no empty run');
});

test('concurrency: cores + 1 unless CARLAB_TEST_CONCURRENCY says otherwise', () => {
  assert.equal(testConcurrency({ CARLAB_TEST_CONCURRENCY: '1' }), 1);
  assert.equal(testConcurrency({ CARLAB_TEST_CONCURRENCY: '0' }) >= 2, true, 'a bad value is ignored');
  assert.equal(testConcurrency({}) >= 2, true);
});
