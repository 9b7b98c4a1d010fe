// The p2p transports' own data channel on a PeerJS connection: opening the
// pre-negotiated channel, timing the connection's setup phases, reading the
// channel's parameters back from the browser, and summing them up.
//
// PeerJS's own `reliable: false` only sets ordered:false (retransmits stay
// unlimited), so both sides open a channel of their own with the parameters
// we want (docs/architecture.md, "Transports"), and report what the browser
// says it got.

/** Negotiated channel id both sides use for carlab traffic (PeerJS's own channel is in-band). */
export const CARLAB_CHANNEL_ID = 10;

/** Channel parameters per transport. */
export const CHANNEL_PARAMS = Object.freeze({
  p2p: Object.freeze({ ordered: false, maxRetransmits: 0 }),
  'p2p-reliable': Object.freeze({ ordered: true }),
});

/** @typedef {keyof typeof CHANNEL_PARAMS} P2PMode */

/**
 * The parameters of a live channel, as the browser reports them.
 * @typedef {object} ChannelParams
 * @property {boolean} ordered
 * @property {number | null} maxRetransmits
 * @property {number | null} maxPacketLifeTime
 * @property {string} protocol
 * @property {boolean} negotiated
 * @property {number | null} channelId
 * @property {string} label
 */

/**
 * The parameters of a live channel, as the browser reports them.
 * @param {RTCDataChannel} channel
 * @returns {ChannelParams}
 */
export function readChannel(channel) {
  return {
    ordered: channel.ordered,
    maxRetransmits: channel.maxRetransmits,
    maxPacketLifeTime: channel.maxPacketLifeTime,
    protocol: channel.protocol,
    negotiated: channel.negotiated,
    channelId: channel.id,
    label: channel.label,
  };
}

/**
 * The IP addresses of the TURN servers in an ICE server list (`turn:` and
 * `turns:` URLs whose host is an IPv4 or IPv6 literal): a TURN server hands
 * out relayed addresses on its own IP, with any port. A host name is left
 * out: a page cannot resolve it, and the relay candidates in getStats name
 * the relayed address anyway (setupStats).
 * @param {RTCIceServer[]} iceServers
 * @returns {Set<string>}
 */
export function turnServerIps(iceServers) {
  const ips = new Set();
  for (const server of iceServers) {
    for (const url of [server.urls].flat()) {
      const m = /^turns?:(?:\[([0-9a-f:.]+)\]|([^:?/]+))/i.exec(String(url).trim());
      if (!m) continue;
      const host = (m[1] ?? m[2]).toLowerCase();
      if (m[1] || /^\d{1,3}(\.\d{1,3}){3}$/.test(host)) ips.add(host);
    }
  }
  return ips;
}

/**
 * A candidate's address as getStats names it (`address`; Chromium's
 * deprecated `ip`; old Firefox's `ipAddress`).
 * @param {any} candidate an RTCIceCandidateStats
 * @returns {string | null}
 */
function addressOf(candidate) {
  const a = candidate?.address ?? candidate?.ip ?? candidate?.ipAddress;
  return typeof a === 'string' ? a.toLowerCase() : null;
}

/**
 * Is a candidate of the selected pair a TURN relayed address? Its type says
 * `relay` (old Firefox: `relayed`), or it is a peer- or server-reflexive
 * candidate on a TURN server's IP: a connectivity check from the other
 * side's allocation can arrive before that side's relay candidate was
 * signalled, and the browser then learns it as `prflx` (Chromium did in the
 * p2p-blocked run, docs/turn.md). A `host` candidate is a machine's own
 * interface: on the TURN server's own machine it shares the IP and is still direct.
 * @param {any} candidate an RTCIceCandidateStats, or undefined
 * @param {Set<string>} relayIps
 */
function isTurnCandidate(candidate, relayIps) {
  if (!candidate) return false;
  const type = candidate.candidateType;
  if (type === 'relay' || type === 'relayed') return true;
  if (type === 'host') return false;
  const address = addressOf(candidate);
  return address !== null && relayIps.has(address);
}

