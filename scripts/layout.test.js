// The layout's rules (docs/architecture.md), checked: imports point one way
// (web, relay, signaling -> core; server -> relay, signaling, core; lab -> all),
// nothing product-side imports lab/, e2e/ or a devDependency, and `carlab start`
// really loads none of them (traced at run time).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
const DEPENDENCIES = new Set(Object.keys(pkg.dependencies));
const DEV_DEPENDENCIES = new Set(Object.keys(pkg.devDependencies));

/**
 * Which top-level folders each product folder may import from (relative imports).
 * The CLI (scripts/carlab.js) loads lab commands lazily; it is checked at run time below.
 * @type {Record<string, string[]>}
 */
const MAY_IMPORT = {
  core: ['core'],
  web: ['web', 'core'],
  relay: ['relay', 'core'],
  signaling: ['signaling', 'relay', 'core'],
  server: ['server', 'relay', 'signaling', 'core', 'web'],
};

/** Public entry points: another folder may import only these files of a server folder. */
const ENTRY_POINTS = { relay: 'relay/index.js', signaling: 'signaling/index.js' };

/** @param {string} dir @returns {string[]} repository-relative .js files, tests excluded */
function sourcesUnder(dir) {
  /** @type {string[]} */
  const out = [];
  for (const entry of readdirSync(path.join(ROOT, dir), { withFileTypes: true, recursive: true })) {
    const rel = path.relative(ROOT, path.join(entry.parentPath ?? entry.path, entry.name));
    if (!entry.isFile() || !rel.endsWith('.js') || rel.endsWith('.test.js')) continue;
    if (rel.split(path.sep).some((part) => part === 'dist' || part === 'node_modules')) continue;
    out.push(rel.split(path.sep).join('/'));
  }
  return out;
}

/** @param {string} file @returns {string[]} static and dynamic import specifiers */
function specifiersOf(file) {
  // Comments go first: a JSDoc `import('...')` names a type, it loads nothing.
  const text = readFileSync(path.join(ROOT, file), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  return [...text.matchAll(/(?:^\s*import\s[^'"]*?|^\s*export\s[^'"]*?from\s*|import\(\s*)['"]([^'"]+)['"]/gm)].map((m) => m[1]);
}

/** @param {string} specifier @returns {string} the package name of a bare specifier */
function packageOf(specifier) {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/**
 * What breaks the layout's rules among `files`, read as if they lived in `folder`.
 *
 * @param {string} folder
 * @param {string[]} files repository-relative
 * @returns {string[]}
 */
function layoutProblems(folder, files) {
  const allowed = MAY_IMPORT[folder];
  /** @type {string[]} */
  const problems = [];
  for (const file of files) {
    for (const spec of specifiersOf(file)) {
      if (spec.startsWith('.')) {
        const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), spec));
        const top = target.split('/')[0];
        const entry = Object.hasOwn(ENTRY_POINTS, top) ? ENTRY_POINTS[/** @type {keyof typeof ENTRY_POINTS} */ (top)] : null;
        if (!allowed.includes(top)) problems.push(`${file} imports ${target} (${folder}/ may import ${allowed.join(', ')})`);
        else if (top !== folder && entry && target !== entry) problems.push(`${file} reaches into ${target}; use ${entry}`);
      } else if (spec.startsWith('node:') || builtinModules.includes(spec)) {
        if (folder === 'core') problems.push(`${file}: the core runs in browsers too, yet imports ${spec}`);
      } else {
        const name = packageOf(spec);
        if (DEV_DEPENDENCIES.has(name)) problems.push(`${file} imports the devDependency ${name}`);
        else if (!DEPENDENCIES.has(name)) problems.push(`${file} imports ${name}, which package.json does not list`);
        if (folder === 'core') problems.push(`${file}: the core imports no package, yet imports ${name}`);
      }
    }
  }
  return problems;
}

test('product folders import only what the layout allows', () => {
  for (const folder of Object.keys(MAY_IMPORT)) {
    const files = folder === 'web' ? sourcesUnder('web/src') : sourcesUnder(folder);
    assert.ok(files.length > 0, `${folder}/ has sources`);
    assert.deepEqual(layoutProblems(folder, files), [], `${folder}/`);
  }
});

test('the rules catch what they forbid', () => {
  // Lab modules read as if they were product code: each breaks one rule.
  assert.ok(layoutProblems('server', ['lab/commands/bench.js']).some((p) => p.includes('imports lab/pages/build.js')), 'an import of lab/');
  assert.ok(layoutProblems('server', ['lab/baselines.js']).some((p) => p.includes('reaches into relay/stats.js')), 'past an entry point');
  assert.ok(layoutProblems('core', ['lab/sim.js']).some((p) => p.includes('node:child_process')), 'a built-in in the core');
  assert.ok(layoutProblems('server', ['lab/report-html.test.js']).some((p) => p.includes('devDependency @playwright/test')), 'a devDependency');
});

test('the lab needs no devDependency at run time: only tests import test tooling', () => {
  /** @type {string[]} */
  const problems = [];
  for (const file of [...sourcesUnder('lab'), ...sourcesUnder('scripts')]) {
    for (const spec of specifiersOf(file)) {
      if (spec.startsWith('.') || spec.startsWith('node:')) continue;
      if (DEV_DEPENDENCIES.has(packageOf(spec))) problems.push(`${file} imports the devDependency ${packageOf(spec)}`);
    }
  }
  assert.deepEqual(problems, []);
});

test('`carlab start` loads no module from lab/ or e2e/ and no devDependency (traced)', { timeout: 60_000 }, async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'carlab-trace-'));
  const trace = path.join(dir, 'imports.txt');
  const child = spawn(process.execPath, ['--import', path.join(ROOT, 'scripts/import-trace.js'), path.join(ROOT, 'scripts/carlab.js'),
    'start', '--http', '--host', '127.0.0.1', '--port', '0', '--no-qr', '--no-build'], {
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
