// Experiment 3, idle keepalive: N idle connections between two peers (open
// channels, no application data) for a window of W seconds; per connection
// and end: bytes/s each way from getStats deltas (Chromium transport totals,
// Firefox candidate-pair sums: DTLS/SCTP payload, STUN excluded), STUN checks
// from getStats where the browser counts them (Chromium: requestsSent,
// requestsReceived, consentRequestsSent), and the wire (nft: every UDP packet
// with headers, STUN Binding requests and responses told apart), plus each
// peer's signaling WebSocket (PeerJS heartbeats).

import { delta, kbitPerSecond, perSecond, summary } from './arith.js';
import { obfuscationFor, openPeer, pairFields, sleep, withPair } from './context.js';
import { SECONDS_PER_LAUNCH } from './setup.js';
import { wireTraffic } from './wire.js';

/** Seconds after the last connection opened before the window starts. */
export const SETTLE_S = 3;

/**
 * One open connection's counters as the lab page's counters(id) returns them
 * (lab/pages/src/lab.js; `counters` is its pcCounters() record, lab/pages/src/lab-stats.js).
 * @typedef {{ key: string, remote: string, role: string, counters: { localPorts: number[] } & Record<string, any> }} ConnCounters
 */

/**
 * The payload counters of one connection end: transport totals when the
 * browser has them (Chromium), else candidate-pair sums (Firefox).
 * @param {any} counters pcCounters()
 */
export function payloadOf(counters) {
  const t = counters?.transport;
  if (t && typeof t.bytesSent === 'number') return { ...t, source: 'transport' };
  const p = counters?.pairs ?? {};
  return { bytesSent: p.bytesSent ?? null, bytesReceived: p.bytesReceived ?? null, packetsSent: p.packetsSent ?? null, packetsReceived: p.packetsReceived ?? null, source: 'candidate-pair' };
}

/**
 * Per-second rates of one connection end over a window.
 * @param {{ before: any, after: any }} own this end's counters
 * @param {import('./wire.js').WireTraffic | null} wireOwn what this end's ports sent
 * @param {import('./wire.js').WireTraffic | null} wireOther what the other end's ports sent
 * @param {number} ms window
 */
export function keepaliveRates(own, wireOwn, wireOther, ms) {
  const a = payloadOf(own.before);
  const b = payloadOf(own.after);
  const pa = own.before?.pairs ?? {};
  const pb = own.after?.pairs ?? {};
  return {
    payloadKbitSent: kbitPerSecond(delta(a.bytesSent, b.bytesSent), ms),
    payloadKbitReceived: kbitPerSecond(delta(a.bytesReceived, b.bytesReceived), ms),
    payloadPacketsSent: perSecond(delta(a.packetsSent, b.packetsSent), ms),
    requestsSent: perSecond(delta(pa.requestsSent, pb.requestsSent), ms),
    requestsReceived: perSecond(delta(pa.requestsReceived, pb.requestsReceived), ms),
    responsesSent: perSecond(delta(pa.responsesSent, pb.responsesSent), ms),
    consentRequestsSent: perSecond(delta(pa.consentRequestsSent, pb.consentRequestsSent), ms),
    wireKbitSent: wireOwn ? kbitPerSecond(wireOwn.bytes, ms) : null,
    wireKbitReceived: wireOther ? kbitPerSecond(wireOther.bytes, ms) : null,
    wirePacketsSent: wireOwn ? perSecond(wireOwn.packets, ms) : null,
    wirePacketsReceived: wireOther ? perSecond(wireOther.packets, ms) : null,
    wireStunRequestsSent: wireOwn ? perSecond(wireOwn.stunRequests, ms) : null,
    wireStunRequestsReceived: wireOther ? perSecond(wireOther.stunRequests, ms) : null,
    wireStunResponsesSent: wireOwn ? perSecond(wireOwn.stunResponses, ms) : null,
    wireStunKbitSent: wireOwn ? kbitPerSecond(wireOwn.stunBytes, ms) : null,
  };
}

/**
 * Summaries over connections of every rate.
 * @param {Record<string, number | null>[]} rows
 */
export function summarizeRates(rows) {
  const keys = new Set(rows.flatMap((r) => Object.keys(r)));
  return Object.fromEntries([...keys].map((k) => [k, summary(rows.map((r) => r[k]))]));
}

/**
 * @param {import('./context.js').LabContext} ctx
 * @param {import('./context.js').Pair} pair
 * @param {boolean} hide
 * @param {import('./context.js').BrowsersOptions} o
 * @param {import('./context.js').CellProgress} p
 */
