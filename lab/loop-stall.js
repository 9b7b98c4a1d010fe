// How long this process's event loop was held up: what a test that runs its
// members in-process adds to a wall-clock bound, since a stall delays their
// sends and their reading whatever the relay does (lab/churn.js,
// lab/fuzz-scenarios.js).
import { monitorEventLoopDelay } from 'node:perf_hooks';

/**
 * Starts measuring the loop's stalls, `afterMs` from now, sampling every `resolutionMs`
 * (a stall is read to within it; each sample costs a timer wakeup: at 10 ms, 9 ms of CPU a second).
 * @param {{ afterMs?: number, resolutionMs?: number }} [options]
 * @returns {{ longest: () => number, stop: () => number }} longest(): the longest stall so far in ms
 *   (0 if none was sampled); stop(): the same, and the measuring ends
 */
export function startStallMeter({ afterMs = 0, resolutionMs = 10 } = {}) {
  const loop = monitorEventLoopDelay({ resolution: resolutionMs });
  const timer = afterMs > 0 ? setTimeout(() => loop.enable(), afterMs) : null;
  timer?.unref();
  if (!timer) loop.enable();
  const longest = () => (loop.count > 0 ? Math.round(loop.max / 1e6) : 0);
  return {
    longest,
    stop() {
      if (timer) clearTimeout(timer);
      loop.disable();
      return longest();
    },
  };
}

/**
 * A bound on a member's timing plus two stalls of its process: one delaying a send, one the reading.
 * @param {number} boundMs
 * @param {number} stallMs
 */
export function plusTwoStalls(boundMs, stallMs) {
  return boundMs + 2 * stallMs;
}

/**
 * Waits for `cond`, polling every 10 ms, at most `ms`; resolves whether it came true. For a
 * test that would otherwise sleep a fixed time before checking: a stall of this process can
 * end that sleep before the awaited event is read (Node runs expired timers before I/O).
 * @param {() => boolean} cond @param {number} ms
 */
export async function until(cond, ms) {
  const end = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > end) return false;
    await new Promise((r) => setTimeout(r, 10));
  }
  return true;
}
