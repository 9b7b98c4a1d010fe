// What a resumed session makes good (docs/protocol.md §8.10). A connection
// that died swallowed what it was handed: the UPDATEs this member wrote to it
// and the copies the relay wrote to it. After a resume (a WELCOME with the
// RESUMED bit) the member sends its recent UPDATEs again, and the relay drops
// those it had; the relay writes its unanswered copies again, and the member
// skips those it had (their ACK was what got lost). Both ends' paths are
// ordered, so "had" is "at or below the newest seq of that sender".

/** UPDATEs kept for sending again: ~10 s at the default 167 ms cycle, longer than the dead-path check waits. */
export const REPLAY_KEEP = 64;

/**
 * The member's side of a resume.
 */
export class ResumeReplay {
  constructor() {
    /** @type {import('../../../core/protocol.js').UpdateMsg[]} our newest UPDATEs, oldest first */
    this.recent = [];
    /** @type {Map<number, number>} the newest seq received from each sender */
    this.newestFrom = new Map();
    /** The current connection continues a resumed session: copies of what we had are skipped. */
    this.skipping = false;
    /** Our UPDATEs sent again after resumes, and the relay's copies skipped as had. */
    this.counters = { resent: 0, skipped: 0 };
  }

  /** @param {import('../../../core/protocol.js').UpdateMsg} update we sent it */
  sent(update) {
    this.recent.push(update);
    if (this.recent.length > REPLAY_KEEP) this.recent.shift();
  }

  /**
   * Whether an UPDATE that came in is new (false: a replayed copy we had).
   * @param {{ sender: number, seq: number }} m
   */
  received(m) {
    const newest = this.newestFrom.get(m.sender);
    if (newest !== undefined && m.seq <= newest) {
      if (this.skipping) { this.counters.skipped++; return false; }
      return true; // not after a resume: the core judges it (unordered paths may reorder)
    }
    this.newestFrom.set(m.sender, m.seq);
    return true;
  }

  /** A member left: its id may come back as somebody new, whose seqs start again. @param {number} id */
  left(id) {
    this.newestFrom.delete(id);
  }

  /**
   * A WELCOME came. Resumed: returns the UPDATEs to send again (the relay
   * drops those it has). Otherwise the session is new: nothing carries over.
   * @param {boolean} resumed
   * @returns {import('../../../core/protocol.js').UpdateMsg[]}
   */
  welcomed(resumed) {
    this.skipping = resumed;
    if (!resumed) {
      this.recent = [];
      return [];
    }
    this.counters.resent += this.recent.length;
    return this.recent.slice();
  }
}
