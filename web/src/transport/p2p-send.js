// Sending on p2p channels: an update goes to every neighbour's channel, an
// ACK to its sender's. A channel that is not open is skipped: on `p2p` a
// missing update is loss the receiver counts, and the ACK timeout covers it.
// A neighbour on the relay fallback gets the same messages as a LINK on the
// membership WebSocket.

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
 * Sends a LINK through the relay (the fallback path, docs/protocol.md §14.1).
 * @typedef {(msg: import('../../../core/protocol.js').LinkMsg) => void} RelaySend
 */

/**
 * What fan-out needs of a link.
 * @typedef {{ id: number, reported: boolean, path: string, channel: RTCDataChannel | null }} SendLink
 */

/**
 * Fan-out: the update is encoded once and sent on the channel of every
 * neighbour the client core knows of; the neighbours on the relay fallback
 * get it in one LINK naming them all.
 * @param {Iterable<SendLink>} links
 * @param {import('../../../core/protocol.js').UpdateMsg} update
 * @param {SendCounters & { relayedUpdates?: number }} counters
 * @param {RelaySend | null} [relay]
 */
export function fanOutUpdate(links, update, counters, relay = null) {
  const bytes = encode(update);
  /** @type {number[]} */
  const viaRelay = [];
  for (const link of links) {
    if (!link.reported) continue;
    if (link.path === 'relay' && relay) viaRelay.push(link.id);
    else sendOn(link.channel, bytes, counters);
  }
  if (viaRelay.length && relay) {
    relay({ type: MsgType.LINK, peers: viaRelay, message: update });
    counters.relayedUpdates = (counters.relayedUpdates ?? 0) + viaRelay.length;
  }
}

/**
 * ACKs an update the way its sender's link goes now: its channel, or the relay.
 * @param {SendLink | null} link the sender's, null when there is no link
 * @param {number} sender
 * @param {number} seq
 * @param {number} acker our client id
 * @param {SendCounters & { relayedAcks?: number }} counters
 * @param {RelaySend | null} [relay]
 */
export function sendAck(link, sender, seq, acker, counters, relay = null) {
  /** @type {import('../../../core/protocol.js').AckMsg} */
  const ack = { type: MsgType.ACK, sender, seq, acker };
  if (link?.path === 'relay' && relay) {
    relay({ type: MsgType.LINK, peers: [sender], message: ack });
    counters.relayedAcks = (counters.relayedAcks ?? 0) + 1;
    return;
  }
  sendOn(link?.channel ?? null, encode(ack), counters);
}
