// What relay-udp reports about its channel: the setup of every channel that
// opened, the last failures, and the live channel's parameters.

import { readChannel } from '../p2p.js';
import { UDP_CHANNEL } from './constants.js';

/** Failures kept for setupInfo(). */
export const FAILURES_KEPT = 20;

/**
 * A failed attempt or a channel that went away.
 * @typedef {import('./link.js').LinkSetup & { afterMs: number, wasOpen: boolean, error: string }} FailureRecord
 */

/**
 * Setup delays and failures over the transport's life.
 */
export class SetupLog {
  constructor() {
    /** @type {number | null} HELLO to WELCOME on the WebSocket */
    this.signalingMs = null;
    /** @type {import('./link.js').LinkSetup[]} one entry per channel that opened */
    this.peers = [];
    /** @type {FailureRecord[]} attempts that failed or channels that went away (the last FAILURES_KEPT) */
    this.failures = [];
  }

  /** @param {import('./link.js').LinkSetup} setup */
  opened(setup) {
    this.peers.push(setup);
  }

  /** @param {FailureRecord} record */
  failed(record) {
    this.failures.push(record);
    if (this.failures.length > FAILURES_KEPT) this.failures.shift();
  }

  /**
   * A copy for setupInfo().
   * @param {import('./constants.js').UdpCounters} counters
   * @param {string} lastError
   */
  snapshot(counters, lastError) {
    return {
      signalingMs: this.signalingMs,
      peers: this.peers.slice(),
      failures: this.failures.slice(),
      counters: { ...counters },
      lastError: lastError || null,
    };
  }
}

/**
 * channelInfo(): the live channel's parameters, else those the last open one
 * reported (or the ones asked for) with `channels: 0`.
 * @param {RTCDataChannel | null} channel the open channel
 * @param {ReturnType<typeof readChannel> | null} lastRead
 */
export function channelInfoOf(channel, lastRead) {
  if (channel) return { kind: 'rtcdatachannel', ...readChannel(channel), channels: 1, uniform: true };
  return {
    kind: 'rtcdatachannel',
    ...(lastRead ?? { ordered: UDP_CHANNEL.ordered, maxRetransmits: UDP_CHANNEL.maxRetransmits, maxPacketLifeTime: null, protocol: '' }),
    channels: 0,
    uniform: true,
  };
}
