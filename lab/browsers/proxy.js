// A counting TCP proxy in front of the carlab server, so the signaling
// traffic of every PeerJS peer (its WebSocket to PeerServer) can be measured
// apart: bytes each way from the proxy's own counts and, where `ss` is
// available, TCP segments each way (ACKs included) from the kernel's
// tcp_info of the browser-facing socket. Pages are loaded through the proxy
// too, so their WebSocket is same-origin; only connections whose first
// request is a PeerJS WebSocket upgrade are counted.

import { execFile } from 'node:child_process';
import net from 'node:net';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * @typedef {object} SignalingCounters one peer's WebSocket as seen from the proxy
 * @property {number} up bytes browser -> PeerServer (HTTP upgrade included)
 * @property {number} down bytes PeerServer -> browser
 * @property {number | null} segsUp TCP segments browser -> proxy (ACKs included), null without ss
 * @property {number | null} segsDown TCP segments proxy -> browser
 */

/**
 * The PeerJS peer id of a WebSocket upgrade request, or null when the chunk
 * does not start one.
 * @param {Buffer} chunk the first bytes a client sent
 * @param {string} wsPath PeerServer's WebSocket pathname, e.g. /peerjs/peerjs
 * @returns {string | null}
 */
export function peerIdOfUpgrade(chunk, wsPath) {
  const head = chunk.toString('latin1', 0, Math.min(chunk.length, 4096));
  const m = /^GET (\S+) HTTP\/1\.[01]\r\n/.exec(head);
  if (!m || !/\r\nupgrade:\s*websocket/i.test(head)) return null;
  const url = new URL(m[1], 'http://proxy');
  if (url.pathname !== wsPath) return null;
  return url.searchParams.get('id');
}

/**
 * Parses `ss -tinH` output into per-peer-port segment counts.
 * @param {string} text
 * @returns {Map<number, { segsIn: number, segsOut: number, bytesReceived: number, bytesSent: number }>}
 *   keyed by the remote (browser) port
 */
export function parseSs(text) {
  const out = new Map();
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const head = lines[i];
    if (!head.trim() || /^\s/.test(head)) continue;
    // Recv-Q Send-Q Local:Port Peer:Port, then the info on the next (indented) line
    const cols = head.trim().split(/\s+/);
    const peer = cols[cols.length - 1] ?? '';
    const port = Number(peer.slice(peer.lastIndexOf(':') + 1));
    const info = /^\s/.test(lines[i + 1] ?? '') ? lines[i + 1] : '';
    const field = (/** @type {string} */ name) => {
      const m = new RegExp(`\\b${name}:(\\d+)`).exec(info);
      return m ? Number(m[1]) : 0;
    };
    if (Number.isInteger(port)) {
      out.set(port, { segsIn: field('segs_in'), segsOut: field('segs_out'), bytesReceived: field('bytes_received'), bytesSent: field('bytes_sent') });
    }
  }
  return out;
}

/** One peer's WebSocket through the proxy: bytes each way and the browser's port. @typedef {{ up: number, down: number, clientPort: number, open: boolean }} PeerRecord */

/**
 * Pipes one browser connection to the server, counting its bytes when its
 * first request is a PeerJS WebSocket upgrade.
 * @param {net.Socket} client
 * @param {URL} target
 * @param {string} wsPath
 * @param {Map<string, PeerRecord>} peers the record goes here, by peer id
 * @param {Set<net.Socket>} sockets both ends live here until they close
 */
function proxyConnection(client, target, wsPath, peers, sockets) {
  client.setNoDelay(true);
  const upstream = net.connect(Number(target.port), target.hostname);
  upstream.setNoDelay(true);
  sockets.add(client);
  sockets.add(upstream);
  /** @type {PeerRecord | null} */
  let rec = null;
  let first = true;
  client.on('data', (chunk) => {
    if (first) {
      first = false;
      const id = peerIdOfUpgrade(chunk, wsPath);
      if (id) {
        rec = { up: 0, down: 0, clientPort: /** @type {number} */ (client.remotePort), open: true };
        peers.set(id, rec);
      }
    }
    if (rec) rec.up += chunk.length;
  });
  upstream.on('data', (chunk) => { if (rec) rec.down += chunk.length; });
  client.pipe(upstream);
  upstream.pipe(client);
  const end = () => {
    if (rec) rec.open = false;
    client.destroy();
    upstream.destroy();
    sockets.delete(client);
    sockets.delete(upstream);
  };
  client.on('error', end).on('close', end);
  upstream.on('error', end).on('close', end);
}

/**
 * The counters of the given peers from their records and the kernel's
 * segment counts (segments only while the peer's socket is open; missing
 * peers are left out).
 * @param {Map<string, PeerRecord>} peers
 * @param {ReturnType<typeof parseSs>} segs by browser port
 * @param {string[]} ids
 * @returns {Record<string, SignalingCounters>}
 */
export function countersOf(peers, segs, ids) {
  /** @type {Record<string, SignalingCounters>} */
  const out = {};
  for (const id of ids) {
    const rec = peers.get(id);
    if (!rec) continue;
    const s = segs.get(rec.clientPort);
    out[id] = { up: rec.up, down: rec.down, segsUp: s && rec.open ? s.segsIn : null, segsDown: s && rec.open ? s.segsOut : null };
  }
  return out;
}

/**
 * Starts the proxy on a free loopback port.
 * @param {{ target: string, wsPath?: string }} o target: the server's http URL
 */
export async function startSignalingProxy(o) {
  const target = new URL(o.target);
  const wsPath = o.wsPath ?? '/peerjs/peerjs';
  /** @type {Map<string, PeerRecord>} */
  const peers = new Map();
  /** @type {Set<net.Socket>} */
  const sockets = new Set();
  let ssWorks = true;
  const server = net.createServer((client) => proxyConnection(client, target, wsPath, peers, sockets));
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(null));
  });
  const port = /** @type {net.AddressInfo} */ (server.address()).port;

  /**
   * Counters of the given peers now (missing peers are left out).
   * @param {string[]} ids
   * @returns {Promise<Record<string, SignalingCounters>>}
   */
  async function snapshot(ids) {
    /** @type {ReturnType<typeof parseSs>} */
    let segs = new Map();
    if (ssWorks) {
      try {
        const { stdout } = await run('ss', ['-tinH', 'state', 'established', `( sport = :${port} )`], { timeout: 5000 });
        segs = parseSs(stdout);
      } catch {
        ssWorks = false;
      }
    }
    return countersOf(peers, segs, ids);
  }

  return {
    port,
    url: `http://127.0.0.1:${port}`,
    snapshot,
    /** Forget closed peers' records (long runs). */
    prune() { for (const [id, rec] of peers) if (!rec.open) peers.delete(id); },
    /** Whether packet counts are available. */
    get hasPackets() { return ssWorks; },
    close() {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve(null)));
    },
  };
}
