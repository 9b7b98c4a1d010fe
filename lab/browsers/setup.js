// Experiment 1, setup delay: per repetition a fresh PeerJS peer in each
// browser of the pair (signaling open: new Peer -> open, timed in the page),
// then the initiator connects and both ends time the phases (offer/answer,
// ICE connected, DTLS connected, channel open). The same repetitions carry
// everything experiment 2 (overhead) needs, so when both run, overhead reuses
// setup's repetitions without obfuscation.

import { failedFromStart, summary } from './arith.js';
import { obfuscationFor, openPeer, pairFields, sleep, withPair } from './context.js';
import { wireTraffic } from './wire.js';

/** Seconds one repetition takes, for the ETA (measured here: setup 30-90 ms + 0.15-0.25 s around it). */
export const SECONDS_PER_REP = 0.3;
/** Launching two browsers and their pages, and closing them (Firefox's measured ~3.5 s, Chromium's ~1.5 s). */
export const SECONDS_PER_LAUNCH = 5;

/**
 * Estimated seconds of a cell of repetitions: launching the pair, then the
 * repetitions; with obfuscation, Firefox's ICE waits for mDNS (+0.5..0.8 s measured).
 * @param {import('./context.js').Pair} pair
 * @param {boolean} hide
 * @param {number} reps
 */
export function repetitionSeconds(pair, hide, reps) {
  // both launch at once; closing adds about a second
  const launch = 1 + Math.max(...[pair.initiator, pair.receiver].map((b) => (b === 'firefox' ? 5 : 2)));
  const firefox = pair.initiator === 'firefox' || pair.receiver === 'firefox';
  return launch + reps * (SECONDS_PER_REP + (hide && firefox ? 0.75 : 0));
}

/**
 * The repetitions a run already made of a pair and obfuscation setting, for
 * overhead (kept on the run's context, so runs never share them).
 * @param {import('./context.js').LabContext} ctx
 * @returns {Map<string, { reps: any[], pageErrors: string[], durationS: number }>}
 */
export function repetitionCache(ctx) {
  return ctx.cache;
}

/**
 * One repetition: two new peers, one connection, both ends' timings and counters.
 * @param {import('./context.js').LabContext} ctx
 * @param {{ pa: import('playwright-core').Page, pb: import('playwright-core').Page }} side
 * @param {number} timeoutMs
 */
export async function setupRepetition(ctx, side, timeoutMs) {
  const ia = ctx.newPeerId();
  const ib = ctx.newPeerId();
  /** @type {Record<string, any>} */
  const rep = {};
  try {
    const wire0 = await ctx.wire.read();
    // The receiver must be registered before the offer arrives.
    const ob = await openPeer(side.pb, ib, timeoutMs);
    const oa = await openPeer(side.pa, ia, timeoutMs);
    rep.signalingMs = oa.signalingMs;
    rep.signalingReceiverMs = ob.signalingMs;
    const sig0 = await ctx.proxy.snapshot([ia, ib]);
    const init = await side.pa.evaluate(([a, b, t]) => window.carlabLab.connect(a, b, { mode: 'p2p' }, { timeoutMs: t }),
      /** @type {const} */ ([ia, ib, timeoutMs]));
    const wire1 = await ctx.wire.read();
    const sig1 = await ctx.proxy.snapshot([ia, ib]);
    const recv = await side.pb.evaluate(([b, key]) => window.carlabLab.connInfo(b, key, 5000), /** @type {const} */ ([ib, init.key]));
    rep.timings = init.timings;
    rep.receiverTimings = recv.timings ?? null;
    rep.candidateType = init.setup?.candidateType ?? null;
    rep.receiverCandidateType = recv.setup?.candidateType ?? null;
    rep.localCandidates = init.localCandidates;
    rep.receiverLocalCandidates = recv.localCandidates ?? null;
    rep.channel = init.channel;
    if (recv.error) rep.receiverError = recv.error;
    const wa = wire0 && wire1 ? wireTraffic(wire0, wire1, init.counters?.localPorts ?? []) : null;
    const wb = wire0 && wire1 ? wireTraffic(wire0, wire1, recv.counters?.localPorts ?? []) : null;
    rep.bytes = {
      initiator: sideBytes(sig0[ia], sig1[ia], init, wa, wb),
      receiver: sideBytes(sig0[ib], sig1[ib], recv, wb, wa),
    };
  } catch (err) {
    rep.error = cleanError(err);
  } finally {
    await Promise.all([
      side.pa.evaluate((id) => window.carlabLab.destroyPeer(id), ia).catch(() => {}),
      side.pb.evaluate((id) => window.carlabLab.destroyPeer(id), ib).catch(() => {}),
    ]);
  }
  return rep;
}

