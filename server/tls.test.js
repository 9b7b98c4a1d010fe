import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';

import { listLanAddresses } from './net.js';
import { certificateCovers, defaultCertificateHosts, generateCertificate, loadTlsCertificate } from './tls.js';

const base = mkdtempSync(path.join(tmpdir(), 'carlab-tls-'));
after(() => rmSync(base, { recursive: true, force: true }));

describe('loadTlsCertificate: self-signed', () => {
  const certDir = path.join(base, 'certs');
  const hosts = ['localhost', '127.0.0.1'];

  test('generates key.pem (0600) and cert.pem on first use', async () => {
    const material = await loadTlsCertificate({ certDir, hosts });
    assert.equal(material.source, 'generated');
    assert.equal(material.certPath, path.join(certDir, 'cert.pem'));
    assert.equal(material.keyPath, path.join(certDir, 'key.pem'));
    assert.equal(statSync(material.keyPath).mode & 0o777, 0o600);
    assert.equal(readFileSync(material.certPath, 'utf8'), material.cert);
    assert.match(material.key, /^-----BEGIN PRIVATE KEY-----/);

    const x509 = new X509Certificate(material.cert);
    assert.equal(x509.checkHost('localhost'), 'localhost');
    assert.equal(x509.checkIP('127.0.0.1'), '127.0.0.1');
    assert.equal(x509.ca, false);
  });

  test('reuses the stored pair', async () => {
    const first = readFileSync(path.join(certDir, 'cert.pem'), 'utf8');
    const material = await loadTlsCertificate({ certDir, hosts });
    assert.equal(material.source, 'reused');
    assert.equal(material.cert, first);
  });

  test('regenerates when a new address must be covered', async () => {
    const material = await loadTlsCertificate({ certDir, hosts: [...hosts, '10.11.12.13'] });
    assert.equal(material.source, 'generated');
    assert.equal(new X509Certificate(material.cert).checkIP('10.11.12.13'), '10.11.12.13');
  });

  test('regenerates near expiry', async () => {
    const inAYear = new Date(Date.now() + 365 * 24 * 3600 * 1000);
    const material = await loadTlsCertificate({ certDir, hosts, now: inAYear });
    assert.equal(material.source, 'generated');
  });

  test('regenerates when the key does not belong to the certificate', async () => {
    const other = await generateCertificate(hosts);
    writeFileSync(path.join(certDir, 'key.pem'), other.key, { mode: 0o644 });
    const material = await loadTlsCertificate({ certDir, hosts });
    assert.equal(material.source, 'generated');
    assert.equal(statSync(material.keyPath).mode & 0o777, 0o600);
  });

  test('tightens the key mode when reusing', async () => {
    const keyPath = path.join(certDir, 'key.pem');
    const { chmodSync } = await import('node:fs');
    chmodSync(keyPath, 0o644);
    const material = await loadTlsCertificate({ certDir, hosts });
    assert.equal(material.source, 'reused');
    assert.equal(statSync(keyPath).mode & 0o777, 0o600);
  });

  test('the default hosts are loopback plus every LAN IPv4', () => {
    assert.deepEqual(defaultCertificateHosts(), ['localhost', '127.0.0.1', '::1', ...listLanAddresses()]);
  });
});

describe('certificateCovers', () => {
  test('checks names, IPs, validity and the key', async () => {
    const { cert, key } = await generateCertificate(['localhost', '127.0.0.1', '::1']);
    assert.equal(certificateCovers(cert, key, ['localhost', '127.0.0.1', '::1']), true);
    assert.equal(certificateCovers(cert, key, ['example.test']), false);
    assert.equal(certificateCovers(cert, key, ['192.0.2.1']), false);
    assert.equal(certificateCovers(cert, key, ['localhost'], new Date(Date.now() - 86400e3)), false);
    assert.equal(certificateCovers('not a cert', key, ['localhost']), false);
  });
});

describe('loadTlsCertificate: provided pair', () => {
  test('uses --cert/--key as given', async () => {
    const dir = path.join(base, 'provided');
    const { certPath, keyPath, cert } = await loadTlsCertificate({ certDir: dir, hosts: ['localhost'] });
    const material = await loadTlsCertificate({ certPath, keyPath });
    assert.equal(material.source, 'provided');
    assert.equal(material.cert, cert);
  });

  test('needs both files', async () => {
    await assert.rejects(loadTlsCertificate({ certPath: 'c.pem' }), { code: 'ERR_CARLAB_TLS_PAIR' });
    await assert.rejects(loadTlsCertificate({ keyPath: 'k.pem' }), { code: 'ERR_CARLAB_TLS_PAIR' });
  });

  test('reports a missing file by name', async () => {
    await assert.rejects(loadTlsCertificate({ certPath: path.join(base, 'none.pem'), keyPath: path.join(base, 'none.key') }),
      { code: 'ERR_CARLAB_TLS_READ', message: /none\.pem: ENOENT/ });
  });

  test('rejects a key of another certificate without printing it', async () => {
    const a = await loadTlsCertificate({ certDir: path.join(base, 'a'), hosts: ['localhost'] });
    const b = await loadTlsCertificate({ certDir: path.join(base, 'b'), hosts: ['localhost'] });
    await assert.rejects(loadTlsCertificate({ certPath: a.certPath, keyPath: b.keyPath }), (/** @type {any} */ err) => {
      assert.equal(err.code, 'ERR_CARLAB_TLS_INVALID');
      assert.doesNotMatch(err.message, /PRIVATE KEY|BEGIN/);
      return true;
    });
  });
});
