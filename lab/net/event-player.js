// Plays a --net-events timeline (events.js) on a run's links: each event's
// change is made at its time into the measured window and undone when it is
// over, and what happened when is kept for the run record. An event's
// network is "back" when the commands that end it have returned.

import { describeNetEvent, eventCommands } from './events.js';
import { runCommand } from './system.js';

/**
 * What one event did, in the run record's `netEvents`.
 * @typedef {object} PlayedEvent
 * @property {number} index
 * @property {import('./events.js').NetEventKind} kind
 * @property {string} text
 * @property {number} atMs planned begin, ms into the window
 * @property {number} forMs planned length
 * @property {number | null} beganMs when its change was made (ms into the window)
 * @property {number | null} backMs when the network was back (ms into the window)
 * @property {number | null} beganEpochMs @property {number | null} backEpochMs the same, ms since 1970
 * @property {string[]} [newIps] a handover's new addresses, one per link that changed
 * @property {string | null} error a command that failed
 * @property {string} description the event in words
 */

/**
 * The links a timeline changes: link i of the point's network for each i in `indices`.
 * @param {import('./network.js').PointNetwork} net
 * @param {number[]} indices
 * @param {(i: number) => number} peersOn clients behind link i
 * @returns {import('./events.js').EventLinks}
 */
export function eventLinks(net, indices, peersOn) {
  if (!net.clientIps || !net.profile) throw new Error('--net-events: the point network has no addresses or profile');
  const ips = net.clientIps;
  return {
    serverNs: net.serverNs, serverIp: net.serverIp, profile: net.profile,
    links: indices.map((i) => ({ ns: net.clientNs[i], index: i, ip: ips[i], peers: peersOn(i) })),
  };
}

/**
 * A moment the clients' recovery probes are told of: an event began, or its network is back.
 * @typedef {{ index: number, phase: 'began' | 'back', epochMs: number }} NetMark
 */

/** ms since 1970 on the clock every process of a run shares. */
const epochNow = () => performance.timeOrigin + performance.now();

/**
 * Starts playing a timeline; the window began at `windowStart` (performance.now()).
 * @param {import('./events.js').NetEvent[]} events
 * @param {import('./events.js').EventLinks} where
 * @param {number} windowStart
 * @param {{ onMark?: (m: NetMark) => void, run?: (cmd: import('./commands.js').Command) => void }} [hooks]
 *   `run`: how a command is run (default: on this machine, runCommand)
 */
export function playNetEvents(events, where, windowStart, hooks = {}) {
  const run = hooks.run ?? runCommand;
  /** @type {PlayedEvent[]} */
  const played = events.map((e) => ({
    index: e.index, kind: e.kind, text: e.text, atMs: e.atMs, forMs: e.forMs, beganMs: null, backMs: null, beganEpochMs: null, backEpochMs: null, error: null,
    description: describeNetEvent(e),
  }));
  /** @type {Set<ReturnType<typeof setTimeout>>} */
  const timers = new Set();
  let handovers = 0;
  let stopped = false;
  const at = (/** @type {number} */ ms, /** @type {() => void} */ f) => {
    const t = setTimeout(() => { timers.delete(t); if (!stopped) f(); }, Math.max(0, windowStart + ms - performance.now()));
    timers.add(t);
  };
  /** @param {PlayedEvent} p @param {import('./commands.js').Command[]} cmds */
  const apply = (p, cmds) => {
    for (const cmd of cmds) {
      try { run(cmd); } catch (err) { p.error ??= /** @type {Error} */ (err).message; }
    }
  };
  for (const e of events) {
    const p = played[e.index];
    at(e.atMs, () => {
      // made when it begins: a handover starts from wherever the last one left the links
      const steps = eventCommands(e, where, handovers);
      if (e.kind === 'handover') handovers++;
      apply(p, steps.begin);
      p.beganEpochMs = epochNow();
      p.beganMs = p.beganEpochMs - performance.timeOrigin - windowStart;
      hooks.onMark?.({ index: e.index, phase: 'began', epochMs: p.beganEpochMs });
      at(e.atMs + e.forMs, () => {
        apply(p, steps.end);
        p.backEpochMs = epochNow();
        p.backMs = p.backEpochMs - performance.timeOrigin - windowStart;
        if (steps.newIps) {
          p.newIps = steps.newIps;
          // the next handover moves the links from where this one left them
          where.links.forEach((l, i) => { l.ip = /** @type {string[]} */ (steps.newIps)[i]; });
        }
        hooks.onMark?.({ index: e.index, phase: 'back', epochMs: p.backEpochMs });
      });
    });
  }
  return {
    played,
    /** Stops: events not begun never will; one under way stays as it is (the network is torn down next). */
    stop() {
      stopped = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
    },
  };
}
