// The import rules of the layout (docs/architecture.md, "Layout"), checked by
// dependency-cruiser in `npm test` (scripts/layout.test.js). Product folders
// import one way (web, relay, signaling -> core; server -> relay, signaling,
// core, web); nothing product-side imports the lab, the tests or a
// devDependency; the lab's rooms import one way down (commands -> runners ->
// target, net, pages -> report -> shared); no circle anywhere.
// Tests (*.test.js) may reach across rooms: they check what the code does.

// Test files and the test rigs they share (*-harness.js) may reach across.
const NOT_TEST = '(\\.test\\.js|-harness\\.js)$';

/**
 * A lab room may import only itself and the rooms below it.
 * @param {string} room
 * @param {string[]} below
 * @param {string} why
 */
function room(room, below, why) {
  return {
    name: `lab-${room}`,
    comment: why,
    severity: 'error',
    from: { path: `^lab/${room}/`, pathNot: NOT_TEST },
    to: { path: '^lab/', pathNot: `^lab/(${[room, ...below].join('|')})/` },
  };
}

/**
 * A product folder may import only itself and the folders it builds on.
 * @param {string} folder
 * @param {string[]} may
 */
function product(folder, may) {
  return {
    name: `product-${folder}`,
    comment: `${folder}/ may import ${[folder, ...may].join(', ')}`,
    severity: 'error',
    from: { path: `^${folder}/`, pathNot: NOT_TEST },
    to: { dependencyTypes: ['local'], pathNot: `^(${[folder, ...may].join('|')})/` },
  };
}

module.exports = {
  forbidden: [
    { name: 'no-circular', comment: 'imports point one way: no module reaches itself again', severity: 'error', from: {}, to: { circular: true } },
    { name: 'not-in-package-json', comment: 'every package imported is listed in package.json', severity: 'error', from: {}, to: { dependencyTypes: ['npm-no-pkg', 'npm-unknown'] } },
    { name: 'unresolvable', comment: 'every import resolves to a file', severity: 'error', from: {}, to: { couldNotResolve: true } },
    product('core', []),
    product('web', ['core']),
    product('relay', ['core']),
    product('signaling', ['relay', 'core']),
    product('server', ['relay', 'signaling', 'core', 'web']),
    {
      name: 'floor-apart-from-relay',
      comment: 'the relay\'s floor (lab/target/floor-batched.js) measures what the relay adds: nothing of relay/ in it',
      severity: 'error',
      from: { path: '^lab/target/floor-batched\\.js$' },
      to: { path: '^relay/' },
    },
    {
      name: 'core-runs-in-browsers',
      comment: 'the client core runs in browsers too: no Node built-in, no package',
      severity: 'error',
      from: { path: '^core/', pathNot: NOT_TEST },
      to: { dependencyTypes: ['core', 'npm', 'npm-dev'] },
    },
    {
      name: 'entry-points',
      comment: 'another product folder imports only relay/index.js and signaling/index.js of the server folders',
      severity: 'error',
      from: { path: '^(server|web|core)/', pathNot: NOT_TEST },
      to: { path: '^(relay|signaling)/', pathNot: '^(relay/index\\.js|signaling/index\\.js)$' },
    },
    {
      name: 'entry-points-from-signaling',
      comment: 'signaling/ imports only relay/index.js of the relay',
      severity: 'error',
      from: { path: '^signaling/', pathNot: NOT_TEST },
      to: { path: '^relay/', pathNot: '^relay/index\\.js$' },
    },
    {
      name: 'no-dev-dependency-at-run-time',
      comment: 'the product, the lab and the scripts run without devDependencies: only tests import test tooling',
      severity: 'error',
      from: { path: '^(core|web/src|relay|signaling|server|lab|scripts)/', pathNot: `${NOT_TEST}|^lab/pages/vite\\.config\\.js$|^web/vite\\.config\\.js$` },
      to: { dependencyTypes: ['npm-dev'] },
    },
    room('shared', [], 'the floor: flags, environment, progress, process trees, timing helpers'),
    room('report', ['shared'], 'results code (aggregation, schema, tables, HTML, recordings) never imports a runner'),
    room('net', ['shared'], 'network namespaces and profiles: below every runner'),
    room('pages', ['shared'], 'the lab\'s peer pages and their build'),
    room('target', ['net', 'pages', 'report', 'shared'], 'the server under test: one process, a relay cluster, carlab start --cluster, HAProxy'),
    room('sim', ['target', 'net', 'report', 'shared'], 'Node clients'),
    room('bench', ['target', 'net', 'pages', 'report', 'shared'], 'browsers as peers: DevTools driver, launch, WebKit, page host'),
    room('browsers', ['bench', 'target', 'net', 'pages', 'report', 'shared'], 'the browser experiments of `carlab browsers`, built on the bench'),
    room('fleet', ['bench', 'target', 'net', 'pages', 'report', 'shared'], 'browsers over machines: agents and the bench that leads them'),
    room('fuzz', ['target', 'net', 'report', 'shared'], 'fuzz and attack scenarios against a real server'),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(dist|test-results)/' },
    moduleSystems: ['es6', 'cjs'],
    // packages resolve through their "exports" as Node does (node-datachannel/polyfill, vite)
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'], mainFields: ['module', 'main'] },
  },
};
