import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { LONG_FILES, QUIET_FILES, TIMED_FILES, listTestFiles, testConcurrency, testRuns } from './test-unit.js';

/** @param {{ args: string[] } | null} run */
const filesOf = (run) => (run ? run.args.filter((a) => a.endsWith('.test.js')) : []);

test('every unit test file runs exactly once: with the heavy, light, timed or quiet ones', () => {
  const files = listTestFiles();
  assert.ok(files.includes('scripts/test-unit.test.js') && files.includes('core/client.test.js') && files.includes('lab/net/net.test.js'));
  assert.ok(files.every((f) => !f.includes('node_modules') && !f.includes('/dist/')));
  for (const f of [...QUIET_FILES, ...TIMED_FILES, ...LONG_FILES]) assert.ok(existsSync(f) && files.includes(f), `${f} is a test file`);
  const { heavy, light, timed, quiet } = testRuns(files, 3);
  assert.deepEqual([...filesOf(heavy), ...filesOf(light), ...filesOf(timed), ...filesOf(quiet)].sort(), files, 'each once');
  assert.deepEqual(filesOf(heavy), [...LONG_FILES], 'the heavy files in the order given');
  assert.ok(light?.args.includes('--test-concurrency=3') && heavy?.args.includes('--test-concurrency=3'));
  assert.deepEqual(filesOf(quiet), [...QUIET_FILES].sort());
  assert.ok(quiet?.args.includes(`--test-concurrency=${QUIET_FILES.length}`), 'the quiet files beside each other only');
  assert.deepEqual(filesOf(timed), [...TIMED_FILES].sort());
  assert.ok(light?.args.includes('--test-force-exit'), 'a PeerServer\'s leftover timers do not hold a file open');
  const one = testRuns(['core/a.test.js'], 2);
  assert.deepEqual([one.timed, one.quiet], [null, null], 'no empty run');
});

test('concurrency: free cores + 1, at least 2, unless CARLAB_TEST_CONCURRENCY says otherwise', () => {
  assert.equal(testConcurrency({ CARLAB_TEST_CONCURRENCY: '1' }, 2), 1);
  assert.equal(testConcurrency({ CARLAB_TEST_CONCURRENCY: '0' }, 2), 3, 'a bad value is ignored');
  assert.equal(testConcurrency({}, 1), 2);
  assert.equal(testConcurrency({}, 4), 5);
});
