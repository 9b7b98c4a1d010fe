// Before any browser test: Firefox's warm profile, made once per Firefox and
// Playwright build (lab/bench/firefox-profile.js), so that every Firefox launch
// of the run starts from it (1.6 CPU-s and 1.3 s less each).
import { ensureWarmFirefox } from '../lab/bench/launch.js';

export default async function globalSetup() {
  await ensureWarmFirefox((line) => console.log(line));
}
