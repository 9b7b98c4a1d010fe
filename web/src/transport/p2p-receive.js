// What arrives on a p2p channel: frames decoded, updates and ACKs checked
// against the neighbour the channel belongs to, and handed to the client core.

import { MsgType, ProtocolError, decode } from '../../../core/protocol.js';

/**
 * The receiving side's counters, shared with the transport's.
 * @typedef {object} ReceiveCounters
 * @property {number} updatesSeen updates from the right sender, before the discard knob
 * @property {number} discarded updates the discard knob dropped
 */

/**
 * Where decoded messages go: the client core's handlers.
 * @typedef {Pick<import('../../../core/client.js').TransportHandlers, 'onUpdate' | 'onAck'>} ReceiveSink
 */

/**
 * @typedef {object} ReceiverOptions
 * @property {ReceiveCounters} counters
 * @property {() => number} now arrival clock
 * @property {number} [discardIncomingFraction] test knob: drop this fraction of
 *   received updates before they reach the client (deterministically, every
 *   round(1/f)-th), to prove loss is counted; counted in `discarded`
 */

/** Decodes the frames of every link and passes their messages on. */
export class P2PReceiver {
  /** @param {ReceiverOptions} options */
  constructor(options) {
    this.counters = options.counters;
    this.now = options.now;
    const f = options.discardIncomingFraction;
    /** Drop every n-th update seen (0: none). */
    this.discardEvery = f ? Math.round(1 / f) : 0;
  }

  /**
   * One frame from neighbour `fromId`'s channel. A peer's garbage is
   * ignored, never thrown; an update or ACK claiming another sender is
   * spoofed and dropped.
   * @param {number} fromId
   * @param {Uint8Array | ArrayBuffer | ArrayBufferView} data
   * @param {ReceiveSink} sink
   */
  receive(fromId, data, sink) {
    const arrival = this.now();
    const frame = decode(data);
    if (frame instanceof ProtocolError) return;
    const messages = frame.type === MsgType.BATCH ? frame.messages : [frame];
    for (const m of messages) this.deliver(fromId, m, arrival, sink);
  }

  /**
   * One decoded message from neighbour `fromId` (from its channel, or from
   * the relay on the fallback path): checked and passed on, the same way for both.
   * @param {number} fromId
   * @param {import('../../../core/protocol.js').Message} m
   * @param {number} arrival
   * @param {ReceiveSink} sink
   */
  deliver(fromId, m, arrival, sink) {
    if (m.type === MsgType.UPDATE) {
      if (m.sender !== fromId) return;
      this.counters.updatesSeen++;
      if (this.discardEvery && this.counters.updatesSeen % this.discardEvery === 0) {
        this.counters.discarded++;
        return;
      }
      sink.onUpdate(m, arrival);
    } else if (m.type === MsgType.ACK) {
      if (m.acker !== fromId) return;
      sink.onAck(m);
    }
  }
}
