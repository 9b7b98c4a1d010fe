import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { countersOf, parseSs, peerIdOfUpgrade, startSignalingProxy } from './proxy.js';

const upgrade = (/** @type {string} */ path) => Buffer.from(`GET ${path} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n`);

test('a PeerJS WebSocket upgrade names its peer; anything else does not', () => {
  assert.equal(peerIdOfUpgrade(upgrade('/peerjs/peerjs?key=peerjs&id=carlab-abc-3&token=x'), '/peerjs/peerjs'), 'carlab-abc-3');
  assert.equal(peerIdOfUpgrade(upgrade('/relay?id=1'), '/peerjs/peerjs'), null);
  assert.equal(peerIdOfUpgrade(Buffer.from('GET /peerjs/peerjs?id=1 HTTP/1.1\r\nHost: x\r\n\r\n'), '/peerjs/peerjs'), null);
  assert.equal(peerIdOfUpgrade(Buffer.from('\x16\x03\x01garbage'), '/peerjs/peerjs'), null);
});

test('ss -tinH output parses into segments per browser port', () => {
  const text = '0      0      127.0.0.1:44587 127.0.0.1:53168\n'
    + '\t cubic wscale:7,7 bytes_sent:5 bytes_acked:5 bytes_received:12 segs_out:2 segs_in:4 data_segs_out:1 data_segs_in:1\n'
    + '0      0      [::ffff:127.0.0.1]:44587 [::ffff:127.0.0.1]:53170\n'
    + '\t cubic segs_out:7 segs_in:9\n';
  const m = parseSs(text);
  assert.deepEqual(m.get(53168), { segsIn: 4, segsOut: 2, bytesReceived: 12, bytesSent: 5 });
  assert.equal(m.get(53170)?.segsIn, 9);
});

test('the proxy forwards both ways and counts only PeerJS WebSockets, per peer', async () => {
  const target = net.createServer((s) => s.on('data', (d) => s.write(Buffer.concat([Buffer.from('re:'), d]))));
  await new Promise((r) => target.listen(0, '127.0.0.1', () => r(null)));
  const proxy = await startSignalingProxy({ target: `http://127.0.0.1:${/** @type {net.AddressInfo} */ (target.address()).port}` });
  /** @param {string | Buffer} first @param {string} more @returns {Promise<{ c: net.Socket, got: string }>} */
  const talk = (first, more) => new Promise((resolve) => {
    const c = net.connect(proxy.port, '127.0.0.1', () => c.write(first));
    let got = '';
    let sent = false;
    c.on('data', (d) => {
      got += d;
      if (!sent) { sent = true; c.write(more); return; }
      resolve({ c, got });
    });
  });
  try {
    const ws = await talk(upgrade('/peerjs/peerjs?key=peerjs&id=p1&token=t'), 'hello');
    const page = await talk(Buffer.from('GET /lab.html HTTP/1.1\r\nHost: x\r\n\r\n'), 'more');
    const snap = await proxy.snapshot(['p1', 'p2']);
    const up = upgrade('/peerjs/peerjs?key=peerjs&id=p1&token=t').length + 5;
    assert.equal(snap.p1.up, up);
    assert.equal(snap.p1.down, up + 6); // two echoes prefixed with "re:"
    assert.equal('p2' in snap, false);
    if (proxy.hasPackets) assert.ok(/** @type {number} */ (snap.p1.segsUp) >= 2);
    ws.c.destroy();
    page.c.destroy();
  } finally {
    await proxy.close();
    target.close();
  }
});

test('counters: bytes from the record, segments only while the peer is open, unknown peers left out', () => {
  const peers = new Map([
    ['a', { up: 10, down: 20, clientPort: 5001, open: true }],
    ['b', { up: 1, down: 2, clientPort: 5002, open: false }],
  ]);
  const segs = new Map([[5001, { segsIn: 3, segsOut: 4, bytesReceived: 0, bytesSent: 0 }], [5002, { segsIn: 5, segsOut: 6, bytesReceived: 0, bytesSent: 0 }]]);
  assert.deepEqual(countersOf(peers, segs, ['a', 'b', 'nobody']), {
    a: { up: 10, down: 20, segsUp: 3, segsDown: 4 },
    b: { up: 1, down: 2, segsUp: null, segsDown: null },
  });
  assert.deepEqual(countersOf(peers, new Map(), ['a']), { a: { up: 10, down: 20, segsUp: null, segsDown: null } });
});
