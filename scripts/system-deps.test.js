// scripts/system-deps.js decides with injected lookups and commands: nothing is installed here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { BROWSER_PACKAGES, ensureSystemDeps, findProgram, missingRequirements, planInstall, requirements, upgradeWanted } from './system-deps.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ALL = requirements({}).map((r) => r.program);

/**
 * A machine with these programs (and apt-get unless told), run() recording what it was asked.
 * @param {object} o
 * @param {string[]} [o.without] programs that are not there
 * @param {boolean} [o.root]
 * @param {boolean} [o.apt]
 * @param {(argv: string[]) => number} [o.status] each command's exit status (0)
 * @param {boolean} [o.installWorks] whether a successful install makes the missing programs appear (true)
 * @param {NodeJS.ProcessEnv} [o.env]
 * @param {string[]} [o.argv]
 */
function machine({ without = [], root = false, apt = true, status = () => 0, installWorks = true, env = {}, argv = [] } = {}) {
  const present = new Set([...ALL, ...(apt ? ['apt-get'] : [])].filter((p) => !without.includes(p)));
  /** @type {{ argv: string[], env: NodeJS.ProcessEnv }[]} */
  const ran = [];
  /** @type {string[]} */
  const out = [];
  /** @type {string[]} */
  const err = [];
  const code = ensureSystemDeps({
    which: (p) => (present.has(p) ? `/x/${p}` : null),
    isRoot: () => root,
    run: (a, e) => {
      ran.push({ argv: a, env: e });
      const s = status(a);
      if (s === 0 && installWorks && a[1] === 'install') for (const p of without) present.add(p);
      return s;
    },
    out: (l) => out.push(l),
    err: (l) => err.push(l),
    env,
    argv,
  });
  return { code, ran, out, err };
}

test('requirements: each program the tests need and its Debian package; the browsers where the lab starts them', () => {
  assert.deepEqual(requirements({}).map((r) => `${r.program}:${r.pkg}`), [
    '/usr/bin/chromium:chromium', '/usr/bin/firefox-esr:firefox-esr', '/usr/bin/WebKitWebDriver:webkit2gtk-driver',
    '/usr/bin/Xvfb:xvfb', 'nats-server:nats-server', 'turnserver:coturn', 'haproxy:haproxy', 'nft:nftables', 'ip:iproute2',
  ]);
  assert.equal(requirements({ CARLAB_CHROMIUM: '/opt/c/chrome' })[0].program, '/opt/c/chrome', 'the lab\'s override');
});

test('missingRequirements: the requirements whose program is not found', () => {
  const missing = missingRequirements(requirements({}), (p) => (p === 'turnserver' || p === '/usr/bin/Xvfb' ? null : p));
  assert.deepEqual(missing.map((r) => r.pkg), ['xvfb', 'coturn']);
});

test('planInstall: nothing missing -> nothing to do, no command', () => {
  const plan = planInstall({ missing: [], upgrade: false, canInstall: true });
  assert.equal(plan.action, 'none');
  assert.deepEqual(plan.commands, []);
  assert.equal(plan.command, '');
});

test('planInstall: missing, root with apt-get -> apt-get update, then install exactly the missing packages', () => {
  const missing = requirements({}).filter((r) => r.pkg === 'coturn' || r.pkg === 'nftables');
  const plan = planInstall({ missing, upgrade: false, canInstall: true });
  assert.equal(plan.action, 'install');
  assert.deepEqual(plan.packages, ['coturn', 'nftables']);
  assert.deepEqual(plan.commands, [['apt-get', 'update', '-qq'], ['apt-get', 'install', '-y', '--no-install-recommends', '-qq', 'coturn', 'nftables']]);
});

test('planInstall: missing and cannot install -> refuse, with the one sudo command for exactly the missing packages', () => {
  const missing = requirements({}).filter((r) => r.pkg === 'haproxy');
  const plan = planInstall({ missing, upgrade: false, canInstall: false });
  assert.equal(plan.action, 'refuse');
  assert.deepEqual(plan.commands, []);
  assert.equal(plan.command, 'sudo apt-get install -y --no-install-recommends haproxy');
});

