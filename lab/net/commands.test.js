import { test } from 'node:test';
import assert from 'node:assert/strict';
import { egressCommands, lossRuleset, namespaceWrapperScript, ownerPid, planTopology, routedNameservers, shapingCommands, tbfArgs, topologyCommands } from './commands.js';
import { normalizeProfile } from './profiles.js';

test('a topology: unique names per process and sequence, one client namespace per link', () => {
  const t = planTopology({ pid: 4242, seq: 3, links: 2 });
  assert.equal(t.serverNs, 'carlab-4242-3-s');
  assert.deepEqual(t.clientNs, ['carlab-4242-3-c0', 'carlab-4242-3-c1']);
  assert.deepEqual(t.clientIps, ['10.201.1.1', '10.201.1.2']);
  assert.equal(planTopology({ pid: 1, seq: 1, links: 251 }).clientIps[250], '10.201.2.1');
  assert.equal(ownerPid('carlab-4242-3-c1'), 4242);
  assert.equal(ownerPid('carlab-4242-3-s'), 4242);
  assert.equal(ownerPid('other-4242-3-s'), null);
  assert.throws(() => planTopology({ pid: 1, seq: 1, links: 0 }), RangeError);
  const own = planTopology({ pid: 1, seq: 1, links: 2, net: '10.204' });
  assert.equal(own.serverIp, '10.204.0.1');
  assert.deepEqual(own.clientIps, ['10.204.1.1', '10.204.1.2']);
  assert.throws(() => planTopology({ pid: 1, seq: 1, links: 1, net: '10.256' }), /net: 10.256/);
  assert.throws(() => planTopology({ pid: 1, seq: 1, links: 1, net: '192.168' }), RangeError);
  const cmds = topologyCommands(t).map((c) => c.argv.join(' '));
  assert.ok(cmds.includes('ip -n carlab-4242-3-s link add br0 type bridge'));
  assert.ok(cmds.includes('ip -n carlab-4242-3-s link add c1 type veth peer name eth0 netns carlab-4242-3-c1'));
  assert.ok(cmds.includes('ip -n carlab-4242-3-c0 addr add 10.201.1.1/16 dev eth0'));
  assert.ok(cmds.includes('ip -n carlab-4242-3-c0 route add default via 10.201.0.1 dev eth0'), 'WebRTC needs a default route');
  assert.ok(cmds.includes('ip -n carlab-4242-3-c1 link set lo up'));
  assert.ok(!cmds.some((c) => c.includes('unreachable')), 'no name servers given, no route for them');
});

test('the host\'s name servers are unreachable from client namespaces: a lookup fails at once, not after its timeout', () => {
  const conf = '# generated\nnameserver 10.255.255.53\nnameserver 127.0.0.53\nnameserver 10.201.9.9 # in the lab net\nnameserver ::1\nsearch lan\n  nameserver 192.0.2.1\nnameserver 10.255.255.53\n';
  assert.deepEqual(routedNameservers(conf), ['10.255.255.53', '10.201.9.9', '192.0.2.1']);
  const t = planTopology({ pid: 7, seq: 1, links: 2 });
  const cmds = topologyCommands(t, { nameservers: routedNameservers(conf) }).map((c) => c.argv.join(' '));
  for (const ns of t.clientNs) {
    assert.ok(cmds.includes(`ip -n ${ns} route add unreachable 10.255.255.53/32`));
    assert.ok(cmds.includes(`ip -n ${ns} route add unreachable 192.0.2.1/32`));
    // after the default route, which it narrows
    assert.ok(cmds.indexOf(`ip -n ${ns} route add unreachable 10.255.255.53/32`) > cmds.indexOf(`ip -n ${ns} route add default via 10.201.0.1 dev eth0`));
  }
  assert.ok(!cmds.some((c) => c.includes('10.201.9.9')), 'one inside the lab network would take a client\'s address: left alone');
});

test('loss is an nft netdev ingress drop in 1/1000 of a percent', () => {
  const rules = lossRuleset('carlab', [{ device: 'c0', lossPct: 2 }, { device: 'c1', lossPct: 0.5 }]);
  assert.match(rules, /table netdev carlab/);
  assert.match(rules, /hook ingress device "c0"[^]*numgen random mod 100000 < 2000 drop/);
  assert.match(rules, /hook ingress device "c1"[^]*numgen random mod 100000 < 500 drop/);
});

test('rate is a tbf whose burst covers a timer tick; a link with k peers gets k x rate', () => {
  assert.deepEqual(tbfArgs(256, 500), ['tbf', 'rate', '256000bit', 'burst', '3200', 'latency', '500ms']);
  assert.equal(tbfArgs(21000, 200)[4], String(Math.ceil((21e6 / 8) * 0.004)));
  const shape = normalizeProfile('3g', { rate: '256kbit' }).up;
  assert.deepEqual(egressCommands('ns', 'eth0', shape, 10).map((c) => c.argv.join(' ')), ['tc -n ns qdisc add dev eth0 root tbf rate 2560000bit burst 3200 latency 200ms']);
});

test('delay and jitter use netem, with tbf as its child when there is a rate', () => {
  const shape = normalizeProfile('far', { delay: '40ms', jitter: '10ms', rate: '1mbit' }).down;
  const argv = egressCommands('s', 'c0', shape, 1).map((c) => c.argv.join(' '));
  assert.equal(argv[0], 'tc -n s qdisc add dev c0 root handle 1: netem delay 40ms 10ms distribution normal limit 100000');
  assert.match(argv[1], /^tc -n s qdisc add dev c0 parent 1:1 handle 10: tbf rate 1000000bit/);
});

test('shaping a profile: down loss in each client namespace, up loss on the bridge ports, rate both ends', () => {
  const t = planTopology({ pid: 9, seq: 1, links: 2 });
  const cmds = shapingCommands(t, normalizeProfile('p', { loss: { up: 1, down: 2 }, rate: '1mbit' }), [3, 2]);
  const nft = cmds.filter((c) => c.argv.includes('nft'));
  assert.equal(nft.length, 3);
  assert.deepEqual(nft[0].argv, ['ip', 'netns', 'exec', 'carlab-9-1-c0', 'nft', '-f', '-']);
  assert.match(nft[0].input ?? '', /device "eth0"[^]*< 2000 drop/);
  assert.equal(nft[2].argv[3], 'carlab-9-1-s');
  assert.match(nft[2].input ?? '', /device "c0"[^]*< 1000 drop[^]*device "c1"[^]*< 1000 drop/);
  const tc = cmds.filter((c) => c.argv[0] === 'tc').map((c) => c.argv.slice(2).join(' '));
  assert.ok(tc.some((x) => x.startsWith('carlab-9-1-c0 qdisc add dev eth0 root tbf rate 3000000bit')));
  assert.ok(tc.some((x) => x.startsWith('carlab-9-1-s qdisc add dev c1 root tbf rate 2000000bit')));
  assert.deepEqual(shapingCommands(t, normalizeProfile('none', {}), [1, 1]), []);
});

test('the namespace wrapper execs in place and quotes its arguments', () => {
  const s = namespaceWrapperScript("ns'1", '/usr/bin/chromium', '/usr/sbin/ip');
  assert.match(s, /^#!\/bin\/sh\n/);
  assert.match(s, /exec '\/usr\/sbin\/ip' netns exec 'ns'\\''1' '\/usr\/bin\/chromium' "\$@"\n$/);
});