async function runKeepalive(ctx, pair, hide, o, p) {
  await ctx.wire.flush();
  return withPair(ctx, pair, { hideHostAddresses: hide }, async ({ a, b, pa, pb }) => {
    const ia = ctx.newPeerId();
    const ib = ctx.newPeerId();
    await openPeer(pb, ib, o.setupTimeoutMs);
    await openPeer(pa, ia, o.setupTimeoutMs);
    p.update('connecting');
    for (let i = 0; i < o.keepaliveConnections; i++) {
      await pa.evaluate(([x, y, t]) => window.carlabLab.connect(x, y, { mode: 'p2p' }, { timeoutMs: t, stats: false }),
        /** @type {const} */ ([ia, ib, o.setupTimeoutMs]));
    }
    await sleep(SETTLE_S * 1000);
    const snap = async () => {
      const [ca, cb, wire, sig] = await Promise.all([
        /** @type {Promise<ConnCounters[]>} */ (pa.evaluate((x) => window.carlabLab.counters(x), ia)),
        /** @type {Promise<ConnCounters[]>} */ (pb.evaluate((x) => window.carlabLab.counters(x), ib)),
        ctx.wire.read(),
        ctx.proxy.snapshot([ia, ib]),
      ]);
      return { ca, cb, wire, sig, at: performance.now() };
    };
    const s0 = await snap();
    const end = s0.at + o.keepaliveS * 1000;
    while (performance.now() < end && !ctx.shouldStop()) {
      await sleep(Math.min(1000, Math.max(0, end - performance.now())));
      p.update(`idle ${Math.round((performance.now() - s0.at) / 1000)}/${o.keepaliveS} s`);
    }
    const s1 = await snap();
    const ms = s1.at - s0.at;
    /** @type {Record<string, number | null>[]} */
    const rowsA = [];
    /** @type {Record<string, number | null>[]} */
    const rowsB = [];
    for (const c0 of s0.ca) {
      const c1 = s1.ca.find((c) => c.key === c0.key);
      const r0 = s0.cb.find((c) => c.key === c0.key);
      const r1 = s1.cb.find((c) => c.key === c0.key);
      if (!c1 || !r0 || !r1) continue;
      const wa = s0.wire && s1.wire ? wireTraffic(s0.wire, s1.wire, c1.counters.localPorts) : null;
      const wb = s0.wire && s1.wire ? wireTraffic(s0.wire, s1.wire, r1.counters.localPorts) : null;
      rowsA.push(keepaliveRates({ before: c0.counters, after: c1.counters }, wa, wb, ms));
      rowsB.push(keepaliveRates({ before: r0.counters, after: r1.counters }, wb, wa, ms));
    }
    const sigRate = (/** @type {string} */ id) => ({
      kbitSent: kbitPerSecond(delta(s0.sig[id]?.up, s1.sig[id]?.up), ms),
      kbitReceived: kbitPerSecond(delta(s0.sig[id]?.down, s1.sig[id]?.down), ms),
    });
    const payloadSource = payloadOf(s1.ca[0]?.counters).source;
    return {
      connections: rowsA.length,
      windowS: Math.round(ms / 100) / 10,
      stoppedEarly: ctx.shouldStop(),
      initiator: { browser: pair.initiator, payloadSource, ...summarizeRates(rowsA) },
      receiver: { browser: pair.receiver, payloadSource: payloadOf(s1.cb[0]?.counters).source, ...summarizeRates(rowsB) },
      signaling: { initiator: sigRate(ia), receiver: sigRate(ib) },
      pageErrors: [...a.errors, ...b.errors].slice(0, 20),
    };
  });
}

/** @type {import('./context.js').Experiment} */
export const keepaliveExperiment = {
  name: 'keepalive',
  title: 'Idle keepalive',
  metric: { label: '', unit: '' },
  cells(o) {
    return obfuscationFor(o, 'keepalive').flatMap((hide) => o.pairs.map((pair) => ({
      label: `keepalive ${pair.label}${hide ? ', obfuscation on' : ''}: ${o.keepaliveConnections} idle connections, ${o.keepaliveS} s`,
      seconds: SECONDS_PER_LAUNCH + SETTLE_S + o.keepaliveS + o.keepaliveConnections * 0.3,
      fields: { ...pairFields('keepalive', pair, hide), transport: 'p2p' },
      async run(ctx, p) {
        return [{ ...pairFields('keepalive', pair, hide), transport: 'p2p', ...(await runKeepalive(ctx, pair, hide, o, p)) }];
      },
    })));
  },
};
