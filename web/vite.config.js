/**
 * Vite build of a folder of pages: every top-level *.html is an entry, built
 * into DIR/dist. The phone app (web/) uses it as is; the lab's pages
 * (lab/pages/vite.config.js) reuse {@link pagesConfig} for their own folder.
 */

import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { defineConfig } from 'vite';

/**
 * Vite entries keyed by page name, e.g. `{ index: '/abs/web/index.html' }`.
 *
 * @param {string} dir
 * @returns {Record<string, string>}
 */
function htmlEntries(dir) {
  return Object.fromEntries(
    readdirSync(dir, { withFileTypes: true })
      .filter((entry) => entry.isFile() && entry.name.endsWith('.html'))
      .map((entry) => [path.basename(entry.name, '.html'), path.join(dir, entry.name)]),
  );
}

/**
 * The build of every page in `dir` into `dir/dist`.
 *
 * @param {string} dir absolute folder holding the pages
 */
export function pagesConfig(dir) {
  return defineConfig({
    root: dir,
    base: '/',
    // Plain ES2022 matches the phones we target (WebRTC + WebXR-era browsers).
    build: {
      outDir: path.join(dir, 'dist'),
      emptyOutDir: true,
      target: 'es2022',
      rolldownOptions: { input: htmlEntries(dir) },
    },
  });
}

export default pagesConfig(fileURLToPath(new URL('.', import.meta.url)));
