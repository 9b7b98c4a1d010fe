import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter, once } from 'node:events';
import http from 'node:http';

import { RtHistogram, reportProblem } from '../core/report.js';
import { DASHBOARD_LIMITS, createDashboard } from './dashboard.js';
import { createLiveStudy } from './live-study.js';

/** @typedef {import('../core/report.js').ClientReport} ClientReport */

const TOKEN = 'dash-Token_0123456789abcdef';
const ASSETS = ['/dashboard/dashboard.js', '/dashboard/dashboard.css', '/dashboard/chart.js'];
const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0';

/** @param {Partial<ClientReport> & { session: string }} over @returns {ClientReport} */
function report(over) {
  /** @type {ClientReport} */
  const r = {
    v: 1, seq: 1, final: false, kind: 'app', uptimeMs: 5000, group: 'g', name: 'm', clientId: 1,
    transport: 'relay', cycleMs: 167, cycleMode: 'pipelined', rt: new RtHistogram().toJSON(), rtLastMs: null,
    rtWarmupN: 0, updates: { sent: 0, completed: 0, ackTimeouts: 0, skippedCycles: 0, lateAcks: 0 },
    sentTo: {}, acksFrom: {}, recv: {}, ages: {}, channel: null, setup: null,
    connection: { reconnects: 0, outageMs: 0 }, tracking: null, effectiveType: null,
    ...over,
  };
  assert.equal(reportProblem(r), null);
  return r;
}

/**
 * A dashboard on a real server at 127.0.0.1:0; everything it does not answer is a 404.
 * @param {{ intervalMs?: number }} [options]
 */
