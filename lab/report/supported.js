// The supported-clients bar (docs/architecture.md "Supported clients"): the
// RT and loss limits, whether a run's transport is unreliable (so loss counts
// too) and whether a run passes, and the supported population per transport x
// group x cycle (per source, in a combined report).

import { RT_LIMIT_MS } from '../../core/defaults.js';
import { transportInfo } from '../../core/transports.js';
import { NONE, isObject, num } from './format.js';
import { carRuns, groupRuns, sourceLabel } from './runs.js';

/** @typedef {import('./types.js').Run} Run */
/** @typedef {import('./types.js').Supported} Supported */

/** Mean RT above which a population is not supported (docs/architecture.md "Supported clients"). */
export { RT_LIMIT_MS };

/** Loss % from which an unreliable transport's population is not supported. */
export const LOSS_LIMIT_PCT = 2;

/**
 * Whether a run's transport is unreliable, so loss decides support too:
 * its channel has maxRetransmits 0, or it is `relay-udp` (or `p2p` without a
 * reported channel).
 *
 * @param {Run} run
 * @returns {boolean}
 */
export function isUnreliable(run) {
  const channel = isObject(run?.channel) ? run.channel : null;
  if (channel?.maxRetransmits === 0) return true;
  // Clients that disagree (`{ mixed: [...] }`): unreliable if any channel was.
  if (Array.isArray(channel?.mixed) && channel.mixed.some((entry) => entry?.maxRetransmits === 0)) return true;
  // Otherwise the registry says; a peer transport's live channel, when reported, wins.
  const info = transportInfo(String(run?.transport));
  return info?.reliable === false && (info.path === 'server' || channel === null);
}

/**
 * Whether one run meets the supported-clients bar: mean RT < 250 ms and,
 * where unreliable, loss < 2 %. A missing value never passes.
 *
 * @param {Run} run
 * @returns {boolean}
 */
export function runPasses(run) {
  const rt = num(run?.rt?.mean);
  if (rt === null || rt >= RT_LIMIT_MS) return false;
  if (!isUnreliable(run)) return true;
  const loss = num(run.lossPct);
  return loss !== null && loss < LOSS_LIMIT_PCT;
}

/**
 * The supported population per transport x group x cycle: the largest client
 * count with mean RT < 250 ms (and loss < 2 % where unreliable). A client
 * count with several runs passes only if all of them pass; runs without a
 * client count are ignored.
 *
 * @param {Run[]} runs
 * @returns {Supported[]}
 */
export function supportedClients(runs) {
  return groupRuns(Array.isArray(runs) ? runs : []).map(({ transport, group, cycleMs, net, cycleMode, reports, runs: members }) => {
    /** @type {Map<number, boolean>} */
    const passBySize = new Map();
    for (const run of members) {
      const clients = num(run.clients);
      if (clients === null) continue;
      passBySize.set(clients, (passBySize.get(clients) ?? true) && runPasses(run));
    }
    const sizes = [...passBySize.keys()].sort((a, b) => a - b);
    const passing = sizes.filter((size) => passBySize.get(size));
    const supported = passing.length ? passing[passing.length - 1] : null;
    const smallest = sizes.length ? sizes[0] : null;
    const largest = sizes.length ? sizes[sizes.length - 1] : null;
    let label = NONE;
    if (supported !== null) label = String(supported);
    else if (smallest !== null) label = `< ${smallest}`;
    return {
      transport,
      group,
      cycleMs,
      net,
      cycleMode,
      reports,
      unreliable: members.some(isUnreliable),
      supported,
      smallest,
      largest,
      label,
    };
  });
}

/**
 * Supported clients per source (each source decides its own populations),
 * sources in the order their runs come.
 * @param {Run[]} runs
 * @returns {{ source: string | null, entry: Supported }[]}
 */
export function supportedBySource(runs) {
  const rs = carRuns(runs);
  const sources = [...new Set(rs.map(sourceLabel))];
  return sources.flatMap((source) => supportedClients(rs.filter((run) => sourceLabel(run) === source)).map((entry) => ({ source, entry })));
}
