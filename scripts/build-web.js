#!/usr/bin/env node
// Builds the phone app (web/dist) and the lab pages (lab/pages/dist) where missing or stale, with
// their precompressed twins (server/precompress.js): once, before any test's server would compress
// the AR bundle again beside the others.
import { fileURLToPath } from 'node:url';

import { LAB_PAGES_DIST, ensureLabPages } from '../lab/pages/build.js';
import { precompressDir } from '../server/precompress.js';

await ensureLabPages({ log: (line) => process.stdout.write(`${line}\n`) });
for (const dir of [fileURLToPath(new URL('../web/dist', import.meta.url)), LAB_PAGES_DIST]) {
  const r = await precompressDir(dir);
  process.stdout.write(`precompressed ${r.files} files in ${dir}\n`);
}
