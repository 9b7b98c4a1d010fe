// --playout in the lab's clients (the sim's Node clients and the bench's browser
// pages): every client draws its neighbours in each mode from the same arrivals, at
// a fixed render rate, and measures each drawing against the sender's scripted
// pose at that instant (core/playout-probe.js). The measured window is the run's:
// from the end of the warm-up until stop.

import { DrawnErrorLab, PlayoutProbe } from '../../core/playout-probe.js';
import { scriptedPose } from '../../core/path.js';

/** @typedef {import('../../core/client.js').CarClient} CarClient */

/** A lab client's scripted path is the number its name ends in (`sim12`, `c12`). @param {string | undefined} name */
export function pathIndexOf(name) {
  const m = /(\d+)$/.exec(name ?? '');
  return m ? Number(m[1]) : null;
}

/** The probes of one process's (or page's) clients and their render loop. */
export class DrawnMeasurement {
  /**
   * @param {import('../../core/playout.js').PlayoutMode[]} modes
   * @param {number} fps frames per second
   * @param {CarClient[]} clients the clients, by the index their events come with
   */
  constructor(modes, fps, clients) {
    this.lab = new DrawnErrorLab(modes, Infinity);
    this.clients = clients;
    /** @type {PlayoutProbe[]} by client index */
    this.probes = [];
    /** @type {Map<number, number | null>[]} per client: sender id -> its scripted path, null when it has none */
    this.senderIndex = [];
    this.fps = fps;
    /** @type {ReturnType<typeof setInterval> | undefined} */
    this.timer = undefined;
  }

  /**
   * A client's event (CarClient's onEvent): every arrival goes to its probe; a member that left is forgotten.
   * @param {number} k the client's index @param {string} event @param {any} detail
   */
  onClientEvent(k, event, detail) {
    if (event === 'update') {
      const m = detail.update;
      (this.probes[k] ??= new PlayoutProbe(this.lab)).arrive(m.sender, m.seq, m.sendTime, detail.arrivalTime, m.pose);
    } else if (event === 'member-left') {
      this.probes[k]?.forget(detail.id);
    }
  }

  /** Renders from the end of the warm-up on. @param {number} warmupMs */
  start(warmupMs) {
    this.lab.timeline.startMs = performance.now() + warmupMs;
    clearInterval(this.timer);
    this.timer = setInterval(() => this.frame(), 1000 / this.fps);
  }

  stop() {
    clearInterval(this.timer);
  }

  /** One frame of every client's drawing. */
  frame() {
    const now = performance.now();
    if (now < this.lab.timeline.startMs) return;
    const epoch = performance.timeOrigin + now;
    this.probes.forEach((probe, k) => {
      const index = (this.senderIndex[k] ??= new Map());
      probe.render(now, (sender) => {
        if (!index.has(sender)) {
          const name = this.clients[k]?.members.get(sender)?.name;
          if (name === undefined) return null; // not known yet: asked again next frame
          index.set(sender, pathIndexOf(name));
        }
        const i = index.get(sender);
        return i == null ? null : scriptedPose(i, epoch);
      });
    });
  }

  toJSON() {
    return this.lab.toJSON();
  }
}
