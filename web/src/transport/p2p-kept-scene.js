// A p2p member's part in kept scenes (docs/protocol.md §5.14): its scene
// records travel peer to peer, which the server never sees, so the member also
// hands its own edits to the server on its membership connection (a KEPT_SCENE
// to the relay), once per edit, and all of them again after a rejoin, when some
// may have been sent to a connection that was dying. The server keeps them for
// the group's next first member; it forwards them to nobody.

import { KEPT_SCENE_RECORDS_MAX, MoreFlag, MsgType } from '../../../core/protocol.js';

/**
 * What goes to the server: the newest record of each object this member wrote.
 */
export class SceneToServer {
  /** @param {(m: import('../../../core/protocol.js').KeptSceneMsg) => void} send on the membership connection */
  constructor(send) {
    this.send = send;
    /** The relay keeps scenes and takes ours (it granted KEPT_SCENE). */
    this.granted = false;
    /** By object id, the newest record we wrote, oldest first. @type {Map<number, import('../../../core/protocol.js').SceneRecord>} */
    this.own = new Map();
  }

  /** @param {import('../../../core/protocol.js').WelcomeMsg} welcome */
  welcomed(welcome) {
    this.granted = ((welcome.more ?? 0) & MoreFlag.KEPT_SCENE) !== 0;
  }

  /**
   * An UPDATE goes out to the neighbours: the records in it that we wrote go to the server too.
   * @param {import('../../../core/protocol.js').UpdateMsg} update @param {number} myId
   */
  sent(update, myId) {
    if (!this.granted || !update.scene) return;
    const own = update.scene.records.filter((r) => r.writer === myId);
    if (own.length === 0) return;
    for (const record of own) {
      this.own.delete(record.id);
      this.own.set(record.id, record);
    }
    while (this.own.size > KEPT_SCENE_RECORDS_MAX) this.own.delete(/** @type {number} */ (this.own.keys().next().value));
    this.send({ type: MsgType.KEPT_SCENE, records: own });
  }

  /**
   * Rejoined: with our id kept, everything we wrote goes again; under a new id our records name
   * a writer that is not us any more (the transport ends itself then).
   * @param {import('../../../core/protocol.js').WelcomeMsg} welcome @param {boolean} sameId
   */
  rejoined(welcome, sameId) {
    this.welcomed(welcome);
    if (!sameId) this.own.clear();
    if (this.granted && this.own.size > 0) this.send({ type: MsgType.KEPT_SCENE, records: [...this.own.values()] });
  }
}
