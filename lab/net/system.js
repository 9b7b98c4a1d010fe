// Runs the network commands (commands.js) on this machine: checks that it
// can (root, iproute2, nftables, tc qdiscs, namespaces allowed), creates and
// removes a run's namespaces, and makes sure they are removed whatever
// happens (finally, exit, SIGTERM, a crash), plus a sweep of namespaces left
// by runs whose process is gone.

import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { NS_PREFIX, ownerPid, routedNameservers, topologyCommands } from './commands.js';
import { isAlive } from '../shared/proctree.js';

/** The machine cannot run a --net profile: exit code 2. */
export class NetUnavailableError extends Error {
  /** @param {string} message */
  constructor(message) {
    super(message);
    this.name = 'NetUnavailableError';
    this.code = 'ERR_CARLAB_NET_UNAVAILABLE';
  }
}

/**
 * Runs one command; throws with its stderr when it fails.
 * @param {import('./commands.js').Command} cmd
 * @returns {string} stdout
 */
export function runCommand(cmd) {
  const r = spawnSync(cmd.argv[0], cmd.argv.slice(1), { input: cmd.input ?? '', encoding: 'utf8', timeout: 15000 });
  if (r.error) throw new Error(`${cmd.argv.join(' ')}: ${r.error.message}`);
  if (r.status !== 0) {
    const err = new Error(`${cmd.argv.join(' ')}: ${(r.stderr || r.stdout || `exit ${r.status}`).trim()}`);
    /** @type {any} */ (err).stderr = r.stderr;
    throw err;
  }
  return r.stdout;
}

/** @param {string} tool */
function hasTool(tool) {
  const r = spawnSync(tool, tool === 'nft' ? ['--version'] : ['-V'], { encoding: 'utf8' });
  return !r.error && r.status === 0;
}

/** Names of the network namespaces that exist now. */
export function listNamespaces() {
  const r = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' });
  if (r.error || r.status !== 0) return [];
  return r.stdout.split('\n').map((l) => l.trim().split(/\s+/)[0]).filter(Boolean);
}

/**
 * Removes namespaces: ends the processes still inside them (the run started
 * them) and deletes the namespace, which takes its veths, nft tables and
 * qdiscs with it. Idempotent, never throws.
 * @param {string[]} names
 */
export function removeNamespaces(names) {
  const existing = new Set(listNamespaces());
  for (const ns of names) {
    if (!existing.has(ns)) continue;
    const pids = spawnSync('ip', ['netns', 'pids', ns], { encoding: 'utf8' }).stdout?.split('\n').map(Number).filter((p) => p > 0) ?? [];
    for (const pid of pids) { try { process.kill(pid, 'SIGKILL'); } catch { /* already gone */ } }
    spawnSync('ip', ['netns', 'del', ns]);
  }
}

/**
 * Removes namespaces of earlier runs whose process is dead (a SIGKILLed run
 * cannot clean up after itself).
 * @returns {string[]} what was removed
 */
export function sweepStaleNamespaces() {
  const stale = listNamespaces().filter((ns) => {
    const pid = ownerPid(ns);
    return pid !== null && pid !== process.pid && !isAlive(pid);
  });
  removeNamespaces(stale);
  return stale;
}

/** Namespaces of this process not removed yet. */
const live = new Set();
let hooked = false;

/** Removes every namespace this process still has (sync: works in 'exit'). */
export function removeAllLive() {
  removeNamespaces([...live]);
  live.clear();
}

function hookProcessExit() {
  if (hooked) return;
  hooked = true;
  // 'exit' also runs after process.exit() (a second Ctrl-C) and an uncaught exception.
  process.on('exit', removeAllLive);
  for (const signal of /** @type {const} */ (['SIGTERM', 'SIGHUP'])) {
    process.on(signal, () => {
      removeAllLive();
      process.exit(128 + (signal === 'SIGTERM' ? 15 : 1));
    });
  }
}

/** The host's name servers a namespace would reach through its default route (none if unreadable). */
function hostNameservers() {
  try { return routedNameservers(readFileSync('/etc/resolv.conf', 'utf8')); } catch { return []; }
}

/**
 * Creates a topology; removes the part already made if a step fails.
 * @param {import('./commands.js').Topology} t
 */
export function createTopology(t) {
  hookProcessExit();
  const names = [t.serverNs, ...t.clientNs];
  for (const n of names) live.add(n);
  try {
    for (const cmd of topologyCommands(t, { nameservers: hostNameservers() })) runCommand(cmd);
  } catch (err) {
    destroyTopology(t);
    throw err;
  }
}

/**
 * Puts this process's own network (the root namespace) on the topology's
 * bridge, as one more host: the tests that play the clients' network or a
 * load balancer from here. Removed with the topology's server namespace
 * (deleting the namespace deletes the veth pair).
 * @param {import('./commands.js').Topology} t
 * @param {{ link: string, peer: string, ip: string }} host the root-side link name, its peer's
 *   name in the server namespace, and the root side's address (a /16 on the bridge's network)
 */
