// TURN REST credentials and coturn's lifecycle (server/turn.js): the HMAC
// scheme coturn checks, expiry, the secret never in a page, and coturn
// stopped with the server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import dgram from 'node:dgram';
import { existsSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { createCarlabServer } from './server.js';
import { startTurnServer, turnConfig, turnCredential, turnserverMissing } from './turn.js';

test('turnCredential: username <expiry>:<name>, credential base64(HMAC-SHA1(secret, username))', () => {
  const c = turnCredential('s3cret', 'carlab', 600, 1_700_000_000_000);
  assert.equal(c.username, '1700000600:carlab');
  assert.equal(c.expiresAt, 1_700_000_600);
  assert.equal(c.credential, createHmac('sha1', 's3cret').update('1700000600:carlab').digest('base64'));
  assert.notEqual(turnCredential('other', 'carlab', 600, 1_700_000_000_000).credential, c.credential);
});

test('turnConfig: the shared-secret scheme, no CLI, no TLS', () => {
  const conf = turnConfig({ host: '10.201.0.1', port: 3478, secret: 'x', realm: 'carlab', minPort: 50000, maxPort: 50100, allowLoopback: false });
  for (const line of ['use-auth-secret', 'static-auth-secret=x', 'listening-ip=10.201.0.1', 'no-cli', 'listening-port=3478']) assert.ok(conf.split('\n').includes(line), line);
  assert.ok(!conf.includes('lt-cred-mech'));
});

test('a missing turnserver is a clear error', async () => {
  assert.match(String(turnserverMissing('/nonexistent/turnserver')), /not found.*apt-get install coturn/);
  await assert.rejects(startTurnServer({ host: '127.0.0.1', binary: '/nonexistent/turnserver' }), /apt-get install coturn/);
});

/**
 * A port free for TCP and UDP below the ephemeral range (32768+), so no
 * socket another test opens meanwhile can take it before coturn binds it.
 * @returns {Promise<number>}
 */
async function freeTurnPort() {
  for (;;) {
    const port = 20000 + Math.floor(Math.random() * 12000);
    const tcp = net.createServer();
    const tcpOk = await new Promise((resolve) => { tcp.once('error', () => resolve(false)); tcp.listen(port, '127.0.0.1', () => resolve(true)); });
    if (tcpOk) await new Promise((resolve) => tcp.close(() => resolve(undefined)));
    const udp = dgram.createSocket('udp4');
    const udpOk = await new Promise((resolve) => { udp.once('error', () => resolve(false)); udp.bind(port, '127.0.0.1', () => resolve(true)); });
    udp.close();
    if (tcpOk && udpOk) return port;
  }
}

const noCoturn = turnserverMissing();
test('createCarlabServer({ turn }): /config.json hands out fresh expiring credentials, never the secret; coturn stops with the server', { skip: noCoturn ?? false }, async () => {
  const carlab = await createCarlabServer({ http: true, host: '127.0.0.1', port: 0, turn: { port: await freeTurnPort() } });
  let pid = 0;
  try {
    const config = await (await fetch(new URL("/config.json", carlab.url))).json();
    const [entry] = config.iceServers;
    assert.match(entry.urls[0], /^turn:127\.0\.0\.1:\d+\?transport=udp$/);
    const [expiry, name] = entry.username.split(':');
    const left = Number(expiry) - Date.now() / 1000;
    assert.ok(left > 60 && left <= 600, `expires in ${left} s`);
    assert.equal(name, 'carlab');
    assert.match(entry.credential, /^[A-Za-z0-9+/]{27}=$/, 'an HMAC-SHA1, base64');
    // The secret is in coturn's config file only, never on its command line.
    const ps = spawnSync('pgrep', ['-a', 'turnserver'], { encoding: 'utf8' }).stdout;
    assert.ok(!/static-auth-secret/.test(ps), ps);
    // Ours by its config's port: other tests running beside this one start coturns of their own.
    const turnPort = Number(/:(\d+)\?/.exec(entry.urls[0])?.[1]);
    const ours = ps.split('\n').find((l) => {
      const conf = /-c (\S*carlab-turn-\S*)/.exec(l)?.[1];
      return conf !== undefined && existsSync(conf) && readFileSync(conf, 'utf8').split('\n').includes(`listening-port=${turnPort}`);
    });
    pid = Number(ours?.split(' ')[0] ?? 0);
    assert.ok(pid > 0, 'turnserver runs');
  } finally {
    await carlab.close();
  }
  assert.throws(() => process.kill(pid, 0), 'turnserver stopped with the server');
});
