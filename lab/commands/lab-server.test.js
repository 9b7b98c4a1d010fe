// A lab server keeps no scene unless told where: the lab's runs start from empty groups.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withSceneStoreOff } from './lab-server.js';

test('a lab server keeps no scene unless --scene-store (or its variable) says where', () => {
  assert.deepEqual(withSceneStoreOff(['--http'], {}), ['--http', '--no-scene-store']);
  assert.deepEqual(withSceneStoreOff(['--http', '--scene-store', 'd'], {}), ['--http', '--scene-store', 'd']);
  assert.deepEqual(withSceneStoreOff(['--scene-store=d'], {}), ['--scene-store=d']);
  assert.deepEqual(withSceneStoreOff(['--http'], { CARLAB_SCENE_STORE: 'd' }), ['--http']);
  assert.deepEqual(withSceneStoreOff(['--help'], {}), ['--help']);
});
