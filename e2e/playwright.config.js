import { availableParallelism } from 'node:os';
import { defineConfig } from '@playwright/test';
import { chromiumLaunchOptions, firefoxLaunchOptions } from '../lab/bench/launch.js';

const port = Number(process.env.CARLAB_E2E_PORT ?? 8199);

const chromium = { browserName: /** @type {const} */ ('chromium'), launchOptions: chromiumLaunchOptions() };
const firefox = { browserName: /** @type {const} */ ('firefox'), channel: 'moz-firefox', launchOptions: firefoxLaunchOptions() };

export default defineConfig({
  testDir: '.',
  testMatch: '*.spec.js',
  timeout: 120_000,
  // Tests side by side, two per core: they wait on networks, ICE and timers more than they compute
  // (2 cores: 177 s; one file per worker, two workers: 288 s). No test here holds a real-time bound
  // (those are the benchmark gates, lab/gates/gates.js), so load makes them slower, never wrong.
  workers: 2 * availableParallelism(),
  fullyParallel: true,
  reporter: [['list']],
  outputDir: '../test-results',
  globalSetup: './global-setup.js',
  use: { baseURL: `http://127.0.0.1:${port}` },
  webServer: {
    command: `node scripts/carlab.js lab-server --http --host 127.0.0.1 --port ${port} --no-qr`,
    cwd: '..',
    url: `http://127.0.0.1:${port}/healthz`,
    timeout: 180_000,
    reuseExistingServer: false,
    stdout: 'pipe',
  },
  projects: [
    // Safari's engine: WebKitGTK driven over WebDriver (lab/bench/webkit.js); Chromium is the phone beside it.
    { name: 'webkit', use: chromium, testMatch: 'webkit.spec.js', workers: 1 },
    // Firefox runs the tests tagged @firefox (each with a Chromium peer where it needs one).
    { name: 'firefox', use: firefox, grep: /@firefox/, testIgnore: 'webkit.spec.js' },
    { name: 'chromium', use: chromium, testIgnore: 'webkit.spec.js' },
  ],
});
