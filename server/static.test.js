import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import zlib from 'node:zlib';

import { precompressDir } from './precompress.js';

import { contentTypeFor, createStaticHandler, rawPathOf, resolveStaticPath } from './static.js';

const SECRET = 'top-secret-outside-the-root';

/** A temp tree: base/secret.txt beside base/root/{index.html,app.js,...}. */
const base = mkdtempSync(path.join(tmpdir(), 'carlab-static-'));
const root = path.join(base, 'root');
mkdirSync(path.join(root, 'assets'), { recursive: true });
mkdirSync(path.join(root, 'sub'));
writeFileSync(path.join(base, 'secret.txt'), SECRET);
writeFileSync(path.join(root, 'index.html'), '<!doctype html><title>home</title>');
writeFileSync(path.join(root, 'app.js'), 'console.log(1)');
writeFileSync(path.join(root, 'assets', 'index-abc123.css'), 'body{}');
writeFileSync(path.join(root, 'sub', 'index.html'), 'sub index');
writeFileSync(path.join(root, 'model.glb'), 'glb');
writeFileSync(path.join(root, 'file with space.txt'), 'spaced');
symlinkSync(path.join(base, 'secret.txt'), path.join(root, 'link-out.txt'));

/** @type {http.Server} */
let server;
let port = 0;

before(async () => {
  const serve = createStaticHandler({ root });
  server = http.createServer((req, res) => void serve(req, res));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
  port = /** @type {import('node:net').AddressInfo} */ (server.address()).port;
});

after(async () => {
  await new Promise((resolve) => server.close(resolve));
  rmSync(base, { recursive: true, force: true });
});

/**
 * Send a request with the target exactly as given (fetch would normalise it).
 *
 * @param {string} target
 * @param {string} [method]
 * @returns {Promise<{ status: number, headers: http.IncomingHttpHeaders, body: string }>}
 */