/**
 * Selected candidate-pair type, whether it goes through TURN, and setup
 * bytes/packets from getStats. Chromium names the selected pair on the
 * transport; Firefox marks it `selected`; bytes are summed over all
 * candidate pairs (Firefox has no transport totals).
 *
 * `viaTurn`: either candidate of the selected pair is a TURN relayed address
 * (isTurnCandidate), where the TURN servers' IPs are those of the ICE servers
 * in use (the peer connection's configuration unless given) plus the address
 * of every relay candidate the report lists, ours and the other side's (the
 * relayed address is what the server hands out, also when the URL names a
 * host name or the server relays from another address than it listens on).
 * @param {RTCPeerConnection} pc
 * @param {RTCIceServer[]} [iceServers] default: pc.getConfiguration().iceServers
 */
export async function setupStats(pc, iceServers) {
  return (await readSetup(pc, iceServers)).stats;
}

/**
 * setupStats' reading, and whether the path is still unknown (a remote
 * peer-reflexive candidate with its address hidden, not via TURN by the other end).
 * @param {RTCPeerConnection} pc
 * @param {RTCIceServer[]} [iceServers]
 */
async function readSetup(pc, iceServers) {
  const report = await pc.getStats();
  // Stats entries differ by `type`; the lib's RTCStats lists only the common fields.
  /** @type {Map<string, any>} */
  const byId = new Map();
  report.forEach((s) => byId.set(s.id, s));
  let selected = null;
  let bytesSent = 0; let bytesReceived = 0; let packetsSent = 0; let packetsReceived = 0;
  const servers = iceServers ?? (typeof pc.getConfiguration === 'function' ? pc.getConfiguration().iceServers : undefined) ?? [];
  const relayIps = turnServerIps(servers);
  for (const s of byId.values()) {
    if (s.type === 'transport' && s.selectedCandidatePairId) selected = byId.get(s.selectedCandidatePairId);
    if (s.type === 'candidate-pair') {
      if (!selected && (s.selected || (s.nominated && s.state === 'succeeded'))) selected = s;
      bytesSent += s.bytesSent ?? 0;
      bytesReceived += s.bytesReceived ?? 0;
      packetsSent += s.packetsSent ?? 0;
      packetsReceived += s.packetsReceived ?? 0;
    }
    if ((s.type === 'local-candidate' || s.type === 'remote-candidate') && (s.candidateType === 'relay' || s.candidateType === 'relayed')) {
      const address = addressOf(s);
      if (address !== null) relayIps.add(address);
    }
  }
  const local = selected && byId.get(selected.localCandidateId);
  const remote = selected && byId.get(selected.remoteCandidateId);
  const pair = local ? `${describeCandidate(local)} -> ${describeCandidate(remote)}` : null;
  const viaTurn = Boolean(selected) && (isTurnCandidate(local, relayIps) || isTurnCandidate(remote, relayIps));
  const stats = {
    candidateType: local ? `${local.candidateType}/${remote?.candidateType ?? '?'}` : null,
    viaTurn,
    setupBytesSent: bytesSent,
    setupBytesReceived: bytesReceived,
    setupPacketsSent: packetsSent,
    setupPacketsReceived: packetsReceived,
  };
  return { stats, pair, unsettled: !viaTurn && isHiddenPeerReflexive(remote) };
}

/**
 * One candidate as a pair description names it: type, address (`?` when the browser hides it) and port.
 * @param {any} candidate an RTCIceCandidateStats, or undefined
 */
function describeCandidate(candidate) {
  if (!candidate) return '?';
  return `${candidate.candidateType ?? '?'} ${addressOf(candidate) ?? '?'}:${candidate.port ?? '?'}`;
}

/**
 * The selected candidate pair, as `host 10.0.1.2:40000 -> srflx 10.0.2.2:50000`, or null
 * (none yet, or getStats failed): an ICE restart records it before and after, to show the path moved.
 * @param {RTCPeerConnection} pc
 * @returns {Promise<string | null>}
 */
export async function selectedPair(pc) {
  try {
    return (await readSetup(pc)).pair;
  } catch {
    return null;
  }
}

/**
 * A remote peer-reflexive candidate whose address the browser does not
 * expose (webrtc-stats: an address learnt from the network, not from the
 * application, stays hidden; Chromium and Firefox both omit it).
 * @param {any} candidate
 */
