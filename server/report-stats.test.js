// Reports as STATS on the relay session (docs/study.md "How a report travels"):
// a real server, real relay transports, the same checks as POST /reports.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';

import { CarClient } from '../core/client.js';
import { CloseCode, HelloFlag, MsgType, decode, encode } from '../core/protocol.js';
import { Reporter, RtHistogram, buildReport, overSession, randomSessionId } from '../core/report.js';
import { createTransport } from '../web/src/transport/index.js';
import { createCarlabServer } from './server.js';
import { waitFor as until } from '../lab/shared/loop-stall.js';

const CONFIG = { iceServers: [], relayPath: '/relay', peerjs: { path: '/peerjs', key: 'peerjs' } };

/**
 * A member of `group` on the server's relay (or its p2p membership session).
 * @param {string} baseUrl @param {string} group @param {string} [transport]
 */
async function member(baseUrl, group, transport = 'relay') {
  const client = new CarClient({
    transport: createTransport(transport, { baseUrl, config: CONFIG, WebSocket }),
    group, name: 'm', pose: () => [0, 0, 0, 0, 0, 0, 1],
  });
  await client.connect();
  return client;
}

test('a report sent as STATS on the relay session is taken like a POSTed one, with the socket\'s User-Agent; no HTTP request', async () => {
  const server = await createCarlabServer({ http: true, port: 0 });
  try {
    const client = await member(server.url, 'stats-g');
    /** @type {string[]} */
    const posted = [];
    const reporter = new Reporter({ client, kind: 'sim', intervalMs: 0, send: overSession(client, (r) => { posted.push(String(r.seq)); }) });
    reporter.send(false);
    await until(() => server.study.intake.counts().accepted === 1);
    assert.deepEqual(posted, [], 'went on the socket');
    const snapshot = server.study.study.snapshot();
    assert.equal(snapshot.members, 1);
    assert.deepEqual(snapshot.groups.map((g) => g.group), ['stats-g']);
    reporter.finish();
    await until(() => server.study.intake.counts().accepted === 2);
    assert.deepEqual(client.reportsRefused, {});
    client.close();
  } finally {
    await server.close();
  }
});

test('a refused STATS report comes back as ERROR REPORT_REFUSED and the session stays in its group; other STATS are discarded', async () => {
  const server = await createCarlabServer({ http: true, port: 0 });
  try {
    const client = await member(server.url, 'stats-r');
    const other = await member(server.url, 'stats-r');
    const reporter = new Reporter({ client, kind: 'sim', intervalMs: 0, now: () => 0, send: overSession(client, () => {}) });
    reporter.send(false);
    await until(() => server.study.intake.counts().accepted === 1);
    // the same report again: stale; then one that claims the other member's id
    const again = reporter.next(false);
    client.transport.sendStats?.({ ...again, seq: 1 });
    client.transport.sendStats?.({ ...reporter.next(false), clientId: other.id });
    await until(() => (client.reportsRefused.stale ?? 0) === 1 && (client.reportsRefused.claimed ?? 0) === 1);
    // a STATS that is no report (older clients' end-of-run counters): nothing comes back, nothing counted
    client.transport.sendStats?.({ id: client.id, rt: [1, 2] });
    // still a member: an update still goes round
    client.start(0);
    await until(() => client.rt.length > 0);
    client.stop();
    const counts = server.study.intake.counts();
    assert.equal(counts.stale, 1);
    assert.equal(counts.claimed, 1);
    assert.equal(counts.bad_shape, undefined, 'the non-report STATS was not taken as a bad report');
    assert.equal(client.closedWith, null);
    client.close();
    other.close();
  } finally {
    await server.close();
  }
});

test('a membership-only session (p2p\'s) takes reports too; a malformed one is answered bad_shape', async () => {
  const server = await createCarlabServer({ http: true, port: 0 });
  try {
    const ws = new WebSocket(`${server.url.replace('http', 'ws')}relay?g=p2p-g`);
    await new Promise((r) => ws.once('open', r));
    /** @type {any[]} */
    const got = [];
    ws.on('message', (data) => got.push(decode(new Uint8Array(/** @type {Buffer} */ (data)))));
    ws.send(encode({ type: MsgType.HELLO, flags: HelloFlag.MEMBERSHIP_ONLY, clientId: 0, group: 'p2p-g', name: 'p', token: '' }));
    await until(() => got.some((m) => m.type === MsgType.WELCOME));
    const id = got.find((m) => m.type === MsgType.WELCOME).clientId;
    ws.send(encode({ type: MsgType.STATS, clientId: id, stats: { v: 1, broken: true } }));
    await until(() => got.some((m) => m.type === MsgType.ERROR));
    const error = got.find((m) => m.type === MsgType.ERROR);
    assert.equal(error.code, CloseCode.REPORT_REFUSED);
    assert.match(error.reason, /^bad_shape: /);
    const report = buildReport(await joinedAs(id, 'p2p-g'), { session: randomSessionId(), seq: 1, final: false, kind: 'app', uptimeMs: 0, rt: new RtHistogram() });
    ws.send(encode({ type: MsgType.STATS, clientId: id, stats: report }));
    await until(() => server.study.intake.counts().accepted === 1);
    assert.equal(ws.readyState, WebSocket.OPEN);
    ws.close();
  } finally {
    await server.close();
  }
});

/** A client core that joined `group` as `id` (a transport that only welcomes), to build reports with. @param {number} id @param {string} group */
async function joinedAs(id, group) {
  /** @type {import('../core/client.js').Transport} */
  const transport = {
    name: 'p2p',
    connect: () => Promise.resolve({ type: 2, clientId: id, serverTime: 0, members: [{ id, name: 'p' }] }),
    sendUpdate() {}, sendAck() {}, channelInfo: () => null, close() {},
  };
  const client = new CarClient({ transport, group, name: 'p', pose: () => [0, 0, 0, 0, 0, 0, 1] });
  await client.connect();
  return client;
}
