// The client core is provably shared: the Node load generator and the
// browser pages import the same modules, and the built bundle contains them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, readdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { WEB_DIR, buildWebApp } from '../../server/start.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const CORE = ['protocol.js', 'cycle.js', 'metrics.js', 'client.js'].map((f) => path.join(root, 'core', f));

/**
 * Relative static imports of a module, transitively (package imports are skipped).
 * @param {string} entry
 * @param {Set<string>} [seen]
 */
async function importGraph(entry, seen = new Set()) {
  if (seen.has(entry)) return seen;
  seen.add(entry);
  const text = await readFile(entry, 'utf8');
  for (const m of text.matchAll(/^\s*import\s[^'"]*['"](\.[^'"]+)['"]/gm)) {
    await importGraph(path.resolve(path.dirname(entry), m[1]), seen);
  }
  return seen;
}

test('the Node sim client and the browser pages import the same core modules', async () => {
  const node = await importGraph(path.join(root, 'lab/sim/sim-worker.js'));
  const browser = await importGraph(path.join(root, 'lab/pages/src/peer.js'));
  for (const file of CORE) {
    assert.ok(node.has(file), `the Node client imports ${path.relative(root, file)}`);
    assert.ok(browser.has(file), `the browser page imports ${path.relative(root, file)}`);
  }
  // and nothing in the core reaches for the DOM or Node built-ins
  for (const file of CORE) {
    // Code only: a comment may well say "the measured window." in prose.
    const text = (await readFile(file, 'utf8')).replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
    assert.doesNotMatch(text, /from ['"]node:|require\(|document\.|window\./, path.relative(root, file));
  }
});

test('the built browser bundle contains the core (a build check)', async () => {
  const outDir = await mkdtemp(path.join(tmpdir(), 'carlab-build-'));
  try {
    await buildWebApp({ webDir: WEB_DIR, outDir, logLevel: 'silent' });
    const assets = path.join(outDir, 'assets');
    const js = (await Promise.all((await readdir(assets)).filter((f) => f.endsWith('.js'))
      .map((f) => readFile(path.join(assets, f), 'utf8')))).join('\n');
    // strings that live only in the core modules
    assert.match(js, /frame ends before its message does/, 'protocol.js is bundled');
    assert.match(js, /after the end of the message/, 'protocol.js is bundled');
  } finally {
    await rm(outDir, { recursive: true, force: true });
  }
});
