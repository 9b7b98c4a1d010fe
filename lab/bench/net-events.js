// --net-events in a bench point: the moving peers (the first members of each
// group), each in a browser of its own behind a link of its own, have their
// links changed on the timeline; every page's recovery probes are told each
// moment (window.carlab.netMark), and the run record gets netEvents and recovery.

import { eventLinks, playNetEvents } from '../net/event-player.js';
import { netEventsFields } from '../report/recovery.js';

/** @typedef {{ page: { evaluate: <T>(fn: () => T | Promise<T>) => Promise<T> } }} MarkablePage */

/**
 * The population indices behind the links that change.
 * @param {number} clients @param {number} groupSize @param {number} movingPerGroup
 */
export function movingIndices(clients, groupSize, movingPerGroup) {
  return Array.from({ length: clients }, (_, i) => i).filter((i) => i % groupSize < movingPerGroup);
}

/**
 * Starts the timeline at the window's start. Under --net peer i is alone in
 * browser i, on link i, so the moving peers' links are their indices.
 * @param {import('../net/events.js').NetEventsPlan} plan
 * @param {import('../net/network.js').PointNetwork} net
 * @param {number[]} moving
 * @param {MarkablePage[]} pages
 * @param {number} windowStart performance.now()
 */
export function startBenchNetEvents(plan, net, moving, pages, windowStart) {
  if (net.clientNs.length <= Math.max(...moving)) throw new Error('--net-events: every moving peer needs a link of its own (one peer per browser under --net)');
  return playNetEvents(plan.events, eventLinks(net, moving, () => 1), windowStart, {
    onMark: (m) => {
      // The fleet's pages evaluate a function without arguments (lab/bench/cdp.js): the moment is written into it.
      const tell = /** @type {() => unknown} */ (new Function(`return window.carlab.netMark(${JSON.stringify(m)});`));
      for (const { page } of pages) page.evaluate(tell).catch(() => { /* a page gone: its probe misses it */ });
    },
  });
}

/**
 * The run record's fields from the played timeline and the peers' stats (named `<browser letter><index>`).
 * @param {import('../net/events.js').NetEventsPlan} plan
 * @param {import('../net/event-player.js').PlayedEvent[]} played
 * @param {number[]} moving
 * @param {any[]} clients every peer's stats
 */
export function benchNetEventsFields(plan, played, moving, clients) {
  const movingSet = new Set(moving);
  const movingNames = clients.map((c) => String(c.name)).filter((name) => movingSet.has(Number(/(\d+)$/.exec(name)?.[1] ?? -1)));
  return netEventsFields({ movingPerGroup: plan.movingPerGroup, links: moving, played, movingNames, stats: clients });
}
