// The client core is provably shared: the Node load generator and the
// browser pages import the same modules (that the built bundle contains them
// is checked beside the one real build, in server/start.test.js).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

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
