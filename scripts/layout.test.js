// The layout's rules (docs/architecture.md): imports point one way (web,
// relay, signaling -> core; server -> relay, signaling, core; lab -> all; the
// lab's rooms one way down), nothing product-side imports lab/, e2e/ or a
// devDependency, no circle anywhere — checked by dependency-cruiser with the
// rules in .dependency-cruiser.cjs — and `carlab start` really loads none of
// them (traced at run time).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { cruise } from 'dependency-cruiser';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
const DEV_DEPENDENCIES = new Set(Object.keys(pkg.devDependencies));
/** @type {{ forbidden: import('dependency-cruiser').IForbiddenRuleType[], options: Record<string, unknown> }} */
const RULES = createRequire(import.meta.url)('../.dependency-cruiser.cjs');
/** The folders whose imports are checked. */
const CHECKED = ['core', 'web', 'relay', 'signaling', 'server', 'lab', 'scripts', 'e2e'];

/** @param {string} specifier @returns {string} the package name of a bare specifier */
function packageOf(specifier) {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/**
 * Every broken rule among `folders` under `baseDir`, as "rule: from -> to".
 * @param {string} baseDir
 * @param {string[]} folders
 * @returns {Promise<string[]>}
 */
async function violations(baseDir, folders) {
  const result = await cruise(folders, { ...RULES.options, ruleSet: { forbidden: RULES.forbidden }, validate: true, baseDir, outputType: 'json' });
  const output = typeof result.output === 'string' ? JSON.parse(result.output) : result.output;
  return output.summary.violations.map((/** @type {any} */ v) => `${v.rule.name}: ${v.from} -> ${v.to}${v.cycle ? ` (${v.cycle.map((/** @type {any} */ c) => c.name ?? c).join(' -> ')})` : ''}`);
}

test('dependency-cruiser: no import breaks the layout\'s rules, no circle', { timeout: 120_000 }, async () => {
  assert.deepEqual(await violations(ROOT, CHECKED), []);
});

test('every lab module lives in a room: no file at lab/\'s top level', () => {
  assert.deepEqual(readdirSync(path.join(ROOT, 'lab'), { withFileTypes: true }).filter((e) => e.isFile() && /\.(js|ts)$/.test(e.name)).map((e) => e.name), []);
});

test('the rules catch what they forbid (a scratch tree that breaks each)', { timeout: 60_000 }, async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'carlab-layout-'));
  try {
    /** @type {Record<string, string>} */
    const files = {
      'package.json': JSON.stringify({ name: 'scratch', type: 'module', dependencies: { ws: '*' }, devDependencies: { '@playwright/test': '*' } }),
      'core/a.js': "import 'node:fs';\nimport '../relay/index.js';\n",
      'relay/index.js': "export {};\n",
      'relay/stats.js': "export {};\n",
      'server/s.js': "import '../relay/stats.js';\nimport '../lab/shared/x.js';\nimport '@playwright/test';\nimport 'qrcode';\n",
      'lab/shared/x.js': "import './y.js';\n",
      'lab/shared/y.js': "import './x.js';\n",
      'lab/report/r.js': "import '../sim/sim.js';\n",
      'lab/sim/sim.js': "import '../bench/bench.js';\n",
      'lab/bench/bench.js': "export {};\n",
      'lab/sim/sim.test.js': "import '../bench/bench.js';\n",
    };
    for (const [name, text] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
      writeFileSync(path.join(dir, name), text);
    }
    symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
    const found = await violations(dir, ['core', 'relay', 'server', 'lab']);
    const broke = (/** @type {string} */ rule, /** @type {string} */ from) => found.some((v) => v.startsWith(`${rule}: ${from}`));
    assert.ok(broke('product-core', 'core/a.js'), `core imports relay: ${found.join('; ')}`);
    assert.ok(broke('core-runs-in-browsers', 'core/a.js'), 'a built-in in the core');
    assert.ok(broke('entry-points', 'server/s.js'), 'past an entry point');
    assert.ok(broke('product-server', 'server/s.js'), 'the product imports the lab');
    assert.ok(broke('no-dev-dependency-at-run-time', 'server/s.js'), 'a devDependency');
    assert.ok(broke('not-in-package-json', 'server/s.js'), 'a package that package.json does not list');
    assert.ok(broke('no-circular', 'lab/shared/x.js'), 'a circle');
    assert.ok(broke('lab-report', 'lab/report/r.js'), 'results code imports a runner');
    assert.ok(broke('lab-sim', 'lab/sim/sim.js'), 'a runner imports a room beside it');
    assert.ok(!found.some((v) => v.includes('lab/sim/sim.test.js ->')), 'a test may reach across rooms');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('`carlab start` loads no module from lab/ or e2e/ and no devDependency (traced)', { timeout: 60_000 }, async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'carlab-trace-'));
  const trace = path.join(dir, 'imports.txt');
  const child = spawn(process.execPath, ['--import', path.join(ROOT, 'scripts/import-trace.js'), path.join(ROOT, 'scripts/carlab.js'),
    'start', '--http', '--host', '127.0.0.1', '--port', '0', '--no-qr', '--no-build', '--no-scene-store'], {
    cwd: ROOT, env: { ...process.env, CARLAB_IMPORT_TRACE: trace }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    let out = '';
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`carlab start did not come up: ${out}`)), 45_000);
      child.stdout.on('data', (d) => { out += d; if (out.includes('Press Ctrl+C')) { clearTimeout(timer); resolve(undefined); } });
      child.stderr.on('data', (d) => { out += d; });
      child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`carlab start exited ${code}: ${out}`)); });
    });
    const loaded = readFileSync(trace, 'utf8').trim().split('\n');
    const local = loaded.filter((url) => url.startsWith('file:')).map((url) => path.relative(ROOT, fileURLToPath(url)));
    assert.ok(local.includes(path.join('server', 'server.js')), 'the trace sees the server load');
    const ours = local.filter((file) => !file.startsWith('node_modules'));
    assert.deepEqual(ours.filter((file) => /^(lab|e2e)[/\\]/.test(file)), [], 'no lab or e2e module');
    const packages = new Set(local.filter((file) => file.startsWith('node_modules'))
      .map((file) => packageOf(file.split(path.sep).slice(1).join('/'))));
    assert.deepEqual([...packages].filter((name) => DEV_DEPENDENCIES.has(name)), [], 'no devDependency');
  } finally {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});
