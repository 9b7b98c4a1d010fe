// The environment recorded with every results file.

import os from 'node:os';
import { readFileSync } from 'node:fs';

/** @param {string} name an installed package (read directly: some block `pkg/package.json` in their exports) */
function versionOf(name) {
  try {
    return JSON.parse(readFileSync(new URL(`../../node_modules/${name}/package.json`, import.meta.url), 'utf8')).version;
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
    libraries: Object.fromEntries(['ws', 'peer', 'peerjs', 'playwright-core', 'node-datachannel', 'socket.io', 'three', '@ar-js-org/ar.js'].map((n) => [n, versionOf(n)])),
    argv: process.argv.slice(2),
    ...extra,
  };
}
