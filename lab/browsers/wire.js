// Wire-level UDP counters from nftables: every UDP packet this machine sends
// is counted per source port in a dynamic set (IP packet bytes, headers
// included). The runner reads the ports a connection's ICE agent gathered
// (getStats local candidates) and sums their counters, so STUN checks, DTLS
// and SCTP are all in, and other programs' UDP is not. Needs root and nft;
// without them every count is null and the getStats counters stand alone.
// Only counts; never drops, delays or creates traffic.

import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * @typedef {{ packets: number, bytes: number }} WireCount
 */

/**
 * The nft script that creates the counting table.
 * @param {string} table
 */
export function wireRuleset(table) {
  return `table inet ${table} {
  set udpsrc { type inet_service; flags dynamic; counter; size 65535; }
  set stunreq { type inet_service; flags dynamic; counter; size 65535; }
  set stunresp { type inet_service; flags dynamic; counter; size 65535; }
  chain out {
    type filter hook output priority 0; policy accept;
    meta l4proto udp add @udpsrc { udp sport }
    meta l4proto udp @th,64,16 0x0001 add @stunreq { udp sport }
    meta l4proto udp @th,64,16 0x0101 add @stunresp { udp sport }
  }
}
`;
}

/**
 * @typedef {object} WireSnapshot per-port counters of every sent UDP packet,
 *   of STUN Binding requests and of STUN Binding success responses (by the
 *   first two payload bytes: 0x0001 and 0x0101, RFC 5389)
 * @property {Map<number, WireCount>} all
 * @property {Map<number, WireCount>} stunRequests
 * @property {Map<number, WireCount>} stunResponses
 */

/**
 * The three per-port sets from `nft -j list table`.
 * @param {string} json
 * @returns {WireSnapshot}
 */
export function parseSetCounters(json) {
  /** @type {Record<string, Map<number, WireCount>>} */
  const sets = { udpsrc: new Map(), stunreq: new Map(), stunresp: new Map() };
  const doc = JSON.parse(json);
  for (const item of doc.nftables ?? []) {
    const out = item.set && sets[item.set.name];
    if (!out) continue;
    for (const e of item.set.elem ?? []) {
      const el = e.elem ?? e;
      if (typeof el.val === 'number' && el.counter) out.set(el.val, { packets: el.counter.packets, bytes: el.counter.bytes });
    }
  }
  return { all: sets.udpsrc, stunRequests: sets.stunreq, stunResponses: sets.stunresp };
}

/**
 * @typedef {object} WireTraffic what a set of ports sent between two snapshots
 * @property {number} packets
 * @property {number} bytes IP packet bytes, headers included
 * @property {number} stunRequests
 * @property {number} stunResponses
 * @property {number} stunBytes requests and responses
 */

/**
 * What `ports` sent between two snapshots.
 * @param {WireSnapshot} before
 * @param {WireSnapshot} now
 * @param {Iterable<number>} ports
 * @returns {WireTraffic}
 */
export function wireTraffic(before, now, ports) {
  const list = [...new Set(ports)];
  const all = wireDelta(before.all, now.all, list);
  const req = wireDelta(before.stunRequests, now.stunRequests, list);
  const resp = wireDelta(before.stunResponses, now.stunResponses, list);
  return { packets: all.packets, bytes: all.bytes, stunRequests: req.packets, stunResponses: resp.packets, stunBytes: req.bytes + resp.bytes };
}

/**
 * Sum of the counters of `ports` in `now` minus those in `before` (a port
 * missing from `before` counts from zero).
 * @param {Map<number, WireCount>} before
 * @param {Map<number, WireCount>} now
 * @param {Iterable<number>} ports
 * @returns {WireCount}
 */
export function wireDelta(before, now, ports) {
  let packets = 0; let bytes = 0;
  for (const port of new Set(ports)) {
    const b = before.get(port) ?? { packets: 0, bytes: 0 };
    const n = now.get(port);
    if (!n) continue;
    // A port that vanished and came back (flushed set) restarts from zero.
    const restarted = n.packets < b.packets;
    packets += restarted ? n.packets : n.packets - b.packets;
    bytes += restarted ? n.bytes : n.bytes - b.bytes;
  }
  return { packets, bytes };
}

/**
 * Creates the table if this process may (root + nft); otherwise a stub whose
 * reads resolve to null.
 * @returns {Promise<{ available: boolean, why: string | null, read(): Promise<WireSnapshot | null>,
 *   flush(): Promise<void>, close(): void }>}
 */
export async function createWireCounter() {
  const table = `carlab_browsers_${process.pid}`;
  const stub = (/** @type {string} */ why) => ({ available: false, why, read: async () => null, flush: async () => {}, close() {} });
  if (process.getuid?.() !== 0) return stub('not root');
  try {
    const child = execFile('nft', ['-f', '-'], { timeout: 5000 });
    child.stdin?.end(wireRuleset(table));
    await new Promise((resolve, reject) => {
      child.on('exit', (code) => (code === 0 ? resolve(null) : reject(new Error(`nft exited with ${code}`))));
      child.on('error', reject);
    });
  } catch (err) {
    return stub(`nft: ${/** @type {Error} */ (err).message}`);
  }
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    process.off('exit', close);
    try { execFileSync('nft', ['delete', 'table', 'inet', table], { stdio: 'ignore', timeout: 5000 }); } catch { /* gone */ }
  };
  process.on('exit', close);
  return {
    available: true,
    why: null,
    async read() {
      if (closed) return null;
      const { stdout } = await run('nft', ['-j', 'list', 'table', 'inet', table], { timeout: 5000, maxBuffer: 64 * 1024 * 1024 });
      return parseSetCounters(stdout);
    },
    /** Forgets every counted port (between cells, so the set stays small). */
    async flush() {
      if (closed) return;
      for (const set of ['udpsrc', 'stunreq', 'stunresp']) await run('nft', ['flush', 'set', 'inet', table, set], { timeout: 5000 });
    },
    close,
  };
}
