#!/usr/bin/env node
// The system programs the tests need (browsers, Xvfb, nats-server, coturn, HAProxy, nft, ip),
// each with the Debian package that brings it. `npm test` calls ensureSystemDeps() first: what is
// missing is installed with apt-get when this is root and apt-get is here, and otherwise the run
// stops within seconds naming the one command that installs exactly what is missing. With
// everything here it needs no root and prints one line. On CI (`CI=true`, or
// `--upgrade-browsers`) the browsers are also brought to Debian's current versions, installed or
// upgraded, so the tests see what a new machine installs, not what this one had.
import { spawnSync } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * @typedef {object} Requirement
 * @property {string} program an executable's name (looked up on PATH and the sbin folders) or absolute path
 * @property {string} pkg the Debian package that installs it
 */

/** The browser packages CI brings to Debian's current versions (WebKit: WebKitGTK's WebDriver and MiniBrowser). */
export const BROWSER_PACKAGES = Object.freeze(['chromium', 'firefox-esr', 'webkit2gtk-driver']);

/**
 * What the tests run, and where from: the browsers at the paths the lab starts them from
 * (lab/bench/launch.js, lab/bench/webkit.js, with the same CARLAB_* overrides), the rest by name.
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {Requirement[]}
 */
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

/** Where Debian keeps administrators' programs, which a user's PATH often leaves out (nft, ip, haproxy). */
const SBIN = ['/usr/local/sbin', '/usr/sbin', '/sbin'];

/**
 * Where a program is: an absolute path if it is an executable file, a name on PATH or in the sbin
 * folders; null when nowhere.
 * @param {string} program
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {string | null}
 */
export function findProgram(program, env = process.env) {
  const candidates = program.includes('/')
    ? [program]
    : [...new Set([...(env.PATH ?? '').split(':').filter(Boolean), ...SBIN])].map((dir) => path.join(dir, program));
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch { /* not here */ }
  }
  return null;
}

/**
 * The requirements whose program is not found.
 * @param {Requirement[]} reqs
 * @param {(program: string) => string | null} which
 */
export function missingRequirements(reqs, which) {
  return reqs.filter((r) => !which(r.program));
}

/** @param {Iterable<string>} names @returns {string[]} each once, in their first order */
function unique(names) {
  return [...new Set(names)];
}

/** apt-get's install arguments, packages aside. */
export const APT_INSTALL = Object.freeze(['install', '-y', '--no-install-recommends']);

/**
 * @typedef {object} Plan
 * @property {'none' | 'install' | 'refuse'} action none: nothing to do; install: run `commands`;
 *   refuse: something is missing and this cannot install it (exit non-zero, print `command`)
 * @property {string[]} missing the programs not found
 * @property {string[]} packages what the commands install (or `command` would): the missing ones' packages, and the browsers when upgrading
 * @property {string[][]} commands argv of each command to run, in order (install only)
 * @property {string} command the one command a person runs instead, with sudo ('' when nothing is missing or to upgrade)
 * @property {boolean} upgrade the browsers were asked to be brought to Debian's current versions
 */

/**
 * What to do about the missing programs.
 * @param {object} o
 * @param {Requirement[]} o.missing
 * @param {boolean} o.upgrade bring the browsers to Debian's current versions as well
 * @param {boolean} o.canInstall running as root with apt-get here
 * @returns {Plan}
 */
export function planInstall({ missing, upgrade, canInstall }) {
  const missingPackages = unique(missing.map((r) => r.pkg));
  const packages = upgrade ? unique([...BROWSER_PACKAGES, ...missingPackages]) : missingPackages;
  const command = packages.length > 0 ? ['sudo', 'apt-get', ...APT_INSTALL, ...packages].join(' ') : '';
  const base = { missing: missing.map((r) => r.program), packages, command, upgrade };
  if (packages.length === 0) return { ...base, action: 'none', commands: [] };
  if (!canInstall) {
    // Not upgrading the browsers is no failure (the run names the versions it tests); a missing program is.
    return missingPackages.length > 0 ? { ...base, action: 'refuse', commands: [] } : { ...base, action: 'none', commands: [] };
  }
  return { ...base, action: 'install', commands: [['apt-get', 'update', '-qq'], ['apt-get', ...APT_INSTALL, '-qq', ...packages]] };
}

/**
 * Whether CI asked for the browsers at Debian's current versions: `--upgrade-browsers`, or `CI`
 * set to true or 1 (as CI services and .ci/run set it).
 * @param {string[]} argv
 * @param {NodeJS.ProcessEnv} env
 */
