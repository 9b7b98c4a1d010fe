// The blocked-UDP profiles (docs/turn.md): their nft rules and that they parse.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { blockCommands, blockRuleset, oneClientRuleset, planTopology } from './commands.js';
import { describeProfile, loadProfiles, normalizeProfile } from './profiles.js';

test('client-udp drops only bridged UDP; udp also UDP to the server namespace', () => {
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
  assert.deepEqual([profiles.get('p2p-blocked')?.block, profiles.get('p2p-blocked')?.turn], ['client-udp', true]);
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
