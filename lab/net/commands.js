// The commands that build, shape and remove a run's network, as data (argv
// arrays and nft scripts), so they can be checked without privileges.
//
// Topology: a server namespace with a bridge (br0, 10.201.0.1/16) and one
// client namespace per link, joined to the bridge by a veth pair: c<i> in the
// server namespace, eth0 in the client one (10.201.<1+i/250>.<1+i%250>).
// Peers in different client namespaces reach each other through the bridge,
// so p2p traffic crosses two links as between two phones.
// Shaping of link i: loss as nftables netdev ingress drops (up: on c<i> in the
// server namespace, down: on eth0 in the client one), so a dropped packet is
// lost on the wire and the sender never hears of it; rate (tbf) and delay
// (netem) on each end's egress (up: eth0, down: c<i>).

/** Prefix of every namespace a run creates: carlab-<pid>-<seq>-<role>. */
export const NS_PREFIX = 'carlab-';
/** The lab's network (a /16): its first two octets. */
export const LAB_NET = '10.201';
/** The server namespace's address on the bridge. */
export const SERVER_IP = `${LAB_NET}.0.1`;

/**
 * @typedef {object} Command
 * @property {string[]} argv
 * @property {string} [input] written to stdin (nft -f -)
 */

/**
 * @typedef {object} Topology
 * @property {string} serverNs
 * @property {string[]} clientNs one per link
 * @property {string} serverIp
 * @property {string[]} clientIps
 */

/**
 * Names and addresses of a run's network.
 * @param {{ pid: number, seq: number, links: number, net?: string }} o `net`: the /16's first two
 *   octets (default LAB_NET); a test that puts this machine on the bridge takes a network of its
 *   own, since two links in one namespace claiming one network steal each other's packets
 * @returns {Topology}
 */
export function planTopology({ pid, seq, links, net = LAB_NET }) {
  if (!Number.isInteger(links) || links < 1 || links > 1000) throw new RangeError(`links: ${links} is not 1..1000`);
  if (!/^10\.(?:25[0-5]|2[0-4]\d|1?\d?\d)$/.test(net)) throw new RangeError(`net: ${net} is not 10.<0..255>`);
  const base = `${NS_PREFIX}${pid}-${seq}`;
  return {
    serverNs: `${base}-s`,
    clientNs: Array.from({ length: links }, (_, i) => `${base}-c${i}`),
    serverIp: `${net}.0.1`,
    clientIps: Array.from({ length: links }, (_, i) => `${net}.${1 + Math.floor(i / 250)}.${1 + (i % 250)}`),
  };
}

/**
 * The pid that created a namespace, from its name (null: not one of ours).
 * @param {string} name
 */
export function ownerPid(name) {
  const m = /^carlab-(\d+)-\d+-(?:s|c\d+)$/.exec(name);
  return m ? Number(m[1]) : null;
}

/**
 * The IPv4 name servers of a resolv.conf that a client namespace would reach
 * only through its default route: not loopback (inside a namespace nothing
 * answers there, so a lookup fails at once anyway).
 * @param {string} resolvConf the file's text
 * @returns {string[]}
 */
