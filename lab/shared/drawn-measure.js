// The truth of the lab's scripted clients for --playout (core/playout-probe.js
// DrawnMeasurement): a sim client or a bench peer walks the scripted path of the
// number its name ends in (`sim12`, `c12`), on the epoch clock every process of
// the machine shares.

import { scriptedPose } from '../../core/path.js';

/** @typedef {import('../../core/client.js').CarClient} CarClient */

/** A lab client's scripted path is the number its name ends in. @param {string | undefined} name */
export function pathIndexOf(name) {
  const m = /(\d+)$/.exec(name ?? '');
  return m ? Number(m[1]) : null;
}

/**
 * The truth for clients whose members walk scripted paths: the sender's path at that instant.
 * @param {CarClient[]} clients by the index their events come with
 * @returns {import('../../core/playout-probe.js').TruthOf}
 */
export function scriptedTruth(clients) {
  /** @type {Map<number, number | null>[]} per client: sender id -> its path, null when it has none */
  const paths = [];
  return (k, sender, epochMs) => {
    const known = (paths[k] ??= new Map());
    if (!known.has(sender)) {
      const name = clients[k]?.members.get(sender)?.name;
      if (name === undefined) return null; // not known yet: asked again next frame
      known.set(sender, pathIndexOf(name));
    }
    const i = known.get(sender);
    return i == null ? null : scriptedPose(i, epochMs);
  };
}
