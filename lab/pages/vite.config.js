/**
 * Vite build of the lab's own pages (peer.html: simulated peers for the
 * fleets; lab.html: the browsers study) into lab/pages/dist, apart from the
 * phone app so `carlab start` never ships them.
 */

import { fileURLToPath } from 'node:url';

import { pagesConfig } from '../../web/vite.config.js';

export default pagesConfig(fileURLToPath(new URL('.', import.meta.url)));
