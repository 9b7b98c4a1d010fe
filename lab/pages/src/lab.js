// The browser lab page (web/lab.html) that `carlab browsers` drives with
// page.evaluate: PeerJS peers (timed new Peer -> open), connections that
// carry our pre-negotiated channels (timed phases on both ends), getStats
// counters (setup bytes/packets, idle keepalive, STUN checks) and file
// transfers over channels and connections. Everything is exposed on
// window.carlabLab; nothing here decides what to measure or aggregates it.
//
// Connections use PeerJS for signaling only, like the p2p transport: on every
// PeerJS connection both ends open `spec.channels` negotiated channels with
// ids CARLAB_CHANNEL_ID.. and the parameters of transport `spec.mode`.
//
// Transfer data is binary: data chunks start with byte 0xD0, an ACK is an
// 8-byte message starting with 0xAC that a receiver sends on a channel each
// time that channel's byte count crosses a multiple of `spec.ackEvery`.

import { Peer } from 'peerjs';
import { CARLAB_CHANNEL_ID, CHANNEL_PARAMS, readChannel, setupStats } from '../../../web/src/transport/p2p.js';

const now = () => performance.now();
/** Send-side flow control: pause above HIGH bytes buffered, resume at LOW. */
const HIGH_WATER = 1024 * 1024;
const LOW_WATER = 256 * 1024;
const ACK_TAG = 0xac;
const DATA_TAG = 0xd0;

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

/** @type {Map<string, LabPeer>} */
const peers = new Map();
/** @type {{ iceServers: RTCIceServer[], peerjs: { path: string, key: string } } | null} */
let config = null;
/** A reusable data chunk per size. */
const chunks = new Map();

const summaryEl = /** @type {HTMLElement} */ (document.getElementById('summary'));

async function boot() {
  const res = await fetch('/config.json');
  if (!res.ok) throw new Error(`GET /config.json: ${res.status}`);
  config = await res.json();
  return { userAgent: navigator.userAgent, config };
}

/** @param {number} v */
const round = (v) => Math.round(v * 100) / 100;

/** @param {string} id */
function peerOf(id) {
  const rec = peers.get(id);
  if (!rec) throw new Error(`no peer ${id} in this page`);
  return rec;
}

/** @param {LabPeer} rec @param {string} key */
function connOf(rec, key) {
  const c = rec.conns.get(key);
  if (!c) throw new Error(`peer ${rec.id} has no connection ${key}`);
  return c;
}

/** @param {number} size */
function chunkOf(size) {
  let buf = chunks.get(size);
  if (!buf) {
    buf = new ArrayBuffer(size);
    const u8 = new Uint8Array(buf);
    for (let i = 0; i < size; i++) u8[i] = (i * 31 + 7) & 0xff;
    u8[0] = DATA_TAG;
    chunks.set(size, buf);
  }
  return buf;
}

/**
 * Creates a PeerJS peer and resolves once PeerServer says it is open.
 * @param {string} id
 * @param {{ host?: string, port?: number, timeoutMs?: number }} [opts] signaling endpoint (default: this page's origin)
 * @returns {Promise<{ id: string, signalingMs: number }>}
 */
