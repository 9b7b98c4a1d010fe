// Sending on relay-udp's data channel. Every frame must fit one packet, so a
// turn's messages go out in as few frames of at most maxMessageBytes as they
// fit in (a lone message as itself, several as a BATCH).

import { encode, encodeBatchOfBodies, frameOfBody } from '../../../../core/protocol.js';

/** A BATCH frame's header: version, type, count (uint16). */
const BATCH_HEADER_BYTES = 4;
/** Each body in a BATCH is preceded by its length (uint16). */
const BODY_LENGTH_BYTES = 2;

/**
 * Packs message bodies (type + payload) in order into frames of at most
 * `maxBytes`; a body too large for that still goes, alone.
 * @param {Uint8Array[]} bodies
 * @param {number} maxBytes
 * @returns {Uint8Array[]}
 */
export function packBodies(bodies, maxBytes) {
  /** @type {Uint8Array[]} */
  const frames = [];
  let start = 0;
  let size = BATCH_HEADER_BYTES;
  const write = (/** @type {number} */ to) => {
    if (to - start === 1) frames.push(frameOfBody(bodies[start]));
    else if (to > start) frames.push(encodeBatchOfBodies(bodies.slice(start, to)));
  };
  for (let i = 0; i < bodies.length; i++) {
    const len = BODY_LENGTH_BYTES + bodies[i].length;
    if (i > start && size + len > maxBytes) {
      write(i);
      start = i;
      size = BATCH_HEADER_BYTES;
    }
    size += len;
  }
  write(bodies.length);
  return frames;
}

/**
 * The channel as the outbox uses it.
 * @typedef {Pick<RTCDataChannel, 'readyState' | 'send'>} SendChannel
 */

/**
 * relay-udp's outgoing messages. Mode batched holds a turn's messages and
 * packs them at its end; otherwise each goes in its own frame at once.
 */
export class UdpOutbox {
  /**
   * @param {object} o
   * @param {boolean} o.batched
   * @param {number} o.maxMessageBytes
   * @param {() => SendChannel | null} o.channel the open channel, if any
   * @param {import('./constants.js').UdpCounters} o.counters notSent, sendErrors
   */
  constructor({ batched, maxMessageBytes, channel, counters }) {
    this.batched = batched;
    this.maxMessageBytes = maxMessageBytes;
    this.channel = channel;
    this.counters = counters;
    /** @type {Uint8Array[]} bodies waiting for the end of this turn */
    this.outgoing = [];
    this.flushQueued = false;
  }

  /**
   * Sends a message (the caller knows the channel is live).
   * @param {import('../../../../core/protocol.js').Message} msg
   */
  send(msg) {
    if (!this.batched) {
      this.sendBytes(encode(msg));
      return;
    }
    this.outgoing.push(encode(msg).subarray(1));
    if (!this.flushQueued) {
      this.flushQueued = true;
      // Everything this turn produces (the ACKs for a whole BATCH) goes out together.
      queueMicrotask(() => this.flush());
    }
  }

  /** Sends this turn's messages in frames of at most maxMessageBytes. */
  flush() {
    this.flushQueued = false;
    const bodies = this.outgoing;
    this.outgoing = [];
    for (const frame of packBodies(bodies, this.maxMessageBytes)) this.sendBytes(frame);
  }

  /** Drops what is queued (the channel went away: nobody could get it). */
  clear() {
    this.outgoing = [];
  }

  /** Whether messages wait for the end of the turn. */
  get pending() {
    return this.outgoing.length > 0;
  }

  /** @param {Uint8Array} bytes one frame */
  sendBytes(bytes) {
    const channel = this.channel();
    if (!channel || channel.readyState !== 'open') {
      this.counters.notSent++;
      return;
    }
    try {
      // The codec's frames live on plain ArrayBuffers (never shared), which is what send() takes.
      channel.send(/** @type {Uint8Array<ArrayBuffer>} */ (bytes));
    } catch {
      this.counters.sendErrors++;
    }
  }
}
