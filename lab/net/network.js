// The --net lifecycle the lab commands share: check the profiles and the
// machine once, up front; then per sweep point build the namespaces, shape
// the links, calibrate them, run the point inside, and always remove it all.

import { existsSync } from 'node:fs';
import { blockCommands, planTopology, shapingCommands } from './commands.js';
import { calibrate } from './calibrate.js';
import { ProfileError, describeProfile, loadProfiles, needsLoss, needsNetem, needsRate, selectProfiles } from './profiles.js';
import { NetUnavailableError, checkCapabilities, createTopology, destroyTopology, runCommand, sweepStaleNamespaces } from './system.js';

/**
 * Loads and checks the profiles named by --net (and --net-file) and that this
 * machine can apply them. Throws ProfileError or NetUnavailableError (exit 2).
 * @param {{ list: string, file?: string | null }} o
 * @returns {Promise<Map<string, import('./profiles.js').NetProfile>>} the selected profiles by name
 */
export async function prepareNetwork({ list, file = null }) {
  const chosen = selectProfiles(list, await loadProfiles(file));
  const check = checkCapabilities({
    needLoss: chosen.some(needsLoss), needRate: chosen.some(needsRate), needNetem: chosen.some(needsNetem),
  });
  if (check.ok === false) {
    const needing = chosen.filter(needsNetem).map((p) => p.name);
    const which = /netem/.test(check.problem) && needing.length ? ` (profiles needing it: ${needing.join(', ')})` : '';
    throw new NetUnavailableError(`${check.problem}${which}`);
  }
  sweepStaleNamespaces();
  return new Map(chosen.map((p) => [p.name, p]));
}

/** Is this error one that means "cannot run --net here" (exit 2)? @param {unknown} err */
export function isNetUsageError(err) {
  return err instanceof ProfileError || err instanceof NetUnavailableError;
}

/** Path of `ip` (root's PATH may lack /usr/sbin when run through sudo or env -i). */
export function ipPath() {
  for (const dir of (process.env.PATH ?? '').split(':').concat(['/usr/sbin', '/sbin', '/usr/bin', '/bin'])) {
    if (dir && existsSync(`${dir}/ip`)) return `${dir}/ip`;
  }
  return 'ip';
}

/**
 * child_process.fork options that start the Node module inside a namespace:
 * `ip netns exec` execs Node in place, so the IPC channel is kept.
 * @param {string} ns
 * @param {string[]} [execArgv] more Node flags
 */
export function forkInNamespace(ns, execArgv = []) {
  return { execPath: ipPath(), execArgv: ['netns', 'exec', ns, process.execPath, ...process.execArgv, ...execArgv] };
}

/**
 * What a point runner gets to place its processes.
 * @typedef {object} PointNetwork
 * @property {string} serverNs
 * @property {string} serverIp the server listens here; clients connect to it
 * @property {string[]} clientNs one per link
 * @property {string[]} [clientIps] each link's address, as clientNs
 * @property {import('./profiles.js').NetProfile} [profile] what the links carry (--net-events restores it after a change)
 * @property {boolean} [turn] the profile wants coturn beside the server (docs/turn.md)
 */

let seq = 0;

/**
 * Builds, shapes and calibrates a network for one point, runs it and always
 * removes the network. The run record gets a `net` field.
 * @param {import('./profiles.js').NetProfile} profile
 * @param {number[]} peersPerLink peers each client namespace hosts (the rate is per peer)
 * @param {(net: PointNetwork) => Promise<object>} run
 * @param {{ onPhase?: (phase: string) => void }} [hooks]
 * @returns {Promise<Record<string, any>>}
 */
export async function withNetwork(profile, peersPerLink, run, hooks = {}) {
  const t = planTopology({ pid: process.pid, seq: ++seq, links: peersPerLink.length });
  createTopology(t);
  try {
    for (const cmd of shapingCommands(t, profile, peersPerLink)) runCommand(cmd);
    hooks.onPhase?.(`calibrating ${profile.name}`);
    const calibration = await calibrate(t, profile, peersPerLink);
    // The firewall comes after calibration: it measures the links, whose UDP probe a block would stop.
    for (const cmd of blockCommands(t, profile)) runCommand(cmd);
    const record = await run({ serverNs: t.serverNs, serverIp: t.serverIp, clientNs: t.clientNs, clientIps: t.clientIps, profile, ...(profile.turn ? { turn: true } : {}) });
    return { ...record, net: netRecord(profile, peersPerLink, calibration) };
  } finally {
    destroyTopology(t);
  }
}

/**
 * The `net` field of a run record.
 * @param {import('./profiles.js').NetProfile} profile
 * @param {number[]} peersPerLink
 * @param {Awaited<ReturnType<typeof calibrate>>} calibration
 */
export function netRecord(profile, peersPerLink, calibration) {
  const target = (/** @type {import('./profiles.js').LinkShape} */ s) => ({ lossPct: s.lossPct, rateKbit: s.rateKbit, delayMs: s.delayMs, jitterMs: s.jitterMs });
  return {
    profile: profile.name,
    description: profile.description || describeProfile(profile),
    shape: describeProfile(profile),
    block: profile.block ?? null,
    turn: Boolean(profile.turn),
    target: { up: target(profile.up), down: target(profile.down) },
    links: peersPerLink.length,
    peersPerLink,
    calibration,
    flagged: calibration.flagged,
  };
}
