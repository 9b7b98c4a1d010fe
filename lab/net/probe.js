#!/usr/bin/env node
// The calibration probe, run inside the namespaces by calibrate.js:
//   node probe.js server HOST            UDP echo + TCP source/sink; prints {"udp","tcp"} ports
//   node probe.js client HOST JSON       runs the probes, prints the achieved figures
// Client JSON: { udpPort, tcpPort, datagrams, pps, upBytes, downBytes, timeoutMs }.
// UDP: `datagrams` numbered 64-byte datagrams paced at `pps`; the server
// counts and echoes them, so up loss = 1 - counted/sent and down loss =
// 1 - echoed/counted. TCP: a bounded upload and download, rate = bytes over
// first-to-last-byte time at the receiver.

import dgram from 'node:dgram';
import net from 'node:net';

const [mode, host, json] = process.argv.slice(2);
const PAYLOAD = 64;

/**
 * Reads one line from a socket; the bytes after it come back as `rest` (a
 * flowing socket would drop what is unshifted before the next listener).
 * @param {net.Socket} s
 * @returns {Promise<{ line: string, rest: Buffer }>}
 */
function readLine(s) {
  return new Promise((resolve, reject) => {
    let buf = Buffer.alloc(0);
    const onData = (/** @type {Buffer} */ d) => {
      buf = Buffer.concat([buf, d]);
      const nl = buf.indexOf(10);
      if (nl < 0) return;
      s.off('data', onData);
      resolve({ line: buf.subarray(0, nl).toString(), rest: buf.subarray(nl + 1) });
    };
    s.on('data', onData);
    s.once('error', reject);
  });
}

async function server() {
  /** datagrams counted per probe id */
  const counted = new Map();
  const udp = dgram.createSocket({ type: 'udp4', recvBufferSize: 8 << 20, sendBufferSize: 8 << 20 });
  udp.on('message', (msg, rinfo) => {
    const id = msg.readUInt32BE(0);
    counted.set(id, (counted.get(id) ?? 0) + 1);
    udp.send(msg, rinfo.port, rinfo.address);
  });
  await new Promise((r) => udp.bind(0, host, () => r(null)));
  const tcp = net.createServer(async (s) => {
    s.on('error', () => {});
    const { line, rest } = await readLine(s);
    const [cmd, arg] = line.split(' ');
    if (cmd === 'count') {
      s.end(`${counted.get(Number(arg)) ?? 0}\n`);
    } else if (cmd === 'down') {
      // the client times the download
      const chunk = Buffer.alloc(64 * 1024);
      let left = Number(arg);
      const pump = () => {
        while (left > 0) {
          const n = Math.min(left, chunk.length);
          left -= n;
          if (!s.write(n === chunk.length ? chunk : chunk.subarray(0, n))) { s.once('drain', pump); return; }
        }
        s.end();
      };
      pump();
    } else if (cmd === 'up') {
      let got = 0; let first = 0; let firstBytes = 0;
      const want = Number(arg);
      const onData = (/** @type {Buffer} */ d) => {
        if (!first) { first = performance.now(); firstBytes = d.length; }
        got += d.length;
        if (got >= want) s.end(`${JSON.stringify({ bytes: got - firstBytes, ms: performance.now() - first })}\n`);
      };
      if (rest.length) onData(rest);
      s.on('data', onData);
    } else {
      s.destroy();
    }
  });
  await new Promise((r) => tcp.listen(0, host, () => r(null)));
  process.stdout.write(`${JSON.stringify({ udp: /** @type {any} */ (udp.address()).port, tcp: /** @type {any} */ (tcp.address()).port })}\n`);
  // the calibrator ends us by closing stdin (or by killing us)
  process.stdin.resume();
  process.stdin.on('end', () => process.exit(0));
}

/**
 * @param {number} port
 * @param {string} line
 * @returns {Promise<net.Socket>}
 */
function ask(port, line) {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, host, () => { s.write(`${line}\n`); resolve(s); });
    s.once('error', reject);
  });
}

/** @param {any} o */
async function client(o) {
  const id = (process.pid * 7919) >>> 0;
  const udp = dgram.createSocket({ type: 'udp4', recvBufferSize: 8 << 20, sendBufferSize: 8 << 20 });
  let echoed = 0;
  udp.on('message', () => { echoed++; });
  await new Promise((r) => udp.bind(0, () => r(null)));
  const msg = Buffer.alloc(PAYLOAD);
  msg.writeUInt32BE(id, 0);
  let sent = 0;
  const tickMs = 5;
  const perTick = Math.max(1, Math.round((o.pps * tickMs) / 1000));
  await new Promise((resolve) => {
    const timer = setInterval(() => {
      for (let k = 0; k < perTick && sent < o.datagrams; k++) {
        msg.writeUInt32BE(sent, 4);
        udp.send(msg, o.udpPort, host);
        sent++;
      }
      if (sent >= o.datagrams) { clearInterval(timer); resolve(null); }
    }, tickMs);
  });
  await new Promise((r) => setTimeout(r, 700)); // the last echoes arrive (queues drain)
  udp.close();
  const counted = Number(await new Promise((resolve, reject) => {
    ask(o.tcpPort, `count ${id}`).then((s) => { readLine(s).then((r) => resolve(r.line), reject); }, reject);
  }));

  const deadline = (/** @type {number} */ ms) => new Promise((r) => setTimeout(() => r('timeout'), ms));
  // download
  const down = await new Promise((resolve) => {
    let got = 0; let first = 0; let firstBytes = 0; let done = false;
    const finish = (/** @type {boolean} */ timedOut) => {
      if (done) return; done = true;
      const ms = first ? performance.now() - first : 0;
      resolve({ bytes: got, kbit: ms > 0 ? ((got - firstBytes) * 8) / ms : null, timedOut });
    };
    ask(o.tcpPort, `down ${o.downBytes}`).then((s) => {
      s.on('data', (d) => { if (!first) { first = performance.now(); firstBytes = d.length; } got += d.length; });
      s.on('end', () => finish(false));
      deadline(o.timeoutMs).then(() => { finish(true); s.destroy(); });
    }, () => finish(true));
  });
  // upload
  const up = await new Promise((resolve) => {
    ask(o.tcpPort, `up ${o.upBytes}`).then((s) => {
      const chunk = Buffer.alloc(64 * 1024);
      let left = o.upBytes;
      const pump = () => {
        while (left > 0) {
          const n = Math.min(left, chunk.length);
          left -= n;
          if (!s.write(n === chunk.length ? chunk : chunk.subarray(0, n))) { s.once('drain', pump); return; }
        }
      };
      pump();
      Promise.race([readLine(s), deadline(o.timeoutMs)]).then((line) => {
        s.destroy();
        if (line === 'timeout') { resolve({ bytes: o.upBytes - left, kbit: null, timedOut: true }); return; }
        const r = JSON.parse(/** @type {any} */ (line).line);
        resolve({ bytes: o.upBytes, kbit: r.ms > 0 ? (r.bytes * 8) / r.ms : null, timedOut: false });
      }, () => resolve({ bytes: 0, kbit: null, timedOut: true }));
    }, () => resolve({ bytes: 0, kbit: null, timedOut: true }));
  });
  process.stdout.write(`${JSON.stringify({ sent, counted, echoed, up, down })}\n`);
  process.exit(0);
}

if (mode === 'server') await server();
else if (mode === 'client') await client(JSON.parse(json));
else {
  process.stderr.write('usage: probe.js server HOST | client HOST JSON\n');
  process.exit(2);
}
