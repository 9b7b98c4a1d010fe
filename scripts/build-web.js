#!/usr/bin/env node
// Builds the phone app (web/dist) and the lab pages (lab/pages/dist) where
// either is missing or older than its sources: `npm test` does this once before
// any test serves them.
import { ensureLabPages } from '../lab/pages/build.js';

await ensureLabPages({ log: (line) => process.stdout.write(`${line}\n`) });
