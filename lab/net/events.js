// Network events during a run (--net-events): a timeline of changes on the
// links of the clients that move, parsed from text and turned into the
// commands that make and undo each change, as data (argv arrays and nft
// scripts), so they can be checked without privileges. event-player.js runs
// them at their times.
//
// Grammar, events separated by ";" or new lines ("#" starts a comment):
//   at <T>s outage <D>s             every packet of the link is dropped for D seconds
//   at <T>s handover [<G>s]         the link's address is removed and a new one added
//                                   G seconds later (default 0): a phone changing networks
//   at <T>s loss <P>% for <D>s      P % of the packets each way are dropped for D seconds
//   at <T>s rate <R> for <D>s       the link carries R (e.g. 200kbit, 2mbit) per client for D seconds
// T counts from the start of the measured window.

import { existsSync, readFileSync } from 'node:fs';
import { egressCommands, inNamespace, lossRuleset, tbfArgs } from './commands.js';
import { ProfileError, parseRate } from './profiles.js';

/**
 * @typedef {'outage' | 'handover' | 'loss' | 'rate'} NetEventKind
 *
 * @typedef {object} NetEvent
 * @property {number} index its place in the timeline, from 0
 * @property {NetEventKind} kind
 * @property {number} atMs when it begins, ms into the measured window
 * @property {number} forMs how long the network is changed: the outage, the handover's gap
 *   without an address, the loss or rate change (0 for a handover without gap)
 * @property {number} [lossPct] kind 'loss'
 * @property {number} [rateKbit] kind 'rate', per client
 * @property {string} text the event as written
 */

/** Most events in one timeline. */
export const MAX_NET_EVENTS = 32;
/** The longest a change may last, s. */
export const MAX_EVENT_S = 600;

/**
 * A duration in seconds ("3s", "1.5s", "500ms") as ms.
 * @param {string} raw @param {string} where
 */
function seconds(raw, where) {
  const m = /^(\d+(?:\.\d+)?)(ms|s)$/.exec(raw ?? '');
  if (!m) throw new ProfileError(`${where}: "${raw ?? ''}" is not a time like "10s" or "500ms"`);
  const ms = Number(m[1]) * (m[2] === 's' ? 1000 : 1);
  if (ms > MAX_EVENT_S * 1000) throw new ProfileError(`${where}: ${raw} is longer than ${MAX_EVENT_S} s`);
  return ms;
}

/**
 * Reads `for <D>s` at the end of a loss or rate event.
 * @param {string[]} words @param {number} i where "for" should be @param {string} where
 */
function forClause(words, i, where) {
  if (words[i] !== 'for' || words.length !== i + 2) throw new ProfileError(`${where}: expected "for <D>s" after the ${words[2]}`);
  const ms = seconds(words[i + 1], where);
  if (ms <= 0) throw new ProfileError(`${where}: the change must last longer than 0 s`);
  return ms;
}

/**
 * One event from its text.
 * @param {string} text @param {number} index
 * @returns {NetEvent}
 */
export function parseNetEvent(text, index) {
  const where = `--net-events: event ${index + 1} ("${text}")`;
  const words = text.trim().toLowerCase().split(/\s+/);
  if (words[0] !== 'at') throw new ProfileError(`${where}: an event starts with "at <T>s"`);
  const atMs = seconds(words[1], where);
  const kind = words[2];
  const base = { index, atMs, text: text.trim() };
  switch (kind) {
    case 'outage': {
      if (words.length !== 4) throw new ProfileError(`${where}: write "at <T>s outage <D>s"`);
      const forMs = seconds(words[3], where);
      if (forMs <= 0) throw new ProfileError(`${where}: an outage must last longer than 0 s`);
      return { ...base, kind, forMs };
    }
    case 'handover':
      if (words.length > 4) throw new ProfileError(`${where}: write "at <T>s handover [<G>s]"`);
      return { ...base, kind, forMs: words.length === 4 ? seconds(words[3], where) : 0 };
    case 'loss': {
      const m = /^(\d+(?:\.\d+)?)%$/.exec(words[3] ?? '');
      if (!m || Number(m[1]) > 100) throw new ProfileError(`${where}: the loss is a share like "20%" (0..100)`);
      return { ...base, kind, lossPct: Number(m[1]), forMs: forClause(words, 4, where) };
    }
    case 'rate':
      return { ...base, kind, rateKbit: parseRate(words[3], where), forMs: forClause(words, 4, where) };
    default:
      throw new ProfileError(`${where}: "${kind ?? ''}" is not an event; one of outage, handover, loss, rate`);
  }
}

