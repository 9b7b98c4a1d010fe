// The server under test in a process of its own (lab/target/server-child.js),
// started and asked over IPC by every runner: its CPU is measured apart from
// the load generator's, and a run can kill it, restart it and count its faults.
import { fork } from 'node:child_process';
import { forkInNamespace } from '../net/network.js';

const SERVER_CHILD = new URL('./server-child.js', import.meta.url);

/**
 * The system under test in its own process.
 * @param {Record<string, any>} [serverOptions] createCarlabServer options
 * @param {{ execArgv?: string[], stderr?: 'inherit' | 'ignore', netns?: string }} [childOptions] e.g. ['--expose-gc']
 *   for heap measurements (`heap()`); stderr 'ignore' for runs that kill it on purpose;
 *   netns: run it in this network namespace (--net; give serverOptions.host an address there)
 */
export async function startServerChild(serverOptions = {}, childOptions = {}) {
  const child = fork(SERVER_CHILD, [JSON.stringify(serverOptions)], {
    stdio: ['ignore', 'ignore', childOptions.stderr ?? 'inherit', 'ipc'],
    ...(childOptions.netns
      ? forkInNamespace(childOptions.netns, childOptions.execArgv)
      : { execArgv: [...process.execArgv, ...(childOptions.execArgv ?? [])] }),
  });
  let nextId = 1;
  /** @type {Map<number, (m: any) => void>} */
  const waiting = new Map();
  /** Unhandled rejections and uncaught exceptions the server reported. @type {{ kind: string, message: string }[]} */
  const faults = [];
  /** @type {{ code: number | null, signal: string | null } | null} */
  let exit = null;
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => {
    exit = { code, signal };
    for (const reply of waiting.values()) reply({ error: 'server exited' });
    waiting.clear();
    resolve(exit);
  }));
  const ready = new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`server exited with code ${code} before it was ready`)));
    child.on('message', (/** @type {any} */ m) => {
      if (m.type === 'ready') resolve(m);
      else if (m.type === 'fault') faults.push({ kind: m.kind, message: m.message });
      else if (waiting.has(m.id)) { waiting.get(m.id)?.(m); waiting.delete(m.id); }
    });
  });
  const { url } = /** @type {any} */ (await ready);
  /** @param {string} cmd */
  const ask = (cmd) => new Promise((resolve) => {
    if (exit || !child.connected) { resolve({ error: 'server exited' }); return; }
    const id = nextId++;
    waiting.set(id, resolve);
    child.send({ cmd, id });
  });
  return {
    url,
    pid: /** @type {number} */ (child.pid),
    faults,
    /** Resolves with how the process ended. */
    exited,
    /** How it ended, null while it runs. */
    get exit() { return exit; },
    resetWindow: () => ask('reset'),
    /** @returns {Promise<any>} */
    metrics: () => ask('metrics'),
    /** process.memoryUsage() after a GC (when started with --expose-gc). @returns {Promise<any>} */
    heap: () => ask('heap'),
    /** Kills it without a goodbye (a crash, for the restart tests). @param {NodeJS.Signals} [signal] */
    async kill(signal = 'SIGKILL') {
      if (exit) return exit;
      child.kill(signal);
      return exited;
    },
    async close() {
      if (exit) return;
      ask('close');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** The server child startServerChild gives. @typedef {Awaited<ReturnType<typeof startServerChild>>} ServerChild */
