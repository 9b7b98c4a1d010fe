// The log of a started `carlab start` (start-log.js): the writer's pid, and
// what the lines say about its processes and faults.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StartLog, parseLogLine } from './start-log.js';

test('log lines: the writer\'s pid apart from a pid the line names (nats-started has both)', () => {
  const line = '{"level":"info","time":"t","pid":100,"event":"nats-started","natsUrl":"nats://127.0.0.1:5","version":"2.9.10","pid":101,"msg":"m"}';
  const e = parseLogLine(line);
  assert.equal(e?.logPid, 100);
  assert.equal(e?.pid, 101);
  assert.equal(parseLogLine('not json'), null);
  assert.equal(parseLogLine('{"broken'), null);
});

test('the start log: workers and their URLs, the public URL, NATS, the routing counts, faults', () => {
  const log = new StartLog(100);
  log.add('{"level":"info","pid":100,"event":"nats-started","natsUrl":"nats://127.0.0.1:5","version":"2.9.10","pid":101}');
  log.add('{"level":"info","pid":102,"event":"listening","url":"http://127.0.0.1:7/"}');
  log.add('{"level":"info","pid":103,"event":"listening","url":"http://127.0.0.1:7/"}');
  assert.equal(log.clusterUp, false);
  log.add('{"level":"info","pid":100,"event":"cluster-up","workers":2,"url":"http://127.0.0.1:9/"}');
  log.add('{"level":"warn","pid":100,"event":"worker-exit","pid":103,"msg":"worker 103 exited"}');
  log.add('{"level":"info","pid":100,"event":"routing","byGroup":20,"roundRobin":1,"unread":0,"msg":"m"}');
  assert.equal(log.url, 'http://127.0.0.1:9/');
  assert.deepEqual([...log.workers], [[102, 'http://127.0.0.1:7/'], [103, 'http://127.0.0.1:7/']]);
  assert.deepEqual(log.nats, { pid: 101, url: 'nats://127.0.0.1:5', version: '2.9.10' });
  assert.deepEqual(log.routing, { byGroup: 20, roundRobin: 1, unread: 0 });
  assert.deepEqual(log.faults.map((f) => f.kind), ['log:worker-exit']);
  const plain = new StartLog(200);
  plain.add('{"level":"info","pid":200,"event":"listening","url":"http://127.0.0.1:8/"}');
  assert.equal(plain.url, 'http://127.0.0.1:8/');
  assert.equal(plain.workers.size, 0);
  plain.add('{"level":"error","pid":200,"event":"listen-failed","msg":"port in use"}');
  assert.equal(plain.fatal, 'port in use');
});
