// What one client saw around the network events of a run (--net-events):
// which of its updates went out after each event began and after its network
// was back, and which updates of its neighbours reached it after that. The
// lab turns every member's record into recovery figures (lab/report/recovery.js;
// the definitions are in docs/architecture.md "Recovery").
//
// The lab tells the probe of an event's moments a little after they happened
// (a message between processes), so the probe keeps a short history of what
// it sent and received and reads the moments back from it.

/** Sends and arrivals per sender kept for a moment told late (~10 s at the default cycle). */
const HISTORY = 64;
/** Arrivals kept per sender after each event's network is back: enough to find the first fresh one. */
const AFTER_BACK_CAP = 256;

/**
 * A probe's record, sent with the client's stats.
 * @typedef {object} RecoveryRecord
 * @property {Record<string, number | null>} beganSeq per event index: the first seq this client sent at or after the event began
 * @property {Record<string, number | null>} backSeq per event index: the first seq sent at or after its network was back
 * @property {Record<string, Record<string, [number, number][]>>} arrivals per event index, per sender id: [seq, ms after the
 *   network was back] of what arrived from then on, in arrival order (at most AFTER_BACK_CAP)
 * @property {[number, number][]} left [member id, the event under way or last begun (-1: none)] of every MEMBER_LEFT seen
 */

/**
 * A ring of (seq, time) pairs.
 */
class History {
  constructor() {
    this.seqs = new Float64Array(HISTORY);
    this.times = new Float64Array(HISTORY);
    this.n = 0;
  }

  /** @param {number} seq @param {number} at */
  push(seq, at) {
    const i = this.n++ % HISTORY;
    this.seqs[i] = seq;
    this.times[i] = at;
  }

  /**
   * The entries at or after `from`, oldest first.
   * @param {number} from
   * @returns {[number, number][]}
   */
  since(from) {
    /** @type {[number, number][]} */
    const out = [];
    for (let k = Math.max(0, this.n - HISTORY); k < this.n; k++) {
      const i = k % HISTORY;
      if (this.times[i] >= from) out.push([this.seqs[i], this.times[i]]);
    }
    return out;
  }
}

/**
 * Follows one client through a run's network events.
 */
export class RecoveryProbe {
  constructor() {
    this.sends = new History();
    /** @type {Map<number, History>} per sender */
    this.heard = new Map();
    /** @type {Record<string, number | null>} */
    this.beganSeq = {};
    /** @type {Record<string, number | null>} */
    this.backSeq = {};
    /** @type {Map<number, { at: number, bySender: Map<number, [number, number][]> }>} per event whose network is back */
    this.afterBack = new Map();
    /** @type {[number, number][]} */
    this.left = [];
    /** The event under way or last begun. */
    this.lastEvent = -1;
    /** @type {{ index: number, at: number, key: 'beganSeq' | 'backSeq' }[]} moments whose first send is still to come */
    this.waitingForSend = [];
  }

  /** This client sent `seq` at `at` (its own clock). @param {number} seq @param {number} at */
  sent(seq, at) {
    this.sends.push(seq, at);
    if (this.waitingForSend.length === 0) return;
    this.waitingForSend = this.waitingForSend.filter((w) => {
      if (at < w.at) return true;
      this[w.key][w.index] = seq;
      return false;
    });
  }

  /** An update of `sender` arrived. @param {number} sender @param {number} seq @param {number} at */
  arrived(sender, seq, at) {
    let h = this.heard.get(sender);
    if (!h) this.heard.set(sender, (h = new History()));
    h.push(seq, at);
    for (const watch of this.afterBack.values()) {
      if (at < watch.at) continue;
      let list = watch.bySender.get(sender);
      if (!list) watch.bySender.set(sender, (list = []));
      if (list.length < AFTER_BACK_CAP) list.push([seq, at - watch.at]);
    }
  }

  /** A neighbour left the group. @param {number} id */
  memberLeft(id) {
    this.left.push([id, this.lastEvent]);
  }

  /**
   * Fed from a CarClient's onEvent: its sends, arrivals and departures.
   * @param {string} event @param {any} detail
   */
  onClientEvent(event, detail) {
    if (event === 'sent') this.sent(detail.seq, detail.sendTime);
    else if (event === 'update') this.arrived(detail.update.sender, detail.update.seq, detail.arrivalTime);
    else if (event === 'member-left') this.memberLeft(detail.id);
  }

  /**
   * An event began, or its network is back, at `at` on this client's clock
   * (which may be a little before now).
   * @param {number} index @param {'began' | 'back'} phase @param {number} at
   */
  mark(index, phase, at) {
    const key = phase === 'began' ? 'beganSeq' : 'backSeq';
    if (phase === 'began') this.lastEvent = Math.max(this.lastEvent, index);
    const first = this.sends.since(at)[0];
    this[key][index] = first ? first[0] : null;
    if (!first) this.waitingForSend.push({ index, at, key });
    if (phase !== 'back') return;
    /** @type {Map<number, [number, number][]>} */
    const bySender = new Map();
    for (const [sender, h] of this.heard) {
      bySender.set(sender, h.since(at).map(([seq, t]) => /** @type {[number, number]} */ ([seq, t - at])));
    }
    this.afterBack.set(index, { at, bySender });
  }

  /** @returns {RecoveryRecord} */
  toJSON() {
    /** @type {RecoveryRecord['arrivals']} */
    const arrivals = {};
    for (const [index, watch] of this.afterBack) {
      arrivals[index] = Object.fromEntries([...watch.bySender].map(([sender, list]) => [String(sender), list]));
    }
    return { beganSeq: { ...this.beganSeq }, backSeq: { ...this.backSeq }, arrivals, left: this.left.slice() };
  }
}
