import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { NOT_COPIED, ensureWarmFirefoxProfile, warmFirefoxPath, warmProfileHome } from './firefox-profile.js';
import { FIREFOX_PATH, firefoxLaunchOptions } from './launch.js';

const root = mkdtempSync(path.join(tmpdir(), 'carlab-ffprofile-test-'));
test.after(() => rmSync(root, { recursive: true, force: true }));

/** A stand-in Firefox: prints its arguments and what its profile directory holds. */
function fakeFirefox() {
  const exe = path.join(mkdtempSync(path.join(root, 'bin-')), 'firefox');
  writeFileSync(exe, '#!/bin/sh\necho "args: $*"\nfor a in "$@"; do [ "$prev" = --profile ] && ls -A "$a"; prev=$a; done\n', { mode: 0o755 });
  return exe;
}

/** @param {string} wrapper @param {string} profile */
const runWrapper = (wrapper, profile) => spawnSync(wrapper, ['--remote-debugging-port=0', '--headless', '--profile', profile], { encoding: 'utf8' });

test('the wrapper execs Firefox with its arguments as they were while there is no warm profile', () => {
  const firefox = fakeFirefox();
  const wrapper = warmFirefoxPath(firefox, root);
  assert.notEqual(wrapper, firefox);
  assert.equal(warmFirefoxPath(firefox, root), wrapper, 'written once, then reused');
  const profile = mkdtempSync(path.join(root, 'new-'));
  writeFileSync(path.join(profile, 'user.js'), 'playwright');
  const out = runWrapper(wrapper, profile);
  assert.equal(out.status, 0, out.stderr);
  assert.equal(out.stdout, `args: --remote-debugging-port=0 --headless --profile ${profile}\nuser.js\n`);
});

test('with a complete warm profile the wrapper copies it in, keeping what Playwright wrote', () => {
  const firefox = fakeFirefox();
  const wrapper = warmFirefoxPath(firefox, root);
  const template = path.join(/** @type {string} */ (warmProfileHome(firefox, root)), 'profile');
  mkdirSync(path.join(template, 'startupCache'), { recursive: true });
  writeFileSync(path.join(template, 'startupCache', 'startupCache.8.little'), 'warm');
  writeFileSync(path.join(template, 'user.js'), 'old prefs');
  const profile = mkdtempSync(path.join(root, 'new-'));
  writeFileSync(path.join(profile, 'user.js'), 'playwright');
  assert.doesNotMatch(runWrapper(wrapper, profile).stdout, /startupCache/, 'not seeded from an unfinished one');
  writeFileSync(path.join(template, '.carlab-warm-profile'), 'done');
  const out = runWrapper(wrapper, profile);
  assert.equal(out.status, 0, out.stderr);
  assert.match(out.stdout, /startupCache/);
  assert.equal(readFileSync(path.join(profile, 'startupCache', 'startupCache.8.little'), 'utf8'), 'warm');
  assert.equal(readFileSync(path.join(profile, 'user.js'), 'utf8'), 'playwright');
});

test('the warm profile is per Firefox build; none for a missing Firefox, which is then used as given', () => {
  const firefox = fakeFirefox();
  const before = warmProfileHome(firefox, root);
  utimesSync(firefox, new Date(), new Date(Date.now() + 60_000));
  assert.notEqual(warmProfileHome(firefox, root), before, 'a new build gets a new one');
  const missing = path.join(root, 'no-such-firefox');
  assert.equal(warmProfileHome(missing, root), null);
  assert.equal(warmFirefoxPath(missing, root), missing);
});

test('where no warm profile can be made, Firefox is used as given and nothing throws', async () => {
  const firefox = fakeFirefox();
  const notADirectory = path.join(root, 'a-file');
  writeFileSync(notADirectory, '');
  const lines = /** @type {string[]} */ ([]);
  assert.equal(warmFirefoxPath(firefox, notADirectory), firefox);
  assert.equal(await ensureWarmFirefoxProfile({ firefox, launchOptions: {}, root: notADirectory, log: (l) => lines.push(l) }), false);
  assert.match(lines.join('\n'), /no warm Firefox profile \(.*\): Firefox starts from an empty one/);
});

test('ensureWarmFirefoxProfile: one real launch leaves a profile without its prefs and session; the next call reuses it', { skip: !existsSync(FIREFOX_PATH) && 'no Firefox', timeout: 90_000 }, async () => {
  const lines = /** @type {string[]} */ ([]);
  const options = { firefox: FIREFOX_PATH, launchOptions: firefoxLaunchOptions(), root, log: (/** @type {string} */ l) => lines.push(l) };
  assert.equal(await ensureWarmFirefoxProfile(options), true, lines.join('\n'));
  const home = /** @type {string} */ (warmProfileHome(FIREFOX_PATH, root));
  const files = readdirSync(path.join(home, 'profile'));
  for (const kept of ['startupCache', 'compatibility.ini', 'extensions.json', '.carlab-warm-profile']) assert.ok(files.includes(kept), `${kept} in ${files}`);
  for (const name of NOT_COPIED) assert.ok(!files.includes(name), `${name} left out`);
  assert.deepEqual(readdirSync(home).filter((f) => f.startsWith('making-')), [], 'nothing half-made left');
  assert.equal(await ensureWarmFirefoxProfile(options), true);
  assert.equal(lines.length, 1, lines.join('\n'));
});