test('planInstall: upgrading installs the browsers at their current versions too, each package once', () => {
  const missing = requirements({}).filter((r) => r.pkg === 'firefox-esr' || r.pkg === 'iproute2');
  const plan = planInstall({ missing, upgrade: true, canInstall: true });
  assert.deepEqual(plan.packages, [...BROWSER_PACKAGES, 'iproute2']);
  assert.equal(plan.action, 'install');
  const notRoot = planInstall({ missing: [], upgrade: true, canInstall: false });
  assert.equal(notRoot.action, 'none', 'not upgrading is no failure when nothing is missing');
  assert.equal(planInstall({ missing, upgrade: true, canInstall: false }).action, 'refuse');
});

test('upgradeWanted: --upgrade-browsers, or CI=true / CI=1', () => {
  assert.equal(upgradeWanted([], {}), false);
  assert.equal(upgradeWanted([], { CI: 'false' }), false);
  assert.equal(upgradeWanted(['--upgrade-browsers'], {}), true);
  assert.equal(upgradeWanted([], { CI: 'true' }), true);
  assert.equal(upgradeWanted([], { CI: '1' }), true);
});

test('ensureSystemDeps: everything here, not root -> one line, exit 0, nothing run', () => {
  const m = machine({ root: false });
  assert.equal(m.code, 0);
  assert.deepEqual(m.ran, []);
  assert.equal(m.out.length, 1);
  assert.deepEqual(m.err, []);
  assert.match(m.out[0], /the 9 programs the tests need are installed$/);
});

test('ensureSystemDeps: missing, root with apt-get -> one line, then update and install with DEBIAN_FRONTEND=noninteractive', () => {
  const m = machine({ without: ['turnserver', 'haproxy'], root: true });
  assert.equal(m.code, 0);
  assert.equal(m.out.length, 1);
  assert.match(m.out[0], /installing turnserver, haproxy: apt-get install -y --no-install-recommends coturn haproxy$/);
  assert.deepEqual(m.ran.map((r) => r.argv), [['apt-get', 'update', '-qq'], ['apt-get', 'install', '-y', '--no-install-recommends', '-qq', 'coturn', 'haproxy']]);
  for (const r of m.ran) assert.equal(r.env.DEBIAN_FRONTEND, 'noninteractive');
  assert.deepEqual(m.err, []);
});

test('ensureSystemDeps: missing, not root -> exit 1, nothing run, the one command on a line of its own', () => {
  const m = machine({ without: ['nft', '/usr/bin/WebKitWebDriver'], root: false });
  assert.equal(m.code, 1);
  assert.deepEqual(m.ran, []);
  assert.deepEqual(m.out, []);
  assert.match(m.err[0], /not installed: \/usr\/bin\/WebKitWebDriver, nft; this is not root/);
  assert.equal(m.err[1], 'sudo apt-get install -y --no-install-recommends webkit2gtk-driver nftables');
  assert.equal(m.err.length, 2);
});

test('ensureSystemDeps: missing, root but no apt-get -> exit 1 with the command, nothing run', () => {
  const m = machine({ without: ['ip'], root: true, apt: false });
  assert.equal(m.code, 1);
  assert.deepEqual(m.ran, []);
  assert.match(m.err[0], /apt-get is not here/);
  assert.equal(m.err[1], 'sudo apt-get install -y --no-install-recommends iproute2');
});

test('ensureSystemDeps: a failing apt-get, or an install that leaves a program missing -> exit 1', () => {
  const failing = machine({ without: ['nats-server'], root: true, status: (a) => (a[1] === 'install' ? 100 : 0) });
  assert.equal(failing.code, 1);
  assert.match(failing.err[0], /apt-get install failed \(exit 100\); to retry: sudo apt-get install -y --no-install-recommends nats-server$/);
  const offline = machine({ without: ['nats-server'], root: true, status: (a) => (a[1] === 'update' ? 100 : 0) });
  assert.equal(offline.code, 1);
  assert.equal(offline.ran.length, 1, 'no install after a failed update');
  const useless = machine({ without: ['nats-server'], root: true, installWorks: false });
  assert.equal(useless.code, 1);
  assert.match(useless.err[0], /still not found after installing: nats-server \(nats-server\)/);
});

