import { test } from 'node:test';
import assert from 'node:assert/strict';

import { socketBufferCeiling } from './socket-buffers.js';

test('socketBufferCeiling: tcp_wmem and tcp_rmem ceilings added; 64 MB where they cannot be read', () => {
  const sysctl = { tcp_wmem: '4096\t16384\t4194304\n', tcp_rmem: '4096\t131072\t33554432\n' };
  assert.equal(socketBufferCeiling((name) => /** @type {any} */ (sysctl)[name]), 4194304 + 33554432);
  assert.equal(socketBufferCeiling(() => { throw new Error('ENOENT'); }), 64 * 2 ** 20);
  assert.equal(socketBufferCeiling(() => 'garbage'), 64 * 2 ** 20);
  assert.ok(socketBufferCeiling() > 0);
});
