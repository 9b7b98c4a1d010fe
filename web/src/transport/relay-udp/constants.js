// relay-udp's fixed parameters and counters, shared by its parts (and
// re-exported by ../relay-udp.js, where callers import them).

/** The data channel: negotiated out of band (no DCEP), unordered, never retransmitted. */
export const UDP_CHANNEL = Object.freeze({
  label: 'carlab-udp', negotiated: true, id: 0, ordered: false, maxRetransmits: 0,
});

/** Largest frame sent on the channel: one frame per packet (see relay/udp.js). */
export const MAX_MESSAGE_BYTES = 1100;
/** A channel not open after this long is given up and offered again. */
export const SETUP_TIMEOUT_MS = 15000;
/** Re-offer backoff: first delay (with 50..100 % jitter). */
export const RETRY_BASE_MS = 500;
/** Re-offer backoff: the cap of the delay. */
export const RETRY_MAX_MS = 15000;
/** connect() fails if no channel opened within this long. */
export const CONNECT_TIMEOUT_MS = 60000;

/**
 * What a relay-udp transport counts (reported in setupInfo().counters).
 * @typedef {ReturnType<typeof newUdpCounters>} UdpCounters
 */

/** Fresh counters, all zero. */
export function newUdpCounters() {
  return {
    /** Offers made (peer connection attempts). */
    offers: 0,
    /** Offers made again after a failed attempt or a lost channel. */
    dtlsRetries: 0,
    /** Attempts whose channel never opened (timeout, ICE/DTLS failure). */
    setupFailures: 0,
    /** Open channels that closed or failed. */
    channelDrops: 0,
    /** Open channels offered anew after the membership socket rejoined (its path was in doubt). */
    channelReplacements: 0,
    sendErrors: 0,
    /** Messages the core asked to send while no channel was open. */
    notSent: 0,
    badFrames: 0,
    staleSignals: 0,
    badCandidates: 0,
    updatesSeen: 0,
    discarded: 0,
  };
}
