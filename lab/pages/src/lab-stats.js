// What the lab page (lab.js) reads from getStats: the counters of one
// RTCPeerConnection (setup bytes and packets, idle keepalive, STUN checks,
// the selected pair), and what one end knows about an open connection.

import { readChannel, setupStats } from '../../../web/src/transport/p2p.js';
import { now } from './lab-conn.js';

/** @typedef {import('./lab-conn.js').Conn} Conn */

/**
 * What one end knows about a connection once open: timings, the channel as
 * the browser reports it, setup bytes (setupStats) and the full counters.
 * @param {Conn} c
 */
export async function describe(c) {
  const [setup, counters] = await Promise.all([setupStats(c.pc).catch(() => null), pcCounters(c.pc).catch(() => null)]);
  return {
    role: c.role,
    timings: { ...c.timings },
    localCandidates: c.localCandidates,
    channel: readChannel(c.channels[0]),
    channels: c.channels.length,
    setup,
    counters,
  };
}

/**
 * Counters of one RTCPeerConnection from getStats: transport totals
 * (Chromium), candidate-pair sums (both; Firefox has no transport totals),
 * STUN check counts, data-channel totals and the selected pair's addresses.
 * A field a browser does not report stays null.
 * @param {RTCPeerConnection} pc
 */
export async function pcCounters(pc) {
  const report = await pc.getStats();
  /** @type {Map<string, any>} */
  const byId = new Map();
  report.forEach((s) => byId.set(s.id, s));
  const PAIR_FIELDS = ['bytesSent', 'bytesReceived', 'packetsSent', 'packetsReceived', 'requestsSent', 'requestsReceived',
    'responsesSent', 'responsesReceived', 'consentRequestsSent', 'packetsDiscardedOnSend', 'bytesDiscardedOnSend'];
  const TRANSPORT_FIELDS = ['bytesSent', 'bytesReceived', 'packetsSent', 'packetsReceived'];
  const CHANNEL_FIELDS = ['bytesSent', 'bytesReceived', 'messagesSent', 'messagesReceived'];
  /** @param {string[]} fields */
  const zero = (fields) => Object.fromEntries(fields.map((f) => [f, /** @type {number | null} */ (null)]));
  const pairs = zero(PAIR_FIELDS);
  const transport = zero(TRANSPORT_FIELDS);
  const dataChannels = zero(CHANNEL_FIELDS);
  /** @param {Record<string, number | null>} into @param {any} s @param {string[]} fields */
  const add = (into, s, fields) => { for (const f of fields) if (typeof s[f] === 'number') into[f] = (into[f] ?? 0) + s[f]; };
  let selected = null;
  let pairCount = 0;
  /** @type {Set<number>} */
  const localPorts = new Set();
  let hasTransport = false;
  for (const s of byId.values()) {
    if (s.type === 'transport') {
      hasTransport = true;
      add(transport, s, TRANSPORT_FIELDS);
      if (s.selectedCandidatePairId) selected = byId.get(s.selectedCandidatePairId) ?? selected;
    } else if (s.type === 'candidate-pair') {
      pairCount++;
      add(pairs, s, PAIR_FIELDS);
    } else if (s.type === 'data-channel') {
      add(dataChannels, s, CHANNEL_FIELDS);
    } else if (s.type === 'local-candidate' && typeof s.port === 'number' && (s.protocol ?? 'udp') === 'udp') {
      localPorts.add(s.port);
    }
  }
  if (!selected) {
    for (const s of byId.values()) {
      if (s.type === 'candidate-pair' && (s.selected || (s.nominated && s.state === 'succeeded'))) { selected = s; break; }
    }
  }
  const cand = (/** @type {string | undefined} */ cid) => {
    const s = cid ? byId.get(cid) : null;
    return s ? { address: s.address ?? s.ip ?? null, port: s.port ?? null, protocol: s.protocol ?? null, candidateType: s.candidateType ?? null } : null;
  };
  return {
    at: now(),
    pairCount,
    pairs,
    transport: hasTransport ? transport : null,
    dataChannels,
    localPorts: [...localPorts],
    selected: selected ? {
      local: cand(selected.localCandidateId),
      remote: cand(selected.remoteCandidateId),
      ...Object.fromEntries(PAIR_FIELDS.map((f) => [f, typeof selected[f] === 'number' ? selected[f] : null])),
    } : null,
  };
}