async function openPeer(id, opts = {}) {
  if (!config) await ready;
  const cfg = /** @type {NonNullable<typeof config>} */ (config);
  const secure = location.protocol === 'https:';
  const t0 = now();
  const peer = new Peer(id, {
    host: opts.host ?? location.hostname,
    port: Number(opts.port ?? (location.port || (secure ? 443 : 80))),
    path: cfg.peerjs.path,
    key: cfg.peerjs.key,
    secure,
    config: { iceServers: cfg.iceServers ?? [] },
    debug: 0,
  });
  /** @type {LabPeer} */
  const rec = { id, peer, conns: new Map(), errors: [], timeoutMs: opts.timeoutMs ?? 15000, loop: null };
  peers.set(id, rec);
  peer.on('connection', (/** @type {any} */ conn) => {
    try {
      attach(rec, conn, 'receiver', conn.metadata?.spec ?? {}, rec.timeoutMs);
    } catch (err) {
      rec.errors.push(`accept: ${/** @type {Error} */ (err)?.message ?? err}`);
    }
  });
  peer.on('error', (/** @type {any} */ err) => {
    const text = `${err?.type ?? 'error'}: ${err?.message ?? err}`;
    rec.errors.push(text);
    if (err?.type === 'peer-unavailable') {
      for (const c of rec.conns.values()) if (c.role === 'initiator' && String(err.message).includes(c.remote)) c.fail(text);
    }
  });
  try {
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`signaling not open after ${rec.timeoutMs} ms`)), rec.timeoutMs);
      peer.once('open', () => { clearTimeout(timer); resolve(null); });
      peer.once('error', (/** @type {any} */ err) => { clearTimeout(timer); reject(new Error(`signaling: ${err?.type ?? err}`)); });
    });
  } catch (err) {
    destroyPeer(id);
    throw err;
  }
  render();
  return { id, signalingMs: round(now() - t0) };
}

/**
 * Wires the timing probes and our negotiated channels onto a PeerJS connection.
 * @param {LabPeer} rec
 * @param {any} conn
 * @param {'initiator' | 'receiver'} role
 * @param {ChannelSpec} spec
 * @param {number} timeoutMs
 */
function attach(rec, conn, role, spec, timeoutMs) {
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

/**
 * Opens a connection from peer `id` to `remote` and resolves when all its
 * channels are open, with the initiator's timings, the live channel
 * parameters and the setup counters from getStats.
 * @param {string} id
 * @param {string} remote
 * @param {ChannelSpec} [spec]
 * @param {{ timeoutMs?: number, stats?: boolean }} [opts]
 */
async function connect(id, remote, spec = {}, opts = {}) {
  const rec = peerOf(id);
  const conn = rec.peer.connect(remote, { reliable: true, metadata: { spec } });
  const c = attach(rec, conn, 'initiator', spec, opts.timeoutMs ?? rec.timeoutMs);
  await c.opened;
  render();
  return { key: c.key, ...(opts.stats === false ? { timings: c.timings } : await describe(c)) };
}

/**
 * What one end knows about a connection once open: timings, the channel as
 * the browser reports it, setup bytes (setupStats) and the full counters.
 * @param {Conn} c
 */
async function describe(c) {
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
 * The other end's view of a connection: waits until it is open (or failed).
 * @param {string} id
 * @param {string} key
 * @param {number} [waitMs]
 */
async function connInfo(id, key, waitMs = 5000) {
  const rec = peerOf(id);
  const end = now() + waitMs;
  while (!rec.conns.has(key) && now() < end) await new Promise((r) => setTimeout(r, 10));
  const c = connOf(rec, key);
  try {
    await Promise.race([c.opened, new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), Math.max(0, end - now())))]);
  } catch (err) {
    return { key, error: c.error ?? String(/** @type {Error} */ (err).message), timings: { ...c.timings } };
  }
  return { key, ...(await describe(c)) };
}

/**
 * Opens many connections (the memory ramp): `targets` lists remote peers and
 * how many connections to each; at most `concurrency` set up at a time. Stops
 * starting new ones at the first failure.
 * @param {string} id
 * @param {{ to: string, n: number }[]} targets
 * @param {ChannelSpec} [spec]
 * @param {{ concurrency?: number, timeoutMs?: number }} [opts]
 */
async function connectMany(id, targets, spec = {}, opts = {}) {
  const rec = peerOf(id);
  const queue = targets.flatMap((t) => Array.from({ length: t.n }, () => t.to));
  /** @type {{ key: string, to: string }[]} */
  const opened = [];
  /** @type {{ to: string, error: string }[]} */
  const failed = [];
  const t0 = now();
  const worker = async () => {
    while (queue.length && failed.length === 0) {
      const to = /** @type {string} */ (queue.shift());
      try {
        const conn = rec.peer.connect(to, { reliable: true, metadata: { spec } });
        const c = attach(rec, conn, 'initiator', spec, opts.timeoutMs ?? rec.timeoutMs);
        await c.opened;
        opened.push({ key: c.key, to });
      } catch (err) {
        failed.push({ to, error: String(/** @type {Error} */ (err)?.message ?? err) });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, opts.concurrency ?? 4) }, worker));
  render();
  return { opened, failed, ms: round(now() - t0), total: openCount(rec) };
}