test('ensureSystemDeps on CI: as root, the browsers are brought to Debian\'s current versions even when installed', () => {
  const m = machine({ root: true, env: { CI: 'true' } });
  assert.equal(m.code, 0);
  assert.deepEqual(m.ran.map((r) => r.argv), [['apt-get', 'update', '-qq'], ['apt-get', 'install', '-y', '--no-install-recommends', '-qq', ...BROWSER_PACKAGES]]);
  assert.match(m.out[0], /bringing chromium firefox-esr webkit2gtk-driver to Debian's current versions: apt-get install/);
  const flag = machine({ root: true, without: ['/usr/bin/Xvfb'], argv: ['--upgrade-browsers'] });
  assert.deepEqual(flag.ran[1].argv.slice(-4), [...BROWSER_PACKAGES, 'xvfb']);
  assert.match(flag.out[0], /current versions, installing \/usr\/bin\/Xvfb: /);
  const notRoot = machine({ root: false, env: { CI: 'true' } });
  assert.equal(notRoot.code, 0, 'not upgrading is no failure');
  assert.deepEqual(notRoot.ran, []);
  assert.equal(notRoot.out.length, 1);
  assert.match(notRoot.out[0], /browsers not upgraded \(this is not root: sudo apt-get install -y --no-install-recommends chromium firefox-esr webkit2gtk-driver\)$/);
});

test('findProgram: an absolute path, a name on PATH, or in the sbin folders a user\'s PATH leaves out; not a folder, not a plain file', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'carlab-system-deps-'));
  try {
    const exe = path.join(dir, 'tool');
    writeFileSync(exe, '#!/bin/sh\n');
    chmodSync(exe, 0o755);
    writeFileSync(path.join(dir, 'plain'), '');
    assert.equal(findProgram(exe, { PATH: '' }), exe);
    assert.equal(findProgram('tool', { PATH: `/nonexistent:${dir}` }), exe);
    assert.equal(findProgram('plain', { PATH: dir }), null, 'not executable');
    assert.equal(findProgram(dir, { PATH: '' }), null, 'a folder');
    assert.equal(findProgram('no-such-program-here', { PATH: dir }), null);
    const sbinIp = ['/usr/local/sbin/ip', '/usr/sbin/ip', '/sbin/ip'].find((p) => existsSync(p)) ?? null;
    assert.equal(findProgram('ip', { PATH: dir }), sbinIp, 'ip from the sbin folders, PATH without them');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the CLI: --help explains it, an unknown argument is refused; node --test takes none of the runner\'s files for a test', () => {
  assert.match(execFileSync(process.execPath, ['scripts/system-deps.js', '--help'], { cwd: ROOT, encoding: 'utf8' }), /--upgrade-browsers/);
  assert.throws(() => execFileSync(process.execPath, ['scripts/system-deps.js', '--install'], { cwd: ROOT, encoding: 'utf8', stdio: 'pipe' }),
    (/** @type {any} */ e) => e.status === 2 && /unknown argument --install/.test(e.stderr));
  // node --test's own discovery (test.js, test-*.js, *.test.js, *-test.js, *_test.js, test/**) finds no test in it
  const dir = mkdtempSync(path.join(tmpdir(), 'carlab-system-deps-'));
  try {
    mkdirSync(path.join(dir, 'scripts'));
    for (const f of ['suite.js', 'guard.js', 'owned.js', 'system-deps.js', 'build-web.js']) copyFileSync(path.join(ROOT, 'scripts', f), path.join(dir, 'scripts', f));
    // without NODE_TEST_CONTEXT, the child would report to this runner instead of printing
    const { NODE_TEST_CONTEXT: _, ...env } = process.env;
    const tap = execFileSync(process.execPath, ['--test', '--test-reporter=tap'], { cwd: dir, encoding: 'utf8', env });
    assert.match(tap, /^# tests 0$/m);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
