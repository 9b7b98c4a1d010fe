#!/usr/bin/env node
// Builds the phone app (web/dist) and the lab pages (lab/pages/dist) where
// either is missing or older than its sources, and writes their precompressed
// twins (server/precompress.js): `npm test` does this once before any test
// serves them, so the servers its tests start find the twins current instead
// of each compressing the AR bundle again, side by side.
import { fileURLToPath } from 'node:url';

import { LAB_PAGES_DIST, ensureLabPages } from '../lab/pages/build.js';
import { precompressDir } from '../server/precompress.js';

await ensureLabPages({ log: (line) => process.stdout.write(`${line}\n`) });
for (const dir of [fileURLToPath(new URL('../web/dist', import.meta.url)), LAB_PAGES_DIST]) {
  const r = await precompressDir(dir);
  process.stdout.write(`precompressed ${r.files} files in ${dir}\n`);
}