export function joinBridgeFromRoot(t, host) {
  const S = t.serverNs;
  for (const argv of [
    ['ip', 'link', 'add', host.link, 'type', 'veth', 'peer', 'name', host.peer, 'netns', S],
    ['ip', '-n', S, 'link', 'set', host.peer, 'master', 'br0'],
    ['ip', '-n', S, 'link', 'set', host.peer, 'up'],
    ['ip', 'addr', 'add', `${host.ip}/16`, 'dev', host.link],
    ['ip', 'link', 'set', host.link, 'up'],
  ]) runCommand({ argv });
}

/**
 * Removes a topology (idempotent).
 * @param {import('./commands.js').Topology} t
 */
export function destroyTopology(t) {
  const names = [t.serverNs, ...t.clientNs];
  removeNamespaces(names);
  for (const n of names) live.delete(n);
}

/**
 * Why this machine cannot create network namespaces at all (not root, or the
 * sandbox forbids them), or null. Tests skip on this alone: missing tools are
 * a failure there, not a reason to skip.
 * @returns {string | null}
 */
export function namespacesForbidden() {
  if (typeof process.getuid === 'function' && process.getuid() !== 0) return 'needs root to create network namespaces';
  const name = `${NS_PREFIX}${process.pid}-99-s`;
  const r = spawnSync('ip', ['netns', 'add', name], { encoding: 'utf8' });
  if (r.error || r.status !== 0) return `this machine forbids network namespaces (ip netns add: ${(r.stderr || r.error?.message || '').trim()})`;
  spawnSync('ip', ['netns', 'del', name]);
  return null;
}

/**
 * Checks up front that this machine can run the profiles: root, iproute2,
 * nftables, namespaces, and the qdiscs the profiles need (netem is probed by
 * adding it to a scratch veth, as the kernel may lack it).
 * @param {{ needLoss: boolean, needRate: boolean, needNetem: boolean }} need
 * @returns {{ ok: true } | { ok: false, problem: string }}
 */
export function checkCapabilities(need) {
  if (typeof process.getuid === 'function' && process.getuid() !== 0) {
    return { ok: false, problem: 'network profiles need root (CAP_NET_ADMIN and CAP_SYS_ADMIN to create namespaces, links and rules); run as root or without --net' };
  }
  const missing = [['ip', 'iproute2'], ['tc', 'iproute2'], ['nft', 'nftables']].filter(([tool]) => !hasTool(tool)).map(([tool, pkg]) => `${tool} (${pkg})`);
  if (missing.length) return { ok: false, problem: `network profiles need ${missing.join(', ')}: apt-get install iproute2 nftables` };
  const probe = `${NS_PREFIX}${process.pid}-0-s`;
  const probePeer = `${NS_PREFIX}${process.pid}-0-c0`;
  try {
    runCommand({ argv: ['ip', 'netns', 'add', probe] });
  } catch (err) {
    return { ok: false, problem: `this machine forbids network namespaces (${/** @type {Error} */ (err).message}); --net cannot run here` };
  }
  live.add(probe);
  live.add(probePeer);
  hookProcessExit();
  try {
    runCommand({ argv: ['ip', 'netns', 'add', probePeer] });
    runCommand({ argv: ['ip', '-n', probe, 'link', 'add', 'p0', 'type', 'veth', 'peer', 'name', 'p1', 'netns', probePeer] });
    if (need.needLoss) {
      try {
        runCommand({ argv: ['ip', 'netns', 'exec', probe, 'nft', '-f', '-'], input: 'table netdev probe {\n  chain c { type filter hook ingress device "p0" priority 0; policy accept; numgen random mod 100 < 1 drop; }\n}\n' });
      } catch (err) {
        return { ok: false, problem: `nftables cannot drop packets here (${/** @type {Error} */ (err).message})` };
      }
    }
    if (need.needRate) {
      try {
        runCommand({ argv: ['tc', '-n', probe, 'qdisc', 'add', 'dev', 'p0', 'root', 'tbf', 'rate', '1mbit', 'burst', '3200', 'latency', '50ms'] });
        runCommand({ argv: ['tc', '-n', probe, 'qdisc', 'del', 'dev', 'p0', 'root'] });
      } catch (err) {
        return { ok: false, problem: `the kernel cannot limit rates here: tc tbf failed (${/** @type {Error} */ (err).message})` };
      }
    }
    if (need.needNetem) {
      try {
        runCommand({ argv: ['tc', '-n', probe, 'qdisc', 'add', 'dev', 'p0', 'root', 'netem', 'delay', '1ms'] });
      } catch (err) {
        const why = /unknown/i.test(/** @type {any} */ (err).stderr ?? '') ? 'this kernel has no netem (tc answers "Specified qdisc kind is unknown")' : /** @type {Error} */ (err).message;
        return { ok: false, problem: `a profile needs delay or jitter, which takes the netem qdisc, and ${why}. carlab does not fake delay in the application: use profiles with loss and rate only here, or a kernel with sch_netem` };
      }
    }
    return { ok: true };
  } catch (err) {
    return { ok: false, problem: `cannot build a test link (${/** @type {Error} */ (err).message})` };
  } finally {
    removeNamespaces([probe, probePeer]);
    live.delete(probe);
    live.delete(probePeer);
  }
}
