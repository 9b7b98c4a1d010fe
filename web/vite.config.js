/**
 * Vite build of the phone app: every top-level web/*.html is a page
 * (index.html now; ar.html and marker.html when they exist), built into
 * web/dist and served by `carlab start`.
 */

import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { defineConfig } from 'vite';

const webDir = fileURLToPath(new URL('.', import.meta.url));

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

export default defineConfig({
  root: webDir,
  base: '/',
  // Plain ES2022 matches the phones we target (WebRTC + WebXR-era browsers).
  build: {
    outDir: path.join(webDir, 'dist'),
    emptyOutDir: true,
    target: 'es2022',
    rolldownOptions: { input: htmlEntries(webDir) },
  },
});
