// A raw protocol client for the relay's tests: a plain `ws` socket that joins
// with the given HELLO flags and records every message (BATCHes unpacked) and
// its close. No client core: the tests speak the wire format themselves.
import { once } from 'node:events';
import WebSocket from 'ws';
import { MsgType, decode, encode } from '../core/protocol.js';
import { waitFor as until } from '../lab/shared/loop-stall.js';

/**
 * @typedef {object} RawClient
 * @property {WebSocket} ws
 * @property {import('../core/protocol.js').Message[]} got every message received, in order
 * @property {number} id its client id, from the WELCOME
 * @property {{ code: number, reason: string } | null} closed
 */

/**
 * Opens a socket to `url`, joins `group` with HELLO `flags` (and any other HELLO fields of `hello`)
 * and resolves once WELCOMEd, or closed before (a refused HELLO: `id` stays 0).
 * @param {string} url @param {string} group @param {number} flags
 * @param {Partial<import('../core/protocol.js').HelloMsg>} [hello]
 * @returns {Promise<RawClient>}
 */
export async function rawClient(url, group, flags, hello = {}) {
  const ws = new WebSocket(url);
  /** @type {RawClient} */
  const c = { ws, got: [], id: 0, closed: null };
  ws.on('close', (code, reason) => { c.closed = { code, reason: reason.toString() }; });
  ws.on('message', (data) => {
    const m = decode(/** @type {Buffer} */ (data));
    if (m instanceof Error) throw m;
    for (const x of m.type === MsgType.BATCH ? m.messages : [m]) {
      if (x.type === MsgType.WELCOME) c.id = x.clientId;
      c.got.push(x);
    }
  });
  await once(ws, 'open');
  ws.send(encode({ type: MsgType.HELLO, flags, clientId: 0, group, name: 'n', token: '', ...hello }));
  await until(() => c.id !== 0 || c.closed !== null);
  return c;
}
