// Experiment 7, `car`: the location-update bench (lab/bench/bench.js
// runBenchPoint, its run records as they are) with a Chromium fleet, a
// Firefox fleet and a mixed fleet, on relay and p2p: RT, loss and jitter per
// browser. C-C runs Chromium only, F-F Firefox only, C-F and F-C one mixed
// fleet (pages alternate browsers, the pair's first browser first; on p2p
// the newer member dials, so a mixed group has both directions either way).

import { runBenchPoint } from '../bench/bench.js';

/**
 * The fleets the pairs ask for, deduplicated: mixed pairs share one fleet.
 * @param {import('./context.js').Pair[]} pairs
 * @returns {{ label: string, pairs: string[], browsers: string[] }[]}
 */
export function fleetsOf(pairs) {
  /** @type {Map<string, { label: string, pairs: string[], browsers: string[] }>} */
  const fleets = new Map();
  for (const pair of pairs) {
    const same = pair.initiator === pair.receiver;
    const key = same ? pair.initiator : 'mixed';
    const fleet = fleets.get(key);
    if (fleet) fleet.pairs.push(pair.label);
    else fleets.set(key, { label: same ? pair.label : 'C+F', pairs: [pair.label], browsers: same ? [pair.initiator] : [pair.initiator, pair.receiver] });
  }
  return [...fleets.values()];
}

/** @type {import('./context.js').Experiment} */
export const carExperiment = {
  name: 'car',
  title: 'Location updates (car) per browser',
  metric: { label: 'RT', unit: ' ms' },
  cells(o) {
    return fleetsOf(o.pairs).flatMap((fleet) => o.car.transports.map((transport) => {
      // The car experiment repeats the paper's measurement: gated, one relay.
      /** @type {import('../shared/flags.js').SweepPoint} */
      const point = { transport, clients: o.car.clients, group: o.car.group, cycleMs: o.car.cycleMs, cycleMode: 'gated', relays: 0, placement: 'spread' };
      const pages = o.car.clients;
      return {
        label: `car ${fleet.label} ${transport}: ${o.car.clients} clients, group ${o.car.group}`,
        seconds: o.car.warmupS + o.car.durationS + 8 + pages * 0.5,
        fields: { experiment: 'car', pair: fleet.label, fleet: fleet.browsers.join('+'), ...point, browser: fleet.browsers.join('+') },
        async run(ctx, p) {
          const run = await runBenchPoint({
            point,
            durationS: o.car.durationS,
            warmupS: o.car.warmupS,
            updates: 0,
            ackTimeoutMs: 20000,
            browsers: fleet.browsers,
            peersPerPage: 1,
            // one browser process per fleet browser, pages alternating
            pagesPerBrowser: Math.ceil(pages / fleet.browsers.length),
            url: null,
            onProgress: (q) => p.update(q.phase, q.rtMean),
            shouldStop: ctx.shouldStop,
          });
          return [{ experiment: 'car', pair: fleet.label, pairs: fleet.pairs, fleet: fleet.browsers.join('+'), ...run }];
        },
      };
    }));
  },
};