async function start(options = {}) {
  const study = createLiveStudy();
  const dashboard = createDashboard({ study, token: TOKEN, intervalMs: options.intervalMs ?? 50 });
  const server = http.createServer((req, res) => {
    if (!dashboard.handleRequest(req, res)) {
      res.writeHead(404);
      res.end('outside');
    }
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
  const base = `http://127.0.0.1:${port}`;
  return {
    study, dashboard, base,
    async close() {
      dashboard.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * @param {string} url @param {RequestInit} [init]
 * @returns {Promise<{ status: number, headers: Headers, body: string }>}
 */
async function get(url, init) {
  const res = await fetch(url, init);
  return { status: res.status, headers: res.headers, body: await res.text() };
}

/**
 * Reads a Server-Sent Events response event by event.
 * @param {string} url
 */
async function openFeed(url) {
  const req = http.get(url);
  const [res] = /** @type {[http.IncomingMessage]} */ (await once(req, 'response'));
  res.setEncoding('utf8');
  let buffer = '';
  /** @type {{ event: string, data: string }[]} */
  const events = [];
  /** @type {(() => void) | null} */
  let wake = null;
  res.on('data', (chunk) => {
    buffer += chunk;
    let end;
    while ((end = buffer.indexOf('\n\n')) !== -1) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = 'message';
      const data = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data.push(line.slice(6));
      }
      if (data.length) events.push({ event, data: data.join('\n') });
    }
    wake?.();
  });
  let ended = false;
  res.on('end', () => { ended = true; wake?.(); });
  return {
    res,
    /** @returns {Promise<{ event: string, data: any }>} */
    async next() {
      while (events.length === 0) {
        if (ended) throw new Error('the feed ended');
        await new Promise((resolve) => { wake = () => { wake = null; resolve(undefined); }; });
      }
      const e = /** @type {{ event: string, data: string }} */ (events.shift());
      return { event: e.event, data: JSON.parse(e.data) };
    },
    ended: () => ended,
    close() { req.destroy(); },
  };
}

test('without the token, or with a wrong one, the page, every asset and the feed are 401', async (t) => {
  const s = await start();
  t.after(() => s.close());
  for (const path of ['/dashboard', '/dashboard/', ...ASSETS, '/dashboard/feed', '/dashboard/nothing']) {
    for (const suffix of ['', '?token=', '?token=wrong', `?token=${TOKEN}x`, `?k=${TOKEN}`]) {
      const r = await get(`${s.base}${path}${suffix}`);
      assert.equal(r.status, 401, `${path}${suffix}`);
      assert.equal(r.headers.get('cache-control'), 'no-store');
      assert.ok(r.body.length < 100 && !r.body.includes(TOKEN));
    }
    const wrongBearer = await get(`${s.base}${path}`, { headers: { Authorization: 'Bearer nope' } });
    assert.equal(wrongBearer.status, 401, `${path} with a wrong bearer`);
  }
  assert.equal(s.dashboard.clients(), 0);
});

test('with the token: the page (headers, no inline script, no token) and its assets', async (t) => {
  const s = await start();
  t.after(() => s.close());
  for (const path of ['/dashboard', '/dashboard/']) {
    const page = await get(`${s.base}${path}?token=${encodeURIComponent(TOKEN)}`);
    assert.equal(page.status, 200);
    assert.match(/** @type {string} */ (page.headers.get('content-type')), /^text\/html/);
    assert.equal(page.headers.get('cache-control'), 'no-store');
    assert.equal(page.headers.get('referrer-policy'), 'no-referrer');
    assert.equal(page.headers.get('x-content-type-options'), 'nosniff');
    const csp = /** @type {string} */ (page.headers.get('content-security-policy'));
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.match(csp, /style-src 'self'(;|$)/);
    assert.match(csp, /connect-src 'self'(;|$)/);
    assert.ok(!csp.includes('unsafe-inline') && !csp.includes('unsafe-eval'));
    assert.ok(!page.body.includes(TOKEN), 'the token is never in the page');
    const scripts = [...page.body.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)];
    assert.ok(scripts.length >= 2);
    for (const [, attrs, inner] of scripts) {
      assert.match(attrs, /\bsrc="\/dashboard\//, 'every script is a file of the dashboard');
      assert.equal(inner.trim(), '', 'no inline script');
    }
    assert.ok(!/\son[a-z]+\s*=/i.test(page.body), 'no inline event handlers');
    assert.ok(!/<style\b|\sstyle\s*=/i.test(page.body), 'no inline style');
    // the page's own asset URLs work as they are (with the asset key, not the token)
    const urls = [...page.body.matchAll(/(?:src|href)="(\/dashboard\/[^"]+)"/g)].map((m) => m[1]);
    assert.deepEqual(urls.map((u) => u.split('?')[0]).sort(), [...ASSETS].sort());
    for (const u of urls) {
      const asset = await get(`${s.base}${u.replaceAll('&amp;', '&')}`);
      assert.equal(asset.status, 200, u);
      assert.equal(asset.headers.get('cache-control'), 'no-store');
    }
    // the asset key opens the assets only
    const key = new URLSearchParams(urls[0].split('?')[1]).get('k');
    assert.equal((await get(`${s.base}/dashboard?k=${key}`)).status, 401);
    assert.equal((await get(`${s.base}/dashboard/feed?k=${key}`)).status, 401);
  }
  for (const path of ASSETS) {
    const r = await get(`${s.base}${path}?token=${encodeURIComponent(TOKEN)}`);
    assert.equal(r.status, 200, path);
    assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
    assert.match(/** @type {string} */ (r.headers.get('content-type')), path.endsWith('.css') ? /^text\/css/ : /^text\/javascript/);
    assert.ok(!r.body.includes(TOKEN));
  }
  const chart = await get(`${s.base}/dashboard/chart.js?token=${encodeURIComponent(TOKEN)}`);
  assert.match(chart.body, /Chart\.js v4/, 'the Chart.js bundle');
  const bearer = await get(`${s.base}/dashboard`, { headers: { Authorization: `Bearer ${TOKEN}` } });
  assert.equal(bearer.status, 200, 'the token as a bearer header');
  const head = await get(`${s.base}/dashboard?token=${encodeURIComponent(TOKEN)}`, { method: 'HEAD' });
  assert.equal(head.status, 200);
  assert.equal(head.body, '');
  const post = await get(`${s.base}/dashboard?token=${encodeURIComponent(TOKEN)}`, { method: 'POST', body: 'x' });
  assert.equal(post.status, 405);
  assert.equal(post.headers.get('allow'), 'GET, HEAD');
  assert.equal((await get(`${s.base}/dashboard/other?token=${encodeURIComponent(TOKEN)}`)).status, 404);
});

test('the feed sends a snapshot, then a delta after a report; close() ends it', async (t) => {
  const s = await start({ intervalMs: 30 });
  t.after(() => s.close());
  const at = Date.now();
  s.study.ingest({ at, node: 'n1', ua: FIREFOX, r: report({ session: 'a'.repeat(32), clientId: 1, name: 'first' }) });
  const feed = await openFeed(`${s.base}/dashboard/feed?token=${encodeURIComponent(TOKEN)}`);
  t.after(() => feed.close());
  assert.equal(feed.res.statusCode, 200);
  assert.match(String(feed.res.headers['content-type']), /^text\/event-stream/);
  assert.equal(feed.res.headers['cache-control'], 'no-store');
  const first = await feed.next();
  assert.equal(first.event, 'snapshot');
  assert.deepEqual(first.data.groups.map((/** @type {any} */ g) => g.members.map((/** @type {any} */ m) => m.name)), [['first']]);
  assert.equal(first.data.groups[0].members[0].device.browser, 'Firefox');
  assert.equal(s.dashboard.clients(), 1);
  s.study.ingest({ at, node: 'n1', ua: FIREFOX, r: report({ session: 'b'.repeat(32), clientId: 2, name: '<img src=x onerror=alert(1)>' }) });
  const second = await feed.next();
  assert.equal(second.event, 'delta');
  assert.deepEqual(second.data.groups[0].members.map((/** @type {any} */ m) => m.name), ['first', '<img src=x onerror=alert(1)>']);
  assert.equal(second.data.members, 2);
  assert.ok(!JSON.stringify(second.data).includes('a'.repeat(32)), 'no session id on the feed');
  s.dashboard.close();
  await once(feed.res, 'end');
  assert.equal(s.dashboard.clients(), 0);
  assert.equal((await get(`${s.base}/dashboard/feed?token=${encodeURIComponent(TOKEN)}`)).status, 503);
});

test('handleRequest leaves every other path alone', () => {
  const dashboard = createDashboard({ study: createLiveStudy(), token: TOKEN });
  const untouchable = new Proxy({}, { get() { throw new Error('res touched'); } });
  for (const url of ['/', '/dashboardx', '/dashboard.js', '/reports', '/relay', '/x/dashboard', '/?token=dashboard', '/Dashboard']) {
    const req = /** @type {http.IncomingMessage} */ (/** @type {unknown} */ ({ url, method: 'GET', headers: {} }));
    assert.equal(dashboard.handleRequest(req, /** @type {http.ServerResponse} */ (untouchable)), false, url);
  }
  dashboard.close();
  assert.throws(() => createDashboard({ study: createLiveStudy(), token: '' }));
});

test('a feed that cannot keep up is dropped; the others go on', async () => {
  let deltas = 0;
  const study = {
    snapshot: () => ({ at: 0, sessions: 0, members: 0, groups: [] }),
    delta: () => ({ at: deltas++, sessions: 0, members: 0, groupCount: 0, groups: [], removed: [{ key: 'k', group: 'g' }], removedGroups: [] }),
  };
  const dashboard = createDashboard({ study, token: TOKEN, intervalMs: 10 });
  /** A response whose socket holds `buffered` bytes unsent. @param {number} buffered */
  const fakeFeed = (buffered) => {
    const res = Object.assign(new EventEmitter(), {
      writes: /** @type {string[]} */ ([]),
      destroyed: false,
      writableLength: 0,
      writeHead() { return res; },
      /** @param {string} text */
      write(text) { res.writes.push(text); res.writableLength += buffered; return true; },
      destroy() { res.destroyed = true; res.emit('close'); },
      end() { res.emit('close'); },
    });
    const req = { url: `/dashboard/feed?token=${TOKEN}`, method: 'GET', headers: {}, socket: { setNoDelay() {} } };
    assert.equal(dashboard.handleRequest(/** @type {any} */ (req), /** @type {any} */ (res)), true);
    return res;
  };
  const slow = fakeFeed(2 * DASHBOARD_LIMITS.maxBufferedBytes);
  const fast = fakeFeed(0);
  assert.equal(dashboard.clients(), 2);
  // Until the other feed has 3 deltas (a fixed 80 ms was too short for a starved machine).
  const deltasOf = (/** @type {{ writes: string[] }} */ r) => r.writes.filter((w) => w.startsWith('event: delta')).length;
  for (const end = Date.now() + 10_000; deltasOf(fast) < 3 && Date.now() < end;) await new Promise((resolve) => setTimeout(resolve, 10));
  assert.equal(slow.destroyed, true);
  assert.equal(fast.destroyed, false);
  assert.ok(deltasOf(fast) >= 3, 'the other feed got its deltas');
  assert.equal(dashboard.clients(), 1);
  dashboard.close();
  assert.equal(dashboard.clients(), 0);
});
