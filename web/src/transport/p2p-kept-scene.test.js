// What a p2p member hands the server of its scene: its own edits, once each, all again after a rejoin.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MoreFlag, MsgType } from '../../../core/protocol.js';
import { SceneToServer } from './p2p-kept-scene.js';

/** @type {import('../../../core/protocol.js').Pose} */
const POSE = [0, 0, 0, 0, 0, 0, 1];
/** @param {number} id @param {number} version @param {number} writer */
const rec = (id, version, writer) => ({ id, version, writer, kind: 1, removed: false, pose: POSE });
/** @param {ReturnType<typeof rec>[]} records @returns {import('../../../core/protocol.js').UpdateMsg} */
const update = (records) => ({ type: MsgType.UPDATE, sender: 5, seq: 1, sendTime: 0, pose: POSE, object: null, scene: { digest: 0, held: 0, records } });
const welcome = (more = MoreFlag.KEPT_SCENE) => ({ type: MsgType.WELCOME, clientId: 5, serverTime: 0, members: [], capabilities: 0, more });

test('own edits go to the server, others\' records (a repair) do not; all again after a rejoin with our id', () => {
  /** @type {import('../../../core/protocol.js').KeptSceneMsg[]} */
  const sent = [];
  const out = new SceneToServer((m) => sent.push(m));
  out.sent(update([rec(1, 1, 5)]), 5);
  assert.equal(sent.length, 0, 'nothing before the relay granted it');
  out.welcomed(/** @type {any} */ (welcome()));
  out.sent(update([rec(1, 2, 5), rec(2, 4, 9)]), 5);
  out.sent(update([rec(2, 4, 9)]), 5);
  out.sent(update([rec(3, 1, 5)]), 5);
  assert.deepEqual(sent.map((m) => m.records.map((r) => `${r.id}v${r.version}`)), [['1v2'], ['3v1']]);
  out.rejoined(/** @type {any} */ (welcome()), true);
  assert.deepEqual(sent[2].records.map((r) => r.id), [1, 3], 'the newest of each, again');
  out.rejoined(/** @type {any} */ (welcome()), false);
  assert.equal(sent.length, 3, 'under a new id our records are not ours to send');
  const old = new SceneToServer((m) => sent.push(m));
  old.welcomed(/** @type {any} */ ({ ...welcome(), more: undefined }));
  old.sent(update([rec(1, 1, 5)]), 5);
  assert.equal(sent.length, 3, 'a relay that does not keep scenes gets none');
});
