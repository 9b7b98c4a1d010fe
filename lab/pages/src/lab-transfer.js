// File transfers of the lab page (lab.js) over channels and connections:
// timed transfers that end when the receiver has ACKed every piece, and
// endless ones (the keepalive under load), with bufferedAmount flow control.
//
// Transfer data is binary: data chunks start with byte 0xD0, an ACK is an
// 8-byte message starting with 0xAC that a receiver sends on a channel each
// time that channel's byte count crosses a multiple of `spec.ackEvery`
// (lab-conn.js).

import { now, round } from './lab-conn.js';
import { connOf, peerOf } from './lab-peers.js';

/** Send-side flow control: pause above HIGH bytes buffered, resume at LOW. */
const HIGH_WATER = 1024 * 1024;
const LOW_WATER = 256 * 1024;
const DATA_TAG = 0xd0;

/** A reusable data chunk per size. */
const chunks = new Map();

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
export async function transfer(id, o) {
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
export function startLoop(id, o) {
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
export async function stopLoop(id) {
  const rec = peerOf(id);
  if (!rec.loop) return [];
  rec.loop.stop = true;
  const out = await Promise.all(rec.loop.running);
  rec.loop = null;
  return out;
}
