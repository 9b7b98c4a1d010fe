// The progress bar of long lab runs: current point, elapsed, ETA, live RT.
/// <reference path="./cli-progress.d.ts" />

import cliProgress from 'cli-progress';

/**
 * @param {{ enabled: boolean, totalSeconds: number, stream?: NodeJS.WritableStream & { isTTY?: boolean },
 *   metric?: { label: string, unit: string } }} o metric: what the live value is (default RT in ms)
 */
export function createProgress(o) {
  const stream = o.stream ?? process.stderr;
  if (!o.enabled || !stream.isTTY) {
    // Logs get one line per point instead of a redrawn bar.
    return {
      point(/** @type {string} */ label) { stream.write(`${label}\n`); },
      update() {},
      advance() {},
      stop() {},
    };
  }
  const bar = new cliProgress.SingleBar({
    format: `{bar} {percentage}% | {elapsedFmt} elapsed, ETA {eta_formatted} | {point} | {phase}${
      o.metric ? (o.metric.label ? ` | ${o.metric.label} {rt}${o.metric.unit}` : '') : ' | RT {rt} ms'}`,
    barsize: 24,
    hideCursor: true,
    stream,
    etaBuffer: 50,
  }, cliProgress.Presets.shades_classic);
  const startedAt = Date.now();
  bar.start(Math.max(1, Math.round(o.totalSeconds)), 0, { point: '', phase: 'starting', rt: '–', elapsedFmt: '0s' });
  let done = 0;
  let within = 0;
  return {
    /** @param {string} label */
    point(label) { bar.update(done, { point: label, phase: 'starting' }); },
    /** @param {{ phase: string, rtMean: number | null, elapsedS: number }} p */
    update(p) {
      within = p.elapsedS;
      bar.update(Math.round(done + within), {
        phase: p.phase,
        rt: p.rtMean === null ? '–' : p.rtMean.toFixed(1),
        elapsedFmt: `${Math.round((Date.now() - startedAt) / 1000)}s`,
      });
    },
    /** @param {number} seconds planned seconds of the finished point */
    advance(seconds) { done += seconds; within = 0; bar.update(Math.round(done)); },
    stop() { bar.stop(); },
  };
}
