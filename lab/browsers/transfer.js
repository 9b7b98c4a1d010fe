// Experiment 6, file-transfer approaches: a 1 MB file as 10 pieces of
// 100 kB, from the initiator to the receiver over reliable ordered channels:
// sequentially on one channel; in parallel on 5 and 10 channels of one
// connection; over 5 and 10 parallel connections. A transfer is timed on the
// sender from the first byte to the receiver's ACK of the last piece. The
// approaches take turns within each repetition so drift hits them alike.

import { summary } from './arith.js';
import { obfuscationFor, openPeer, pairFields, sleep, withPair } from './context.js';
import { SECONDS_PER_LAUNCH, cleanError } from './setup.js';

/**
 * @typedef {object} Approach
 * @property {string} id
 * @property {string} label
 * @property {number} connections
 * @property {number} channelsPerConn
 */

/** The study's approaches. @type {readonly Approach[]} */
export const APPROACHES = Object.freeze([
  { id: 'seq-1ch', label: 'sequential, 1 channel', connections: 1, channelsPerConn: 1 },
  { id: 'par-5ch', label: 'parallel, 5 channels of 1 connection', connections: 1, channelsPerConn: 5 },
  { id: 'par-10ch', label: 'parallel, 10 channels of 1 connection', connections: 1, channelsPerConn: 10 },
  { id: 'par-5pc', label: 'parallel, 5 connections', connections: 5, channelsPerConn: 1 },
  { id: 'par-10pc', label: 'parallel, 10 connections', connections: 10, channelsPerConn: 1 },
]);

/**
 * One approach's figures over its repetitions.
 * @param {Approach} a
 * @param {{ ms?: number, error?: string }[]} results
 * @param {number} fileSize
 */
export function approachFigures(a, results, fileSize) {
  const ok = results.filter((r) => typeof r.ms === 'number');
  const ms = summary(ok.map((r) => r.ms));
  return {
    ...a,
    ms,
    // MB/s of the mean duration
    throughputMBps: ms?.mean ? fileSize / 1e6 / (ms.mean / 1000) : null,
    n: ok.length,
    errors: results.filter((r) => r.error).map((r) => r.error).slice(0, 5),
  };
}

/**
 * @param {import('./context.js').LabContext} ctx
 * @param {import('./context.js').Pair} pair
 * @param {boolean} hide
 * @param {import('./context.js').BrowsersOptions} o
 * @param {import('./context.js').CellProgress} p
 */
async function runTransfer(ctx, pair, hide, o, p) {
  const pieceSize = Math.floor(o.fileSize / o.pieces);
  const spec = { mode: 'p2p-reliable', channels: 10, ackEvery: pieceSize };
  const single = { mode: 'p2p-reliable', channels: 1, ackEvery: pieceSize };
  return withPair(ctx, pair, { hideHostAddresses: hide }, async ({ a, b, pa, pb }) => {
    const ia = ctx.newPeerId();
    const ib = ctx.newPeerId();
    await openPeer(pb, ib, o.setupTimeoutMs);
    await openPeer(pa, ia, o.setupTimeoutMs);
    p.update('connecting');
    const connect = (/** @type {typeof spec} */ s) => pa.evaluate(([x, y, sp, t]) => window.carlabLab.connect(x, y, sp, { timeoutMs: t }),
      /** @type {const} */ ([ia, ib, s, o.setupTimeoutMs]));
    const multi = await connect(spec);
    /** @type {string[]} */
    const parallel = [];
    for (let i = 0; i < Math.max(...APPROACHES.map((x) => x.connections)); i++) parallel.push((await connect(single)).key);
    const keysOf = (/** @type {Approach} */ x) => (x.connections === 1 ? [multi.key] : parallel.slice(0, x.connections));
    /** @type {Record<string, { ms?: number, error?: string }[]>} */
    const results = Object.fromEntries(APPROACHES.map((x) => [x.id, []]));
    for (let rep = 0; rep < o.transferRepeat && !ctx.shouldStop(); rep++) {
      for (const x of APPROACHES) {
        try {
          const r = await pa.evaluate(([id, opts]) => window.carlabLab.transfer(id, opts), /** @type {const} */ ([ia, {
            keys: keysOf(x), channelsPerConn: x.channelsPerConn, pieces: o.pieces, pieceSize, chunk: o.chunk, timeoutMs: 60000,
          }]));
          results[x.id].push({ ms: r.ms });
        } catch (err) {
          results[x.id].push({ error: cleanError(err) });
        }
        await sleep(20);
      }
      const seq = summary(results['seq-1ch'].map((r) => r.ms));
      p.update(`${rep + 1}/${o.transferRepeat}`, seq?.mean ?? null);
    }
    return {
      transport: 'p2p-reliable',
      channel: { ordered: multi.channel.ordered, maxRetransmits: multi.channel.maxRetransmits },
      candidateType: multi.setup?.candidateType ?? null,
      fileSize: o.fileSize,
      pieces: o.pieces,
      pieceSize,
      chunk: o.chunk,
      repetitions: o.transferRepeat,
      approaches: APPROACHES.map((x) => approachFigures(x, results[x.id], o.fileSize)),
      samples: Object.fromEntries(APPROACHES.map((x) => [x.id, results[x.id].map((r) => r.ms ?? null)])),
      stoppedEarly: ctx.shouldStop(),
      pageErrors: [...a.errors, ...b.errors].slice(0, 20),
    };
  });
}

/** @type {import('./context.js').Experiment} */
export const transferExperiment = {
  name: 'transfer',
  title: 'File-transfer approaches',
  metric: { label: 'sequential mean', unit: ' ms' },
  cells(o) {
    return obfuscationFor(o, 'transfer').flatMap((hide) => o.pairs.map((pair) => ({
      label: `transfer ${pair.label}${hide ? ', obfuscation on' : ''}: ${APPROACHES.length} approaches x ${o.transferRepeat}`,
      seconds: SECONDS_PER_LAUNCH + 3 + o.transferRepeat * APPROACHES.length * 0.25,
      fields: { ...pairFields('transfer', pair, hide), transport: 'p2p-reliable' },
      async run(ctx, p) {
        return [{ ...pairFields('transfer', pair, hide), ...(await runTransfer(ctx, pair, hide, o, p)) }];
      },
    })));
  },
};
