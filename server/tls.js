/**
 * The HTTPS certificate: a self-signed one made on first start and reused
 * after, or a user-provided pair (`--cert`/`--key`).
 *
 * Phones only grant camera access to secure origins, so the LAN URL must be
 * HTTPS; the certificate names localhost and every LAN IPv4 of this machine.
 *
 * @module server/tls
 */

import { X509Certificate, createPrivateKey } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { generate } from 'selfsigned';

import { listLanAddresses } from './net.js';

/** Project root: the folder holding package.json. */
const PROJECT_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Where generated certificates live; git-ignored through `.carlab/`. */
export const DEFAULT_CERT_DIR = path.join(PROJECT_ROOT, '.carlab', 'certs');

/** Validity of a generated certificate. Apple rejects server certs valid > 398 days. */
const VALIDITY_DAYS = 365;

/** Regenerate a certificate this close to expiry rather than fail mid-session. */
const RENEW_BEFORE_MS = 24 * 60 * 60 * 1000;

/**
 * An error with a stable `code`, in the style of Node's system errors.
 */
export class TlsError extends Error {
  /**
   * @param {'ERR_CARLAB_TLS_PAIR' | 'ERR_CARLAB_TLS_READ' | 'ERR_CARLAB_TLS_INVALID'} code
   * @param {string} message
   * @param {unknown} [cause]
   */
  constructor(code, message, cause) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'TlsError';
    this.code = code;
  }
}

/**
 * @typedef {object} TlsMaterial
 * @property {string} cert PEM certificate
 * @property {string} key PEM private key
 * @property {string} certPath file the certificate was read from or written to
 * @property {string} keyPath file the key was read from or written to
 * @property {'provided' | 'reused' | 'generated'} source where it came from
 */

/**
 * @typedef {object} LoadTlsOptions
 * @property {string} [certPath] user-provided certificate file (needs `keyPath`)
 * @property {string} [keyPath] user-provided private key file (needs `certPath`)
 * @property {string} [certDir] folder for the generated pair; default `.carlab/certs`
 * @property {string[]} [hosts] names and IPs the generated certificate must cover;
 *   default {@link defaultCertificateHosts}
 * @property {Date} [now] clock, for tests
 */

/**
 * Hostnames and IPs a generated certificate covers: loopback plus every LAN IPv4.
 *
 * @returns {string[]}
 */
export function defaultCertificateHosts() {
  return ['localhost', '127.0.0.1', '::1', ...listLanAddresses()];
}

/**
 * Load the user's certificate pair, or reuse / create the self-signed one.
 *
 * A stored self-signed certificate is regenerated when it no longer covers
 * every host (the machine joined another network), is about to expire, or
 * does not match its key (a half-written pair).
 *
 * @param {LoadTlsOptions} [options]
 * @returns {Promise<TlsMaterial>}
 */
export async function loadTlsCertificate(options = {}) {
  const { certPath, keyPath } = options;
  if (certPath || keyPath) {
    if (!certPath || !keyPath) {
      throw new TlsError('ERR_CARLAB_TLS_PAIR', 'a certificate and a key must be given together (--cert and --key)');
    }
    const cert = await readPem(certPath, 'certificate');
    const key = await readPem(keyPath, 'private key');
    assertPairMatches(cert, key, certPath);
    return { cert, key, certPath, keyPath, source: 'provided' };
  }

  const certDir = options.certDir ?? DEFAULT_CERT_DIR;
  const hosts = options.hosts ?? defaultCertificateHosts();
  const now = options.now ?? new Date();
  const storedCertPath = path.join(certDir, 'cert.pem');
  const storedKeyPath = path.join(certDir, 'key.pem');

  const stored = await readStoredPair(storedCertPath, storedKeyPath);
  if (stored && certificateCovers(stored.cert, stored.key, hosts, now)) {
    // Tighten the mode in case the file was copied in with a loose one.
    await chmod(storedKeyPath, 0o600);
    return { ...stored, certPath: storedCertPath, keyPath: storedKeyPath, source: 'reused' };
  }

  const { cert, key } = await generateCertificate(hosts, now);
  await mkdir(certDir, { recursive: true, mode: 0o700 });
  // Key first: a crash between the writes leaves a pair that fails the match
  // check above and is regenerated, never a new cert with a stale key.
  await writeFile(storedKeyPath, key, { mode: 0o600 });
  await chmod(storedKeyPath, 0o600);
  await writeFile(storedCertPath, cert, { mode: 0o644 });
  return { cert, key, certPath: storedCertPath, keyPath: storedKeyPath, source: 'generated' };
}

