import { defineConfig } from '@playwright/test';
import { chromiumLaunchOptions, firefoxLaunchOptions } from '../lab/launch.js';

const port = Number(process.env.CARLAB_E2E_PORT ?? 8199);

export default defineConfig({
  testDir: '.',
  testMatch: '*.spec.js',
  timeout: 120_000,
  workers: 1, // two cores: browsers in parallel would spoil each other's timing
  reporter: [['list']],
  outputDir: '../test-results',
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
    { name: 'chromium', use: { browserName: 'chromium', launchOptions: chromiumLaunchOptions() }, testIgnore: 'webkit.spec.js' },
    {
      name: 'firefox',
      use: { browserName: 'firefox', channel: 'moz-firefox', launchOptions: firefoxLaunchOptions() },
      grep: /@firefox/,
      testIgnore: 'webkit.spec.js',
    },
    {
      // Safari's engine: WebKitGTK driven over WebDriver (lab/webkit.js); Chromium is the phone beside it.
      name: 'webkit',
      use: { browserName: 'chromium', launchOptions: chromiumLaunchOptions() },
      testMatch: 'webkit.spec.js',
    },
  ],
});
