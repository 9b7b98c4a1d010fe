// A carlab server of a test's own (`carlab start` in a child process), for
// tests that must kill and restart it: Playwright's shared webServer cannot be
// restarted. It serves the web/dist and lab/pages/dist that the shared webServer built.

import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** A free TCP port on 127.0.0.1. */
export async function freePort() {
  const srv = createServer();
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', () => resolve(undefined)));
  const { port } = /** @type {import('node:net').AddressInfo} */ (srv.address());
  await new Promise((resolve) => srv.close(resolve));
  return port;
}

/**
 * Starts `carlab start --http` on a port and restarts it there on demand.
 * Everything it prints is kept in `output` (tests check that no secret shows).
 * @param {{ port?: number, args?: string[] }} [opts]
 */
export async function ownServer(opts = {}) {
  const port = opts.port ?? await freePort();
  const baseURL = `http://127.0.0.1:${port}`;
  /** @type {import('node:child_process').ChildProcess | null} */
  let child = null;
  let output = '';

  async function start() {
    child = spawn(process.execPath, [path.join(ROOT, 'scripts/carlab.js'), 'lab-server', '--http', '--host', '127.0.0.1',
      '--port', String(port), '--no-qr', '--no-build', ...(opts.args ?? [])], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout?.on('data', (d) => { output += d; });
    child.stderr?.on('data', (d) => { output += d; });
    const end = Date.now() + 30_000;
    for (;;) {
      try {
        const res = await fetch(`${baseURL}/healthz`);
        if (res.ok) return;
      } catch { /* not listening yet */ }
      if (Date.now() > end) throw new Error(`carlab start on ${port} did not come up:\n${output}`);
      if (child.exitCode !== null) throw new Error(`carlab start exited ${child.exitCode}:\n${output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Kills the server process (SIGKILL: a crash, nothing is closed cleanly). */
  async function kill() {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((resolve) => c.once('exit', resolve));
    c.kill('SIGKILL');
    await exited;
  }

  await start();
  return {
    port,
    baseURL,
    start,
    kill,
    get output() { return output; },
    /** Stops it for good (SIGTERM, then SIGKILL after 5 s). */
    async stop() {
      const c = child;
      if (!c || c.exitCode !== null || c.signalCode !== null) return;
      const exited = new Promise((resolve) => c.once('exit', resolve));
      c.kill('SIGTERM');
      const timer = setTimeout(() => c.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}
