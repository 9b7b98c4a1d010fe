// A small Chrome DevTools Protocol driver for the bench fleet's Chromium
// pages: launch over --remote-debugging-pipe, open a page in its own browser
// context, navigate, evaluate, hear uncaught exceptions. Nothing else.
//
// Why not Playwright here: Playwright enables the Network domain on every page
// (and worker), so Chromium serialises every WebSocket frame of every peer into
// a DevTools event, sends it through the browser process and over the pipe to
// the driver. A real phone pays none of that; at a few hundred peers it costs
// more CPU than the peers themselves and shows up as RT. This driver enables
// only Page (lifecycle events) and Runtime (exceptions). The e2e tests and Firefox
// keep Playwright.

import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { isAlive } from '../shared/proctree.js';

/**
 * Switches every driven Chromium needs besides the machine's (lab/bench/launch.js
 * chromiumArgs): timers and renderers of headless pages must not be throttled,
 * which Playwright would otherwise have added. No startup window, as Playwright
 * launches it: pages come from newPage, each in a context of its own, and the
 * first tab's renderer only cost CPU (a launch with one page idle 3 s: 2.8 CPU-s
 * with it, 1.7 without).
 */
export const DRIVER_ARGS = Object.freeze([
  '--no-startup-window',
  '--disable-background-timer-throttling',
  '--disable-backgrounding-occluded-windows',
  '--disable-renderer-backgrounding',
  '--disable-hang-monitor',
  '--no-default-browser-check',
  '--mute-audio',
  '--password-store=basic',
]);

/**
 * Chromium's switches under this driver, given the machine's: what a launch
 * passes (before its own profile directory), and what the results record.
 * @param {string[]} args
 */
export function driverSwitches(args) {
  return [...args, ...DRIVER_ARGS, '--remote-debugging-pipe'];
}

/** Process groups of the browsers still running, ended if the lab process exits first. */
const live = new Set();
/** @param {number} pid */
function killProcessGroup(pid) {
  try { process.kill(-pid, 'SIGKILL'); } catch { /* gone */ }
}
process.on('exit', () => { for (const pid of live) killProcessGroup(pid); });

/** Error codes of this module. */
export const CdpError = Object.freeze({
  LAUNCH: 'ERR_CDP_LAUNCH',
  CLOSED: 'ERR_CDP_CLOSED',
  PROTOCOL: 'ERR_CDP_PROTOCOL',
  EVALUATE: 'ERR_CDP_EVALUATE',
  TIMEOUT: 'ERR_CDP_TIMEOUT',
});

/** @param {string} code @param {string} message */
function cdpError(code, message) {
  return Object.assign(new Error(message), { code });
}

/**
 * One DevTools connection over the pipe pair (fd 3: to Chromium, fd 4: from
 * it); messages are JSON, each ended by a NUL byte.
 */
export class CdpConnection {
  /**
   * @param {import('node:stream').Writable} out
   * @param {import('node:stream').Readable} input
   */
  constructor(out, input) {
    this.out = out;
    this.nextId = 1;
    /** @type {Map<number, { resolve: (v: any) => void, reject: (e: Error) => void, method: string }>} */
    this.pending = new Map();
    /** @type {Map<string, (method: string, params: any) => void>} event listeners by session id ('' = browser) */
    this.listeners = new Map();
    this.closed = false;
    /** @type {Buffer[]} */
    let partial = [];
    input.on('data', (/** @type {Buffer} */ chunk) => {
      let start = 0;
      for (let end = chunk.indexOf(0); end !== -1; end = chunk.indexOf(0, start)) {
        partial.push(chunk.subarray(start, end));
        const text = Buffer.concat(partial).toString('utf8');
        partial = [];
        start = end + 1;
        this.dispatch(JSON.parse(text));
      }
      if (start < chunk.length) partial.push(chunk.subarray(start));
    });
    input.on('close', () => this.shutdown());
    out.on('error', () => this.shutdown());
  }

  /** @param {any} msg */
  dispatch(msg) {
    if (msg.id !== undefined) {
      const call = this.pending.get(msg.id);
      if (!call) return;
      this.pending.delete(msg.id);
      if (msg.error) call.reject(cdpError(CdpError.PROTOCOL, `${call.method}: ${msg.error.message}`));
      else call.resolve(msg.result);
      return;
    }
    this.listeners.get(msg.sessionId ?? '')?.(msg.method, msg.params);
  }

  /**
   * Sends a command; resolves with its result.
   * @param {string} method @param {object} [params] @param {string} [sessionId]
   * @returns {Promise<any>}
   */
  send(method, params = {}, sessionId) {
    if (this.closed) return Promise.reject(cdpError(CdpError.CLOSED, `${method}: the browser is gone`));
    const id = this.nextId++;
    this.out.write(`${JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) })}\0`);
    return new Promise((resolve, reject) => this.pending.set(id, { resolve, reject, method }));
  }

