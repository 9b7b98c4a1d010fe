// WebKit, Safari's engine, on this machine: Debian's WebKitGTK MiniBrowser
// under its WebDriver (`WebKitWebDriver`, package webkit2gtk-driver) on an X
// display of its own (`Xvfb`, package xvfb), driven with selenium-webdriver
// (Playwright cannot drive this WebKit). Shared by the browser tests
// (e2e/webkit.spec.js) and the bench fleet (`carlab bench --browsers webkit`).
//
// Debian's WebKitGTK has no WebRTC compiled in (RTCPeerConnection is
// undefined), so only the relay transports run there; its user agent says
// Safari 605.1.15 on X11 Linux. Every process started here is ended by its
// pid: the WebDriver (and MiniBrowser, its child) first, then the display.

import { spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';


/** Debian's binaries (overridable for other layouts). */
export const WEBKIT_DRIVER_PATH = process.env.CARLAB_WEBKIT_DRIVER ?? '/usr/bin/WebKitWebDriver';
export const XVFB_PATH = process.env.CARLAB_XVFB ?? '/usr/bin/Xvfb';
export const MINIBROWSER_PATH = process.env.CARLAB_MINIBROWSER ?? findMiniBrowser();

/** The WebDriver client's version, for the results' environment. */
export const SELENIUM_VERSION = (() => {
  try {
    return String(JSON.parse(readFileSync(new URL('../../node_modules/selenium-webdriver/package.json', import.meta.url), 'utf8')).version);
  } catch {
    return 'unknown';
  }
})();

/** What to install when WebKit is missing. */
export const WEBKIT_PACKAGES = 'webkit2gtk-driver xvfb';

/** MiniBrowser of WebKitGTK 4.1 (or 4.0) under the multiarch library folder, e.g. /usr/lib/x86_64-linux-gnu. */
function findMiniBrowser() {
  /** @type {string[]} */
  let dirs = [];
  try { dirs = readdirSync('/usr/lib'); } catch { /* no /usr/lib */ }
  for (const api of ['webkit2gtk-4.1', 'webkit2gtk-4.0']) {
    for (const dir of dirs) {
      const file = `/usr/lib/${dir}/${api}/MiniBrowser`;
      if (existsSync(file)) return file;
    }
  }
  return '/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser';
}

/**
 * Why WebKit cannot start here, or null when its binaries are installed.
 * @returns {string | null}
 */
export function webkitMissing() {
  const missing = [WEBKIT_DRIVER_PATH, XVFB_PATH, MINIBROWSER_PATH].filter((file) => !existsSync(file));
  return missing.length
    ? `WebKit needs ${missing.join(', ')}: apt-get install ${WEBKIT_PACKAGES}`
    : null;
}

/**
 * The WebDriver capabilities of a MiniBrowser session.
 * @param {{ camera?: boolean }} [opts] camera: getUserMedia on, fed by WebKit's mock camera
 *   (a generated test picture: it cannot play a file, so tests use the app's synthetic source),
 *   and media playback that needs a user gesture, as on iOS: the AR view's muted inline
 *   video must play without a tap
 */
export function webkitCapabilities(opts = {}) {
  return {
    browserName: 'MiniBrowser',
    'webkitgtk:browserOptions': {
      binary: MINIBROWSER_PATH,
      args: ['--automation', ...(opts.camera
        ? ['--enable-media-stream=true', '--enable-mock-capture-devices=true', '--media-playback-requires-user-gesture=true']
        : [])],
    },
  };
}

/** A free TCP port on 127.0.0.1. */
async function freePort() {
  const srv = createServer();
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', () => resolve(undefined)));
  const { port } = /** @type {import('node:net').AddressInfo} */ (srv.address());
  await new Promise((resolve) => srv.close(resolve));
  return port;
}

/**
 * Ends a child process by its pid: SIGTERM, then SIGKILL after `graceMs`.
 * @param {import('node:child_process').ChildProcess} child
 * @param {number} [graceMs]
 */
async function endChild(child, graceMs = 3000) {
  if (child.exitCode !== null || child.signalCode !== null || !child.pid) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/**
 * An X server of our own: Xvfb picks a free display number and writes it to
 * fd 3 once clients may connect.
 * @param {{ screen?: string }} [opts] e.g. '1280x1024x24'
 * @returns {Promise<{ display: string, pid: number, stop: () => Promise<void> }>}
 */
export async function startXvfb(opts = {}) {
  const child = spawn(XVFB_PATH, ['-displayfd', '3', '-screen', '0', opts.screen ?? '1280x1024x24', '-nolisten', 'tcp', '-noreset'],
    { stdio: ['ignore', 'ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d) => { stderr = (stderr + d).slice(-2000); });
  const fd3 = /** @type {import('node:stream').Readable} */ (child.stdio[3]);
  const display = await new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`Xvfb did not report a display within 10 s: ${stderr}`)), 10_000);
    fd3.on('data', (d) => {
      text += d;
      const m = /^(\d+)\n/.exec(text);
      if (m) { clearTimeout(timer); resolve(`:${m[1]}`); }
    });
    child.once('error', (err) => { clearTimeout(timer); reject(err); });
    child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`Xvfb exited (${code}): ${stderr}`)); });
  }).catch(async (err) => { await endChild(child, 500); throw err; });
  fd3.destroy();
  return { display, pid: /** @type {number} */ (child.pid), stop: () => endChild(child) };
}

