// One PeerJS connection of the lab page (lab.js): the timing probes on its
// RTCPeerConnection (timed phases on both ends), the negotiated channels both
// ends open on it (ids CARLAB_CHANNEL_ID.., the parameters of `spec.mode`), and
// what arrives on them: data counted per channel, an 8-byte ACK (first byte
// 0xAC) sent each time a channel's byte count crosses a multiple of
// `spec.ackEvery`, ACKs counted on the sending side. Also the types of a peer
// and its connections (LabPeer, Conn).

import { CARLAB_CHANNEL_ID, CHANNEL_PARAMS } from '../../../web/src/transport/p2p.js';

/** The page's clock for every timing. */
export const now = () => performance.now();
const ACK_TAG = 0xac;

/**
 * @typedef {object} ChannelSpec what both ends of a connection open
 * @property {'p2p' | 'p2p-reliable'} [mode] channel parameters (default p2p: unordered, maxRetransmits 0)
 * @property {number} [channels] negotiated channels on the connection (default 1)
 * @property {number} [ackEvery] receiver ACKs each time a channel's byte count crosses a multiple (0 = never)
 */

/**
 * @typedef {object} Conn one PeerJS connection as the lab sees it
 * @property {string} key PeerJS connectionId (the same on both ends)
 * @property {string} remote
 * @property {'initiator' | 'receiver'} role
 * @property {ChannelSpec} spec
 * @property {any} conn PeerJS DataConnection
 * @property {RTCPeerConnection} pc
 * @property {RTCDataChannel[]} channels
 * @property {Record<string, number>} timings ms from connect (initiator) or from the offer's arrival (receiver)
 * @property {number} localCandidates
 * @property {string | null} error
 * @property {Promise<void>} opened every channel open
 * @property {(why: string) => void} fail
 * @property {{ bytes: number, messages: number, perChannel: number[], acked: number[] }} rx
 * @property {number} acks ACKs received (sender side)
 * @property {(() => void)[]} ackWaiters
 */

/**
 * @typedef {object} LabPeer
 * @property {string} id
 * @property {any} peer PeerJS Peer
 * @property {Map<string, Conn>} conns
 * @property {string[]} errors
 * @property {number} timeoutMs setup timeout of incoming connections
 * @property {{ stop: boolean, running: Promise<any>[] } | null} loop
 */

/** Milliseconds to two decimals, as the page reports them. @param {number} v */
export const round = (v) => Math.round(v * 100) / 100;

/**
 * Wires the timing probes and our negotiated channels onto a PeerJS connection.
 * @param {LabPeer} rec
 * @param {any} conn
 * @param {'initiator' | 'receiver'} role
 * @param {ChannelSpec} spec
 * @param {number} timeoutMs
 */
