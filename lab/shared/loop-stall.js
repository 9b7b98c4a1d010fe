// How long this process's event loop was held up: read beside a figure of members that live in
// this process, since a stall delays their sends and their reading whatever the relay does
// (lab/sim/churn.js, lab/fuzz/fuzz-scenarios.js). And the one wait-for-a-condition of the tests
// (until, waitFor), which such a stall cannot fail.
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
 * Polls `cond` every `everyMs` until it holds, at most `timeoutMs`; resolves whether it held. At
 * the deadline it looks twice more, once this process has read what already arrived and once a
 * poll later: after a stall Node runs expired timers before I/O, so a deadline checked first would
 * fail a wait for something that had already happened. For a test that would otherwise sleep a
 * fixed time before checking.
 * @param {() => boolean | Promise<boolean>} cond
 * @param {number} timeoutMs
 * @param {number} [everyMs]
 */
export async function until(cond, timeoutMs, everyMs = 10) {
  const end = performance.now() + timeoutMs;
  while (!(await cond())) {
    if (performance.now() > end) {
      // Past the deadline, perhaps after a stall: look again once the loop has polled I/O and run
      // the timers that expired meanwhile. Two turns, because the first look may come before this
      // turn's poll; then once more after everyMs. A timer alone is not enough: on a starved
      // machine it is overdue by the next turn and runs before that turn's poll.
      for (let turn = 0; turn < 2; turn++) {
        await new Promise((r) => setImmediate(r));
        if (await cond()) return true;
      }
      await new Promise((r) => setTimeout(r, everyMs));
      return Boolean(await cond());
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  return true;
}

/**
 * until(), throwing when `cond` never held: "timed out after N ms waiting for <what>". The
 * bound is how long a failure takes to show, so the default is wide (a starved machine is slow,
 * not wrong).
 * @param {() => boolean | Promise<boolean>} cond
 * @param {number} [timeoutMs]
 * @param {string | (() => string)} [what] a function is read at the timeout (logs as they are then)
 * @param {number} [everyMs]
 */
export async function waitFor(cond, timeoutMs = 15_000, what = '', everyMs = 10) {
  if (await until(cond, timeoutMs, everyMs)) return;
  const said = typeof what === 'function' ? what() : what;
  throw new Error(`timed out after ${timeoutMs} ms${said ? ` waiting for ${said}` : ''}`);
}