/**
 * WebKitWebDriver on a free loopback port, showing its browsers on `display`.
 * @param {{ display: string }} opts
 * @returns {Promise<{ url: string, pid: number, stop: () => Promise<void> }>}
 */
export async function startWebKitDriver({ display }) {
  const port = await freePort();
  const child = spawn(WEBKIT_DRIVER_PATH, [`--port=${port}`, '--host=local'], {
    // MiniBrowser's GTK and GStreamer chatter (no D-Bus session here, no GL sink) is dropped
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, DISPLAY: display, WAYLAND_DISPLAY: '', GDK_BACKEND: 'x11', NO_AT_BRIDGE: '1' },
  });
  let stderr = '';
  child.stderr?.on('data', (d) => { stderr = (stderr + d).slice(-2000); });
  const url = `http://127.0.0.1:${port}`;
  const end = Date.now() + 10_000;
  for (;;) {
    try {
      const res = await fetch(`${url}/status`);
      if (res.ok) break;
    } catch { /* not listening yet */ }
    if (child.exitCode !== null || Date.now() > end) {
      await endChild(child, 500);
      throw new Error(`WebKitWebDriver did not come up on ${url}: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { url, pid: /** @type {number} */ (child.pid), stop: () => endChild(child) };
}

/**
 * @typedef {object} WebKitBrowser one MiniBrowser session on a display of its own
 * @property {import('selenium-webdriver').WebDriver} driver
 * @property {number} pid the WebDriver's: MiniBrowser and its web, network and GPU processes are its descendants
 * @property {number[]} pids every process tree this browser costs: the WebDriver's and the display's
 * @property {string} version WebKitGTK's version (the session's browserVersion)
 * @property {string} display
 * @property {() => Promise<void>} close ends the session, the WebDriver, then the display
 */

/**
 * Starts Xvfb, WebKitWebDriver and one MiniBrowser session.
 * @param {{ camera?: boolean, width?: number, height?: number }} [opts] the window's size (default MiniBrowser's)
 * @returns {Promise<WebKitBrowser>}
 */
export async function launchWebKit(opts = {}) {
  const problem = webkitMissing();
  if (problem) throw new Error(problem);
  const xvfb = await startXvfb();
  /** @type {Awaited<ReturnType<typeof startWebKitDriver>> | null} */
  let server = null;
  try {
    server = await startWebKitDriver({ display: xvfb.display });
    // Loaded here, not at the top: every `carlab agent` and `carlab bench` imports this module, and
    // selenium-webdriver costs 0.2 s of CPU to load where no WebKit is launched.
    const { Builder } = await import('selenium-webdriver');
    const driver = await new Builder().usingServer(server.url).withCapabilities(webkitCapabilities(opts)).build();
    await driver.manage().setTimeouts({ script: 60_000, pageLoad: 60_000 });
    if (opts.width && opts.height) await driver.manage().window().setRect({ x: 0, y: 0, width: opts.width, height: opts.height });
    const version = String((await driver.getCapabilities()).get('browserVersion') ?? '');
    const started = /** @type {NonNullable<typeof server>} */ (server);
    let closed = false;
    return {
      driver,
      pid: started.pid,
      pids: [started.pid, xvfb.pid],
      version,
      display: xvfb.display,
      async close() {
        if (closed) return;
        closed = true;
        await Promise.race([driver.quit().catch(() => {}), new Promise((r) => setTimeout(r, 5000))]);
        await started.stop();
        await xvfb.stop();
      },
    };
  } catch (err) {
    await server?.stop();
    await xvfb.stop();
    throw err;
  }
}

/**
 * The script that runs `fn(arg)` in the page and answers with its value
 * (awaited; made JSON-safe, undefined as null) or its error, plus the page's
 * uncaught errors since the last call (installErrorHook).
 * @param {Function} fn
 */
function evaluateScript(fn) {
  return `const done = arguments[arguments.length - 1];
const errors = (window.__carlabErrors || []).splice(0);
const fn = (${fn.toString()});
Promise.resolve().then(() => fn(arguments[0])).then(
  (value) => { let safe = null; try { safe = value === undefined ? null : JSON.parse(JSON.stringify(value)); } catch (e) { safe = null; } done({ ok: true, value: safe, errors }); },
  (err) => done({ ok: false, error: err instanceof Error ? err.name + ': ' + err.message + (err.stack ? ' at ' + err.stack : '') : String(err), errors }));`;
}

/** Collects the page's uncaught errors and unhandled rejections into window.__carlabErrors. */
const ERROR_HOOK = `if (!window.__carlabErrors) {
  window.__carlabErrors = [];
  window.addEventListener('error', (e) => window.__carlabErrors.push(String(e.message || e.error)));
  window.addEventListener('unhandledrejection', (e) => window.__carlabErrors.push(String((e.reason && e.reason.message) || e.reason)));
}`;

/**
 * Watches the current page for uncaught errors (from now on: call it right
 * after a navigation).
 * @param {import('selenium-webdriver').WebDriver} driver
 */
export async function installErrorHook(driver) {
  await driver.executeScript(ERROR_HOOK);
}

/**
 * Runs `fn(arg)` in the current page, awaits it and returns its value, like
 * Playwright's page.evaluate (the value crosses as JSON). A rejection or throw
 * in the page throws here.
 * @template T, A
 * @param {import('selenium-webdriver').WebDriver} driver
 * @param {(arg: A) => T | Promise<T>} fn
 * @param {A} [arg]
 * @param {(message: string) => void} [onPageError] the page's uncaught errors since the last call
 * @returns {Promise<Awaited<T>>}
 */
export async function webkitEvaluate(driver, fn, arg, onPageError) {
  const result = /** @type {{ ok: boolean, value?: any, error?: string, errors: string[] }} */ (
    await driver.executeAsyncScript(evaluateScript(fn), arg === undefined ? null : arg));
  for (const e of result.errors ?? []) onPageError?.(e);
  if (!result.ok) throw new Error(`in WebKit: ${result.error}`);
  return result.value;
}

/**
 * Waits until the page's scripts defined `window.carlab` (every carlab page
 * and the fleet's peer page do). WebDriver's navigation returns at the load
 * event, which in WebKit may come before a module graph with a top-level
 * await has finished evaluating.
 * @param {import('selenium-webdriver').WebDriver} driver
 * @param {number} [timeoutMs]
 */
export async function waitForCarlab(driver, timeoutMs = 30_000) {
  const ok = await webkitEvaluate(driver, (ms) => new Promise((resolve) => {
    const end = performance.now() + ms;
    const check = () => {
      if (window.carlab) resolve(true);
      else if (performance.now() > end) resolve(false);
      else setTimeout(check, 20);
    };
    check();
  }), timeoutMs);
  if (!ok) throw new Error(`window.carlab not defined ${timeoutMs} ms after loading ${await driver.getCurrentUrl()}`);
}

/**
 * A WebKit browser as the bench fleet uses it (lab/bench/bench.js FleetBrowser):
 * one MiniBrowser process whose pages are windows of one WebDriver session.
 * Each page is a top-level window, not a tab: WebKit hides background tabs and
 * throttles their timers to one a second, which would stall the action cycle.
 * The session drives one window at a time, so every call takes a lock and
 * switches to its page's window first. The windows share the session's
 * (ephemeral) storage: the fleet's pages keep nothing there.
 * @returns {Promise<import('./bench.js').FleetBrowser & { pids: number[] }>}
 */
export async function launchWebKitFleetBrowser() {
  const wk = await launchWebKit();
  const { driver } = wk;
  let chain = Promise.resolve();
  /** @type {string | null} */
  let current = await driver.getWindowHandle();
  let firstTaken = false;
  /**
   * @template T
   * @param {() => Promise<T>} task
   * @returns {Promise<T>}
   */
  const locked = (task) => {
    const run = chain.then(task, task);
    chain = run.then(() => {}, () => {});
    return run;
  };
  return {
    name: 'webkit',
    pid: wk.pid,
    pids: wk.pids,
    version: wk.version,
    newPage: () => locked(async () => {
      /** @type {string} */
      let handle;
      if (!firstTaken) {
        firstTaken = true;
        handle = /** @type {string} */ (current);
      } else {
        await driver.switchTo().newWindow('window');
        handle = await driver.getWindowHandle();
        current = handle;
      }
      /** @type {((e: Error) => void)[]} */
      const listeners = [];
      const onError = (/** @type {string} */ message) => { for (const f of listeners) f(new Error(message)); };
      const focus = async () => {
        if (current !== handle) {
          await driver.switchTo().window(handle);
          current = handle;
        }
      };
      return {
        goto: (url) => locked(async () => {
          await focus();
          await driver.get(url);
          await installErrorHook(driver);
          await waitForCarlab(driver); // the fleet's pages (peer.html) define it
        }),
        evaluate: (fn) => locked(async () => {
          await focus();
          return webkitEvaluate(driver, fn, undefined, onError);
        }),
        on: (_event, f) => { listeners.push(f); },
      };
    }),
    close: () => wk.close(),
  };
}
