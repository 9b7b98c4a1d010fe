// carlab behind a real load balancer: the repository's HAProxy configuration
// (deploy/haproxy.cfg) filled in through its variables and run as a process,
// what its stats page says about each machine, and `carlab start` run as one
// "machine" inside a network namespace (lab/net). Used by lab/target/haproxy.test.js and
// `carlab sim --placement haproxy`;
// docs/scale-out.md, "Several machines behind HAProxy".

import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../server/nats-process.js';
import { inNamespace } from '../net/commands.js';
import { waitFor } from '../shared/loop-stall.js';

/** The configuration users deploy. */
export const HAPROXY_CONFIG = fileURLToPath(new URL('../../deploy/haproxy.cfg', import.meta.url));
/** The haproxy executable. */
export const HAPROXY_BIN = process.env.CARLAB_HAPROXY ?? 'haproxy';
/** The `carlab` command. */
const CARLAB_BIN = fileURLToPath(new URL('../../scripts/carlab.js', import.meta.url));
/** The machines deploy/haproxy.cfg takes (CARLAB_MACHINE_1 .. _6). */
export const MAX_MACHINES = 6;

/**
 * The tools a test needs that this machine lacks (each answers a version flag).
 * @param {string[]} tools e.g. ['haproxy', 'ip', 'nats-server']
 * @returns {string[]}
 */
export function missingTools(tools) {
  const versionFlag = /** @type {Record<string, string>} */ ({ haproxy: '-v', ip: '-V', 'nats-server': '--version', nft: '--version' });
  return tools.filter((tool) => {
    const r = spawnSync(tool === 'haproxy' ? HAPROXY_BIN : tool, [versionFlag[tool] ?? '--version'], { encoding: 'utf8', timeout: 10_000 });
    return Boolean(r.error) || r.status !== 0;
  });
}

/**
 * Whether this machine has a user of that name (Debian's haproxy package makes `haproxy`).
 * @param {string} name
 */
export function userExists(name) {
  const r = spawnSync('id', ['-u', name], { encoding: 'utf8' });
  return !r.error && r.status === 0;
}

/**
 * The environment deploy/haproxy.cfg reads.
 * @param {object} o
 * @param {string[]} o.machines host:port of each machine's carlab (2..6)
 * @param {string} o.bind where HAProxy listens for clients, host:port
 * @param {string} o.stats where its stats page listens, host:port
 * @param {string} [o.cert] a PEM with certificate and key: HTTPS on `bind`
 * @param {string} [o.user] the user HAProxy runs as once its ports are open (started as root)
 * @returns {Record<string, string>}
 */
export function haproxyEnv({ machines, bind, stats, cert, user }) {
  if (machines.length < 2 || machines.length > MAX_MACHINES) throw new RangeError(`machines: ${machines.length} is not 2..${MAX_MACHINES}`);
  /** @type {Record<string, string>} */
  const env = { CARLAB_LB_BIND: bind, CARLAB_LB_STATS: stats };
  machines.forEach((m, i) => { env[`CARLAB_MACHINE_${i + 1}`] = m; });
  if (cert) env.CARLAB_LB_CERT = cert;
  if (user) env.CARLAB_LB_USER = user;
  return env;
}

/**
 * The process's environment without the configuration's own variables, plus `vars`
 * (an inherited CARLAB_MACHINE_3 would add a machine).
 * @param {Record<string, string>} vars
 */
function configEnv(vars) {
  /** @type {NodeJS.ProcessEnv} */
  const env = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^CARLAB_(MACHINE_\d+|LB_\w+|RELAY_PATH)$/.test(k)) env[k] = v;
  return { ...env, ...vars };
}

/**
 * `haproxy -c`: whether the configuration is valid with these variables.
 * @param {Record<string, string>} vars
 * @param {string} [file]
 * @returns {{ ok: boolean, output: string }}
 */
