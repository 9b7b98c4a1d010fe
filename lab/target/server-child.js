// The system under test in its own process, so its CPU is measured apart
// from the load generator's. Forked by the lab runners; speaks over IPC:
//   -> { cmd: 'reset' | 'metrics' | 'heap' | 'close', id }   <- { id, ... }
// and reports, unasked, { type: 'fault', kind, message } for every unhandled
// rejection (the process goes on) and uncaught exception (it then exits 70),
// so a run can count them instead of only seeing the process die.

/** @param {string} kind @param {unknown} err */
function reportFault(kind, err) {
  const message = String(/** @type {any} */ (err)?.stack ?? err).slice(0, 2000);
  try { if (process.connected) /** @type {any} */ (process).send({ type: 'fault', kind, message }); } catch { /* parent gone */ }
}
process.on('unhandledRejection', (reason) => reportFault('unhandledRejection', reason));
process.on('uncaughtException', (err) => {
  reportFault('uncaughtException', err);
  setTimeout(() => process.exit(70), 100); // let the report go out; the state is not trusted any more
});

import { PerformanceObserver, constants as perfConstants } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';
import { connectNatsBroker } from '../../relay/index.js';
import { createCarlabServer } from '../../server/server.js';
import { createSocketIoBaseline, createWsFloor } from './baselines.js';
import { createWsFloorBatched } from './floor-batched.js';
import { LAB_PAGES_DIST } from '../pages/build.js';
import { startStallMeter } from '../shared/loop-stall.js';

// The live heap without forcing a GC (which would change what a run measures):
// the heap in use right after the last full (mark-compact) GC V8 chose to run.
// Flat over a soak = no JS leak; RSS can still grow as V8 and malloc keep pages.
/** @type {{ bytes: number | null, at: number | null, count: number }} */
const afterMajorGc = { bytes: null, at: null, count: 0 };
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    if (/** @type {any} */ (e).detail?.kind !== perfConstants.NODE_PERFORMANCE_GC_MAJOR) continue;
    afterMajorGc.bytes = getHeapStatistics().used_heap_size;
    afterMajorGc.at = Date.now();
    afterMajorGc.count++;
  }
}).observe({ entryTypes: ['gc'] });

const { baselines: withBaselines, natsUrl, ...options } = JSON.parse(process.argv[2] ?? '{}');
// --relays: this relay is one node of a cluster on that NATS.
const broker = natsUrl ? await connectNatsBroker({ url: natsUrl, name: 'carlab-lab' }) : undefined;
const server = await createCarlabServer({
  http: true, host: '127.0.0.1', port: 0, extraWebRoots: [LAB_PAGES_DIST], ...options, broker, extraUpgradePaths: withBaselines ? ['/floor', '/floor-batched', '/socket.io/'] : [],
});
// The lab's baselines share the port, so they are measured in the same process the same way.
const baselines = withBaselines
  ? {
    'ws-floor': createWsFloor({ server: /** @type {any} */ (server.server) }),
    'ws-floor-batched': createWsFloorBatched({ server: /** @type {any} */ (server.server) }),
    socketio: createSocketIoBaseline({ server: /** @type {any} */ (server.server) }),
  }
  : {};
// How long this process's loop was held up since it started serving: a report
// that waited that long is read together with the next ones (the report intake's
// token bucket), and an RT tail can be the server's, not the network's. Sampled every
// 100 ms: at 10 ms the meter alone took 9 ms of CPU a second, a sixth of what this process
// spends relaying 200 clients, and would count in its CPU per update.
const stallMeter = startStallMeter({ resolutionMs: 100 });
/** This process's CPU since the last `reset`: its user and system split over a window. */
let cpuAtReset = process.cpuUsage();
let resetAt = performance.now();
/** @type {any} */ (process).send({ type: 'ready', url: server.url, pid: process.pid });

process.on('message', async (/** @type {any} */ m) => {
  const reply = (/** @type {object} */ body) => /** @type {any} */ (process).send({ id: m.id, ...body });
  switch (m.cmd) {
    case 'reset':
      server.relay.resetWindow();
      for (const b of Object.values(baselines)) b.resetWindow();
      cpuAtReset = process.cpuUsage();
      resetAt = performance.now();
      reply({ ok: true });
      break;
    case 'metrics': {
      const memory = process.memoryUsage();
      const cpu = process.cpuUsage(cpuAtReset);
      reply({
        relay: server.relay.metrics(),
        signaling: server.signaling.metrics(),
        baselines: Object.fromEntries(Object.entries(baselines).map(([name, b]) => [name, b.metrics()])),
        rssBytes: memory.rss,
        // heap vs native: tells a JS leak from V8 or the allocator keeping pages (the soak's timeline)
        memory,
        heapAfterMajorGc: { ...afterMajorGc },
        loopStallMs: stallMeter.longest(),
        // this process's CPU from the reset to this answer, and that span: an overloaded server reads
        // the question late, its counters above then cover the same longer span
        cpuWindow: { userUs: cpu.user, systemUs: cpu.system, ms: performance.now() - resetAt },
      });
      break;
    }
    case 'heap':
      // With --expose-gc (the churn and fuzz runs start us so) this is the live heap.
      /** @type {any} */ (globalThis).gc?.();
      reply({ ...process.memoryUsage(), gc: typeof (/** @type {any} */ (globalThis).gc) === 'function' });
      break;
    case 'close':
      // Socket.IO closes the HTTP server it is attached to: close it last.
      await baselines['ws-floor']?.close();
      await baselines['ws-floor-batched']?.close();
      await server.close();
      await baselines.socketio?.close().catch(() => {});
      await broker?.close();
      reply({ ok: true });
      process.exit(0);
      break;
    default:
      reply({ error: `unknown command ${m.cmd}` });
  }
});
process.on('disconnect', () => process.exit(0)); // the runner died: do not linger
// A terminal's Ctrl-C reaches the whole process group: the runner decides when to close us.
process.on('SIGINT', () => {});
