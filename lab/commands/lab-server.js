/**
 * `carlab lab-server`: `carlab start` plus the lab's own pages (peer.html,
 * lab.html) as a second web root, for the browser tests and for fleets
 * pointed at a server of their own (`carlab bench --url`). Same flags as
 * `carlab start`; the lab pages are built first unless `--no-build`; no scene is
 * kept unless `--scene-store DIR` says where.
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
  return runStart(withSceneStoreOff(argv), io, { extraWebRoots: [LAB_PAGES_DIST], workerCommand: 'lab-server' });
}

/**
 * The lab's runs and browser tests start from empty groups: a lab server keeps no scene unless
 * told where (`--scene-store DIR`; `carlab start` keeps them by default, docs/operations.md).
 * @param {string[]} argv @param {NodeJS.ProcessEnv} [env] CARLAB_SCENE_STORE counts as telling
 */
export function withSceneStoreOff(argv, env = process.env) {
  const told = argv.some((a) => a === '--scene-store' || a.startsWith('--scene-store=') || a === '--no-scene-store' || a === '--help' || a === '-h');
  return told || env.CARLAB_SCENE_STORE || env.CARLAB_NO_SCENE_STORE ? argv : [...argv, '--no-scene-store'];
}
