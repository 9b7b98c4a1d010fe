// The raw-socket and HTTP targets of the fuzz run: broken upgrade requests
// and broken WebSocket framing after a good handshake, written byte by byte
// on a TCP socket, and odd HTTP requests under /peerjs and traversal
// attempts; each case carries the statuses and closes it may end with.

/** @typedef {import('../shared/rng.js').Rng} Rng */
/** @typedef {import('./fuzz-world.js').FuzzWorld} FuzzWorld */
/** @typedef {import('./fuzz-world.js').RawCase} RawCase */
/** @typedef {import('./fuzz-world.js').HttpCase} HttpCase */

// ------------------------------------------------------------------ raw TCP: handshakes and framing

const te = new TextEncoder();

/** A syntactically valid Sec-WebSocket-Key. @param {Rng} r */
const wsKey = (r) => Buffer.from(r.bytes(16)).toString('base64');

/**
 * @param {object} o
 * @param {string} o.path
 * @param {string} [o.method]
 * @param {string | null} [o.key]
 * @param {string | null} [o.version]
 * @param {string | null} [o.upgrade]
 * @param {string} [o.connection]
 * @param {string | null} [o.origin]
 * @param {string[]} [o.extra]
 */
function upgradeRequest(o) {
  const lines = [`${o.method ?? 'GET'} ${o.path} HTTP/1.1`, 'Host: 127.0.0.1'];
  if (o.upgrade !== null) lines.push(`Upgrade: ${o.upgrade ?? 'websocket'}`);
  lines.push(`Connection: ${o.connection ?? 'Upgrade'}`);
  if (o.key !== null) lines.push(`Sec-WebSocket-Key: ${o.key}`);
  if (o.version !== null) lines.push(`Sec-WebSocket-Version: ${o.version ?? '13'}`);
  if (o.origin) lines.push(`Origin: ${o.origin}`);
  lines.push(...(o.extra ?? []));
  return te.encode(`${lines.join('\r\n')}\r\n\r\n`);
}

/**
 * One WebSocket frame as a client writes it (masked unless told otherwise).
 * @param {object} o
 * @param {number} o.opcode
 * @param {Uint8Array} [o.payload]
 * @param {boolean} [o.fin]
 * @param {number} [o.rsv] bits 4..6 of the first byte
 * @param {boolean} [o.mask]
 * @param {bigint} [o.length64] claim this 64-bit length (the payload is not sent)
 */
export function wsFrame(o) {
  const payload = o.payload ?? new Uint8Array(0);
  const head = [((o.fin ?? true) ? 0x80 : 0) | ((o.rsv ?? 0) << 4) | o.opcode];
  const mask = o.mask ?? true;
  const m = mask ? 0x80 : 0;
  if (o.length64 !== undefined) {
    head.push(m | 127);
    for (let i = 7; i >= 0; i--) head.push(Number((o.length64 >> BigInt(8 * i)) & 0xffn));
  } else if (payload.length < 126) {
    head.push(m | payload.length);
  } else if (payload.length < 65536) {
    head.push(m | 126, payload.length >> 8, payload.length & 0xff);
  } else {
    head.push(m | 127, 0, 0, 0, 0, (payload.length >>> 24) & 0xff, (payload.length >> 16) & 0xff, (payload.length >> 8) & 0xff, payload.length & 0xff);
  }
  const key = [0x12, 0x34, 0x56, 0x78];
  if (mask) head.push(...key);
  const body = o.length64 !== undefined ? new Uint8Array(0) : payload.map((b, i) => (mask ? b ^ key[i % 4] : b));
  const out = new Uint8Array(head.length + body.length);
  out.set(head);
  out.set(body, head.length);
  return out;
}

/**
 * A raw TCP case: a broken handshake, or a good one and broken framing.
 * @param {Rng} r @param {number} index @param {FuzzWorld} w
 * @returns {RawCase}
 */