export function upgradeWanted(argv, env) {
  return argv.includes('--upgrade-browsers') || /^(true|1)$/i.test(env.CI ?? '');
}

/** Every line it prints starts with this. */
const PREFIX = '# system-deps:';

/**
 * @typedef {object} Io
 * @property {(program: string) => string | null} [which] where a program is (findProgram)
 * @property {() => boolean} [isRoot]
 * @property {(argv: string[], env: NodeJS.ProcessEnv) => number} [run] runs a command to its end, its output shown; its exit status
 * @property {(line: string) => void} [out] a line for stdout
 * @property {(line: string) => void} [err] a line for stderr
 * @property {NodeJS.ProcessEnv} [env]
 * @property {string[]} [argv] the command-line arguments (--upgrade-browsers)
 */

/**
 * Checks the programs the tests need and installs what is missing when it can.
 * @param {Io} [io]
 * @returns {number} the exit code: 0 when everything is here (now), 1 otherwise
 */
export function ensureSystemDeps(io = {}) {
  const env = io.env ?? process.env;
  const which = io.which ?? ((/** @type {string} */ p) => findProgram(p, env));
  const isRoot = io.isRoot ?? (() => process.getuid?.() === 0);
  const run = io.run ?? runCommand;
  const out = io.out ?? ((/** @type {string} */ line) => process.stdout.write(`${line}\n`));
  const err = io.err ?? ((/** @type {string} */ line) => process.stderr.write(`${line}\n`));
  const reqs = requirements(env);
  const missing = missingRequirements(reqs, which);
  const root = isRoot();
  const hasApt = Boolean(which('apt-get'));
  const plan = planInstall({ missing, upgrade: upgradeWanted(io.argv ?? [], env), canInstall: root && hasApt });
  const why = !hasApt ? 'apt-get is not here' : 'this is not root';

  if (plan.action === 'refuse') {
    err(`${PREFIX} not installed: ${plan.missing.join(', ')}; ${why}, so install ${plan.missing.length === 1 ? 'it' : 'them'} with:`);
    err(plan.command);
    return 1;
  }
  if (plan.action === 'none') {
    const note = plan.upgrade && plan.packages.length > 0 ? `; browsers not upgraded (${why}: ${plan.command})` : '';
    out(`${PREFIX} the ${reqs.length} programs the tests need are installed${note}`);
    return 0;
  }
  const doing = [
    ...(plan.upgrade ? [`bringing ${BROWSER_PACKAGES.join(' ')} to Debian's current versions`] : []),
    ...(plan.missing.length > 0 ? [`installing ${plan.missing.join(', ')}`] : []),
  ].join(', ');
  out(`${PREFIX} ${doing}: apt-get ${[...APT_INSTALL, ...plan.packages].join(' ')}`);
  const aptEnv = { ...env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const argv of plan.commands) {
    const code = run(argv, aptEnv);
    if (code !== 0) {
      err(`${PREFIX} ${argv.slice(0, 2).join(' ')} failed (exit ${code}); to retry: ${plan.command}`);
      return 1;
    }
  }
  const still = missingRequirements(reqs, which);
  if (still.length > 0) {
    err(`${PREFIX} still not found after installing: ${still.map((r) => `${r.program} (${r.pkg})`).join(', ')}`);
    return 1;
  }
  return 0;
}

/**
 * Runs a command with this process's stdout and stderr; its exit status (1 when it could not start).
 * @param {string[]} argv
 * @param {NodeJS.ProcessEnv} env
 */
function runCommand(argv, env) {
  const r = spawnSync(argv[0], argv.slice(1), { stdio: ['ignore', 'inherit', 'inherit'], env });
  return r.error ? 1 : (r.status ?? 1);
}

const HELP = `usage: node scripts/system-deps.js [--upgrade-browsers]

Checks the system programs the tests need (chromium, firefox-esr, WebKitWebDriver,
Xvfb, nats-server, turnserver, haproxy, nft, ip). As root with apt-get, installs
the missing ones' Debian packages; otherwise, when one is missing, exits 1 and
prints the one command that installs them. npm test runs this first.

  --upgrade-browsers  also bring chromium, firefox-esr and webkit2gtk-driver to
                      Debian's current versions (as root); CI=true does the same
`;

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(HELP);
  } else if (args.some((a) => a !== '--upgrade-browsers')) {
    process.stderr.write(`scripts/system-deps.js: unknown argument ${JSON.stringify(args.find((a) => a !== '--upgrade-browsers'))}\n\n${HELP}`);
    process.exitCode = 2;
  } else {
    process.exitCode = ensureSystemDeps({ argv: args });
  }
}
