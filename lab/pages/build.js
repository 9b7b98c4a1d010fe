/**
 * The lab's pages (peer.html, lab.html) are built apart from the phone app,
 * into lab/pages/dist, and served only by the lab's servers (`carlab
 * lab-server`, the fleets' server child) as a second web root.
 *
 * @module lab/pages/build
 */

import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { WEB_DIR, buildWebApp, isBuildStale } from '../../server/start.js';

/** The lab pages' sources. */
export const LAB_PAGES_DIR = fileURLToPath(new URL('.', import.meta.url));

/** Where they are built. */
export const LAB_PAGES_DIST = path.join(LAB_PAGES_DIR, 'dist');

/** What the lab pages import from: their build is stale when these change too. */
const LAB_PAGE_SOURCES = [path.join(WEB_DIR, 'src'), fileURLToPath(new URL('../../core/', import.meta.url))];

/**
 * Build web/dist and lab/pages/dist where either is missing or older than
 * its sources; a fleet needs both.
 *
 * @param {{ log: (line: string) => void }} io `log` gets one line per build started
 * @returns {Promise<void>}
 */
export async function ensureLabPages({ log }) {
  if (await isBuildStale({ webDir: WEB_DIR })) {
    log('building the web app (web/dist)...');
    await buildWebApp({ webDir: WEB_DIR });
  }
  if (await isBuildStale({ webDir: LAB_PAGES_DIR, sourceDirs: LAB_PAGE_SOURCES })) {
    log('building the lab pages (lab/pages/dist)...');
    await buildWebApp({ webDir: LAB_PAGES_DIR });
  }
}
