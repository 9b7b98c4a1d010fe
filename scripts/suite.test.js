import assert from 'node:assert/strict';
import { test } from 'node:test';

import { runStep } from './suite.js';

test('a step\'s exit code and its last 60 lines, which npm test prints again when it failed', async () => {
  const step = { name: 'fake', argv: ['-e', 'for (let i = 1; i <= 100; i++) console.log(`line ${i}`); console.error("the summary"); process.exit(3)'] };
  const result = await runStep(step);
  assert.equal(result.code, 3);
  assert.equal(result.tail.length, 60);
  assert.ok(result.tail.includes('line 100') && result.tail.includes('the summary'));
  assert.ok(!result.tail.includes('line 40'), 'only the last lines');
  const ok = await runStep({ name: 'fine', argv: ['-e', 'console.log("done")'] });
  assert.deepEqual([ok.code, ok.tail], [0, ['done']]);
});
