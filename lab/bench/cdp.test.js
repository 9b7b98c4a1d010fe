import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { CHROMIUM_PATH, chromiumArgs } from './launch.js';
import { CdpConnection, CdpError, launchChromium, sweepStaleProfiles } from './cdp.js';
import { processTree } from '../shared/proctree.js';
import { until } from '../shared/loop-stall.js';

/** Renderer processes under a browser (each page, and a startup tab if there were one, has one). @param {number} pid */
function renderers(pid) {
  const cmdline = (/** @type {number} */ p) => { try { return readFileSync(`/proc/${p}/cmdline`, 'utf8'); } catch { return ''; } };
  return processTree([pid]).filter((p) => cmdline(p).includes('--type=renderer')).length;
}

/**
 * The renderers of a browser's own UI (WebUI "top chrome": the omnibox popup and the like).
 * @param {number} pid
 */
function browserUiRenderers(pid) {
  const cmdline = (/** @type {number} */ p) => { try { return readFileSync(`/proc/${p}/cmdline`, 'utf8'); } catch { return ''; } };
  return processTree([pid]).filter((p) => cmdline(p).includes('--top-chrome-webui'));
}

test('the pipe codec: NUL-ended JSON split across chunks, replies matched by id, events by session', async () => {
  const toBrowser = new PassThrough();
  const fromBrowser = new PassThrough();
  const conn = new CdpConnection(toBrowser, fromBrowser);
  /** @type {[method: string, params: unknown][]} */
  const events = [];
  conn.listeners.set('S1', (method, params) => events.push([method, params]));
  const reply = conn.send('Runtime.evaluate', { expression: '1' }, 'S1');
  const written = String(toBrowser.read());
  assert.ok(written.endsWith('\0'));
  assert.deepEqual(JSON.parse(written.slice(0, -1)), { id: 1, method: 'Runtime.evaluate', params: { expression: '1' }, sessionId: 'S1' });
  const frame = `${JSON.stringify({ method: 'Runtime.exceptionThrown', params: { x: 1 }, sessionId: 'S1' })}\0${JSON.stringify({ id: 1, result: { ok: true } })}\0`;
  fromBrowser.write(frame.slice(0, 17));
  fromBrowser.write(frame.slice(17));
  assert.deepEqual(await reply, { ok: true });
  assert.deepEqual(events, [['Runtime.exceptionThrown', { x: 1 }]]);
  const failing = conn.send('Nope.nope');
  fromBrowser.write(`${JSON.stringify({ id: 2, error: { message: "'Nope.nope' wasn't found" } })}\0`);
  await assert.rejects(failing, { code: CdpError.PROTOCOL, message: /Nope\.nope: 'Nope\.nope' wasn't found/ });
  const inFlight = conn.send('Browser.getVersion');
  fromBrowser.end();
  await assert.rejects(inFlight, { code: CdpError.CLOSED });
  await assert.rejects(conn.send('Browser.getVersion'), { code: CdpError.CLOSED });
});

/** @typedef {Window & { answer?: unknown, second?: unknown }} TestWindow what the test pages set */

test('a real Chromium: navigate, evaluate (awaiting promises), page errors, close ends the process', async () => {
  const browser = await launchChromium({ executablePath: CHROMIUM_PATH, args: chromiumArgs() });
  try {
    assert.match(browser.version, /^\d+\.\d+\.\d+\.\d+$/);
    // no startup tab: its renderer would only cost CPU (1.1 CPU-s a launch)
    assert.equal(renderers(browser.pid), 0);
    const page = await browser.newPage();
    /** @type {string[]} */
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto('data:text/html,<title>t</title><script>window.answer = 42; setTimeout(() => { throw new Error("boom in page") }, 10)</script>');
    assert.equal(await page.evaluate(() => /** @type {TestWindow} */ (window).answer), 42);
    assert.deepEqual(await page.evaluate(() => new Promise((r) => setTimeout(() => r({ a: [1, 'x'] }), 5))), { a: [1, 'x'] });
    await assert.rejects(page.evaluate(() => { throw new Error('thrown by evaluate'); }), { code: CdpError.EVALUATE, message: /thrown by evaluate/ });
    await until(() => errors.length > 0, 10_000); // the page's 10 ms timer and the event's way back: late on a loaded machine
    assert.equal(errors.length, 1);
    assert.match(errors[0], /boom in page/);
    // A second navigation waits for its own document, not the first one's load.
    await page.goto('data:text/html,<script>window.second = true</script>');
    assert.deepEqual(await page.evaluate(() => [/** @type {TestWindow} */ (window).answer, /** @type {TestWindow} */ (window).second]), [null, true]);
    // --cpu-slowdown: the same work takes several times longer once throttled 4x (fastest of 5 each:
    // load from beside only lengthens a run, so the fastest is the page's own speed). Load that
    // lasts through all five full-speed runs and eases off for the throttled ones would still
    // make them look alike: up to three rounds, each side's fastest reading of all kept.
    const fastestWorkMs = () => page.evaluate(() => {
      let fastest = Infinity;
      for (let run = 0; run < 5; run++) {
        const t0 = performance.now();
        let x = 0;
        for (let i = 0; i < 3e6; i++) x = (x + i * i) % 1000003;
        fastest = Math.min(fastest, performance.now() - t0 + x * 0);
      }
      return fastest;
    });
    let full = Infinity;
    let throttled = Infinity;
    for (let round = 0; round < 3 && !(throttled > 2 * full); round++) {
      full = Math.min(full, await fastestWorkMs());
      await page.throttleCpu(4);
      throttled = Math.min(throttled, await fastestWorkMs());
      await page.throttleCpu(1);
    }
    assert.ok(throttled > 2 * full, `4x throttled: ${throttled.toFixed(1)} ms against ${full.toFixed(1)} ms at full speed`);
    // Pages live in separate browser contexts: no shared storage.
    const other = await browser.newPage();
    assert.notEqual(other.contextId, page.contextId);
    // no browser UI pre-rendered beside the pages (the address bar's popup: 10-20 % of a core per browser; lab/bench/launch.js)
    await other.goto('data:text/html,<title>o</title>');
    assert.deepEqual(browserUiRenderers(browser.pid), [], 'no --top-chrome-webui renderer');
    // ended from outside: the next call says so, and how it ended
    process.kill(browser.pid, 'SIGKILL');
    await assert.rejects(browser.newPage(), { code: CdpError.CLOSED, message: /the browser is gone \(Chromium pid \d+ exited: SIGKILL\)/ });
  } finally {
    await browser.close();
  }
  assert.throws(() => process.kill(browser.pid, 0), { code: 'ESRCH' });
});

test('a Chromium that cannot start is reported with its exit, not a hang', async () => {
  await assert.rejects(launchChromium({ executablePath: '/bin/false', args: [], timeoutMs: 5000 }), { code: CdpError.LAUNCH });
  // no such file: a rejection naming it, not an unhandled 'error' event that ends the lab
  await assert.rejects(launchChromium({ executablePath: '/nonexistent/chromium', args: [], timeoutMs: 5000 }),
    { code: CdpError.LAUNCH, message: /cannot start \/nonexistent\/chromium: .*ENOENT/ });
});

test('stale Chromium profiles: a gone lab process\'s are removed; a live one\'s, this one\'s and unnamed ones stay', async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'carlab-sweep-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const gone = spawnSync(process.execPath, ['-e', '']).pid; // exited before we look
  const names = [`carlab-chromium-${gone}-aaaaaa`, `carlab-chromium-${process.pid}-bbbbbb`, `carlab-chromium-${process.ppid}-cccccc`,
    'carlab-chromium-XyZ123', 'something-else'];
  for (const n of names) await mkdir(path.join(dir, n, 'Default'), { recursive: true });
  assert.deepEqual(await sweepStaleProfiles(dir), [path.join(dir, names[0])]);
  assert.deepEqual((await readdir(dir)).sort(), names.slice(1).sort());
  assert.deepEqual(await sweepStaleProfiles(path.join(dir, 'missing')), [], 'no folder: nothing to do');
});
