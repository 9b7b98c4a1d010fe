// WebKit in the bench fleet: what it is refused (the WebRTC transports, --net),
// how a mixed fleet gets a process of each kind, and the MiniBrowser session's
// capabilities. (Driving WebKit itself is e2e/webkit.spec.js's.)
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { BENCH_BROWSERS, benchLayout, fleetDrivers, fleetProblem } from './bench.js';
import { benchCommand } from '../commands/bench.js';
import { parseLabFlags } from '../shared/flags.js';
import { MINIBROWSER_PATH, webkitCapabilities, webkitMissing } from './webkit.js';

test('webkit runs the relay transports only, alone or mixed; refused for p2p, p2p-reliable, relay-udp and --net', () => {
  assert.ok(BENCH_BROWSERS.includes('webkit'));
  const installed = webkitMissing() === null;
  for (const browsers of [['webkit'], ['chromium', 'firefox', 'webkit']]) {
    assert.equal(fleetProblem(browsers, ['relay', 'relay-faithful']), installed ? null : webkitMissing());
    for (const transport of ['p2p', 'p2p-reliable', 'relay-udp']) {
      const problem = /** @type {string} */ (fleetProblem(browsers, ['relay', transport]));
      assert.match(problem, new RegExp(`^--browsers webkit runs the relay transports only: .*no WebRTC.*cannot run ${transport}\\.`));
    }
  }
  assert.equal(fleetProblem(['chromium', 'firefox'], ['p2p', 'relay-udp']), null);
  assert.match(/** @type {string} */ (fleetProblem(['webkit'], ['relay'], { net: true })), /--net .* drop webkit/);
});

test('carlab bench refuses --browsers webkit with a WebRTC transport before starting anything', () => {
  const parsed = parseLabFlags(['--browsers', 'chromium,webkit', '--transport', 'relay,p2p'], {
    transports: benchCommand.transports, defaults: benchCommand.defaults, extra: benchCommand.extraFlags,
  });
  assert.equal(parsed.kind, 'options');
  const problem = benchCommand.validate?.(/** @type {any} */ (parsed).options);
  assert.match(String(problem), /webkit runs the relay transports only.*cannot run p2p/);
});

test('a mixed fleet gets a process of each kind however few pages it has; one kind stays as it was', () => {
  // 10 peers, one a page: three kinds, three processes, pages in turn
  const mixed = benchLayout({ clients: 10, peersPerPage: 1, pagesPerBrowser: 50, interleave: false, browsers: 3 });
  assert.equal(mixed.browserCount, 3);
  assert.deepEqual(mixed.peersPerBrowser, [4, 3, 3]);
  // never more processes than pages
  assert.equal(benchLayout({ clients: 2, peersPerPage: 1, pagesPerBrowser: 50, interleave: false, browsers: 3 }).browserCount, 2);
  // a single kind (and the default) as before
  assert.equal(benchLayout({ clients: 10, peersPerPage: 1, pagesPerBrowser: 50, interleave: false }).browserCount, 1);
  assert.equal(benchLayout({ clients: 120, peersPerPage: 1, pagesPerBrowser: 50, interleave: false, browsers: 2 }).browserCount, 3);
});

test('the results name how WebKit is driven; the MiniBrowser session gets a camera only when asked', () => {
  assert.match(fleetDrivers(['webkit']).webkitDriver ?? '', /WebKitWebDriver \(selenium-webdriver \d+\.\d+\.\d+\)/);
  assert.equal(fleetDrivers(['chromium']).webkitDriver, undefined);
  const plain = webkitCapabilities();
  assert.equal(plain.browserName, 'MiniBrowser');
  assert.equal(plain['webkitgtk:browserOptions'].binary, MINIBROWSER_PATH);
  assert.deepEqual(plain['webkitgtk:browserOptions'].args, ['--automation']);
  assert.deepEqual(webkitCapabilities({ camera: true })['webkitgtk:browserOptions'].args,
    ['--automation', '--enable-media-stream=true', '--enable-mock-capture-devices=true', '--media-playback-requires-user-gesture=true']);
});