  /** Fails every call in flight: the browser went away. */
  shutdown() {
    if (this.closed) return;
    this.closed = true;
    for (const call of this.pending.values()) call.reject(cdpError(CdpError.CLOSED, `${call.method}: the browser is gone`));
    this.pending.clear();
  }
}

/**
 * A page in its own browser context (like a Playwright context + page): the
 * three calls the bench makes on a Playwright Page, with the same meaning.
 */
export class CdpPage {
  /** @param {CdpConnection} conn @param {string} sessionId @param {string} contextId */
  constructor(conn, sessionId, contextId) {
    this.conn = conn;
    this.sessionId = sessionId;
    this.contextId = contextId;
    /** @type {((e: Error) => void)[]} */
    this.errorListeners = [];
    /** Documents (loader ids) whose load event came, since the last goto. @type {Set<string>} */
    this.loaded = new Set();
    /** @type {(() => void) | null} */
    this.onLoad = null;
    conn.listeners.set(sessionId, (method, params) => {
      if (method === 'Runtime.exceptionThrown') {
        const d = params.exceptionDetails;
        const err = new Error(d.exception?.description ?? d.text);
        for (const f of this.errorListeners) f(err);
      } else if (method === 'Page.lifecycleEvent' && params.name === 'load') {
        this.loaded.add(params.loaderId);
        this.onLoad?.();
      }
    });
  }

  /**
   * Only 'pageerror' (an uncaught exception in the page), as Playwright's.
   * @param {'pageerror'} event @param {(e: Error) => void} listener
   */
  on(event, listener) {
    if (event === 'pageerror') this.errorListeners.push(listener);
    return this;
  }

