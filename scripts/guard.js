// Loaded with `node --import` into every test process (each `node --test`
// file, Playwright's runner and workers): this process becomes an owner
// (owned.js) under the one that started it, and whatever it started that still
// runs when it exits is ended and reported, and the exit is non-zero. A test's
// timeout, a forced exit and the runner's SIGTERM all end in that exit; a
// process killed outright runs no handler: its owner one level up finds its own.
import path from 'node:path';

import { OWNER_VAR, describeOwned, endOwned } from './owned.js';

const parent = process.env[OWNER_VAR];
const owner = parent ? `${parent}/${process.pid}` : `carlab-test-${process.pid}`;
process.env[OWNER_VAR] = owner;

/** What this process is, in a report: the test file or the command. */
function whoAmI() {
  const script = process.argv[1];
  return script ? path.relative(process.cwd(), script) : `pid ${process.pid}`;
}

/** Set when a signal ends this file: its processes are ended at once, without the grace. */
let signalled = false;

process.on('exit', () => {
  const leftovers = endOwned(owner, signalled ? { graceMs: 0 } : {});
  if (leftovers.length === 0) return;
  process.stderr.write(`\ncarlab test guard: ${whoAmI()} left ${leftovers.length} process(es) running; ended them:\n${describeOwned(leftovers)}\n`);
  process.exitCode = 1;
});

// A test file (the runner marks its children with NODE_TEST_CONTEXT): its
// runner's SIGTERM at a timeout must still end what the file started.
if (process.env.NODE_TEST_CONTEXT?.startsWith('child')) {
  for (const [signal, code] of /** @type {const} */ ([['SIGTERM', 143], ['SIGINT', 130], ['SIGHUP', 129]])) {
    process.once(signal, () => {
      signalled = true;
      process.exit(code);
    });
  }
}
