import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';

import { CarClient } from '../core/client.js';
import { REPORT_LIMITS, RtHistogram, buildReport, randomSessionId } from '../core/report.js';
import { REFUSALS, REPORTS_SUBJECT, createReportIntake } from './report-intake.js';

/** @typedef {import('../core/report.js').ClientReport} ClientReport */

/** A client that joined group `g` as `id` (nothing measured yet). @param {number} id */
async function joinedClient(id) {
  /** @type {import('../core/client.js').Transport} */
  const transport = {
    name: 'relay',
    connect: () => Promise.resolve({ type: 2, clientId: id, serverTime: 0, members: [{ id, name: `c${id}` }] }),
    sendUpdate() {}, sendAck() {}, channelInfo: () => null, close() {},
  };
  const client = new CarClient({ transport, group: 'g', name: `c${id}`, pose: () => [0, 0, 0, 0, 0, 0, 1] });
  await client.connect();
  return client;
}

/**
 * @param {CarClient} client @param {string} session @param {number} seq @param {boolean} [final]
 * @returns {ClientReport}
 */
function reportOf(client, session, seq, final = false) {
  return buildReport(client, { session, seq, final, kind: 'app', uptimeMs: seq * 1000, rt: new RtHistogram() });
}

/** A minimal live study: remembers the holder of every (group, client id). */
function fakeStudy() {
  /** @type {any[]} */
  const records = [];
  /** @type {Map<string, string>} */
  const holders = new Map();
  return {
    records,
    /** @param {any} record */
    ingest(record) {
      records.push(record);
      holders.set(`${record.r.group}/${record.r.clientId}`, record.r.session);
    },
    /** @param {string} group @param {number} id */
    holderOf: (group, id) => holders.get(`${group}/${id}`),
  };
}

/**
 * An HTTP server with only the intake on it.
 * @param {Partial<Parameters<typeof createReportIntake>[0]>} [options]
 */
