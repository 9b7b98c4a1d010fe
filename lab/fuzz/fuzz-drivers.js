// The drivers of the fuzz run's cases (fuzz-cases.js): each runs one case on
// its target of a running server (a relay or PeerServer WebSocket, a raw TCP
// socket, an HTTP request) and says how it ended against what its oracle
// (expectRelay, expectPeer) or the case itself allows.

import net from 'node:net';
import WebSocket from 'ws';
import { unitsOf } from './fuzz-cases.js';
import { PROBE, expectRelay } from './fuzz-relay-cases.js';
import { expectPeer } from './fuzz-peer-cases.js';

/** Outcomes of one case. @typedef {{ ok: boolean, units: number, outcome: string, expected: string, detail?: string }} CaseResult */

/** @param {Uint8Array | string} data */
function hexOf(data) {
  if (typeof data === 'string') return JSON.stringify(data.slice(0, 60));
  const b = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return `${b.subarray(0, 48).toString('hex')}${b.length > 48 ? `...(${b.length} bytes)` : ''}`;
}

/**
 * A WebSocket that resolves how it closed (or 'timeout').
 * @param {string} url
 * @param {number} timeoutMs
 */
function openSocket(url, timeoutMs) {
  const ws = new WebSocket(url, { perMessageDeflate: false, handshakeTimeout: timeoutMs });
  ws.on('error', () => {});
  /** @type {string | null} */
  let first = null;
  ws.once('message', (data, isBinary) => {
    if (isBinary) { first = '(binary)'; return; }
    try { first = JSON.parse(String(data)).type ?? '(no type)'; } catch { first = '(not JSON)'; }
  });
  /** @type {Promise<{ code: number, reason: string } | 'timeout'>} */
  const closed = new Promise((resolve) => {
    const timer = setTimeout(() => { ws.terminate(); resolve('timeout'); }, timeoutMs);
    ws.once('close', (code, reason) => { clearTimeout(timer); resolve({ code, reason: String(reason) }); });
  });
  const opened = new Promise((resolve) => {
    ws.once('open', () => resolve(true));
    ws.once('close', () => resolve(false));
  });
  return { ws, opened, closed, first: () => first };
}

/**
 * @param {import('./fuzz-world.js').RelayCase} c
 * @param {import('./fuzz-world.js').FuzzWorld} world
 * @param {string} url
 * @param {number} timeoutMs
 * @returns {Promise<CaseResult>}
 */
async function runRelayCase(c, world, url, timeoutMs) {
  const expect = expectRelay(c.frames, world);
  const s = openSocket(url, timeoutMs);
  if (!(await s.opened)) return { ok: false, units: 0, outcome: 'no connection', expected: expect.codes.join('|') };
  let units = 0;
  for (const f of c.frames) {
    if (s.ws.readyState !== WebSocket.OPEN) break;
    if ('text' in f) s.ws.send(f.text, { binary: false });
    else s.ws.send(f.bytes, { binary: true });
    units++;
  }
  if (expect.probe && s.ws.readyState === WebSocket.OPEN) {
    s.ws.send(PROBE, { binary: true });
    units++;
  }
  const closed = await s.closed;
  const outcome = closed === 'timeout' ? 'timeout' : String(closed.code);
  const ok = closed !== 'timeout' && expect.codes.includes(closed.code);
  return {
    ok, units, outcome, expected: expect.codes.join('|'),
    detail: ok ? undefined : `${closed === 'timeout' ? '' : `reason "${closed.reason}"; `}frames ${c.frames.map((f) => hexOf('text' in f ? f.text : f.bytes)).join(' ')}`,
  };
}

/**
 * @param {import('./fuzz-world.js').PeerCase} c
 * @param {import('./fuzz-world.js').FuzzWorld} world
 * @param {string} base ws://host:port
 * @param {number} timeoutMs
 * @returns {Promise<CaseResult>}
 */
async function runPeerCase(c, world, base, timeoutMs) {
  const expect = expectPeer(c, world);
  const s = openSocket(`${base}/peerjs/peerjs?${new URLSearchParams(c.query)}`, timeoutMs);
  if (!(await s.opened)) return { ok: false, units: 0, outcome: 'no connection', expected: expect.codes.join('|') };
  let units = c.frames.length === 0 ? 1 : 0;
  for (const f of c.frames) {
    if (s.ws.readyState !== WebSocket.OPEN) break;
    s.ws.send(f.data, { binary: f.binary });
    units++;
  }
  if (expect.probe && s.ws.readyState === WebSocket.OPEN) {
    s.ws.send('this is not JSON', { binary: false });
    units++;
  }
  const closed = await s.closed;
  const outcome = closed === 'timeout' ? 'timeout' : String(closed.code);
  const firstOk = c.firstMessage === null || s.first() === c.firstMessage;
  const ok = closed !== 'timeout' && expect.codes.includes(closed.code) && firstOk;
  return {
    ok, units, outcome: firstOk ? outcome : `${outcome} after ${s.first()}`, expected: `${expect.codes.join('|')} after ${c.firstMessage}`,
    detail: ok ? undefined : `query ${JSON.stringify(c.query)}; frames ${c.frames.slice(0, 5).map((f) => hexOf(f.data)).join(' ')}`,
  };
}

