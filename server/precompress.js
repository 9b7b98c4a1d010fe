/**
 * Precompressed twins of the built web app's text files (`x.js.br`,
 * `x.js.gz`), written once at build time so the static handler sends a phone
 * the 2 MB AR bundle as a fraction of that without compressing per request
 * (brotli at its best level takes seconds for that file: fine once, not per
 * phone).
 *
 * Run as a script too: `node server/precompress.js web/dist` (npm run build).
 *
 * @module server/precompress
 */

import { readdir, readFile, stat, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import zlib from 'node:zlib';

const brotli = promisify(zlib.brotliCompress);
const gzip = promisify(zlib.gzip);

/** Extensions worth compressing: text and uncompressed binary formats the app ships. */
export const COMPRESSIBLE = Object.freeze(new Set(['.html', '.js', '.mjs', '.css', '.json', '.svg', '.txt', '.patt', '.dat', '.wasm', '.webmanifest', '.map']));

/** Below this a file goes as it is: the saving is smaller than the response's headers. */
export const MIN_BYTES = 1024;

/**
 * @typedef {object} PrecompressResult
 * @property {number} files files given twins (or whose twins were already current)
 * @property {number} bytes their total size
 * @property {number} brBytes their brotli twins' total size
 * @property {number} gzBytes their gzip twins' total size
 */

/**
 * Writes `.br` and `.gz` beside every compressible file of `root` (recursively)
 * that lacks a current one. A twin is current when its mtime equals the
 * file's (set so here), so a replaced file gets new twins and a second run
 * costs only stats. A twin that would not be smaller is not written.
 *
 * @param {string} root
 * @returns {Promise<PrecompressResult>}
 */
export async function precompressDir(root) {
  /** @type {PrecompressResult} */
  const result = { files: 0, bytes: 0, brBytes: 0, gzBytes: 0 };
  for (const file of await listFiles(root)) {
    if (!COMPRESSIBLE.has(path.extname(file).toLowerCase())) continue;
    const stats = await stat(file);
    if (stats.size < MIN_BYTES) continue;
    const done = await precompressFile(file, stats);
    result.files++;
    result.bytes += stats.size;
    result.brBytes += done.br;
    result.gzBytes += done.gz;
  }
  return result;
}

/**
 * @param {string} file
 * @param {import('node:fs').Stats} stats
 * @returns {Promise<{ br: number, gz: number }>} the twins' sizes (the file's own size where none is worth it)
 */
async function precompressFile(file, stats) {
  /** @type {Buffer | null} */
  let data = null;
  const sizes = { br: stats.size, gz: stats.size };
  for (const [ext, compress] of /** @type {const} */ ([['.br', compressBrotli], ['.gz', compressGzip]])) {
    const twin = `${file}${ext}`;
    const existing = await statOrNull(twin);
    if (existing && isCurrentTwin(existing, stats)) {
      sizes[ext === '.br' ? 'br' : 'gz'] = existing.size;
      continue;
    }
    data ??= await readFile(file);
    const packed = await compress(data);
    if (packed.length >= data.length * 0.95) continue;
    await writeFile(twin, packed);
    // The source's mtime: "current" for the next run, and sirv's weak ETag moves with the source.
    await utimes(twin, stats.atimeMs / 1000, stats.mtimeMs / 1000);
    sizes[ext === '.br' ? 'br' : 'gz'] = packed.length;
  }
  return sizes;
}

/**
 * Whether a twin was made from the source as it is now: utimes gave it the source's mtime, but
 * through a double of seconds, which keeps about a microsecond of the file system's nanoseconds
 * (an exact comparison never matched, and every `carlab start` spent 2.7 s of CPU on brotli again).
 * A changed source is written far more than a millisecond later.
 * @param {import('node:fs').Stats} twin
 * @param {import('node:fs').Stats} source
 */
export function isCurrentTwin(twin, source) {
  return Math.abs(twin.mtimeMs - source.mtimeMs) < 1;
}

/**
 * @param {Buffer} data
 * @returns {Promise<Buffer>}
 */
function compressBrotli(data) {
  return brotli(data, {
    params: {
      [zlib.constants.BROTLI_PARAM_QUALITY]: zlib.constants.BROTLI_MAX_QUALITY,
      [zlib.constants.BROTLI_PARAM_MODE]: zlib.constants.BROTLI_MODE_TEXT,
      [zlib.constants.BROTLI_PARAM_SIZE_HINT]: data.length,
    },
  });
}

/**
 * @param {Buffer} data
 * @returns {Promise<Buffer>}
 */
function compressGzip(data) {
  return gzip(data, { level: zlib.constants.Z_BEST_COMPRESSION });
}

/**
 * Every file under `dir`, recursively (no symlinks followed: a build has none).
 *
 * @param {string} dir
 * @returns {Promise<string[]>}
 */
async function listFiles(dir) {
  /** @type {string[]} */
  const out = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await listFiles(full)));
    else if (entry.isFile()) out.push(full);
  }
  return out;
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

// `node server/precompress.js DIR...`: what `npm run build` runs after Vite.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const dir of process.argv.slice(2)) {
    const r = await precompressDir(dir);
    process.stdout.write(`precompressed ${r.files} files in ${dir}: ${r.bytes} B -> br ${r.brBytes} B, gzip ${r.gzBytes} B\n`);
  }
}