function rawRequest(target, method = 'GET') {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: target, method, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => { body += chunk; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('resolveStaticPath', () => {
  test('maps / and folders to index.html', () => {
    assert.deepEqual(resolveStaticPath(root, '/'), { status: 200, file: path.join(root, 'index.html') });
    assert.deepEqual(resolveStaticPath(root, '/sub/'), { status: 200, file: path.join(root, 'sub', 'index.html') });
    assert.deepEqual(resolveStaticPath(root, '/app.js'), { status: 200, file: path.join(root, 'app.js') });
  });

  test('decodes once', () => {
    assert.deepEqual(resolveStaticPath(root, '/file%20with%20space.txt'), { status: 200, file: path.join(root, 'file with space.txt') });
    // %252e decodes to the literal name "%2e", which stays inside the root.
    assert.equal(resolveStaticPath(root, '/%252e%252e/secret.txt').file, path.join(root, '%2e%2e', 'secret.txt'));
  });

  const traversals = [
    '/../secret.txt', '/a/../../secret.txt', '/%2e%2e/secret.txt', '/%2E%2E/secret.txt', '/.%2e/secret.txt',
    '/..%2fsecret.txt', '/%2e%2e%2fsecret.txt', '/..%5csecret.txt', '/..\\secret.txt', '/sub/..%2F..%2Fsecret.txt', '/..',
  ];
  for (const rawPath of traversals) {
    test(`rejects ${rawPath} with 404`, () => assert.deepEqual(resolveStaticPath(root, rawPath), { status: 404, file: null }));
  }

  test('rejects bad escapes, NUL and relative paths with 400', () => {
    assert.equal(resolveStaticPath(root, '/%E0%A4%A').status, 400);
    assert.equal(resolveStaticPath(root, '/%zz').status, 400);
    assert.equal(resolveStaticPath(root, '/index.html%00.js').status, 400);
    assert.equal(resolveStaticPath(root, 'index.html').status, 400);
  });

  test('absolute paths stay under the root', () => {
    for (const rawPath of ['//etc/passwd', '/%2fetc%2fpasswd', `/${base}/secret.txt`, '/etc/passwd']) {
      const resolved = resolveStaticPath(root, rawPath);
      assert.equal(resolved.status, 200, rawPath);
      assert.ok(resolved.file.startsWith(root + path.sep), `${rawPath} -> ${resolved.file}`);
    }
  });
});

test('rawPathOf strips query, fragment and absolute-form prefixes without decoding', () => {
  assert.equal(rawPathOf('/a%2fb?x=1#y'), '/a%2fb');
  assert.equal(rawPathOf('http://host:1/../x?q'), '/../x');
  assert.equal(rawPathOf('http://host'), '/');
});

test('contentTypeFor', () => {
  assert.equal(contentTypeFor('a/index.html'), 'text/html; charset=utf-8');
  assert.equal(contentTypeFor('x.JS'), 'text/javascript; charset=utf-8');
  assert.equal(contentTypeFor('x.css'), 'text/css; charset=utf-8');
  assert.equal(contentTypeFor('x.wasm'), 'application/wasm');
  assert.equal(contentTypeFor('camera_para.dat'), 'application/octet-stream');
  assert.equal(contentTypeFor('noext'), 'application/octet-stream');
});

describe('createStaticHandler over HTTP', () => {
  test('serves index.html for / with its content type', async () => {
    const res = await rawRequest('/');
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-type'], 'text/html; charset=utf-8');
    assert.equal(res.headers['cache-control'], 'no-cache');
    assert.equal(res.body, '<!doctype html><title>home</title>');
  });

  test('serves files with content types; hashed assets are immutable', async () => {
    const js = await rawRequest('/app.js?v=1');
    assert.equal(js.status, 200);
    assert.equal(js.headers['content-type'], 'text/javascript; charset=utf-8');
    assert.equal(js.headers['content-length'], String('console.log(1)'.length));
    const css = await rawRequest('/assets/index-abc123.css');
    assert.equal(css.headers['content-type'], 'text/css; charset=utf-8');
    assert.match(String(css.headers['cache-control']), /immutable/);
    assert.equal((await rawRequest('/model.glb')).headers['content-type'], 'model/gltf-binary');
  });

  test('a folder without a slash serves its index', async () => {
    const res = await rawRequest('/sub');
    assert.equal(res.status, 200);
    assert.equal(res.body, 'sub index');
  });

  test('HEAD sends headers only; other methods get 405', async () => {
    const head = await rawRequest('/', 'HEAD');
    assert.equal(head.status, 200);
    assert.equal(head.body, '');
    const post = await rawRequest('/', 'POST');
    assert.equal(post.status, 405);
    assert.equal(post.headers.allow, 'GET, HEAD');
  });

  test('missing files are 404', async () => {
    assert.equal((await rawRequest('/nope.js')).status, 404);
    assert.equal((await rawRequest('/assets/')).status, 404);
  });

  const attacks = [
    '/../secret.txt', '/%2e%2e/secret.txt', '/%2e%2e%2fsecret.txt', '/..%2fsecret.txt', '/..%2Fsecret.txt',
    '/..%5csecret.txt', '/sub/../../secret.txt', '/sub/%2e%2e/%2e%2e/secret.txt', '/%252e%252e/secret.txt',
    '//../secret.txt', `/${base}/secret.txt`, `/${encodeURIComponent(path.join(base, 'secret.txt'))}`,
    `http://127.0.0.1/../secret.txt`, '/link-out.txt', '/%00', '/%zz',
  ];
  for (const target of attacks) {
    test(`never escapes the root: ${target}`, async () => {
      const res = await rawRequest(target);
      assert.ok(res.status === 400 || res.status === 404, `${target} -> ${res.status}`);
      assert.ok(!res.body.includes(SECRET), `${target} leaked the secret`);
    });
  }
});

describe('compression and caching (precompressed twins through sirv)', () => {
  const big = `${'const carlab = "augmented reality";\n'.repeat(400)}`;
  /** @type {import('./precompress.js').PrecompressResult} */
  let first;
  before(async () => {
    writeFileSync(path.join(root, 'assets', 'bundle-abc123.js'), big);
    writeFileSync(path.join(root, 'page.html'), `<!doctype html>${'<p>carlab</p>'.repeat(200)}`);
    first = await precompressDir(root);
  });

  /**
   * @param {string} target
   * @param {Record<string, string>} headers
   * @returns {Promise<{ status: number, headers: http.IncomingHttpHeaders, body: Buffer }>}
   */
  function get(target, headers) {
    return new Promise((resolve, reject) => {
      http.get({ host: '127.0.0.1', port, path: target, headers, agent: false }, (res) => {
        /** @type {Buffer[]} */
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      }).on('error', reject);
    });
  }

  test('brotli, then gzip, then identity, by Accept-Encoding; hashed assets immutable', async () => {
    assert.ok(first.files >= 2 && first.brBytes < first.bytes);
    const br = await get('/assets/bundle-abc123.js', { 'Accept-Encoding': 'br, gzip' });
    assert.equal(br.headers['content-encoding'], 'br');
    assert.equal(br.headers.vary, 'Accept-Encoding');
    assert.equal(br.headers['content-type'], 'text/javascript; charset=utf-8');
    assert.equal(br.headers['cache-control'], 'public, max-age=31536000, immutable');
    assert.equal(zlib.brotliDecompressSync(br.body).toString(), big);
    assert.ok(br.body.length < big.length / 4);
    const gz = await get('/assets/bundle-abc123.js', { 'Accept-Encoding': 'gzip' });
    assert.equal(gz.headers['content-encoding'], 'gzip');
    assert.equal(zlib.gunzipSync(gz.body).toString(), big);
    const plain = await get('/assets/bundle-abc123.js', {});
    assert.equal(plain.headers['content-encoding'], undefined);
    assert.equal(plain.body.toString(), big);
  });

  test('HTML is compressed too but never cached without revalidation; ETag gives 304', async () => {
    const page = await get('/page.html', { 'Accept-Encoding': 'br' });
    assert.equal(page.headers['content-encoding'], 'br');
    assert.equal(page.headers['cache-control'], 'no-cache');
    const etag = String(page.headers.etag);
    assert.match(etag, /^W\/"/);
    const again = await get('/page.html', { 'Accept-Encoding': 'br', 'If-None-Match': etag });
    assert.equal(again.status, 304);
    assert.equal(again.body.length, 0);
  });

  test('a second run finds the twins current; a changed file gets new ones', async () => {
    const twin = path.join(root, 'page.html.br');
    const before = statSync(twin);
    assert.ok(Math.abs(before.mtimeMs - statSync(path.join(root, 'page.html')).mtimeMs) < 1, 'the twin has its source\'s mtime');
    await new Promise((r) => setTimeout(r, 20)); // a rewrite would move the change time
    await precompressDir(root);
    // not written again: the same change time (the mtime alone would not tell, a rewrite sets it back)
    assert.equal(statSync(twin).ctimeMs, before.ctimeMs);
    writeFileSync(path.join(root, 'page.html'), `<!doctype html>${'<p>changed</p>'.repeat(200)}`);
    await precompressDir(root);
    const page = await get('/page.html', { 'Accept-Encoding': 'br' });
    assert.match(zlib.brotliDecompressSync(page.body).toString(), /changed/);
  });

  test('a twin is never served for a file that is not there, nor outside the root', async () => {
    writeFileSync(path.join(base, 'secret.txt.br'), zlib.brotliCompressSync(SECRET));
    for (const target of ['/../secret.txt', '/%2e%2e/secret.txt', '/link-out.txt', '/ghost.js']) {
      const res = await get(target, { 'Accept-Encoding': 'br' });
      assert.ok(res.status === 400 || res.status === 404, `${target} -> ${res.status}`);
    }
  });
});
