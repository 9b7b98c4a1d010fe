// --net-events in a sim point: which clients move (stand behind the link that
// changes), the timeline played on their link during the measured window, and
// the moments told to every load generator's recovery probes.

import { eventLinks, playNetEvents } from '../net/event-player.js';

/**
 * The clients of a point on two links: the moving ones (the first
 * `movingPerGroup` members of every group) on link 0, where the events happen,
 * the rest on link 1, untouched. One load generator per link.
 * @param {number} clients @param {number} groupSize @param {number} movingPerGroup
 * @returns {{ indices: number[] }[]} [moving, steady]
 */
export function movingShares(clients, groupSize, movingPerGroup) {
  /** @type {number[]} */
  const moving = [];
  /** @type {number[]} */
  const steady = [];
  for (let i = 0; i < clients; i++) (i % groupSize < movingPerGroup ? moving : steady).push(i);
  return [{ indices: moving }, { indices: steady }];
}

/**
 * Plays the timeline on the moving link from the window's start; every moment
 * is posted to every generator (their probes read it back from their history).
 * @param {import('../net/events.js').NetEventsPlan} plan
 * @param {import('../net/network.js').PointNetwork} net
 * @param {number} movingClients
 * @param {import('./generators.js').Generator[]} generators
 * @param {number} windowStart performance.now()
 */
export function startNetEvents(plan, net, movingClients, generators, windowStart) {
  return playNetEvents(plan.events, eventLinks(net, [0], () => movingClients), windowStart, {
    onMark: (m) => { for (const g of generators) g.postMessage({ cmd: 'net-mark', ...m }); },
  });
}
