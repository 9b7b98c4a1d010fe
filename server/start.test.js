import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';

import { WEB_DIR, buildWebApp, isBuildStale, listHtmlPages } from './start.js';

// start.js imports server.js, which loads the `peer` package; its timers
// keep a process alive, so exit once the tests are done.
after(() => {
  setTimeout(() => process.exit(), 500).unref();
});

const base = mkdtempSync(path.join(tmpdir(), 'carlab-start-'));
after(() => rmSync(base, { recursive: true, force: true }));

/**
 * Set a file's mtime to `seconds` after the epoch.
 *
 * @param {string} file
 * @param {number} seconds
 */
function touch(file, seconds) {
  utimesSync(file, seconds, seconds);
}

/**
 * A fake web/ folder with a page, a source file and a built dist.
 *
 * @param {string} name
 */
function makeWebDir(name) {
  const webDir = path.join(base, name);
  mkdirSync(path.join(webDir, 'src', 'ui'), { recursive: true });
  mkdirSync(path.join(webDir, 'dist'));
  writeFileSync(path.join(webDir, 'index.html'), '<!doctype html>');
  writeFileSync(path.join(webDir, 'vite.config.js'), 'export default {}');
  writeFileSync(path.join(webDir, 'src', 'ui', 'landing.css'), 'body{}');
  writeFileSync(path.join(webDir, 'dist', 'index.html'), 'built');
  for (const file of ['index.html', 'vite.config.js', 'src/ui/landing.css']) touch(path.join(webDir, file), 1000);
  touch(path.join(webDir, 'dist', 'index.html'), 2000);
  return webDir;
}

describe('isBuildStale', () => {
  test('fresh when dist is newer than every source', async () => {
    assert.equal(await isBuildStale({ webDir: makeWebDir('fresh') }), false);
  });

  test('stale when dist is missing', async () => {
    const webDir = makeWebDir('missing');
    rmSync(path.join(webDir, 'dist'), { recursive: true });
    assert.equal(await isBuildStale({ webDir }), true);
  });

  test('stale when dist has no index.html', async () => {
    const webDir = makeWebDir('empty-dist');
    rmSync(path.join(webDir, 'dist', 'index.html'));
    assert.equal(await isBuildStale({ webDir }), true);
  });

  test('stale when a nested source is newer', async () => {
    const webDir = makeWebDir('nested');
    touch(path.join(webDir, 'src', 'ui', 'landing.css'), 3000);
    assert.equal(await isBuildStale({ webDir }), true);
  });

  test('stale when the Vite config is newer', async () => {
    const webDir = makeWebDir('config');
    touch(path.join(webDir, 'vite.config.js'), 3000);
    assert.equal(await isBuildStale({ webDir }), true);
  });

  test('stale when a page is not in dist yet, even with an old mtime', async () => {
    const webDir = makeWebDir('new-page');
    writeFileSync(path.join(webDir, 'ar.html'), '<!doctype html>');
    touch(path.join(webDir, 'ar.html'), 500);
    assert.equal(await isBuildStale({ webDir }), true);
    writeFileSync(path.join(webDir, 'dist', 'ar.html'), 'built');
    touch(path.join(webDir, 'dist', 'ar.html'), 2000);
    assert.equal(await isBuildStale({ webDir }), false);
  });

  test('files inside dist, node_modules and dot-folders do not count', async () => {
    const webDir = makeWebDir('ignored');
    for (const dir of ['dist/assets', 'node_modules/x', '.cache']) {
      mkdirSync(path.join(webDir, dir), { recursive: true });
      const file = path.join(webDir, dir, 'f.js');
      writeFileSync(file, '');
      touch(file, 5000);
    }
    assert.equal(await isBuildStale({ webDir }), false);
  });

  test('an outDir outside web/ is compared too', async () => {
    const webDir = makeWebDir('outside');
    const outDir = path.join(base, 'outside-dist');
    mkdirSync(outDir);
    writeFileSync(path.join(outDir, 'index.html'), 'built');
    touch(path.join(outDir, 'index.html'), 500);
    assert.equal(await isBuildStale({ webDir, outDir }), true);
    touch(path.join(outDir, 'index.html'), 2000);
    assert.equal(await isBuildStale({ webDir, outDir }), false);
  });
});

test('listHtmlPages lists top-level pages only', async () => {
  const webDir = makeWebDir('pages');
  writeFileSync(path.join(webDir, 'marker.html'), '');
  writeFileSync(path.join(webDir, 'src', 'nested.html'), '');
  assert.deepEqual(await listHtmlPages(webDir), ['index.html', 'marker.html']);
});

test('buildWebApp builds the real web app into a given outDir', { timeout: 120_000 }, async () => {
  const outDir = path.join(base, 'real-dist');
  await buildWebApp({ webDir: WEB_DIR, outDir, logLevel: 'silent' });

  for (const page of await listHtmlPages(WEB_DIR)) assert.ok(existsSync(path.join(outDir, page)), `${page} built`);
  const html = readFileSync(path.join(outDir, 'index.html'), 'utf8');
  assert.match(html, /Enter AR/);
  assert.match(html, /action="\/ar\.html"/);
  for (const transport of ['relay', 'relay-faithful', 'p2p', 'p2p-reliable']) {
    assert.match(html, new RegExp(`<option value="${transport}"`));
  }
  // The stylesheet is bundled into a hashed asset the page links to (each page has its own).
  const linked = /href="\/assets\/([^"]+\.css)"/.exec(html);
  assert.ok(linked, 'index.html links a CSS asset');
  assert.ok(readdirSync(path.join(outDir, 'assets')).includes(linked[1]), 'the linked CSS asset exists');
  assert.equal(await isBuildStale({ webDir: WEB_DIR, outDir }), false);
  // The core is bundled, not copied: strings that live only in core/protocol.js (one real build
  // serves both checks; a second vite build cost the suite 8-11 s).
  const js = readdirSync(path.join(outDir, 'assets')).filter((f) => f.endsWith('.js'))
    .map((f) => readFileSync(path.join(outDir, 'assets', f), 'utf8')).join('\n');
  assert.match(js, /frame ends before its message does/, 'core/protocol.js is bundled');
  assert.match(js, /after the end of the message/, 'core/protocol.js is bundled');
});
