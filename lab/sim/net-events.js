// --net-events in a sim point: which clients move (stand behind the link that
// changes), the timeline played on their link during the measured window, the
// moments told to every load generator's recovery probes, and the run
// record's `netEvents` and `recovery`.

import { describeNetEvent } from '../net/events.js';
import { playNetEvents } from '../net/event-player.js';
import { recoveryRecord } from '../report/recovery.js';

/**
 * What a point is given for --net-events.
 * @typedef {object} NetEventsPlan
 * @property {import('../net/events.js').NetEvent[]} events
 * @property {number} movingPerGroup members of each group behind the link that changes
 */

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
 * @param {NetEventsPlan} plan
 * @param {import('../net/network.js').PointNetwork} net
 * @param {number} movingClients
 * @param {import('./generators.js').Generator[]} generators
 * @param {number} windowStart performance.now()
 */
export function startNetEvents(plan, net, movingClients, generators, windowStart) {
  if (!net.clientIps || !net.profile) throw new Error('--net-events: the point network has no addresses or profile');
  const where = {
    serverNs: net.serverNs, serverIp: net.serverIp, profile: net.profile,
    links: [{ ns: net.clientNs[0], index: 0, ip: net.clientIps[0], peers: movingClients }],
  };
  return playNetEvents(plan.events, where, windowStart, {
    onMark: (m) => { for (const g of generators) g.postMessage({ cmd: 'net-mark', ...m }); },
  });
}

/**
 * The run record's fields: the events as played, who moved, and the recovery figures.
 * @param {NetEventsPlan} plan
 * @param {import('../net/event-player.js').PlayedEvent[]} played
 * @param {number[]} movingIndices
 * @param {any[]} stats every client's stats (with its `recovery` record)
 */
export function netEventsFields(plan, played, movingIndices, stats) {
  const moving = new Set(movingIndices.map((i) => `sim${i}`));
  return {
    netEvents: {
      link: 0,
      movingPerGroup: plan.movingPerGroup,
      movingClients: movingIndices.length,
      events: played.map((p) => ({ ...p, description: describeNetEvent(/** @type {any} */ (plan.events[p.index])) })),
    },
    recovery: recoveryRecord({ events: played, clients: stats, moving }),
  };
}
