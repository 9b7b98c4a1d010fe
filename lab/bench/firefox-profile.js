// Firefox starts from a warm profile. Playwright gives every Firefox launch a
// new, empty profile directory; filling it (databases, the add-on registry, the
// startup cache) is most of a launch's cost: 4.3 CPU-s and 4.6 s, against
// 2.7 CPU-s and 3.3 s when the directory is first seeded with a copy of a
// profile that Firefox has already run in (3 launches each, side by side).
//
// The warm profile is made once per Firefox and Playwright build
// (ensureWarmFirefoxProfile: one launch through Playwright, then its directory
// without the prefs and session files). Firefox is started through a small
// wrapper (warmFirefoxPath) that copies it into Playwright's new directory
// without overwriting anything Playwright wrote there (user.js: the prefs),
// then execs Firefox. With no warm profile yet, the wrapper execs Firefox as is.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp, rename, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** Files of a used profile that are not copied: what Firefox locks, and prefs and state of that one session. */
export const NOT_COPIED = Object.freeze(['lock', '.parentlock', 'prefs.js', 'user.js', 'times.json',
  'sessionstore.jsonlz4', 'sessionstore-backups', 'sessionCheckpoints.json', 'crashes', 'minidumps']);

/** Written last into a finished warm profile: the wrapper seeds only from one that has it. */
const COMPLETE = '.carlab-warm-profile';

/**
 * Where the warm profile of `firefox` lives: named after the executable (its path,
 * size and change time) and Playwright's version, whose prefs and protocol it ran with.
 * @param {string} firefox the real executable
 * @param {string} [root] default the OS's temporary directory
 * @returns {string | null} null when the executable is not there
 */
export function warmProfileHome(firefox, root = tmpdir()) {
  let stat;
  try { stat = statSync(firefox); } catch { return null; }
  const playwright = createRequire(import.meta.url)('playwright-core/package.json').version;
  const key = createHash('sha256').update(`${firefox}\0${stat.size}\0${stat.mtimeMs}\0${playwright}`).digest('hex').slice(0, 16);
  return path.join(root, `carlab-firefox-${key}`);
}

/** @param {string} s */
const shellQuote = (s) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * The wrapper script: seeds the directory after --profile from `template` when
 * the template is complete, then execs `firefox` (its pid stays Firefox's).
 * @param {string} firefox
 * @param {string} template
 */
export function warmWrapperScript(firefox, template) {
  const t = shellQuote(template);
  return `#!/bin/sh
# carlab: Firefox with Playwright's new profile seeded from a warm one (lab/bench/firefox-profile.js)
if [ -f ${t}/${COMPLETE} ]; then
  prev=
  for arg in "$@"; do
    if [ "$prev" = --profile ] || [ "$prev" = -profile ]; then cp -R -n ${t}/. "$arg"/ 2>/dev/null; break; fi
    prev=$arg
  done
fi
exec ${shellQuote(firefox)} "$@"
`;
}

/**
 * The executable to give Playwright for `firefox`: the wrapper, written on first use.
 * Falls back to `firefox` itself when the wrapper cannot be written (or Firefox is missing).
 * @param {string} firefox the real executable
 * @param {string} [root]
 * @returns {string}
 */
export function warmFirefoxPath(firefox, root) {
  const home = warmProfileHome(firefox, root);
  if (!home) return firefox;
  const wrapper = path.join(home, 'firefox');
  const script = warmWrapperScript(firefox, path.join(home, 'profile'));
  try {
    if (existsSync(wrapper) && readFileSync(wrapper, 'utf8') === script) return wrapper;
    mkdirSync(home, { recursive: true });
    // written aside and renamed: a launch beside us never runs half a script
    const aside = `${wrapper}.${process.pid}.${randomBytes(4).toString('hex')}`;
    writeFileSync(aside, script, { mode: 0o755 });
    renameSync(aside, wrapper);
    return wrapper;
  } catch {
    return firefox;
  }
}

/**
 * Makes the warm profile of `firefox` unless it is there: one headless launch
 * through Playwright with `launchOptions`, a blank page, a clean close, and the
 * directory kept without NOT_COPIED. Callers side by side each make one; the
 * first to finish is kept. Never throws: without a warm profile Firefox starts as before.
 * @param {{ firefox: string, launchOptions: Record<string, unknown>, root?: string, log?: (line: string) => void }} o
 * @returns {Promise<boolean>} whether a warm profile is there now
 */
export async function ensureWarmFirefoxProfile({ firefox, launchOptions, root, log = () => {} }) {
  const home = warmProfileHome(firefox, root);
  if (!home) return false;
  const template = path.join(home, 'profile');
  if (existsSync(path.join(template, COMPLETE))) return true;
  /** @type {string | null} */
  let made = null;
  try {
    mkdirSync(home, { recursive: true });
    made = await mkdtemp(path.join(home, 'making-'));
    const { firefox: type } = await import('playwright-core');
    const context = await type.launchPersistentContext(made, { ...launchOptions, executablePath: firefox, headless: true });
    const page = context.pages()[0] ?? await context.newPage();
    await page.goto('about:blank');
    await context.close();
    const dir = made;
    await Promise.all(NOT_COPIED.map((name) => rm(path.join(dir, name), { recursive: true, force: true })));
    writeFileSync(path.join(made, COMPLETE), `${new Date().toISOString()}\n`);
    await rename(made, template);
    log(`made a warm Firefox profile in ${template}`);
    return true;
  } catch (err) {
    const there = existsSync(path.join(template, COMPLETE));
    if (!there) log(`no warm Firefox profile (${/** @type {Error} */ (err).message.split('\n')[0]}): Firefox starts from an empty one`);
    return there;
  } finally {
    if (made) await rm(made, { recursive: true, force: true });
  }
}