export function routedNameservers(resolvConf) {
  const out = [];
  for (const line of resolvConf.split('\n')) {
    const m = /^\s*nameserver\s+(\d{1,3}(?:\.\d{1,3}){3})\s*(?:#.*)?$/.exec(line);
    if (m && !m[1].startsWith('127.')) out.push(m[1]);
  }
  return [...new Set(out)];
}

/**
 * Commands that create the namespaces, the bridge and the links.
 * @param {Topology} t
 * @param {{ nameservers?: string[] }} [o] the host's name servers (routedNameservers): each client
 *   namespace gets an `unreachable` route to them. The default route leads only to the server
 *   namespace, which forwards nothing, so a browser's name lookup would wait out its timeout:
 *   Firefox's shutdown waited 3-6 s for its lookups, every browser, every point. Unreachable, a
 *   lookup fails at once, as on a LAN without DNS.
 * @returns {Command[]}
 */
export function topologyCommands(t, o = {}) {
  const net = t.serverIp.split('.').slice(0, 2).join('.');
  const deadNameservers = (o.nameservers ?? []).filter((ip) => !ip.startsWith(`${net}.`));
  const S = t.serverNs;
  /** @type {Command[]} */
  const c = [{ argv: ['ip', 'netns', 'add', S] }];
  for (const ns of t.clientNs) c.push({ argv: ['ip', 'netns', 'add', ns] });
  c.push(
    { argv: ['ip', '-n', S, 'link', 'set', 'lo', 'up'] },
    { argv: ['ip', '-n', S, 'link', 'add', 'br0', 'type', 'bridge'] },
    { argv: ['ip', '-n', S, 'addr', 'add', `${t.serverIp}/16`, 'dev', 'br0'] },
    { argv: ['ip', '-n', S, 'link', 'set', 'br0', 'up'] },
  );
  t.clientNs.forEach((ns, i) => {
    c.push(
      { argv: ['ip', '-n', S, 'link', 'add', `c${i}`, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns] },
      { argv: ['ip', '-n', S, 'link', 'set', `c${i}`, 'master', 'br0'] },
      { argv: ['ip', '-n', S, 'link', 'set', `c${i}`, 'up'] },
      { argv: ['ip', '-n', ns, 'link', 'set', 'lo', 'up'] },
      { argv: ['ip', '-n', ns, 'addr', 'add', `${t.clientIps[i]}/16`, 'dev', 'eth0'] },
      { argv: ['ip', '-n', ns, 'link', 'set', 'eth0', 'up'] },
      // Chromium gathers no ICE host candidate without a default route (it
      // asks which interface would reach the Internet), so p2p never meshed.
      { argv: ['ip', '-n', ns, 'route', 'add', 'default', 'via', t.serverIp, 'dev', 'eth0'] },
      ...deadNameservers.map((ip) => ({ argv: ['ip', '-n', ns, 'route', 'add', 'unreachable', `${ip}/32`] })),
    );
  });
  return c;
}

/**
 * An nft script that drops a share of the IP packets arriving on devices.
 * @param {string} table
 * @param {{ device: string, lossPct: number }[]} drops
 * @returns {string}
 */
export function lossRuleset(table, drops) {
  const chains = drops.map(({ device, lossPct }, i) => {
    // numgen counts in 1/1000 of a percent, so 0.5 % is 500 of 100000
    const threshold = Math.round(lossPct * 1000);
    return `  chain drop${i} {\n    type filter hook ingress device "${device}" priority 0; policy accept;\n`
      + `    meta protocol { ip, ip6 } numgen random mod 100000 < ${threshold} drop\n  }`;
  });
  return `table netdev ${table} {\n${chains.join('\n')}\n}\n`;
}

/**
 * tbf parameters for a rate: the burst holds at least 4 ms of traffic (HZ 250)
 * and two full frames; the queue holds `queueMs` of traffic.
 * @param {number} rateKbit
 * @param {number} queueMs
 * @returns {string[]}
 */
export function tbfArgs(rateKbit, queueMs) {
  const bytesPerS = (rateKbit * 1000) / 8;
  const burst = Math.max(3200, Math.ceil(bytesPerS * 0.004));
  return ['tbf', 'rate', `${Math.round(rateKbit * 1000)}bit`, 'burst', String(burst), 'latency', `${Math.round(queueMs)}ms`];
}

/**
 * tc commands for one end's egress: netem (delay, jitter) and/or tbf (rate).
 * @param {string} ns
 * @param {string} dev
 * @param {import('./profiles.js').LinkShape} shape
 * @param {number} peers peers sharing the link (the rate is per peer)
 * @returns {Command[]}
 */
export function egressCommands(ns, dev, shape, peers) {
  const tc = ['tc', '-n', ns, 'qdisc', 'add', 'dev', dev];
  const rate = shape.rateKbit === null ? null : tbfArgs(shape.rateKbit * peers, shape.queueMs);
  if (shape.delayMs === null && shape.jitterMs === null) return rate ? [{ argv: [...tc, 'root', ...rate] }] : [];
  const netem = ['netem', 'delay', `${shape.delayMs ?? 0}ms`];
  if (shape.jitterMs) netem.push(`${shape.jitterMs}ms`, 'distribution', 'normal');
  // netem's queue must hold what is in flight during the delay
  netem.push('limit', '100000');
  const c = [{ argv: [...tc, 'root', 'handle', '1:', ...netem] }];
  if (rate) c.push({ argv: [...tc, 'parent', '1:1', 'handle', '10:', ...rate] });
  return c;
}

/**
 * Commands that shape every link of a topology with a profile.
 * @param {Topology} t
 * @param {import('./profiles.js').NetProfile} profile
 * @param {number[]} peersPerLink
 * @returns {Command[]}
 */
export function shapingCommands(t, profile, peersPerLink) {
  /** @type {Command[]} */
  const c = [];
  /** @type {{ device: string, lossPct: number }[]} */
  const upDrops = [];
  t.clientNs.forEach((ns, i) => {
    if (profile.up.lossPct > 0) upDrops.push({ device: `c${i}`, lossPct: profile.up.lossPct });
    if (profile.down.lossPct > 0) {
      c.push({ argv: ['ip', 'netns', 'exec', ns, 'nft', '-f', '-'], input: lossRuleset('carlab', [{ device: 'eth0', lossPct: profile.down.lossPct }]) });
    }
    c.push(...egressCommands(ns, 'eth0', profile.up, peersPerLink[i]));
    c.push(...egressCommands(t.serverNs, `c${i}`, profile.down, peersPerLink[i]));
  });
  if (upDrops.length) c.push({ argv: ['ip', 'netns', 'exec', t.serverNs, 'nft', '-f', '-'], input: lossRuleset('carlab', upDrops) });
  return c;
}

/**
 * argv that runs a command inside a namespace.
 * @param {string} ns
 * @param {string[]} argv
 */
export function inNamespace(ns, argv) {
  return ['ip', 'netns', 'exec', ns, ...argv];
}

/**
 * A shell wrapper that starts an executable inside a namespace, for tools that
 * take an executable path (Playwright's executablePath): `exec` keeps the
 * pipes the caller set up.
 * @param {string} ns
 * @param {string} executable
 * @param {string} [ipPath]
 */
export function namespaceWrapperScript(ns, executable, ipPath = 'ip') {
  const q = (/** @type {string} */ s) => `'${s.replace(/'/g, `'\\''`)}'`;
  return `#!/bin/sh\n# carlab: run ${executable} in network namespace ${ns}\nexec ${q(ipPath)} netns exec ${q(ns)} ${q(executable)} "$@"\n`;
}

/**
 * The firewall of a profile's `block` (docs/turn.md), for the server
 * namespace, where every client link meets on the bridge: 'clients' drops every
 * IP packet the bridge would forward from one client link to another (phones on
 * networks that cannot reach each other: no direct path over UDP, nor over ICE-TCP,
 * whose host/host pairs outrank a TURN pair; everything to the server, TURN
 * included, passes); 'client-udp' drops only the UDP among them; 'udp' drops
 * bridged UDP and also UDP addressed to the server namespace itself (STUN, TURN
 * over UDP, relay-udp). TCP to the server is untouched by all three: the relay
 * WebSocket and TURN over TCP work. ('one-client-udp' is a client namespace's
 * own rule: oneClientRuleset.)
 * @param {'clients' | 'client-udp' | 'udp'} block
 * @returns {string} an nft script
 */
export function blockRuleset(block) {
  // ARP still crosses under 'clients': a neighbour can be resolved, never reached.
  const bridged = block === 'clients' ? 'ether type { ip, ip6 } drop' : 'meta l4proto udp drop';
  let script = `table bridge carlab_block {\n  chain forward {\n    type filter hook forward priority 0; policy accept;\n    ${bridged}\n  }\n}\n`;
  if (block === 'udp') {
    // Only what comes in from the links (br0): coturn relays between two allocations over lo.
    script += 'table inet carlab_block {\n  chain input {\n    type filter hook input priority 0; policy accept;\n    iifname "br0" meta l4proto udp drop\n  }\n}\n';
  }
  return script;
}

/**
 * The firewall of 'one-client-udp', for the first client namespace alone:
 * every UDP packet in or out of its link (eth0) is dropped, as on a phone
 * whose network blocks UDP, while the other clients still reach each other
 * directly. Applied inside the namespace rather than on the bridge so the
 * rule names one phone, whatever its address; lo stays open.
 * @returns {string} an nft script
 */
export function oneClientRuleset() {
  return 'table inet carlab_block {\n'
    + '  chain input {\n    type filter hook input priority 0; policy accept;\n    iifname "eth0" meta l4proto udp drop\n  }\n'
    + '  chain output {\n    type filter hook output priority 0; policy accept;\n    oifname "eth0" meta l4proto udp drop\n  }\n}\n';
}

/**
 * The command that applies a profile's block, or none.
 * @param {Topology} t
 * @param {{ block?: import('./profiles.js').BlockKind | null }} profile
 * @returns {Command[]}
 */
export function blockCommands(t, profile) {
  if (!profile.block) return [];
  if (profile.block === 'one-client-udp') return [{ argv: inNamespace(t.clientNs[0], ['nft', '-f', '-']), input: oneClientRuleset() }];
  return [{ argv: ['ip', 'netns', 'exec', t.serverNs, 'nft', '-f', '-'], input: blockRuleset(profile.block) }];
}
