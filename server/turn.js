// TURN for `carlab start --turn` and the lab's blocked-UDP profiles: Debian's
// coturn (`turnserver`) with the TURN REST shared-secret scheme. The secret
// is random per start and only ever given to turnserver (in a config file
// readable by us alone, never on its command line or in a log); browsers get
// short-lived credentials in /config.json: username `<expiry unix s>:<name>`,
// credential base64(HMAC-SHA1(secret, username)). coturn recomputes the HMAC
// and refuses an expired username, so a leaked credential dies with its TTL.

import { spawn, spawnSync } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** How long a credential handed out in /config.json lives: a session's setup and its retries. */
export const TURN_CREDENTIAL_TTL_S = 600;
/** coturn's default listening port. */
export const TURN_DEFAULT_PORT = 3478;

/**
 * One TURN REST credential.
 * @param {string} secret the shared secret coturn runs with
 * @param {string} name who it is for (informational in coturn's logs)
 * @param {number} ttlS seconds it stays valid
 * @param {number} [nowMs] Date.now()
 * @returns {{ username: string, credential: string, expiresAt: number }}
 */
export function turnCredential(secret, name, ttlS, nowMs = Date.now()) {
  const expiresAt = Math.floor(nowMs / 1000) + ttlS;
  const username = `${expiresAt}:${name}`;
  const credential = createHmac('sha1', secret).update(username).digest('base64');
  return { username, credential, expiresAt };
}

/**
 * Whether coturn is installed; the message says what to do when it is not.
 * @param {string} [binary]
 * @returns {string | null} null when it is there, else why not
 */
export function turnserverMissing(binary = 'turnserver') {
  const r = spawnSync(binary, ['--version'], { encoding: 'utf8' });
  if (r.error) return `${binary} was not found: --turn needs coturn (apt-get install coturn)`;
  return null;
}

/**
 * The coturn configuration (a file, so the secret is on no command line).
 * @param {{ host: string, port: number, secret: string, realm: string, minPort: number, maxPort: number, allowLoopback: boolean }} o
 */
export function turnConfig(o) {
  return [
    // 0.0.0.0: every interface (coturn's default), for `carlab start` serving a LAN
    ...(o.host === '0.0.0.0' ? [] : [`listening-ip=${o.host}`, `relay-ip=${o.host}`]),
    `listening-port=${o.port}`,
    `min-port=${o.minPort}`,
    `max-port=${o.maxPort}`,
    'use-auth-secret',
    `static-auth-secret=${o.secret}`,
    `realm=${o.realm}`,
    'fingerprint',
    'no-cli',
    'no-tls',
    'no-dtls',
    'no-multicast-peers',
    // The lab's peers live on private addresses (10.201/16): coturn denies none by default except these.
    ...(o.allowLoopback ? ['allow-loopback-peers'] : []),
    // No log file and nothing on stdout but errors: a username (with its expiry) is all coturn could log.
    'no-stdout-log',
    'simple-log',
    'log-file=/dev/null',
    '',
  ].join('\n');
}

/**
 * A running coturn.
 * @typedef {object} TurnServer
 * @property {string} host
 * @property {number} port
 * @property {(name?: string) => import('./options.js').IceServer[]} iceServers fresh credentials for /config.json
 * @property {() => Promise<void>} close stops coturn and removes its config
 */

/**
 * Starts coturn on `host:port` with a random shared secret; resolves once it
 * accepts TCP on its port.
 * @param {{ host: string, publicHost?: string, port?: number, ttlS?: number, binary?: string, minPort?: number, maxPort?: number }} o
 *   host: where coturn listens (0.0.0.0: everywhere); publicHost: the address in the URLs browsers get
 * @returns {Promise<TurnServer>}
 */
export async function startTurnServer(o) {
  const binary = o.binary ?? 'turnserver';
  const missing = turnserverMissing(binary);
  if (missing) throw new Error(missing);
  const host = o.host === '::' ? '0.0.0.0' : o.host;
  const probeHost = host === '0.0.0.0' ? '127.0.0.1' : host;
  const publicHost = o.publicHost ?? probeHost;
  const port = o.port ?? TURN_DEFAULT_PORT;
  const ttlS = o.ttlS ?? TURN_CREDENTIAL_TTL_S;
  const secret = randomBytes(32).toString('hex');
  const dir = mkdtempSync(path.join(tmpdir(), 'carlab-turn-'));
  const conf = path.join(dir, 'turnserver.conf');
  writeFileSync(conf, turnConfig({
    host, port, secret, realm: 'carlab', minPort: o.minPort ?? 49152, maxPort: o.maxPort ?? 65535,
    allowLoopback: host.startsWith('127.'),
  }), { mode: 0o600 });
  const child = spawn(binary, ['-c', conf, '--pidfile', path.join(dir, 'turnserver.pid')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d) => { stderr = (stderr + d).slice(-2000); });
  /** @type {number | null} */
  let exitCode = null;
  const exited = new Promise((resolve) => child.once('exit', (code) => { exitCode = code ?? -1; resolve(undefined); }));
  const cleanup = () => rmSync(dir, { recursive: true, force: true });
  const deadline = Date.now() + 5000;
  while (!(await canConnect(probeHost, port))) {
    if (exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      cleanup();
      // Never the secret: coturn's stderr names options, not their values.
      throw new Error(`turnserver did not start on ${host}:${port}${exitCode !== null ? ` (exit ${exitCode})` : ''}: ${stderr.trim().split('\n').slice(-3).join(' ').replaceAll(secret, '<secret>')}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  let closed = false;
  return {
    host: publicHost,
    port,
    iceServers(name = 'carlab') {
      const { username, credential } = turnCredential(secret, name, ttlS);
      return [{
        urls: [`turn:${publicHost}:${port}?transport=udp`, `turn:${publicHost}:${port}?transport=tcp`],
        username, credential,
      }];
    },
    async close() {
      if (closed) return;
      closed = true;
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 2000);
      await exited;
      clearTimeout(killer);
      cleanup();
    },
  };
}

/** @param {string} host @param {number} port */
function canConnect(host, port) {
  return new Promise((resolve) => {
    const s = net.connect({ host, port });
    s.once('connect', () => { s.destroy(); resolve(true); });
    s.once('error', () => resolve(false));
  });
}
