#!/usr/bin/env node
// The system programs the tests need, each with its Debian package. `npm test` calls ensureSystemDeps()
// first: what is missing is installed with apt-get as root, else the run stops naming the one command.
// On CI (`CI=true`, `--upgrade-browsers`) the browsers are brought to Debian's current versions too.
import { spawnSync } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** @typedef {{ program: string, pkg: string }} Requirement a program (a name or a path) and its package */

/** The browser packages CI brings to Debian's current versions. */
export const BROWSER_PACKAGES = Object.freeze(['chromium', 'firefox-esr', 'webkit2gtk-driver']);
const APT_INSTALL = ['install', '-y', '--no-install-recommends'];
const PREFIX = '# system-deps:';

/** The browsers where the lab starts them (same CARLAB_* overrides), the rest by name. @param {NodeJS.ProcessEnv} [env] */
export function requirements(env = process.env) {
  return [
    { program: env.CARLAB_CHROMIUM ?? '/usr/bin/chromium', pkg: 'chromium' },
    { program: env.CARLAB_FIREFOX ?? '/usr/bin/firefox-esr', pkg: 'firefox-esr' },
    { program: env.CARLAB_WEBKIT_DRIVER ?? '/usr/bin/WebKitWebDriver', pkg: 'webkit2gtk-driver' },
    { program: env.CARLAB_XVFB ?? '/usr/bin/Xvfb', pkg: 'xvfb' },
    { program: 'nats-server', pkg: 'nats-server' },
    { program: 'turnserver', pkg: 'coturn' },
    { program: env.CARLAB_HAPROXY ?? 'haproxy', pkg: 'haproxy' },
    { program: 'nft', pkg: 'nftables' },
    { program: 'ip', pkg: 'iproute2' },
  ];
}

/**
 * Where a program is: an absolute path that is an executable file, or a name on PATH or in the
 * sbin folders a user's PATH leaves out (nft, ip); null when nowhere.
 * @param {string} program @param {NodeJS.ProcessEnv} [env]
 */
export function findProgram(program, env = process.env) {
  const dirs = [...new Set([...(env.PATH ?? '').split(':').filter(Boolean), '/usr/local/sbin', '/usr/sbin', '/sbin'])];
  for (const candidate of program.includes('/') ? [program] : dirs.map((d) => path.join(d, program))) {
    try { accessSync(candidate, constants.X_OK); if (statSync(candidate).isFile()) return candidate; } catch { /* not here */ }
  }
  return null;
}

/** @param {Requirement[]} reqs @param {(program: string) => string | null} which */
export function missingRequirements(reqs, which) {
  return reqs.filter((r) => !which(r.program));
}

/**
 * What to do: `none`, `install` (run `commands`) or `refuse` (something is missing and this
 * cannot install it: print `command`). Not upgrading the browsers is no failure.
 * @param {{ missing: Requirement[], upgrade: boolean, canInstall: boolean }} o
 */
export function planInstall({ missing, upgrade, canInstall }) {
  const missingPackages = [...new Set(missing.map((r) => r.pkg))];
  const packages = upgrade ? [...new Set([...BROWSER_PACKAGES, ...missingPackages])] : missingPackages;
  const command = packages.length > 0 ? ['sudo', 'apt-get', ...APT_INSTALL, ...packages].join(' ') : '';
  const base = { missing: missing.map((r) => r.program), packages, command, upgrade, commands: /** @type {string[][]} */ ([]) };
  if (packages.length === 0 || (!canInstall && missingPackages.length === 0)) return { ...base, action: 'none' };
  if (!canInstall) return { ...base, action: 'refuse' };
  return { ...base, action: 'install', commands: [['apt-get', 'update', '-qq'], ['apt-get', ...APT_INSTALL, '-qq', ...packages]] };
}

/** `--upgrade-browsers`, or CI set to true or 1. @param {string[]} argv @param {NodeJS.ProcessEnv} env */
export function upgradeWanted(argv, env) {
  return argv.includes('--upgrade-browsers') || /^(true|1)$/i.test(env.CI ?? '');
}

/**
 * Checks the programs the tests need and installs what is missing when it can; 0 when all are here.
 * @param {{ which?: (p: string) => string | null, isRoot?: () => boolean, run?: (argv: string[], env: NodeJS.ProcessEnv) => number,
 *   out?: (line: string) => void, err?: (line: string) => void, env?: NodeJS.ProcessEnv, argv?: string[] }} [io]
 */
export function ensureSystemDeps(io = {}) {
  const env = io.env ?? process.env;
  const which = io.which ?? ((/** @type {string} */ p) => findProgram(p, env));
  const out = io.out ?? ((/** @type {string} */ line) => process.stdout.write(`${line}\n`));
  const err = io.err ?? ((/** @type {string} */ line) => process.stderr.write(`${line}\n`));
  const run = io.run ?? ((/** @type {string[]} */ argv, /** @type {NodeJS.ProcessEnv} */ e) => spawnSync(argv[0], argv.slice(1), { stdio: ['ignore', 'inherit', 'inherit'], env: e }).status ?? 1);
  const reqs = requirements(env);
  const hasApt = Boolean(which('apt-get'));
  const plan = planInstall({ missing: missingRequirements(reqs, which), upgrade: upgradeWanted(io.argv ?? [], env), canInstall: (io.isRoot ?? (() => process.getuid?.() === 0))() && hasApt });
  const why = hasApt ? 'this is not root' : 'apt-get is not here';
  if (plan.action === 'refuse') {
    err(`${PREFIX} not installed: ${plan.missing.join(', ')}; ${why}, so install ${plan.missing.length === 1 ? 'it' : 'them'} with:`);
    err(plan.command);
    return 1;
  }
  if (plan.action === 'none') {
    out(`${PREFIX} the ${reqs.length} programs the tests need are installed${plan.upgrade && plan.packages.length ? `; browsers not upgraded (${why}: ${plan.command})` : ''}`);
    return 0;
  }
  const doing = [...(plan.upgrade ? [`bringing ${BROWSER_PACKAGES.join(' ')} to Debian's current versions`] : []), ...(plan.missing.length ? [`installing ${plan.missing.join(', ')}`] : [])];
  out(`${PREFIX} ${doing.join(', ')}: apt-get ${[...APT_INSTALL, ...plan.packages].join(' ')}`);
  for (const argv of plan.commands) {
    const code = run(argv, { ...env, DEBIAN_FRONTEND: 'noninteractive' });
    if (code !== 0) { err(`${PREFIX} ${argv.slice(0, 2).join(' ')} failed (exit ${code}); to retry: ${plan.command}`); return 1; }
  }
  const still = missingRequirements(reqs, which);
  if (still.length) { err(`${PREFIX} still not found after installing: ${still.map((r) => `${r.program} (${r.pkg})`).join(', ')}`); return 1; }
  return 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const help = 'usage: node scripts/system-deps.js [--upgrade-browsers]: check (as root: install) what the tests need';
  if (args.includes('--help') || args.includes('-h')) process.stdout.write(`${help}\n`);
  else if (args.some((a) => a !== '--upgrade-browsers')) { process.stderr.write(`unknown argument ${args[0]}\n${help}\n`); process.exitCode = 2; }
  else process.exitCode = ensureSystemDeps({ argv: args });
}
