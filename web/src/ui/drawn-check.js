// The AR view's drawn-error check (?drawn=MODES, the lab's browser gate): every
// neighbour drawn in each mode from the same arrivals as the avatars, at each
// frame the page renders, and measured against where that neighbour really is:
// the synthetic camera's path on its own page (web/src/ar/synthetic.js
// syntheticTruthAt), whose first frame's epoch the lab hands over with
// truthOf(name, startEpoch). Frames where that video has no whole marker in view
// are not judged. core/playout-probe.js does the drawing and measuring.

import { DrawnMeasurement } from '../../../core/playout-probe.js';
import { parsePlayoutModes } from '../../../core/playout.js';
import { syntheticTruthAt } from '../ar/synthetic.js';
import { isUntracked } from '../ar/scene.js';

/**
 * @param {string | null} text the `drawn` query parameter: playout modes, comma-separated
 * @param {() => import('../../../core/client.js').CarClient | null} clientOf the page's client, once it joined
 * @returns {{ onClientEvent: (event: string, detail: any) => void, frame: (now: number) => void,
 *   truthOf: (name: string, startEpoch: number) => void, start: (delayMs?: number) => void, stop: () => void, toJSON: () => any } | null}
 */
export function createDrawnCheck(text, clientOf) {
  if (!text) return null;
  const modes = parsePlayoutModes(text);
  /** @type {Map<string, number>} member name -> its synthetic video's first frame, ms since 1970 */
  const starts = new Map();
  const measurement = new DrawnMeasurement(modes, (_k, sender, epochMs) => {
    const name = clientOf()?.members.get(sender)?.name;
    const start = name === undefined ? undefined : starts.get(name);
    return start === undefined ? null : syntheticTruthAt(epochMs - start);
  }, { accept: (pose) => !isUntracked(pose) });
  return {
    onClientEvent: (event, detail) => measurement.onClientEvent(0, event, detail),
    frame: (now) => measurement.frame(now),
    truthOf: (name, startEpoch) => { starts.set(name, startEpoch); },
    start: (delayMs = 0) => measurement.start(delayMs, 0),
    stop: () => measurement.stop(),
    toJSON: () => measurement.toJSON(),
  };
}
