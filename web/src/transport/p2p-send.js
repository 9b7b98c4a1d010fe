// Sending on p2p channels: an update goes to every neighbour's channel, an
// ACK to its sender's. A channel that is not open is skipped: on `p2p` a
// missing update is loss the receiver counts, and the ACK timeout covers it.

import { MsgType, encode } from '../../../core/protocol.js';

/**
 * @typedef {object} SendCounters
 * @property {number} sendErrors sends the channel threw on (closing under us, buffer full)
 */

/**
 * Sends one frame on a channel if it is open.
 * @param {RTCDataChannel | null} channel
 * @param {Uint8Array} bytes
 * @param {SendCounters} counters
 * @returns {boolean} whether the channel took it
 */
export function sendOn(channel, bytes, counters) {
  if (!channel || channel.readyState !== 'open') return false;
  try {
    // encode() returns a Uint8Array over a plain ArrayBuffer; the DOM lib wants that spelled out.
    channel.send(/** @type {Uint8Array<ArrayBuffer>} */ (bytes));
    return true;
  } catch {
    counters.sendErrors++;
    return false;
  }
}

/**
 * Fan-out: the update is encoded once and sent on the channel of every
 * neighbour the client core knows of (whose channel has opened).
 * @param {Iterable<{ reported: boolean, channel: RTCDataChannel | null }>} links
 * @param {import('../../../core/protocol.js').UpdateMsg} update
 * @param {SendCounters} counters
 */
export function fanOutUpdate(links, update, counters) {
  const bytes = encode(update);
  for (const link of links) if (link.reported) sendOn(link.channel, bytes, counters);
}

/**
 * ACKs an update on its sender's channel.
 * @param {RTCDataChannel | null} channel the sender's, null when there is no link
 * @param {number} sender
 * @param {number} seq
 * @param {number} acker our client id
 * @param {SendCounters} counters
 */
export function sendAck(channel, sender, seq, acker, counters) {
  sendOn(channel, encode({ type: MsgType.ACK, sender, seq, acker }), counters);
}
