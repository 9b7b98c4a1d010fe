// The blocked profiles (docs/turn.md): their nft rules, that they parse, and
// (root only) that 'clients' really cuts the clients off from each other, over
// TCP as over UDP, and from nothing else.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { blockCommands, blockRuleset, inNamespace, oneClientRuleset, planTopology } from './commands.js';
import { describeProfile, loadProfiles, normalizeProfile } from './profiles.js';
import { createTopology, destroyTopology, namespacesForbidden, runCommand } from './system.js';

test('clients drops every bridged IP packet; client-udp only bridged UDP; udp also UDP to the server namespace', () => {
  const all = blockRuleset('clients');
  assert.match(all, /table bridge carlab_block[\s\S]*hook forward[\s\S]*ether type \{ ip, ip6 \} drop/);
  assert.doesNotMatch(all, /hook input|l4proto/);
  const clients = blockRuleset('client-udp');
  assert.match(clients, /table bridge carlab_block[\s\S]*hook forward[\s\S]*meta l4proto udp drop/);
  assert.doesNotMatch(clients, /hook input/);
  assert.match(blockRuleset('udp'), /table inet carlab_block[\s\S]*hook input[\s\S]*iifname "br0" meta l4proto udp drop/);
  const t = planTopology({ pid: 1, seq: 1, links: 2 });
  assert.deepEqual(blockCommands(t, { block: null }), []);
  assert.deepEqual(blockCommands(t, { block: 'udp' })[0].argv, ['ip', 'netns', 'exec', t.serverNs, 'nft', '-f', '-']);
});

test('the built-in blocked profiles parse; block and turn are checked', async () => {
  const profiles = await loadProfiles(null);
  assert.deepEqual([profiles.get('p2p-blocked')?.block, profiles.get('p2p-blocked')?.turn], ['clients', true]);
  assert.equal(profiles.get('p2p-blocked-noturn')?.block, 'clients');
  assert.match(describeProfile(/** @type {any} */ (profiles.get('p2p-blocked'))), /all traffic between clients dropped, TURN/);
  assert.deepEqual([profiles.get('no-udp')?.block, profiles.get('no-udp')?.turn], ['udp', undefined]);
  assert.match(describeProfile(/** @type {any} */ (profiles.get('no-udp-turn'))), /all UDP dropped, TURN/);
  assert.throws(() => normalizeProfile('x', { block: 'tcp' }), /block/);
  assert.throws(() => normalizeProfile('x', { turn: 'yes' }), /turn/);
});

test('one-client-udp: every UDP packet in or out of the first client namespace\'s link, in that namespace only', async () => {
  const rules = oneClientRuleset();
  assert.match(rules, /hook input[\s\S]*iifname "eth0" meta l4proto udp drop/);
  assert.match(rules, /hook output[\s\S]*oifname "eth0" meta l4proto udp drop/);
  assert.doesNotMatch(rules, /"lo"|bridge/);
  const t = planTopology({ pid: 1, seq: 1, links: 3 });
  const cmds = blockCommands(t, { block: 'one-client-udp' });
  assert.equal(cmds.length, 1);
  assert.deepEqual(cmds[0].argv, ['ip', 'netns', 'exec', t.clientNs[0], 'nft', '-f', '-']);
  assert.equal(cmds[0].input, rules);
  const profile = (await loadProfiles(null)).get('one-no-udp');
  assert.deepEqual([profile?.block, profile?.turn], ['one-client-udp', undefined]);
  assert.match(describeProfile(/** @type {any} */ (profile)), /all UDP of the first client dropped/);
});

// Listens on TCP and UDP port 7 of every address, prints "ready", and for each connection or
// datagram prints what reached it.
const LISTENER = `const net = require('node:net'); const dgram = require('node:dgram');
let up = 0; const ready = () => { if (++up === 2) console.log('ready'); };
net.createServer((s) => { console.log('tcp'); s.end(); }).listen(7, ready);
dgram.createSocket('udp4').on('message', () => console.log('udp')).bind(7, ready);`;
// Connects over TCP to argv[1]:7 and sends a datagram there; prints "tcp open" if the connection
// opened within 1.5 s, "tcp closed" if it did not. The verdict waits two turns past the timer: after
// a stall (a loaded machine) Node runs the expired timer before it reads the connect that came.
const DIALLER = `const net = require('node:net'); const dgram = require('node:dgram');
const host = process.argv[1]; const u = dgram.createSocket('udp4');
u.send('x', 7, host, () => u.close());
let open = false;
const s = net.connect(7, host); const t = setTimeout(() => setImmediate(() => setImmediate(() => { if (!open) { console.log('tcp closed'); process.exit(0); } })), 1500);
s.on('connect', () => { open = true; clearTimeout(t); console.log('tcp open'); s.end(); setTimeout(() => process.exit(0), 200); });
s.on('error', () => { clearTimeout(t); console.log('tcp closed'); process.exit(0); });`;

/** Runs a Node script in a namespace to its end; its stdout. @param {string} ns @param {string} script @param {string[]} args */
async function nodeIn(ns, script, args) {
  const [cmd, ...argv] = inNamespace(ns, [process.execPath, '-e', script, ...args]);
  const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (c) => { out += c; });
  await once(child, 'exit');
  return out;
}

test('clients, in real namespaces: one client reaches no other over TCP or UDP, the server over both', { skip: namespacesForbidden() ?? false, timeout: 30_000 }, async (t) => {
  const topo = planTopology({ pid: process.pid, seq: 1, links: 2 });
  createTopology(topo);
  t.after(() => destroyTopology(topo));
  for (const cmd of blockCommands(topo, { block: 'clients' })) runCommand(cmd);
  const heard = await Promise.all([topo.clientNs[1], topo.serverNs].map(async (ns) => {
    const [cmd, ...argv] = inNamespace(ns, [process.execPath, '-e', LISTENER]);
    const listener = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'inherit'] });
    t.after(() => listener.kill());
    let out = '';
    listener.stdout.on('data', (c) => { out += c; });
    while (!out.includes('ready')) await once(listener.stdout, 'data');
    const heard = () => out.replace('ready', '').trim().split(/\s+/).filter(Boolean).sort();
    /** Waits until it has heard `n` things (a starved listener prints late), at most 5 s. @param {number} n */
    const until = async (n) => { for (let i = 0; i < 50 && heard().length < n; i++) await new Promise((r) => setTimeout(r, 100)); };
    return { heard, until };
  }));
  const toClient = await nodeIn(topo.clientNs[0], DIALLER, [topo.clientIps[1]]);
  const toServer = await nodeIn(topo.clientNs[0], DIALLER, [topo.serverIp]);
  assert.match(toClient, /tcp closed/, 'no TCP between clients (ICE-TCP would go direct)');
  assert.match(toServer, /tcp open/);
  await heard[1].until(2);
  await heard[0].until(1);
  assert.deepEqual(heard[0].heard(), [], 'the other client heard nothing');
  assert.deepEqual(heard[1].heard(), ['tcp', 'udp'], 'the server heard both');
});
