import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { QUIET_FILES, listTestFiles, testConcurrency, testRuns } from './test-unit.js';

test('every unit test file runs exactly once: side by side, or after them one at a time', () => {
  const files = listTestFiles();
  assert.ok(files.includes('scripts/test-unit.test.js') && files.includes('core/client.test.js') && files.includes('lab/net/net.test.js'));
  assert.ok(files.every((f) => !f.includes('node_modules') && !f.includes('/dist/')));
  for (const f of QUIET_FILES) assert.ok(existsSync(f) && files.includes(f), `${f} is a test file`);
  const runs = testRuns(files, 3);
  assert.equal(runs.length, 2);
  const listed = runs.flatMap((r) => r.args.filter((a) => a.endsWith('.test.js')));
  assert.deepEqual([...listed].sort(), files, 'each once');
  assert.ok(runs[0].args.includes('--test-concurrency=3'));
  assert.ok(runs[1].args.includes('--test-concurrency=1'));
  assert.deepEqual(runs[1].args.filter((a) => a.endsWith('.test.js')), [...QUIET_FILES].sort());
  assert.deepEqual(testRuns(['core/a.test.js'], 2).length, 1, 'no empty run');
});

test('concurrency: cores + 1 unless CARLAB_TEST_CONCURRENCY says otherwise', () => {
  assert.equal(testConcurrency({ CARLAB_TEST_CONCURRENCY: '1' }), 1);
  assert.equal(testConcurrency({ CARLAB_TEST_CONCURRENCY: '0' }) >= 2, true, 'a bad value is ignored');
  assert.equal(testConcurrency({}) >= 2, true);
});
