// The environment recorded with every results file.

import os from 'node:os';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** @param {string} name */
function versionOf(name) {
  try {
    return JSON.parse(readFileSync(require.resolve(`${name}/package.json`), 'utf8')).version;
  } catch {
    return null;
  }
}

/**
 * CPU count and model, memory, Node and library versions, the command line.
 * @param {Record<string, any>} [extra] e.g. browser versions, flags, peersPerPage
 */
export function describeEnvironment(extra = {}) {
  const cpus = os.cpus();
  return {
    date: new Date().toISOString(),
    cpus: cpus.length,
    cpuModel: cpus[0]?.model ?? null,
    memoryBytes: os.totalmem(),
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    carlab: JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version,
    libraries: Object.fromEntries(['ws', 'peer', 'peerjs', '@playwright/test'].map((n) => [n, versionOf(n)])),
    argv: process.argv.slice(2),
    ...extra,
  };
}