export function attach(rec, conn, role, spec, timeoutMs) {
  const t0 = now();
  const pc = /** @type {RTCPeerConnection} */ (conn.peerConnection);
  /** @type {Conn} */
  const c = {
    key: conn.connectionId, remote: conn.peer, role, spec, conn, pc, channels: [], timings: {},
    localCandidates: 0, error: null, opened: Promise.resolve(), fail: () => {},
    rx: { bytes: 0, messages: 0, perChannel: [], acked: [] }, acks: 0, ackWaiters: [],
  };
  rec.conns.set(c.key, c);
  const mark = (/** @type {string} */ name) => { if (c.timings[name] === undefined) c.timings[name] = round(now() - t0); };
  pc.addEventListener('signalingstatechange', () => { if (pc.signalingState === 'stable') mark('offerAnswerMs'); });
  // When the page hands the remote description (the answer, for the initiator) to the connection.
  // Unlike the events, this is ordered by construction before the channel opens: DTLS cannot
  // finish without the remote fingerprint it carries ('stable' and 'open' are separate queued
  // tasks, and a busy browser can deliver them either way round).
  const setRemote = pc.setRemoteDescription.bind(pc);
  pc.setRemoteDescription = (/** @type {any} */ description) => { mark('remoteDescriptionMs'); return setRemote(description); };
  pc.addEventListener('icecandidate', (e) => {
    if (e.candidate?.candidate) { mark('firstCandidateMs'); c.localCandidates++; }
  });
  pc.addEventListener('icegatheringstatechange', () => { if (pc.iceGatheringState === 'complete') mark('gatheringMs'); });
  pc.addEventListener('iceconnectionstatechange', () => {
    const s = pc.iceConnectionState;
    if (s === 'checking') mark('iceCheckingMs');
    if (s === 'connected' || s === 'completed') mark('iceConnectedMs');
    if (s === 'failed') c.fail('ICE failed');
  });
  pc.addEventListener('connectionstatechange', () => {
    if (pc.connectionState === 'connected') mark('dtlsConnectedMs');
    if (pc.connectionState === 'failed') c.fail('connection failed');
  });
  const params = CHANNEL_PARAMS[spec.mode ?? 'p2p'];
  if (!params) throw new Error(`unknown channel mode ${spec.mode}`);
  const count = Math.max(1, spec.channels ?? 1);
  for (let i = 0; i < count; i++) {
    const ch = pc.createDataChannel(`carlab-lab-${i}`, { negotiated: true, id: CARLAB_CHANNEL_ID + i, ...params });
    ch.binaryType = 'arraybuffer';
    ch.onmessage = (event) => onData(c, i, event.data);
    c.channels.push(ch);
    c.rx.perChannel.push(0);
    c.rx.acked.push(0);
  }
  c.opened = new Promise((resolve, reject) => {
    let open = 0;
    const timer = setTimeout(() => c.fail(`not open after ${timeoutMs} ms (signaling ${pc.signalingState}, `
      + `ICE ${pc.iceConnectionState}, connection ${pc.connectionState}, ${c.localCandidates} local candidates)`), timeoutMs);
    c.fail = (why) => {
      clearTimeout(timer);
      const detail = why.startsWith('not open') ? why : `${why} (${c.localCandidates} local candidates, gathering ${pc.iceGatheringState})`;
      c.error ??= detail;
      reject(new Error(detail));
    };
    for (const ch of c.channels) {
      ch.addEventListener('open', () => {
        if (open === 0) mark('firstChannelOpenMs');
        if (++open === c.channels.length) {
          clearTimeout(timer);
          mark('channelOpenMs');
          resolve();
        }
      }, { once: true });
      ch.addEventListener('close', () => { c.error ??= 'channel closed'; });
    }
  });
  c.opened.catch(() => {}); // observed by whoever awaits it
  conn.on('error', (/** @type {any} */ err) => c.fail(`peerjs: ${err?.type ?? err}`));
  conn.on('close', () => c.fail('peerjs connection closed'));
  return c;
}

/**
 * @param {Conn} c
 * @param {number} index channel index
 * @param {any} data
 */
function onData(c, index, data) {
  if (!(data instanceof ArrayBuffer)) return;
  if (data.byteLength === 8 && new Uint8Array(data)[0] === ACK_TAG) {
    c.acks++;
    const waiters = c.ackWaiters;
    c.ackWaiters = [];
    for (const w of waiters) w();
    return;
  }
  c.rx.bytes += data.byteLength;
  c.rx.messages++;
  c.rx.perChannel[index] += data.byteLength;
  const every = c.spec.ackEvery ?? 0;
  if (every > 0) {
    while (c.rx.perChannel[index] >= (c.rx.acked[index] + 1) * every) {
      c.rx.acked[index]++;
      const ack = new Uint8Array(8);
      ack[0] = ACK_TAG;
      new DataView(ack.buffer).setUint32(4, c.rx.acked[index]);
      try { c.channels[index].send(ack); } catch { /* closed: the sender times out */ }
    }
  }
}
