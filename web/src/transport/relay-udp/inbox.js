// Receiving on relay-udp's data channel: UPDATEs, ACKs and ACKED_ALLs from the
// relay, one frame per packet, handed to the client core. A test knob drops
// every n-th UPDATE to simulate loss.

import { MsgType, ProtocolError, decode, unbatch } from '../../../../core/protocol.js';

/**
 * Every how many received updates the discard knob drops one (0: never).
 * @param {number | undefined} fraction of updates to drop
 */
export function discardEveryOf(fraction) {
  return fraction ? Math.round(1 / fraction) : 0;
}

/**
 * Frames from the channel to the client core, counted.
 */
export class UdpInbox {
  /**
   * @param {object} o
   * @param {number} o.discardEvery drop every n-th update (0: none)
   * @param {() => number} o.now
   * @param {import('./constants.js').UdpCounters} o.counters updatesSeen, discarded, badFrames
   */
  constructor({ discardEvery, now, counters }) {
    this.discardEvery = discardEvery;
    this.now = now;
    this.counters = counters;
  }

  /**
   * Decodes one frame and delivers its messages.
   * @param {unknown} data what the channel gave (an ArrayBuffer)
   * @param {import('../../../../core/client.js').TransportHandlers} handlers
   * @returns {ProtocolError | null} the frame's error, when it is garbage (the caller gives up the connection)
   */
  receive(data, handlers) {
    const arrival = this.now();
    // decode() checks what it gets: anything not binary comes back as a ProtocolError.
    const frame = decode(/** @type {ArrayBuffer} */ (data));
    if (frame instanceof ProtocolError) {
      this.counters.badFrames++;
      return frame;
    }
    for (const m of unbatch(frame)) {
      switch (m.type) {
        case MsgType.UPDATE:
          this.counters.updatesSeen++;
          if (this.discardEvery && this.counters.updatesSeen % this.discardEvery === 0) {
            this.counters.discarded++;
            continue;
          }
          handlers.onUpdate(m, arrival);
          break;
        case MsgType.ACK: handlers.onAck(m); break;
        case MsgType.ACKED_ALL: handlers.onAckedAll(m); break;
        default: break; // nothing else travels on the channel
      }
    }
    return null;
  }
}
