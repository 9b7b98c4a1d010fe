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
// One connection is in lab-conn.js, its getStats counters in lab-stats.js,
// the peers in lab-peers.js, file transfers in lab-transfer.js.

import { Peer } from 'peerjs';
import { attach, now, round } from './lab-conn.js';
import { connOf, openCount, peerOf, peers } from './lab-peers.js';
import { describe, pcCounters } from './lab-stats.js';
import { startLoop, stopLoop, transfer } from './lab-transfer.js';

/** @typedef {import('./lab-conn.js').ChannelSpec} ChannelSpec */
/** @typedef {import('./lab-conn.js').LabPeer} LabPeer */

/** @type {{ iceServers: RTCIceServer[], peerjs: { path: string, key: string } } | null} */
let config = null;

const summaryEl = /** @type {HTMLElement} */ (document.getElementById('summary'));

async function boot() {
  const res = await fetch('/config.json');
  if (!res.ok) throw new Error(`GET /config.json: ${res.status}`);
  config = await res.json();
  return { userAgent: navigator.userAgent, config };
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