export function checkHaproxyConfig(vars, file = HAPROXY_CONFIG) {
  const r = spawnSync(HAPROXY_BIN, ['-c', '-f', file], { env: configEnv(vars), encoding: 'utf8', timeout: 15_000 });
  return { ok: !r.error && r.status === 0, output: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? r.error.message : ''}` };
}

/**
 * A GET on a fresh connection, bounded in time; never rejects.
 * @param {string} url
 * @param {number} [timeoutMs]
 * @returns {Promise<{ status: number, text: string }>} status 0: no answer
 */
export function httpGet(url, timeoutMs = 2000) {
  return new Promise((resolve) => {
    const req = http.get(url, { agent: false, headers: { Accept: 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.on('error', () => resolve({ status: 0, text: '' }));
    });
    req.on('error', () => resolve({ status: 0, text: '' }));
    req.setTimeout(timeoutMs, () => req.destroy());
  });
}

/**
 * A JSON GET (see httpGet); `body` null when the answer is not JSON.
 * @param {string} url
 * @returns {Promise<{ status: number, body: any }>}
 */
export async function getJson(url) {
  const { status, text } = await httpGet(url);
  try { return { status, body: JSON.parse(text) }; } catch { return { status, body: null }; }
}

/**
 * One row of HAProxy's stats CSV (`/;csv`): a frontend, backend or server.
 * @typedef {{ proxy: string, server: string, status: string, [field: string]: string }} StatsRow
 */

/**
 * Parses HAProxy's stats CSV (first line `# pxname,svname,...`).
 * @param {string} text
 * @returns {StatsRow[]}
 */
export function parseStatsCsv(text) {
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  if (!lines.length || !lines[0].startsWith('# ')) return [];
  const fields = lines[0].slice(2).split(',');
  return lines.slice(1).map((line) => {
    const values = line.split(',');
    /** @type {Record<string, string>} */
    const row = {};
    fields.forEach((f, i) => { if (f) row[f] = values[i] ?? ''; });
    return { ...row, proxy: row.pxname ?? '', server: row.svname ?? '', status: row.status ?? '' };
  });
}

/**
 * Each server's state as HAProxy sees it now, by `backend/server`
 * ('UP', 'DOWN', 'UP 1/2' while going down, 'DOWN 1/2' while coming up, ...).
 * @param {string} statsBase http://host:port of the stats frontend
 * @returns {Promise<Map<string, string>>} empty when the page does not answer
 */
export async function serverStates(statsBase) {
  const { status, text } = await httpGet(`${statsBase}/;csv`);
  /** @type {Map<string, string>} */
  const states = new Map();
  if (status !== 200) return states;
  for (const row of parseStatsCsv(text)) {
    if (row.server !== 'FRONTEND' && row.server !== 'BACKEND') states.set(`${row.proxy}/${row.server}`, row.status);
  }
  return states;
}

/**
 * A process the lab started, with its output kept for error messages.
 * @typedef {object} LabProcess
 * @property {number} pid
 * @property {() => string} output stdout and stderr so far (the last 64 KiB)
 * @property {Promise<{ code: number | null, signal: NodeJS.Signals | null }>} exited
 * @property {() => boolean} running
 * @property {(signal?: NodeJS.Signals) => void} kill signals this pid only
 * @property {() => Promise<void>} stop SIGTERM, SIGKILL after 5 s; resolves once it exited
 */

/**
 * @param {string} bin
 * @param {string[]} args
 * @param {NodeJS.ProcessEnv} env
 * @returns {LabProcess}
 */
function startProcess(bin, args, env) {
  const child = spawn(bin, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (/** @type {Buffer} */ d) => { output = (output + d).slice(-65_536); };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  let done = false;
  /** @type {Promise<{ code: number | null, signal: NodeJS.Signals | null }>} */
  const exited = new Promise((resolve) => {
    child.once('exit', (code, signal) => { done = true; resolve({ code, signal }); });
    child.once('error', (err) => { done = true; output += `\n${err.message}`; resolve({ code: null, signal: null }); });
  });
  return {
    pid: child.pid ?? -1,
    output: () => output,
    exited,
    running: () => !done,
    kill(signal = 'SIGKILL') { if (!done) child.kill(signal); },
    async stop() {
      if (done) return;
      child.kill('SIGTERM');
      const force = setTimeout(() => { if (!done) child.kill('SIGKILL'); }, 5000);
      await exited;
      clearTimeout(force);
    },
  };
}

/**
 * Waits for `cond`, polling every 50 ms, at most `timeoutMs` (lab/shared/loop-stall.js waitFor).
 * @param {() => boolean | Promise<boolean>} cond
 * @param {number} timeoutMs
 * @param {() => string} [why] read at the timeout, named in the error
 */
export const until = (cond, timeoutMs, why) => waitFor(cond, timeoutMs, why, 50);

/**
 * HAProxy on deploy/haproxy.cfg (foreground, logs on stdout), once its stats
 * page answers.
 * @param {Record<string, string>} vars see haproxyEnv
 * @param {string} [file]
 * @returns {Promise<LabProcess & { statsBase: string }>}
 */
export async function startHaproxy(vars, file = HAPROXY_CONFIG) {
  const proc = startProcess(HAPROXY_BIN, ['-db', '-f', file], configEnv(vars));
  const statsBase = `http://${vars.CARLAB_LB_STATS}`;
  try {
    await until(async () => {
      if (!proc.running()) throw new Error(`haproxy exited:\n${proc.output()}`);
      return (await serverStates(statsBase)).size > 0;
    }, 10_000, proc.output);
  } catch (err) {
    await proc.stop();
    throw err;
  }
  return { ...proc, statsBase };
}

/**
 * HAProxy on deploy/haproxy.cfg in front of `urls` (http://host:port each: relays on loopback), on
 * free loopback ports, as this user, once it counts every one of them up (`carlab sim --placement
 * haproxy`).
 * @param {string[]} urls
 * @returns {Promise<LabProcess & { statsBase: string, url: string }>}
 */
export async function startBalancer(urls) {
  const [port, statsPort] = [await freePort(), await freePort()];
  const lb = await startHaproxy(haproxyEnv({ machines: urls.map((u) => new URL(u).host), bind: `127.0.0.1:${port}`, stats: `127.0.0.1:${statsPort}` }));
  try {
    await until(async () => [...(await serverStates(lb.statsBase)).values()].every((state) => state === 'UP'), 15_000,
      () => `HAProxy does not count every relay up:\n${lb.output()}`);
  } catch (err) {
    await lb.stop();
    throw err;
  }
  return { ...lb, url: `http://127.0.0.1:${port}` };
}

/**
 * `carlab start --http --nats URL` on `host:port` inside network namespace
 * `netns` (`ip netns exec` execs in place: `pid` is carlab's own), once its
 * /readyz answers 200.
 * @param {object} o
 * @param {string} o.netns
 * @param {string} o.host an address of the namespace
 * @param {number} o.port
 * @param {string} o.nats nats://host:port reachable from the namespace
 * @param {string[]} [o.args] more `carlab start` flags
 * @param {number} [o.timeoutMs] default 30 s
 * @returns {Promise<LabProcess & { url: string }>}
 */
export async function startCarlabMachine({ netns, host, port, nats, args = [], timeoutMs = 30_000 }) {
  const argv = inNamespace(netns, [process.execPath, CARLAB_BIN, 'start', '--http', '--nats', nats, '--host', host,
    '--port', String(port), '--no-build', '--no-qr', '--log-level', 'info', '--no-scene-store', ...args]);
  const proc = startProcess(argv[0], argv.slice(1), process.env);
  const url = `http://${host}:${port}`;
  try {
    await until(async () => {
      if (!proc.running()) throw new Error(`carlab start exited in ${netns}:\n${proc.output()}`);
      return (await httpGet(`${url}/readyz`)).status === 200;
    }, timeoutMs, () => `carlab start in ${netns} not ready; it printed:\n${proc.output()}`);
  } catch (err) {
    await proc.stop();
    throw err;
  }
  return { ...proc, url };
}

/**
 * Makes sure web/dist holds a build: a machine answers /readyz 200 only then,
 * and a balancer sends nothing to a machine that is not ready. A fresh clone
 * has none (`carlab start` would build it; the lab's processes run with
 * --no-build): build it once, into a temporary folder beside it that is then
 * renamed into place, so no other process ever sees half a build.
 * @returns {Promise<boolean>} whether it built
 */
export async function ensureWebBuild() {
  const { WEB_DIR, buildWebApp } = await import('../../server/start.js');
  const dist = path.join(WEB_DIR, 'dist');
  if (existsSync(path.join(dist, 'index.html'))) return false;
  const tmp = mkdtempSync(path.join(WEB_DIR, '.dist-building-'));
  try {
    await buildWebApp({ webDir: WEB_DIR, outDir: tmp, logLevel: 'warn' });
    try {
      renameSync(tmp, dist); // replaces nothing but an empty folder
      return true;
    } catch (err) {
      if (existsSync(path.join(dist, 'index.html'))) return false; // someone else built it meanwhile
      throw new Error(`web/dist has files but no index.html (a build in progress, or a broken one): ${/** @type {Error} */ (err).message}`);
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