/**
 * A timeline from text; events in time order, none overlapping another.
 * @param {string} text
 * @returns {NetEvent[]}
 */
export function parseNetEvents(text) {
  const parts = text.split(/[;\n]/).map((p) => p.replace(/#.*/, '').trim()).filter(Boolean);
  if (parts.length === 0) throw new ProfileError('--net-events: no events (e.g. "at 10s outage 3s; at 25s handover")');
  if (parts.length > MAX_NET_EVENTS) throw new ProfileError(`--net-events: ${parts.length} events; at most ${MAX_NET_EVENTS}`);
  const events = parts.map(parseNetEvent).sort((a, b) => a.atMs - b.atMs).map((e, index) => ({ ...e, index }));
  for (let i = 1; i < events.length; i++) {
    const before = events[i - 1];
    if (events[i].atMs < before.atMs + before.forMs) {
      throw new ProfileError(`--net-events: "${events[i].text}" begins before "${before.text}" is over`);
    }
  }
  return events;
}

/**
 * What a point is given for --net-events.
 * @typedef {object} NetEventsPlan
 * @property {NetEvent[]} events
 * @property {number} movingPerGroup members of each group behind the links that change
 */

/**
 * Checks --net-events and --net-events-members (sim and bench): the plan, or what is wrong.
 * @param {{ events?: string, members?: string, nets: string[] | null, durationS: number, groups: number[] }} o
 * @returns {{ plan: NetEventsPlan | null, problem: string | null }} no --net-events: neither
 */
export function netEventsFlag(o) {
  if (o.events === undefined) return { plan: null, problem: o.members === undefined ? null : '--net-events-members needs --net-events' };
  if (!o.nets) return { plan: null, problem: '--net-events changes the clients\' links: it needs --net (e.g. --net none)' };
  let events;
  try {
    events = readNetEventsFlag(o.events);
  } catch (err) {
    return { plan: null, problem: /** @type {Error} */ (err).message };
  }
  const last = events[events.length - 1];
  if (last.atMs + last.forMs >= o.durationS * 1000) return { plan: null, problem: `--net-events: "${last.text}" does not end inside the ${o.durationS} s window` };
  const members = o.members === undefined ? 1 : Number(o.members);
  const smallest = Math.min(...o.groups);
  if (!Number.isInteger(members) || members < 1 || members >= smallest) {
    return { plan: null, problem: `--net-events-members: "${o.members}" is not an integer 1..${smallest - 1} (each group keeps a member whose link does not change)` };
  }
  return { plan: { events, movingPerGroup: members }, problem: null };
}

/**
 * The value of --net-events: the events themselves, or the name of a file holding them.
 * @param {string} value
 * @returns {NetEvent[]}
 */
export function readNetEventsFlag(value) {
  const looksLikeEvents = /^\s*at\s/i.test(value);
  if (!looksLikeEvents && existsSync(value)) return parseNetEvents(readFileSync(value, 'utf8'));
  if (!looksLikeEvents) throw new ProfileError(`--net-events: "${value}" is neither events ("at 10s outage 3s; ...") nor a file`);
  return parseNetEvents(value);
}

/**
 * Where a timeline's changes are made: the client namespaces of the links that
 * change, the server namespace (the up direction's loss is dropped there) and
 * the addresses a handover moves between.
 * @typedef {object} EventLinks
 * @property {string} serverNs
 * @property {string} serverIp
 * @property {{ ns: string, index: number, ip: string, peers: number }[]} links the links that change:
 *   their namespace, their number in the topology (c<index> in the server namespace), address now, clients
 * @property {import('./profiles.js').NetProfile} profile what the links carry outside the events
 */

/** The table an event's nft rules live in (removed whole when it ends). */
const EVENT_TABLE = 'carlab_event';

/**
 * The address a link moves to at its n-th handover: the same /16, a third
 * octet no other link uses (the topology's are 1..4), so that no two links
 * ever hold one address.
 * @param {string} serverIp @param {number} link @param {number} n 1, 2, ...
 */
export function handoverIp(serverIp, link, n) {
  if (link >= 250) throw new RangeError(`handover: link ${link}: at most 250 links move`);
  const net = serverIp.split('.').slice(0, 2).join('.');
  return `${net}.${100 + (n % 150)}.${1 + link}`;
}

/**
 * An nft script that drops every packet in and out of a client's link (lo stays open).
 * @returns {string}
 */
export function outageRuleset() {
  return `table inet ${EVENT_TABLE} {\n`
    + '  chain input {\n    type filter hook input priority -10; policy accept;\n    iifname "eth0" drop\n  }\n'
    + '  chain output {\n    type filter hook output priority -10; policy accept;\n    oifname "eth0" drop\n  }\n}\n';
}

/**
 * The steps of an event on the links: what begins it and what ends it.
 * A handover's begin removes the old address; its end adds the new one
 * (after the gap) with the default route the removal took away.
 * @param {NetEvent} e
 * @param {EventLinks} where
 * @param {number} handovers handovers done before this one (for the new address)
 * @returns {{ begin: import('./commands.js').Command[], end: import('./commands.js').Command[], newIps?: string[] }}
 */
export function eventCommands(e, where, handovers) {
  const { serverNs, links, profile } = where;
  /** @type {import('./commands.js').Command[]} */
  const begin = [];
  /** @type {import('./commands.js').Command[]} */
  const end = [];
  if (e.kind === 'outage') {
    for (const l of links) {
      begin.push({ argv: inNamespace(l.ns, ['nft', '-f', '-']), input: outageRuleset() });
      end.push({ argv: inNamespace(l.ns, ['nft', 'delete', 'table', 'inet', EVENT_TABLE]) });
    }
    return { begin, end };
  }
  if (e.kind === 'handover') {
    const newIps = links.map((l) => handoverIp(where.serverIp, l.index, handovers + 1));
    links.forEach((l, i) => {
      begin.push({ argv: ['ip', '-n', l.ns, 'addr', 'del', `${l.ip}/16`, 'dev', 'eth0'] });
      end.push(
        { argv: ['ip', '-n', l.ns, 'addr', 'add', `${newIps[i]}/16`, 'dev', 'eth0'] },
        { argv: ['ip', '-n', l.ns, 'route', 'replace', 'default', 'via', where.serverIp, 'dev', 'eth0'] },
      );
    });
    return { begin, end, newIps };
  }
  if (e.kind === 'loss') {
    const lossPct = /** @type {number} */ (e.lossPct);
    for (const l of links) {
      begin.push({ argv: inNamespace(l.ns, ['nft', '-f', '-']), input: lossRuleset(`${EVENT_TABLE}_down`, [{ device: 'eth0', lossPct }]) });
      end.push({ argv: inNamespace(l.ns, ['nft', 'delete', 'table', 'netdev', `${EVENT_TABLE}_down`]) });
    }
    begin.push({ argv: inNamespace(serverNs, ['nft', '-f', '-']), input: lossRuleset(`${EVENT_TABLE}_up`, links.map((l) => ({ device: `c${l.index}`, lossPct }))) });
    end.push({ argv: inNamespace(serverNs, ['nft', 'delete', 'table', 'netdev', `${EVENT_TABLE}_up`]) });
    return { begin, end };
  }
  // rate: each end's egress gets a token bucket in place of the profile's qdiscs (its delay too,
  // for the while), which come back after
  const rateKbit = /** @type {number} */ (e.rateKbit);
  for (const l of links) {
    for (const [ns, dev, shape] of /** @type {const} */ ([[l.ns, 'eth0', profile.up], [serverNs, `c${l.index}`, profile.down]])) {
      begin.push(
        { argv: ['tc', '-n', ns, 'qdisc', 'replace', 'dev', dev, 'root', ...tbfArgs(rateKbit * l.peers, shape.queueMs)] },
      );
      end.push({ argv: ['tc', '-n', ns, 'qdisc', 'del', 'dev', dev, 'root'] }, ...egressCommands(ns, dev, shape, l.peers));
    }
  }
  return { begin, end };
}

/**
 * One line per event, for the help and the run record.
 * @param {NetEvent} e
 */
export function describeNetEvent(e) {
  const s = (/** @type {number} */ ms) => `${Math.round(ms) / 1000} s`;
  switch (e.kind) {
    case 'outage': return `at ${s(e.atMs)}: outage for ${s(e.forMs)}`;
    case 'handover': return `at ${s(e.atMs)}: handover${e.forMs ? ` with ${s(e.forMs)} without an address` : ''}`;
    case 'loss': return `at ${s(e.atMs)}: ${e.lossPct} % loss each way for ${s(e.forMs)}`;
    default: return `at ${s(e.atMs)}: ${e.rateKbit} kbit/s per client for ${s(e.forMs)}`;
  }
}