/**
 * The first WebSocket close code in server-to-client frames (unmasked), if complete.
 * @param {Buffer} buf
 * @returns {number | undefined}
 */
export function closeCodeIn(buf) {
  let i = 0;
  while (i + 2 <= buf.length) {
    const opcode = buf[i] & 0x0f;
    let len = buf[i + 1] & 0x7f;
    let at = i + 2;
    if (len === 126) {
      if (at + 2 > buf.length) return undefined;
      len = buf.readUInt16BE(at);
      at += 2;
    } else if (len === 127) {
      if (at + 8 > buf.length) return undefined;
      len = Number(buf.readBigUInt64BE(at));
      at += 8;
    }
    if (at + len > buf.length) return undefined;
    if (opcode === 8) return len >= 2 ? buf.readUInt16BE(at) : 1005;
    i = at + len;
  }
  return undefined;
}

/**
 * Raw TCP: sends the request, reads the status line; after a 101, sends the
 * WebSocket bytes and reads the server's close frame.
 * @param {number} port
 * @param {import('./fuzz-world.js').RawCase} c
 * @param {number} timeoutMs
 * @returns {Promise<CaseResult>}
 */
function runRawCase(port, c, timeoutMs) {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    let buf = Buffer.alloc(0);
    /** @type {number | null} */
    let status = null;
    let upgraded = false;
    let settled = false;
    const units = 1 + (c.afterUpgrade ? 1 : 0);
    /** @param {string} outcome */
    const finish = (outcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      sock.destroy();
      const ok = c.expect.includes('any') || c.expect.some((e) => String(e) === outcome);
      resolve({ ok, units, outcome, expected: c.expect.join('|'), detail: ok ? undefined : `request ${hexOf(c.request)}` });
    };
    const timer = setTimeout(() => finish(status === null ? 'timeout' : `timeout after ${status}`), timeoutMs);
    sock.on('error', () => {});
    sock.on('connect', () => {
      sock.write(c.request);
      if (c.halfClose) sock.end();
    });
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      if (status === null) {
        const m = /^HTTP\/1\.[01] (\d{3})/.exec(buf.toString('latin1', 0, Math.min(buf.length, 16)));
        if (!m) return;
        status = Number(m[1]);
        if (status !== 101) { finish(String(status)); return; }
      }
      if (!upgraded) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        upgraded = true;
        buf = buf.subarray(end + 4);
        if (!c.afterUpgrade) { finish('101'); return; }
        sock.write(c.afterUpgrade);
        if (c.abort) { finish('aborted'); return; }
      }
      const code = closeCodeIn(buf);
      if (code !== undefined) finish(`ws:${code}`);
    });
    sock.on('close', () => finish(status === null ? 'closed' : upgraded ? 'ws:dropped without close frame' : `${status} then closed`));
  });
}

/** What an answer from outside the web root would contain. */
const LEAK_SIGNS = ['"devDependencies"', 'root:x:0:0', 'PRIVATE KEY', 'createCarlabServer'];

/**
 * @param {number} port
 * @param {import('./fuzz-world.js').HttpCase} c
 * @param {number} timeoutMs
 * @returns {Promise<CaseResult>}
 */
function runHttpCase(port, c, timeoutMs) {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    /** @type {Buffer[]} */
    const chunks = [];
    let settled = false;
    /** @param {string | null} timedOut */
    const finish = (timedOut) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      sock.destroy();
      const text = Buffer.concat(chunks).toString('latin1');
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      const status = m ? Number(m[1]) : null;
      const leak = c.traversal ? LEAK_SIGNS.find((sign) => text.includes(sign)) : undefined;
      const ok = !timedOut && status !== null && status >= 200 && status < 500 && !leak;
      const outcome = timedOut ?? (status === null ? 'no answer' : leak ? `${status} leaking ${leak}` : String(status));
      resolve({ ok, units: 1, outcome, expected: '2xx-4xx', detail: ok ? undefined : `request ${JSON.stringify(Buffer.from(c.request).toString('latin1').slice(0, 200))}` });
    };
    const timer = setTimeout(() => finish('timeout'), timeoutMs);
    sock.on('error', () => {});
    sock.on('connect', () => sock.write(c.request));
    sock.on('data', (d) => chunks.push(d));
    sock.on('close', () => finish(null));
  });
}

/**
 * Runs one case on its target; a driver that throws is a failed case.
 * @param {import('./fuzz-world.js').FuzzCase} c
 * @param {import('./fuzz-world.js').FuzzWorld} world
 * @param {number} port
 * @param {number} timeoutMs
 * @returns {Promise<CaseResult>}
 */
export async function runCase(c, world, port, timeoutMs) {
  const wsBase = `ws://127.0.0.1:${port}`;
  try {
    if (c.target === 'relay') return await runRelayCase(c, world, `${wsBase}/relay`, timeoutMs);
    if (c.target === 'peer') return await runPeerCase(c, world, wsBase, timeoutMs);
    if (c.target === 'raw') return await runRawCase(port, c, timeoutMs);
    return await runHttpCase(port, c, timeoutMs);
  } catch (err) {
    return { ok: false, units: unitsOf(c, world), outcome: `driver error: ${/** @type {Error | undefined} */ (err)?.message ?? err}`, expected: '' };
  }
}