export function rawCase(r, index, w) {
  const onPeer = r.chance(0.3);
  const wsPath = onPeer ? `/peerjs/peerjs?key=${w.peerKey}&id=fz-raw-${w.seed}-${index}&token=t${index}` : '/relay';
  const which = /** @type {'relay' | 'peer'} */ (onPeer ? 'peer' : 'relay');
  /** @type {(name: string, request: Uint8Array, expect: RawCase['expect'], more?: Partial<RawCase>) => RawCase} */
  const c = (name, request, expect, more = {}) => ({
    target: 'raw', name, path: which, request, afterUpgrade: null, halfClose: false, abort: false, expect, ...more,
  });
  const kind = r.int(0, 15);
  switch (kind) {
    case 0: return c('hs-bad-key', upgradeRequest({ path: wsPath, key: r.pick(['abc', '', r.ascii(24).replace(/\s/g, 'x'), 'AAAAAAAAAAAAAAAAAAAAAA==x']) }), [400]);
    case 1: return c('hs-no-key', upgradeRequest({ path: wsPath, key: null }), [400]);
    case 2: return c('hs-bad-version', upgradeRequest({ path: wsPath, key: wsKey(r), version: r.pick(['12', '0', 'x', null]) }), [400]);
    case 3: return c('hs-bad-upgrade', upgradeRequest({ path: wsPath, key: wsKey(r), upgrade: r.pick(['h2c', 'websockets', 'TLS/1.0']) }), [400]);
    case 4: return c('hs-method', upgradeRequest({ path: wsPath, key: wsKey(r), method: r.pick(['POST', 'PUT', 'DELETE']) }), [405]);
    case 5: return c('hs-bad-origin', upgradeRequest({ path: wsPath, key: wsKey(r), origin: r.pick(['http://evil.example', 'null', 'https://127.0.0.1.evil.example', 'file://', 'x']) }), [403]);
    case 6: {
      const target = onPeer
        ? r.pick(['/peerjs/other', '/peerjs/peerjs/x', '/peerjsx', '/peerjs/./peerjs', '/peerjs/peerjs#x', 'http://127.0.0.1/peerjs/peerjs'])
        : r.pick(['/relayx', '/relay/', '/RELAY', '/', '/relay/../relay2', `/${r.word(8)}`, '/./relay', '/relay/../relay', '/relay#x', 'http://127.0.0.1/relay', '//relay']);
      return c('hs-wrong-path', upgradeRequest({ path: target, key: wsKey(r) }), [404]);
    }
    case 7: // "Upgrade" without "Connection: Upgrade": a plain request
      return c('hs-no-connection-upgrade', upgradeRequest({ path: wsPath, key: wsKey(r), connection: 'keep-alive', extra: ['Content-Length: 0'] }), [200, 404]);
    case 8: { // bytes that are no HTTP at all
      const b = r.bytes(r.int(1, 400));
      b[0] = r.pick([0x00, 0x01, 0x16, 0x80, 0xff]); // no method starts like this (and not CR/LF, skipped)
      return c('hs-garbage', b, [400, 'closed']);
    }
    case 9: { // a request cut off, then our side ends
      const full = upgradeRequest({ path: wsPath, key: wsKey(r) });
      return c('hs-truncated', full.subarray(0, r.int(1, full.length - 5)), [400, 'closed'], { halfClose: true });
    }
    case 10: // headers too large
      return c('hs-huge-header', upgradeRequest({ path: wsPath, key: wsKey(r), extra: [`X-Fill: ${'a'.repeat(r.int(17, 40) * 1024)}`] }), [431]);
    case 11: // a good handshake, then the connection dies inside a frame
      return c('ws-abort-mid-frame', upgradeRequest({ path: wsPath, key: wsKey(r) }), ['any'], {
        afterUpgrade: wsFrame({ opcode: 2, payload: r.bytes(r.int(10, 200)) }).subarray(0, r.int(1, 8)), abort: true,
      });
    default: { // a good handshake, then broken WebSocket framing
      const bad = r.pick([
        () => [wsFrame({ opcode: 2, payload: r.bytes(10), mask: false }), 1002],
        () => [wsFrame({ opcode: r.pick([3, 4, 5, 6, 7, 0xb, 0xc, 0xf]), payload: r.bytes(4) }), 1002],
        () => [wsFrame({ opcode: 2, payload: r.bytes(4), rsv: r.int(1, 7) }), 1002],
        () => [wsFrame({ opcode: 0, payload: r.bytes(4) }), 1002], // continuation with nothing to continue
        () => [wsFrame({ opcode: 9, payload: r.bytes(126) }), 1002], // control frame over 125 bytes
        () => [wsFrame({ opcode: 9, payload: r.bytes(4), fin: false }), 1002], // fragmented control frame
        () => [wsFrame({ opcode: 8, payload: Uint8Array.of(0x03, 0xe7) }), 1002], // close code 999
        () => [wsFrame({ opcode: 8, payload: Uint8Array.of(0x03) }), 1002], // close payload of 1 byte
        () => [wsFrame({ opcode: 1, payload: Uint8Array.of(0xc3, 0x28, 0xff) }), 1007], // invalid UTF-8 text
        () => [wsFrame({ opcode: 2, length64: 1n << 60n }), 1009],
        () => [wsFrame({ opcode: 2, length64: BigInt(w.maxPayload + r.int(1, 1e6)) }), 1009],
      ])();
      return c('ws-bad-framing', upgradeRequest({ path: wsPath, key: wsKey(r) }), [`ws:${bad[1]}`], { afterUpgrade: /** @type {Uint8Array} */ (bad[0]) });
    }
  }
}

