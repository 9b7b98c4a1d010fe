/**
 * `carlab lab-server`: `carlab start` plus the lab's own pages (peer.html,
 * lab.html) as a second web root, for the browser tests and for fleets
 * pointed at a server of their own (`carlab bench --url`). Same flags as
 * `carlab start`; the lab pages are built first unless `--no-build`.
 *
 * @module lab/commands/lab-server
 */

import { run as runStart } from '../../server/start.js';
import { LAB_PAGES_DIST, ensureLabPages } from '../pages/build.js';

/**
 * @param {string[]} argv the flags of `carlab start`
 * @param {import('../../scripts/carlab.js').CommandIo} [io]
 * @returns {Promise<number>} exit code
 */
export async function run(argv, io = {}) {
  const stderr = io.stderr ?? process.stderr;
  const wantsHelp = argv.includes('--help') || argv.includes('-h');
  if (wantsHelp) (io.stdout ?? process.stdout).write('carlab lab-server: `carlab start` that also serves the lab pages (peer.html, lab.html).\n\n');
  if (!wantsHelp && !argv.includes('--no-build')) {
    await ensureLabPages({ log: (line) => stderr.write(`carlab lab-server: ${line}\n`) });
  }
  return runStart(argv, io, { extraWebRoots: [LAB_PAGES_DIST], workerCommand: 'lab-server' });
}