/**
 * What one end sent and received during setup, by part: signaling while the
 * peer opened and while the connection was set up (proxy counts, TCP
 * segments from ss), peer-to-peer from getStats (setupStats: DTLS/SCTP
 * payload, STUN excluded) and on the wire (nft: every UDP packet incl. STUN
 * and headers; received = what the other end sent).
 * @param {any} sigOpen signaling counters right after open
 * @param {any} sigSetup signaling counters once the channel was open
 * @param {any} end connect() or connInfo() result
 * @param {import('./wire.js').WireTraffic | null} wireOwn
 * @param {import('./wire.js').WireTraffic | null} wireOther
 */
export function sideBytes(sigOpen, sigSetup, end, wireOwn, wireOther) {
  const d = (/** @type {string} */ k) => (typeof sigSetup?.[k] === 'number' && typeof sigOpen?.[k] === 'number' ? sigSetup[k] - sigOpen[k] : null);
  const pairs = end?.counters?.pairs ?? {};
  return {
    signalingOpen: sigOpen ? { sent: sigOpen.up, received: sigOpen.down, packetsSent: sigOpen.segsUp, packetsReceived: sigOpen.segsDown } : null,
    signalingSetup: sigSetup ? { sent: d('up'), received: d('down'), packetsSent: d('segsUp'), packetsReceived: d('segsDown') } : null,
    p2p: end?.setup ? {
      sent: end.setup.setupBytesSent,
      received: end.setup.setupBytesReceived,
      // setupStats sums what the browser reports; Firefox reports no packet counts
      packetsSent: typeof pairs.packetsSent === 'number' ? end.setup.setupPacketsSent : null,
      packetsReceived: typeof pairs.packetsReceived === 'number' ? end.setup.setupPacketsReceived : null,
    } : null,
    stun: {
      requestsSent: pairs.requestsSent ?? null,
      requestsReceived: pairs.requestsReceived ?? null,
      responsesSent: pairs.responsesSent ?? null,
      responsesReceived: pairs.responsesReceived ?? null,
      consentRequestsSent: pairs.consentRequestsSent ?? null,
    },
    wire: wireOwn && wireOther ? {
      sent: wireOwn.bytes,
      received: wireOther.bytes,
      packetsSent: wireOwn.packets,
      packetsReceived: wireOther.packets,
      stunRequestsSent: wireOwn.stunRequests,
      stunResponsesSent: wireOwn.stunResponses,
      stunBytesSent: wireOwn.stunBytes,
    } : null,
  };
}

/** @param {unknown} err */
export function cleanError(err) {
  const text = String(/** @type {Error} */ (err)?.message ?? err);
  // page.evaluate wraps page errors: keep the page's message
  return text.replace(/^page\.evaluate: (Error: )?/, '').split('\n')[0].slice(0, 300);
}

/**
 * Runs `n` repetitions of one pair and obfuscation setting.
 * @param {import('./context.js').LabContext} ctx
 * @param {import('./context.js').Pair} pair
 * @param {boolean} hide
 * @param {import('./context.js').BrowsersOptions} o
 * @param {import('./context.js').CellProgress} p
 */
export async function runRepetitions(ctx, pair, hide, o, p) {
  await ctx.wire.flush();
  const started = performance.now();
  /** @type {string[]} */
  let pageErrors = [];
  const reps = await withPair(ctx, pair, { hideHostAddresses: hide }, async (side) => {
    /** @type {any[]} */
    const out = [];
    for (let i = 0; i < o.repeat && !ctx.shouldStop(); i++) {
      out.push(await setupRepetition(ctx, side, o.setupTimeoutMs));
      const ok = out.filter((r) => !r.error);
      p.update(`${i + 1}/${o.repeat} done, ${out.length - ok.length} failed`, summary(ok.map((r) => r.timings?.channelOpenMs))?.p50 ?? null);
      if (failedFromStart(out, o.giveUpAfter)) break;
      if (i % 20 === 19) ctx.proxy.prune();
      await sleep(30);
    }
    pageErrors = [side.a, side.b].flatMap((b) => b.errors);
    return out;
  });
  const result = { reps, pageErrors, durationS: Math.round((performance.now() - started) / 100) / 10 };
  repetitionCache(ctx).set(`${pair.label}|${hide}`, result);
  return result;
}

