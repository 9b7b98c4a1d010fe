/**
 * The web build: where the phone app's sources are, whether a pages folder's
 * dist is stale, and the Vite build that makes it (with the .br/.gz twins the
 * static handler serves). Apart from server/start.js so that the lab (its
 * agents and page hosts) can build and serve pages without loading the server.
 *
 * @module server/build
 */

import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { precompressDir } from './precompress.js';

/** The web app's source folder (Vite root). */
export const WEB_DIR = fileURLToPath(new URL('../web/', import.meta.url));

/** Folders under web/ that never feed the build. */
const NOT_SOURCES = new Set(['dist', 'node_modules']);

/**
 * Whether a pages folder's dist must be (re)built: it lacks one of the
 * top-level pages, or any file under the folder (outside dist) or under one of
 * `sourceDirs` is newer than the oldest built page.
 *
 * @param {{ webDir: string, outDir?: string, sourceDirs?: string[] }} dirs `sourceDirs`: more
 *   folders the pages import from (the lab's pages import web/src and core/)
 * @returns {Promise<boolean>}
 */
export async function isBuildStale({ webDir, outDir = path.join(webDir, 'dist'), sourceDirs = [] }) {
  const pages = await listHtmlPages(webDir);
  if (pages.length === 0) return false;
  let builtAt = Infinity;
  for (const page of pages) {
    const built = await statOrNull(path.join(outDir, page));
    if (!built) return true;
    builtAt = Math.min(builtAt, built.mtimeMs);
  }
  let newestSource = await newestMtimeMs(webDir, path.resolve(outDir));
  for (const dir of sourceDirs) newestSource = Math.max(newestSource, await newestMtimeMs(dir, path.resolve(outDir)));
  return newestSource > builtAt;
}

/**
 * Top-level HTML pages of the web app: each is one Vite entry.
 *
 * @param {string} webDir
 * @returns {Promise<string[]>} file names such as `['ar.html', 'index.html']`
 */
export async function listHtmlPages(webDir) {
  const entries = await readdir(webDir, { withFileTypes: true });
  return entries.filter((entry) => entry.isFile() && entry.name.endsWith('.html')).map((entry) => entry.name).sort();
}

/**
 * Build a pages folder with Vite using its own vite.config.js (web/ or lab/pages/),
 * then write the .br/.gz twins the static handler serves (server/precompress.js).
 *
 * @param {{ webDir: string, outDir?: string, logLevel?: 'info' | 'warn' | 'error' | 'silent', precompress?: boolean }} options
 * @returns {Promise<void>}
 */
export async function buildWebApp({ webDir, outDir = path.join(webDir, 'dist'), logLevel = 'warn', precompress = true }) {
  // Loaded lazily: Vite is large and not needed when dist is fresh.
  const { build } = await import('vite');
  await build({
    configFile: path.join(webDir, 'vite.config.js'),
    root: webDir,
    logLevel,
    build: { outDir, emptyOutDir: true },
  });
  if (precompress) await precompressDir(outDir);
}

/**
 * Latest modification time of any file under `dir`, skipping `skipDir`,
 * dist, node_modules and dot-folders.
 *
 * @param {string} dir
 * @param {string} skipDir absolute path
 * @returns {Promise<number>} epoch ms, 0 for an empty tree
 */
async function newestMtimeMs(dir, skipDir) {
  let newest = 0;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (full === skipDir || NOT_SOURCES.has(entry.name) || entry.name.startsWith('.')) continue;
      newest = Math.max(newest, await newestMtimeMs(full, skipDir));
    } else if (entry.isFile()) {
      const stats = await statOrNull(full);
      if (stats) newest = Math.max(newest, stats.mtimeMs);
    }
  }
  return newest;
}

/**
 * @param {string} file
 * @returns {Promise<import('node:fs').Stats | null>}
 */
async function statOrNull(file) {
  try {
    return await stat(file);
  } catch {
    return null;
  }
}