async function serve(options = {}) {
  const study = fakeStudy();
  /** @type {string[]} */
  const results = [];
  /** @type {any[]} */
  const appended = [];
  let clock = 1_000_000;
  const intake = createReportIntake({
    study, node: 'n1', onResult: (r) => results.push(r), now: () => clock,
    recorder: /** @type {any} */ ({ appendText: (/** @type {string} */ line) => appended.push(JSON.parse(line)) }),
    ...options,
  });
  const server = http.createServer((req, res) => {
    if (!intake.handleRequest(req, res)) { res.writeHead(404); res.end(); }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
  const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
  /**
   * @param {string | object} body @param {Record<string, string>} [headers]
   * @returns {Promise<{ status: number, body: any }>}
   */
  const post = async (body, headers = {}) => {
    const res = await fetch(`http://127.0.0.1:${port}/reports`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'User-Agent': 'Mozilla/5.0 (Linux; Android 14; Pixel 7) Chrome/156.0.0.0 Mobile Safari/537.36', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  return {
    study, results, appended, intake, port, post,
    tick: (/** @type {number} */ ms) => { clock += ms; },
    close: () => new Promise((resolve) => server.close(() => resolve(undefined))),
  };
}

test('an accepted report is shown, recorded with its user agent and answered 204', async () => {
  const s = await serve();
  const c = await joinedClient(1);
  const session = randomSessionId();
  const res = await s.post(reportOf(c, session, 1));
  assert.equal(res.status, 204);
  assert.equal(s.study.records.length, 1);
  assert.equal(s.appended.length, 1);
  assert.match(s.appended[0].ua, /Pixel 7/);
  assert.equal(s.appended[0].node, 'n1');
  assert.equal(s.appended[0].r.session, session);
  assert.equal(s.appended[0].t, 'report');
  assert.deepEqual(s.results, ['accepted']);
  await s.close();
});

test('bad input is refused with its status, counted, never stored', async () => {
  const s = await serve();
  const c = await joinedClient(1);
  const bad = reportOf(c, randomSessionId(), 1);
  /** @type {any} */ (bad).seq = -3;
  assert.equal((await s.post('{"v":1,')).status, REFUSALS.bad_json);
  assert.equal((await s.post(bad)).status, REFUSALS.bad_shape);
  assert.match((await s.post(bad)).body.error, /seq/);
  assert.equal((await s.post('x'.repeat(REPORT_LIMITS.maxBytes + 1))).status, REFUSALS.too_large);
  assert.equal((await s.post('{}', { 'Content-Type': 'application/x-www-form-urlencoded' })).status, REFUSALS.bad_type);
  const get = await fetch(`http://127.0.0.1:${s.port}/reports`);
  assert.equal(get.status, 405);
  assert.equal(get.headers.get('allow'), 'POST');
  assert.equal(s.study.records.length, 0);
  assert.equal(s.appended.length, 0);
  assert.deepEqual(s.intake.counts(), { accepted: 0, bad_json: 1, bad_shape: 2, too_large: 1, bad_type: 1 });
  await s.close();
});

test('a body that grows past the limit without a Content-Length is cut off at the limit', async () => {
  const s = await serve();
  const res = await new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: s.port, path: '/reports', method: 'POST', headers: { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' } }, resolve);
    req.on('error', reject);
    for (let i = 0; i < 20; i++) req.write('x'.repeat(8192));
    req.end();
  });
  assert.equal(/** @type {http.IncomingMessage} */ (res).statusCode, REFUSALS.too_large);
  await s.close();
});

test('reports over one per minimum interval (after a burst of two) get 429; the final one is let in once', async () => {
  const s = await serve();
  const c = await joinedClient(1);
  const session = randomSessionId();
  assert.equal((await s.post(reportOf(c, session, 1))).status, 204);
  s.tick(REPORT_LIMITS.minIntervalMs / 2);
  assert.equal((await s.post(reportOf(c, session, 2))).status, 204, 'a report held up on its way and the next one on time: the burst takes both');
  s.tick(REPORT_LIMITS.minIntervalMs / 4);
  const early = await s.post(reportOf(c, session, 3));
  assert.equal(early.status, REFUSALS.too_frequent);
  assert.equal(early.body.code, 'too_frequent');
  s.tick(REPORT_LIMITS.minIntervalMs);
  assert.equal((await s.post(reportOf(c, session, 4))).status, 204, 'one per interval goes on');
  assert.equal((await s.post(reportOf(c, session, 5, true))).status, 204, 'the final report comes when the page leaves, however soon');
  assert.equal((await s.post(reportOf(c, session, 6, true))).status, REFUSALS.too_frequent, 'but only once');
  s.tick(REPORT_LIMITS.minIntervalMs);
  assert.equal((await s.post(reportOf(c, session, 3))).status, REFUSALS.stale, 'an old report number is refused');
  assert.equal(s.study.records.length, 4);
  await s.close();
});

test('a report that claims another session\'s client id, or moves its session to another group, is refused', async () => {
  const s = await serve();
  const c = await joinedClient(7);
  const owner = randomSessionId();
  assert.equal((await s.post(reportOf(c, owner, 1))).status, 204);
  const thief = await s.post(reportOf(c, randomSessionId(), 1));
  assert.equal(thief.status, REFUSALS.claimed);
  assert.match(thief.body.error, /another session/);
  s.tick(REPORT_LIMITS.minIntervalMs);
  const moved = { ...reportOf(c, owner, 2), group: 'other' };
  assert.equal((await s.post(moved)).status, REFUSALS.claimed);
  assert.equal(s.study.records.length, 1);
  await s.close();
});

test('in a cluster, an accepted report is published once and the other nodes\' reports are shown, not recorded', async () => {
  /** @type {Map<string, (data: Uint8Array) => void>} */
  const handlers = new Map();
  /** @type {Uint8Array[]} */
  const published = [];
  const broker = /** @type {any} */ ({
    nodeId: 'n1',
    publish: (/** @type {string} */ subject, /** @type {Uint8Array} */ data) => { assert.equal(subject, REPORTS_SUBJECT); published.push(data); },
    subscribe: (/** @type {string} */ subject, /** @type {(data: Uint8Array) => void} */ h) => { handlers.set(subject, h); return { unsubscribe() {} }; },
  });
  const s = await serve({ broker });
  const c = await joinedClient(1);
  assert.equal((await s.post(reportOf(c, randomSessionId(), 1))).status, 204);
  assert.equal(published.length, 1);
  const remote = JSON.parse(Buffer.from(published[0]).toString());
  assert.equal(remote.node, 'n1');
  const deliver = /** @type {(data: Uint8Array) => void} */ (handlers.get(REPORTS_SUBJECT));
  deliver(published[0]); // our own echo: already shown
  const other = await joinedClient(2);
  deliver(Buffer.from(JSON.stringify({ at: 5, node: 'n2', ua: 'Firefox', r: reportOf(other, randomSessionId(), 1) })));
  deliver(Buffer.from('not json'));
  deliver(Buffer.from(JSON.stringify({ at: 5, node: 'n3', ua: '', r: { v: 1 } })));
  assert.deepEqual(s.study.records.map((r) => r.node), ['n1', 'n2']);
  assert.equal(s.appended.length, 1, 'each node records only what it accepted');
  await s.close();
});
