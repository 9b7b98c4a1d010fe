// The --net-events timeline: its grammar, its errors, and the commands that
// make and undo each change (as data, checked without privileges).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeNetEvent, eventCommands, handoverIp, parseNetEvents, readNetEventsFlag } from './events.js';
import { ProfileError } from './profiles.js';

test('a timeline: outage, handover with and without a gap, loss and rate, in time order', () => {
  const events = parseNetEvents('at 25s handover; at 10s outage 3s\nat 40s loss 20% for 5s # lossy corner\nat 50s rate 200kbit for 2.5s; at 60s handover 1s');
  assert.deepEqual(events.map((e) => [e.index, e.kind, e.atMs, e.forMs]), [
    [0, 'outage', 10000, 3000], [1, 'handover', 25000, 0], [2, 'loss', 40000, 5000], [3, 'rate', 50000, 2500], [4, 'handover', 60000, 1000],
  ]);
  assert.equal(events[2].lossPct, 20);
  assert.equal(events[3].rateKbit, 200);
  assert.deepEqual(events.map(describeNetEvent), [
    'at 10 s: outage for 3 s', 'at 25 s: handover', 'at 40 s: 20 % loss each way for 5 s',
    'at 50 s: 200 kbit/s per client for 2.5 s', 'at 60 s: handover with 1 s without an address',
  ]);
});

test('bad timelines are refused with what is wrong', () => {
  for (const [text, message] of [
    ['', /no events/],
    ['outage 3s', /starts with "at <T>s"/],
    ['at 10 outage 3s', /not a time/],
    ['at 10s outage', /at <T>s outage <D>s/],
    ['at 10s outage 0s', /longer than 0 s/],
    ['at 10s loss 120% for 3s', /share like "20%"/],
    ['at 10s loss 20% 3s', /for <D>s/],
    ['at 10s rate fast for 3s', /rate "fast"/],
    ['at 10s teleport', /not an event/],
    ['at 10s outage 5s; at 12s handover', /begins before "at 10s outage 5s" is over/],
    ['at 10s outage 700s', /longer than 600 s/],
  ]) {
    assert.throws(() => parseNetEvents(/** @type {string} */ (text)), (err) => err instanceof ProfileError && /** @type {RegExp} */ (message).test(err.message), String(text));
  }
});

test('--net-events takes the events or a file of them', () => {
  const dir = mkdtempSync(join(tmpdir(), 'carlab-events-'));
  const file = join(dir, 'walk.txt');
  writeFileSync(file, '# a walk through the building\nat 5s outage 2s\nat 15s handover\n');
  assert.deepEqual(readNetEventsFlag(file).map((e) => e.kind), ['outage', 'handover']);
  assert.deepEqual(readNetEventsFlag('at 5s outage 2s').map((e) => e.kind), ['outage']);
  assert.throws(() => readNetEventsFlag(join(dir, 'missing.txt')), /neither events .* nor a file/);
});

const where = () => ({
  serverNs: 'carlab-1-1-s', serverIp: '10.201.0.1',
  links: [{ ns: 'carlab-1-1-c0', index: 0, ip: '10.201.1.1', peers: 4 }],
  profile: {
    name: 'none', description: '',
    up: { lossPct: 0, rateKbit: null, delayMs: null, jitterMs: null, queueMs: 200 },
    down: { lossPct: 0, rateKbit: null, delayMs: 20, jitterMs: null, queueMs: 200 },
  },
});

test('an outage drops everything in and out of the link, and its end removes the rule', () => {
  const [outage] = parseNetEvents('at 1s outage 2s');
  const { begin, end } = eventCommands(outage, where(), 0);
  assert.deepEqual(begin[0].argv, ['ip', 'netns', 'exec', 'carlab-1-1-c0', 'nft', '-f', '-']);
  assert.match(String(begin[0].input), /hook input .*\n\s+iifname "eth0" drop/);
  assert.match(String(begin[0].input), /hook output .*\n\s+oifname "eth0" drop/);
  assert.deepEqual(end[0].argv, ['ip', 'netns', 'exec', 'carlab-1-1-c0', 'nft', 'delete', 'table', 'inet', 'carlab_event']);
});

test('a handover removes the address and adds a new one with the default route; each one a new address', () => {
  const [handover] = parseNetEvents('at 1s handover');
  const steps = eventCommands(handover, where(), 0);
  assert.deepEqual(steps.begin.map((c) => c.argv.join(' ')), ['ip -n carlab-1-1-c0 addr del 10.201.1.1/16 dev eth0']);
  assert.deepEqual(steps.end.map((c) => c.argv.join(' ')), [
    'ip -n carlab-1-1-c0 addr add 10.201.101.1/16 dev eth0',
    'ip -n carlab-1-1-c0 route replace default via 10.201.0.1 dev eth0',
  ]);
  assert.deepEqual(steps.newIps, ['10.201.101.1']);
  assert.equal(handoverIp('10.201.0.1', 3, 2), '10.201.102.4');
  assert.throws(() => handoverIp('10.201.0.1', 250, 1), RangeError);
});

test('loss drops at both ends; a rate change swaps the qdiscs and puts the profile\'s back', () => {
  const [loss, rate] = parseNetEvents('at 1s loss 10% for 1s; at 5s rate 100kbit for 1s');
  const l = eventCommands(loss, where(), 0);
  assert.match(String(l.begin[0].input), /table netdev carlab_event_down .*device "eth0".*< 10000 drop/s);
  assert.match(String(l.begin[1].input), /table netdev carlab_event_up .*device "c0".*< 10000 drop/s);
  assert.equal(l.end.length, 2);
  const r = eventCommands(rate, where(), 0);
  assert.deepEqual(r.begin.map((c) => c.argv.slice(0, 10).join(' ')), [
    'tc -n carlab-1-1-c0 qdisc replace dev eth0 root tbf rate',
    'tc -n carlab-1-1-s qdisc replace dev c0 root tbf rate',
  ]);
  assert.equal(r.begin[0].argv[10], '400000bit', '100 kbit/s for each of the 4 clients on the link');
  // the down direction had a 20 ms delay: netem comes back after the change
  assert.ok(r.end.some((c) => c.argv.includes('netem') && c.argv.includes('20ms')));
});