function isHiddenPeerReflexive(candidate) {
  const type = candidate?.candidateType;
  return (type === 'prflx' || type === 'peerreflexive') && !addressOf(candidate);
}

/**
 * setupStats, read again (every `everyMs`, `waitMs` at most) while the
 * selected pair's remote candidate is a peer-reflexive one with its address
 * hidden: whether it is a TURN allocation or the other side's own address is
 * then unknown. Once the other side signals that candidate, the browser
 * turns the pair's remote candidate into it (type and address: measured in
 * Chromium, `prflx :60372` became `relay 192.0.2.2:60372`). In p2p-blocked a
 * link whose allocation's check came first was counted direct (run L).
 * @param {RTCPeerConnection} pc
 * @param {{ waitMs?: number, everyMs?: number, iceServers?: RTCIceServer[] }} [options]
 */
export async function settledSetupStats(pc, { waitMs = 5000, everyMs = 250, iceServers } = {}) {
  const end = Date.now() + waitMs;
  let reading = await readSetup(pc, iceServers);
  while (reading.unsettled && Date.now() < end) {
    await new Promise((r) => setTimeout(r, everyMs));
    reading = await readSetup(pc, iceServers);
  }
  return reading.stats;
}

/**
 * Opens carlab's pre-negotiated channel on a peer connection. Both sides
 * call this with the same mode: a negotiated channel needs no announcement.
 * @param {RTCPeerConnection} pc
 * @param {P2PMode} mode
 */
export function openCarlabChannel(pc, mode) {
  const channel = pc.createDataChannel(`carlab-${mode}`, { negotiated: true, id: CARLAB_CHANNEL_ID, ...CHANNEL_PARAMS[mode] });
  channel.binaryType = 'arraybuffer';
  return channel;
}

/**
 * Setup phase timings of one connection, ms from `connect` (or from the
 * incoming connection), written once each as the phases complete.
 * @typedef {object} SetupPhases
 * @property {number} [offerAnswerMs]
 * @property {number} [iceConnectedMs]
 * @property {number} [dtlsConnectedMs]
 */

/**
 * Times offer/answer, ICE and DTLS on a peer connection, and reports a
 * failed ICE or DTLS state (the channel's own close may never come then).
 * @param {RTCPeerConnection} pc
 * @param {SetupPhases} setup written in place
 * @param {number} t0 when the connection started, on `now`'s clock
 * @param {() => number} now
 * @param {(why: string) => void} onFailed
 */
export function timeSetupPhases(pc, setup, t0, now, onFailed) {
  pc.addEventListener('signalingstatechange', () => {
    if (pc.signalingState === 'stable' && setup.offerAnswerMs === undefined) setup.offerAnswerMs = now() - t0;
  });
  pc.addEventListener('iceconnectionstatechange', () => {
    const s = pc.iceConnectionState;
    if ((s === 'connected' || s === 'completed') && setup.iceConnectedMs === undefined) setup.iceConnectedMs = now() - t0;
    if (s === 'failed') onFailed('ICE failed');
  });
  pc.addEventListener('connectionstatechange', () => {
    if (pc.connectionState === 'connected' && setup.dtlsConnectedMs === undefined) setup.dtlsConnectedMs = now() - t0;
    if (pc.connectionState === 'failed') onFailed('connection failed');
  });
}

/**
 * What `channelInfo()` reports: the parameters of the open channels, read
 * back from them, and whether they all agree; the requested parameters
 * while none is open.
 * @param {RTCDataChannel[]} openChannels
 * @param {P2PMode} mode
 */
export function summarizeChannels(openChannels, mode) {
  const params = CHANNEL_PARAMS[mode];
  const open = openChannels.map(readChannel);
  if (open.length === 0) return { kind: 'rtcdatachannel', ...params, maxPacketLifeTime: null, protocol: '', channels: 0, uniform: true };
  const first = open[0];
  const uniform = open.every((c) => c.ordered === first.ordered && c.maxRetransmits === first.maxRetransmits
    && c.maxPacketLifeTime === first.maxPacketLifeTime);
  return { kind: 'rtcdatachannel', ...first, channels: open.length, uniform };
}