  /**
   * Navigates and waits for the new document's load event (matched by its
   * loader id, so a late load of the previous document does not count).
   * @param {string} url @param {{ timeoutMs?: number }} [o]
   */
  async goto(url, o = {}) {
    const timeoutMs = o.timeoutMs ?? 30_000;
    this.loaded.clear();
    /** @type {string | null} */
    let loaderId = null;
    let timer;
    const loaded = new Promise((resolve, reject) => {
      this.onLoad = () => { if (loaderId !== null && this.loaded.has(loaderId)) resolve(undefined); };
      timer = setTimeout(() => reject(cdpError(CdpError.TIMEOUT, `${url}: no load event after ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      const r = await this.conn.send('Page.navigate', { url }, this.sessionId);
      if (r.errorText) throw cdpError(CdpError.PROTOCOL, `${url}: ${r.errorText}`);
      loaderId = r.loaderId;
      this.onLoad?.(); // it may have come before the reply
      await loaded;
    } finally {
      clearTimeout(timer);
      this.onLoad = null;
    }
  }

  /**
   * Slows the page's CPU `rate` times (1: full speed): script, layout and
   * rendering, as on a slower phone (DevTools Emulation.setCPUThrottlingRate).
   * @param {number} rate
   */
  async throttleCpu(rate) {
    await this.conn.send('Emulation.setCPUThrottlingRate', { rate }, this.sessionId);
  }

  /**
   * Runs `fn` (no arguments) in the page and resolves with its JSON value,
   * awaiting a returned promise; a throw in the page rejects with its message.
   * @template T
   * @param {() => T | Promise<T>} fn
   * @returns {Promise<T>}
   */
  async evaluate(fn) {
    const r = await this.conn.send('Runtime.evaluate', {
      expression: `(${fn.toString()})()`,
      awaitPromise: true,
      returnByValue: true,
    }, this.sessionId);
    if (r.exceptionDetails) {
      const d = r.exceptionDetails;
      throw cdpError(CdpError.EVALUATE, d.exception?.description ?? d.text);
    }
    return r.result.value;
  }
}

/**
 * A Chromium process driven over the pipe.
 * @typedef {object} CdpBrowser
 * @property {number} pid the browser process (root of its process tree)
 * @property {string} version e.g. '156.0.8078.79'
 * @property {() => Promise<CdpPage>} newPage
 * @property {() => Promise<void>} close ends the process (SIGKILL if it does not exit) and removes its profile
 */

/** Chromium profiles are temporary folders named after the lab process that made them. */
const PROFILE_PREFIX = 'carlab-chromium-';
/** A profile folder's name, with the pid of the lab process that made it. */
const PROFILE_NAME = new RegExp(`^${PROFILE_PREFIX}(\\d+)-`);

/**
 * Removes the Chromium profiles of lab processes that are gone: a lab process
 * killed with SIGKILL cannot remove its own (2.4 MB each; a test run that kills
 * fleet agents on purpose left 4 or 5 every time). Profiles of live processes,
 * and folders whose name carries no pid, are kept.
 * @param {string} [dir] where the profiles are (the OS temp folder)
 * @returns {Promise<string[]>} the folders removed
 */
export async function sweepStaleProfiles(dir = tmpdir()) {
  /** @type {string[]} */
  const stale = [];
  for (const name of await readdir(dir).catch(() => /** @type {string[]} */ ([]))) {
    const owner = Number(PROFILE_NAME.exec(name)?.[1] ?? NaN);
    if (Number.isNaN(owner) || owner === process.pid || isAlive(owner)) continue;
    stale.push(path.join(dir, name));
  }
  await Promise.all(stale.map((p) => rm(p, { recursive: true, force: true }).catch(() => {})));
  return stale;
}

let swept = false;

/**
 * Launches Chromium with --remote-debugging-pipe.
 * @param {{ executablePath: string, args: string[], timeoutMs?: number }} o
 *   executablePath may be a wrapper that execs Chromium (e.g. in a network namespace): the pipe
 *   file descriptors pass through exec
 * @returns {Promise<CdpBrowser>}
 */
export async function launchChromium(o) {
  if (!swept) {
    swept = true;
    await sweepStaleProfiles();
  }
  const profile = await mkdtemp(path.join(tmpdir(), `${PROFILE_PREFIX}${process.pid}-`));
  const child = spawn(o.executablePath, [...driverSwitches(o.args), `--user-data-dir=${profile}`], {
    stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'],
    // Its own process group: Ctrl-C belongs to the lab command, which stops the
    // point and writes what was measured before it closes the browsers.
    detached: true,
  });
  // A spawn that fails (no such file) has no pid and reports 'error' instead of 'exit'.
  /** @type {Error | null} */
  let spawnError = null;
  const pid = child.pid ?? 0;
  const killGroup = () => { if (pid) killProcessGroup(pid); };
  if (pid) live.add(pid);
  /** @type {string[]} */
  const stderr = [];
  child.stderr?.on('data', (d) => { if (stderr.length < 50) stderr.push(String(d)); });
  const exited = new Promise((resolve) => {
    child.once('exit', resolve);
    child.once('error', (err) => { spawnError = err; resolve(null); });
  });
  const conn = new CdpConnection(/** @type {import('node:stream').Writable} */ (child.stdio[3]), /** @type {import('node:stream').Readable} */ (child.stdio[4]));
  const close = async () => {
    if (pid && !spawnError && child.exitCode === null && child.signalCode === null) {
      conn.send('Browser.close').catch(() => {});
      const timer = setTimeout(killGroup, 5000);
      await exited;
      clearTimeout(timer);
    }
    killGroup(); // helpers Chromium left behind
    live.delete(pid);
    conn.shutdown();
    await rm(profile, { recursive: true, force: true }).catch(() => {});
  };
  let version;
  try {
    const timeoutMs = o.timeoutMs ?? 30_000;
    /** @type {NodeJS.Timeout | undefined} */
    let timer;
    const info = await Promise.race([
      conn.send('Browser.getVersion'),
      exited.then((code) => { throw cdpError(CdpError.LAUNCH, `Chromium exited (${code}) at launch: ${stderr.join('').slice(0, 500)}`); }),
      new Promise((_, reject) => { timer = setTimeout(() => reject(cdpError(CdpError.LAUNCH, `Chromium did not answer within ${timeoutMs} ms`)), timeoutMs); }),
    ]).finally(() => clearTimeout(timer));
    version = String(info.product).split('/')[1] ?? String(info.product);
  } catch (err) {
    await close();
    const e = /** @type {Error & { code?: string }} */ (err);
    if (spawnError) throw cdpError(CdpError.LAUNCH, `cannot start ${o.executablePath}: ${/** @type {Error} */ (spawnError).message}`);
    throw e.code === CdpError.LAUNCH ? e
      : cdpError(CdpError.LAUNCH, `${o.executablePath} did not start (${e.message}): ${stderr.join('').slice(0, 500)}`);
  }
  return {
    pid,
    version,
    newPage: () => newPage().catch(async (err) => {
      // the browser went away under us: say how (a signal from outside, a crash and its last words)
      if (/** @type {{ code?: string }} */ (err).code !== CdpError.CLOSED) throw err;
      const exit = await Promise.race([exited, new Promise((r) => setTimeout(() => r(undefined), 1000))]);
      const how = exit === undefined ? 'still running, its pipe closed' : `exited: ${child.signalCode ?? `code ${child.exitCode}`}`;
      throw cdpError(CdpError.CLOSED, `${err.message} (Chromium pid ${pid} ${how}) ${stderr.join('').slice(-300)}`.trim());
    }),
    close,
  };

  /** A page in a browser context of its own, its events on. @returns {Promise<CdpPage>} */
  async function newPage() {
    const { browserContextId } = await conn.send('Target.createBrowserContext', { disposeOnDetach: true });
    const { targetId } = await conn.send('Target.createTarget', { url: 'about:blank', browserContextId });
    const { sessionId } = await conn.send('Target.attachToTarget', { targetId, flatten: true });
    const page = new CdpPage(conn, sessionId, browserContextId);
    await Promise.all([
      conn.send('Page.enable', {}, sessionId),
      conn.send('Page.setLifecycleEventsEnabled', { enabled: true }, sessionId),
      conn.send('Runtime.enable', {}, sessionId),
    ]);
    return page;
  }
}