/**
 * An HTTP case: an odd request under /peerjs, or a traversal attempt.
 * @param {Rng} r @param {number} index @param {FuzzWorld} w
 * @returns {HttpCase}
 */
export function httpCase(r, index, w) {
  const enc = (/** @type {string} */ s) => s.replace(/[^A-Za-z0-9._~\-/%?=&]/g, (ch) => `%${ch.charCodeAt(0).toString(16).padStart(2, '0')}`);
  const method = r.pick(['GET', 'GET', 'GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH']);
  const kind = r.int(0, 7);
  let path;
  let traversal = false;
  switch (kind) {
    case 0: path = r.pick(['/peerjs', '/peerjs/', `/peerjs/${w.peerKey}/id`, '/peerjs/peerjs/id', `/peerjs/${w.peerKey}/peers`]); break;
    case 1: path = `/peerjs/${enc(r.ascii(r.int(0, 40)))}/${enc(r.ascii(r.int(0, 20)))}`; break;
    case 2: path = `/peerjs/${r.pick(['%zz', '%', '%00', '%ff%fe', '%c3%28', '%2f%2f'])}/id`; break;
    case 3: path = `/peerjs/${'x'.repeat(r.int(1, 8) * 1000)}`; break;
    case 4: path = `/peerjs/${w.peerKey}/id?${enc(r.ascii(r.int(0, 60)))}`; break;
    case 5: case 6: {
      traversal = true;
      const up = r.pick(['../', '..%2f', '%2e%2e/', '%2e%2e%2f', '..\\', '....//', '..%c0%af']);
      path = `${r.pick(['/', '/peerjs/', '/assets/', '/markers/'])}${up.repeat(r.int(1, 8))}${r.pick(['package.json', 'etc/passwd', '.carlab/certs/key.pem', 'server/server.js'])}`;
      break;
    }
    default: path = `/${enc(r.ascii(r.int(0, 30)))}`;
  }
  const body = method === 'POST' || method === 'PUT' || method === 'PATCH' ? r.ascii(r.int(0, 200)) : '';
  const lines = [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close'];
  if (r.chance(0.3)) lines.push(`Origin: ${r.pick(['http://evil.example', 'null', 'http://127.0.0.1'])}`);
  if (body) lines.push('Content-Type: application/json', `Content-Length: ${Buffer.byteLength(body)}`);
  return { target: 'http', name: traversal ? 'http-traversal' : `http-peerjs-${kind}`, request: te.encode(`${lines.join('\r\n')}\r\n\r\n${body}`), traversal };
}

