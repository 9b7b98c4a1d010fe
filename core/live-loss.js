// A receiver's live loss estimate, for a phone's HUD: the bench has the
// sender's own counts (metrics.aggregateStreams), a phone only has what it
// received. Per sender it counts seqs against distinct updates received since
// the sender's first update after we (re)joined: while we were apart the
// sender's updates went to nobody, so their seq gap then is not loss.

/**
 * @typedef {object} LossSpan
 * @property {number | null} first first seq of the running span; null: starts at the next update
 * @property {number} base updates received from the sender before `first`
 * @property {number} expected seqs of the spans already closed
 * @property {number} got updates received in the spans already closed
 */

/** The counts a span needs from a ReceiveStream (core/metrics.js). @typedef {{ newestSeq: number, received: number }} StreamCounts */

/**
 * Seqs expected and distinct updates received in the running span.
 * @param {LossSpan} span @param {StreamCounts} stream
 */
function runningCounts(span, stream) {
  if (span.first === null) return { expected: 0, got: 0 };
  const expected = stream.newestSeq - span.first + 1;
  return { expected, got: Math.min(stream.received - span.base, expected) };
}

/**
 * Loss estimate over the members' streams, re-based at every rejoin.
 */
export class LiveLoss {
  constructor() {
    /** @type {Map<number, LossSpan>} by sender id */
    this.spans = new Map();
  }

  /**
   * An update from `sender` was applied (the stream already counts it):
   * its span starts here unless one is running.
   * @param {number} sender @param {number} seq @param {StreamCounts | undefined} stream
   */
  applied(sender, seq, stream) {
    const span = this.spans.get(sender) ?? { first: null, base: 0, expected: 0, got: 0 };
    if (span.first !== null) return;
    span.first = seq;
    span.base = (stream?.received ?? 1) - 1; // received before this update
    this.spans.set(sender, span);
  }

  /** Whether the sender's stream counts (an update of it was applied, and it has not left). @param {number} sender */
  tracks(sender) {
    return this.spans.has(sender);
  }

  /** The sender left the group: its stream no longer counts. @param {number} sender */
  left(sender) {
    this.spans.delete(sender);
  }

  /**
   * We rejoined after an outage: every running span is closed with what it
   * counted, and a new one starts at each sender's next update.
   * @param {Map<number, StreamCounts>} streams
   */
  rejoined(streams) {
    for (const [sender, span] of this.spans) {
      const stream = streams.get(sender);
      if (!stream) continue;
      const c = runningCounts(span, stream);
      span.expected += c.expected;
      span.got += c.got;
      span.first = null;
    }
  }

  /**
   * Loss % over the streams of the present members (null before any update).
   * @param {Map<number, StreamCounts>} streams
   * @param {(sender: number) => boolean} isMember
   * @returns {number | null}
   */
  lossPct(streams, isMember) {
    let expected = 0;
    let got = 0;
    for (const [sender, stream] of streams) {
      const span = this.spans.get(sender);
      if (!span || !isMember(sender)) continue;
      const c = runningCounts(span, stream);
      expected += span.expected + c.expected;
      got += span.got + c.got;
    }
    return expected > 0 ? (100 * (expected - got)) / expected : null;
  }
}