/**
 * Counts of values, e.g. candidate pair types.
 * @param {unknown[]} values
 */
function countOf(values) {
  /** @type {Record<string, number>} */
  const out = {};
  for (const v of values) if (v !== null && v !== undefined) out[String(v)] = (out[String(v)] ?? 0) + 1;
  return out;
}

/**
 * The setup record of one pair and obfuscation setting.
 * @param {import('./context.js').Pair} pair
 * @param {boolean} hide
 * @param {any[]} reps
 * @param {number} planned
 * @param {number} giveUpAfter
 * @param {string[]} [pageErrors]
 */
export function setupRecord(pair, hide, reps, planned, giveUpAfter, pageErrors = []) {
  const ok = reps.filter((r) => !r.error);
  const t = (/** @type {string} */ k) => summary(ok.map((r) => r.timings?.[k]));
  const rt = (/** @type {string} */ k) => summary(ok.map((r) => r.receiverTimings?.[k]));
  return {
    ...pairFields('setup', pair, hide),
    transport: 'p2p',
    channel: ok[0]?.channel ? { ordered: ok[0].channel.ordered, maxRetransmits: ok[0].channel.maxRetransmits, negotiated: ok[0].channel.negotiated } : null,
    repetitions: planned,
    attempted: reps.length,
    completed: ok.length,
    failures: reps.length - ok.length,
    gaveUp: failedFromStart(reps, giveUpAfter) && reps.length < planned,
    failureReasons: countOf(reps.filter((r) => r.error).map((r) => r.error)),
    setupMs: {
      signaling: summary(reps.map((r) => r.signalingMs)),
      peer: t('channelOpenMs'),
      offerAnswer: t('offerAnswerMs'),
      iceConnected: t('iceConnectedMs'),
      dtlsConnected: t('dtlsConnectedMs'),
      gathering: t('gatheringMs'),
      firstCandidate: t('firstCandidateMs'),
      signalingReceiver: summary(reps.map((r) => r.signalingReceiverMs)),
      peerReceiver: rt('channelOpenMs'),
    },
    candidateTypes: countOf(ok.map((r) => r.candidateType)),
    receiverCandidateTypes: countOf(ok.map((r) => r.receiverCandidateType)),
    localCandidates: { initiator: summary(ok.map((r) => r.localCandidates)), receiver: summary(ok.map((r) => r.receiverLocalCandidates)) },
    pageErrors: pageErrors.slice(0, 20),
    reps: reps.map((r) => ({
      signalingMs: r.signalingMs ?? null,
      signalingReceiverMs: r.signalingReceiverMs ?? null,
      ...(r.timings ?? {}),
      receiverChannelOpenMs: r.receiverTimings?.channelOpenMs ?? null,
      candidateType: r.candidateType ?? null,
      ...(r.error ? { error: r.error } : {}),
    })),
  };
}

/** @type {import('./context.js').Experiment} */
export const setupExperiment = {
  name: 'setup',
  title: 'Setup delay',
  metric: { label: 'peer setup p50', unit: ' ms' },
  cells(o) {
    return obfuscationFor(o, 'setup').flatMap((hide) => o.pairs.map((pair) => ({
      label: `setup ${pair.label}, obfuscation ${hide ? 'on' : 'off'}`,
      seconds: repetitionSeconds(pair, hide, o.repeat),
      fields: { ...pairFields('setup', pair, hide), transport: 'p2p' },
      async run(ctx, p) {
        const { reps, pageErrors, durationS } = await runRepetitions(ctx, pair, hide, o, p);
        return [{ ...setupRecord(pair, hide, reps, o.repeat, o.giveUpAfter, pageErrors), durationS }];
      },
    })));
  },
};