/** @param {LabPeer} rec */
function openCount(rec) {
  let n = 0;
  for (const c of rec.conns.values()) if (!c.error && c.channels.every((ch) => ch.readyState === 'open')) n++;
  return n;
}

/**
 * Counters of one RTCPeerConnection from getStats: transport totals
 * (Chromium), candidate-pair sums (both; Firefox has no transport totals),
 * STUN check counts, data-channel totals and the selected pair's addresses.
 * A field a browser does not report stays null.
 * @param {RTCPeerConnection} pc
 */
async function pcCounters(pc) {
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

/**
 * Counters of every open connection of a peer (idle keepalive windows).
 * @param {string} id
 */
async function counters(id) {
  const rec = peerOf(id);
  return Promise.all([...rec.conns.values()].filter((c) => !c.error).map(async (c) => ({
    key: c.key, remote: c.remote, role: c.role, counters: await pcCounters(c.pc),
  })));
}

/**
 * Every getStats entry of one connection, as plain objects (for exploring
 * what a browser reports).
 * @param {string} id
 * @param {string} key
 */
async function rawStats(id, key) {
  const report = await connOf(peerOf(id), key).pc.getStats();
  /** @type {Record<string, unknown>[]} */
  const out = [];
  report.forEach((s) => out.push({ ...s }));
  return out;
}

/**
 * Sends `total` bytes on a channel in chunks, with bufferedAmount flow control.
 * @param {RTCDataChannel} ch
 * @param {number} total
 * @param {number} chunk
 * @param {() => boolean} [stopped]
 */
async function sendBytes(ch, total, chunk, stopped) {
  const buf = chunkOf(chunk);
  ch.bufferedAmountLowThreshold = LOW_WATER;
  let sent = 0;
  while (sent < total) {
    if (stopped?.()) return sent;
    if (ch.readyState !== 'open') throw new Error(`channel ${ch.id} is ${ch.readyState}`);
    if (ch.bufferedAmount > HIGH_WATER) {
      await new Promise((resolve) => {
        const done = () => { ch.removeEventListener('bufferedamountlow', done); ch.removeEventListener('close', done); resolve(null); };
        ch.addEventListener('bufferedamountlow', done);
        ch.addEventListener('close', done);
      });
      continue;
    }
    const n = Math.min(chunk, total - sent);
    ch.send(n === chunk ? buf : buf.slice(0, n));
    sent += n;
  }
  return sent;
}

/**
 * One timed file transfer: `pieces` pieces of `pieceSize` bytes, spread
 * round-robin over the first `channelsPerConn` channels of each connection in
 * `keys`; every slot sends its pieces back to back, all slots in parallel.
 * Done when the receiver has ACKed every piece (spec.ackEvery = pieceSize).
 * @param {string} id
 * @param {{ keys: string[], channelsPerConn?: number, pieces: number, pieceSize: number, chunk?: number, timeoutMs?: number }} o
 */
async function transfer(id, o) {
  const rec = peerOf(id);
  const conns = o.keys.map((k) => connOf(rec, k));
  const per = Math.max(1, o.channelsPerConn ?? 1);
  const slots = conns.flatMap((c) => c.channels.slice(0, per));
  if (slots.length !== conns.length * per) throw new Error(`connections have fewer than ${per} channels`);
  const counts = slots.map(() => 0);
  for (let p = 0; p < o.pieces; p++) counts[p % slots.length]++;
  const acks0 = conns.reduce((s, c) => s + c.acks, 0);
  const acked = () => conns.reduce((s, c) => s + c.acks, 0) - acks0;
  const t0 = now();
  await Promise.all(slots.map((ch, i) => sendBytes(ch, counts[i] * o.pieceSize, o.chunk ?? 16384)));
  const sentMs = now() - t0;
  const deadline = t0 + (o.timeoutMs ?? 60000);
  while (acked() < o.pieces) {
    if (now() > deadline) throw new Error(`${acked()} of ${o.pieces} pieces acknowledged after ${o.timeoutMs ?? 60000} ms`);
    await new Promise((resolve) => {
      const timer = setTimeout(resolve, 50);
      for (const c of conns) c.ackWaiters.push(() => { clearTimeout(timer); resolve(null); });
    });
  }
  return { ms: round(now() - t0), sentMs: round(sentMs), bytes: o.pieces * o.pieceSize, slots: slots.length };
}

/**
 * Endless transfers: on channel 0 of each connection in `keys`, send a
 * `fileSize` file again and again until stopLoop().
 * @param {string} id
 * @param {{ keys: string[], fileSize: number, chunk?: number }} o
 */
function startLoop(id, o) {
  const rec = peerOf(id);
  if (!rec.loop) rec.loop = { stop: false, running: [] };
  const loop = rec.loop;
  for (const key of o.keys) {
    const ch = connOf(rec, key).channels[0];
    loop.running.push((async () => {
      let files = 0;
      while (!loop.stop && ch.readyState === 'open') {
        await sendBytes(ch, o.fileSize, o.chunk ?? 16384, () => loop.stop);
        files++;
      }
      return files;
    })().catch((err) => String(err?.message ?? err)));
  }
  return loop.running.length;
}

/** Stops every endless transfer of a peer; resolves with the files each sent. @param {string} id */
async function stopLoop(id) {
  const rec = peerOf(id);
  if (!rec.loop) return [];
  rec.loop.stop = true;
  const out = await Promise.all(rec.loop.running);
  rec.loop = null;
  return out;
}

/** Bytes and messages a peer received, over all its connections. @param {string} id */
function received(id) {
  const rec = peerOf(id);
  let bytes = 0; let messages = 0;
  for (const c of rec.conns.values()) { bytes += c.rx.bytes; messages += c.rx.messages; }
  return { at: now(), bytes, messages };
}

/** Open connections and their keys, per peer. @param {string} id */
function connections(id) {
  const rec = peerOf(id);
  return {
    open: openCount(rec),
    keys: [...rec.conns.values()].filter((c) => !c.error).map((c) => ({ key: c.key, remote: c.remote, role: c.role })),
    failed: [...rec.conns.values()].filter((c) => c.error).map((c) => ({ key: c.key, error: c.error })),
    errors: rec.errors.slice(-20),
  };
}

/** @param {string} id @param {string} key */
function closeConn(id, key) {
  const rec = peerOf(id);
  const c = rec.conns.get(key);
  if (!c) return;
  rec.conns.delete(key);
  for (const ch of c.channels) { try { ch.close(); } catch { /* gone */ } }
  try { c.conn.close(); } catch { /* gone */ }
}

/** @param {string} id */
function destroyPeer(id) {
  const rec = peers.get(id);
  if (!rec) return;
  if (rec.loop) rec.loop.stop = true;
  for (const key of [...rec.conns.keys()]) closeConn(id, key);
  try { rec.peer.destroy(); } catch { /* gone */ }
  peers.delete(id);
  render();
}

function destroyAll() {
  for (const id of [...peers.keys()]) destroyPeer(id);
}

function render() {
  let conns = 0;
  for (const rec of peers.values()) conns += openCount(rec);
  summaryEl.textContent = `${peers.size} peers, ${conns} open connections · ${navigator.userAgent}`;
}

const ready = boot();
window.carlabLab = {
  ready,
  openPeer,
  connect,
  connInfo,
  connectMany,
  counters,
  rawStats,
  transfer,
  startLoop,
  stopLoop,
  received,
  connections,
  closeConn,
  destroyPeer,
  destroyAll,
};
ready.then(render, (err) => {
  summaryEl.textContent = `failed: ${err.message}`;
  summaryEl.classList.add('error');
});