/**
 * Create a self-signed server certificate for `hosts`.
 *
 * @param {string[]} hosts DNS names and IP literals for subjectAltName
 * @param {Date} [now]
 * @returns {Promise<{ cert: string, key: string }>} PEM strings
 */
export async function generateCertificate(hosts, now = new Date()) {
  const notAfterDate = new Date(now.getTime() + VALIDITY_DAYS * 24 * 60 * 60 * 1000);
  const altNames = [...new Set(hosts)].map((host) =>
    isIP(host) ? { type: /** @type {const} */ (7), ip: host } : { type: /** @type {const} */ (2), value: host },
  );
  const pems = await generate([{ name: 'commonName', value: 'carlab' }], {
    // RSA 2048 + SHA-256: accepted by every phone browser we target.
    keyType: 'rsa',
    keySize: 2048,
    algorithm: 'sha256',
    notBeforeDate: now,
    notAfterDate,
    extensions: [
      { name: 'basicConstraints', cA: false, critical: true },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames },
    ],
  });
  return { cert: pems.cert, key: pems.private };
}

/**
 * Whether a certificate is usable for `hosts` at `now` with `key`.
 *
 * @param {string} certPem
 * @param {string} keyPem
 * @param {string[]} hosts
 * @param {Date} [now]
 * @returns {boolean}
 */
export function certificateCovers(certPem, keyPem, hosts, now = new Date()) {
  let x509;
  try {
    x509 = new X509Certificate(certPem);
    if (!x509.checkPrivateKey(createPrivateKey(keyPem))) return false;
  } catch {
    return false;
  }
  const validFrom = Date.parse(x509.validFrom);
  const validTo = Date.parse(x509.validTo);
  // validFrom has one-second resolution; allow for the rounding.
  if (!(validFrom <= now.getTime() + 1000) || !(validTo - RENEW_BEFORE_MS > now.getTime())) return false;
  return hosts.every((host) =>
    isIP(host) ? x509.checkIP(host) !== undefined : x509.checkHost(host, { subject: 'never' }) !== undefined,
  );
}

/**
 * @param {string} file
 * @param {string} what
 * @returns {Promise<string>}
 */
async function readPem(file, what) {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    const error = /** @type {NodeJS.ErrnoException} */ (err);
    throw new TlsError('ERR_CARLAB_TLS_READ', `cannot read ${what} file ${file}: ${error.code ?? error.message}`, err);
  }
}

/**
 * Reject a provided pair that cannot work, before the server starts.
 * The message names the file but never includes key material.
 *
 * @param {string} certPem
 * @param {string} keyPem
 * @param {string} certPath
 */
function assertPairMatches(certPem, keyPem, certPath) {
  let matches;
  try {
    matches = new X509Certificate(certPem).checkPrivateKey(createPrivateKey(keyPem));
  } catch (err) {
    throw new TlsError('ERR_CARLAB_TLS_INVALID', `the certificate ${certPath} or its key is not valid PEM`, err);
  }
  if (!matches) {
    throw new TlsError('ERR_CARLAB_TLS_INVALID', `the key does not belong to the certificate ${certPath}`);
  }
}

/**
 * @param {string} certPath
 * @param {string} keyPath
 * @returns {Promise<{ cert: string, key: string } | null>} null when either file is missing
 */
async function readStoredPair(certPath, keyPath) {
  try {
    const [cert, key] = await Promise.all([readFile(certPath, 'utf8'), readFile(keyPath, 'utf8')]);
    return { cert, key };
  } catch (err) {
    const error = /** @type {NodeJS.ErrnoException} */ (err);
    if (error.code === 'ENOENT') return null;
    throw new TlsError('ERR_CARLAB_TLS_READ', `cannot read the stored certificate in ${path.dirname(certPath)}: ${error.code ?? error.message}`, err);
  }
}
