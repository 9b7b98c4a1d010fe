#!/usr/bin/env node
/**
 * The `carlab` command: dispatches to one module per subcommand.
 *
 * A subcommand module exports `run(argv, io) -> Promise<number>` (the exit
 * code); adding one is one line in {@link COMMANDS}.
 *
 * @module scripts/carlab
 */

import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * @typedef {object} CommandIo
 * @property {NodeJS.ProcessEnv} [env]
 * @property {NodeJS.WritableStream} [stdout]
 * @property {NodeJS.WritableStream} [stderr]
 */

/**
 * @typedef {{ run(argv: string[], io?: CommandIo): Promise<number> }} CommandModule
 */

/**
 * @typedef {object} Command
 * @property {string} summary one line for the overall help
 * @property {(() => Promise<CommandModule>) | null} load the module, or null while not available yet
 */

/**
 * Every subcommand, in help order. Loaders are lazy so `carlab start` never
 * pays for the benchmark's imports and vice versa.
 *
 * @type {Readonly<Record<string, Command>>}
 */
export const COMMANDS = Object.freeze({
  start: { summary: 'serve the AR app, relay and PeerJS signaling on one HTTPS port', load: () => import('../server/start.js') },
  // Everything below is the lab: its modules (lab/) load only when one of these runs.
  bench: { summary: 'measure transports with a fleet of headless browsers', load: () => import('../lab/commands/bench.js') },
  sim: { summary: 'measure transports with lightweight Node clients at scale', load: () => import('../lab/commands/sim.js') },
  browsers: { summary: 'compare Chrome and Firefox: the WebRTC-on-mobile study', load: () => import('../lab/commands/browsers.js') },
  report: { summary: 'render results.json into tables and charts', load: () => import('../lab/commands/report.js') },
  markers: { summary: 'generate the marker pattern and camera parameters', load: () => import('./markers.js') },
  video: { summary: 'make the fake-camera .y4m video for headless browsers', load: () => import('../lab/commands/video.js') },
  churn: { summary: 'clients join and leave beside stable members; check their streams and the relay\'s baseline', load: () => import('../lab/commands/churn.js') },
  fuzz: { summary: 'throw seeded garbage at the relay and PeerServer; check nothing breaks', load: () => import('../lab/commands/fuzz.js') },
  check: { summary: 'run the benchmark gates: every real-time bound, one gate at a time (npm run test:realtime)', load: () => import('../lab/commands/check.js') },
  agent: { summary: 'offer this machine\'s browsers to `carlab bench --agents` through NATS (docs/fleet.md)', load: () => import('../lab/commands/agent.js') },
  'lab-server': { summary: '`carlab start` plus the lab pages (peer.html, lab.html), for fleets and browser tests', load: () => import('../lab/commands/lab-server.js') },
});

/**
 * The overall help text.
 *
 * @returns {string}
 */
export function overallHelp() {
  const width = Math.max(...Object.keys(COMMANDS).map((name) => name.length)) + 2;
  const rows = Object.entries(COMMANDS).map(
    ([name, command]) => `  ${name.padEnd(width)}${command.summary}${command.load ? '' : ' (not available yet)'}`,
  );
  return [
    'Usage: carlab <command> [options]',
    '',
    'Commands:',
    ...rows,
    '',
    'Run `carlab <command> --help` for the options of a command.',
    '',
  ].join('\n');
}

/**
 * Run the subcommand named by `argv[0]` and resolve with its exit code.
 * `--help`/`-h`/`help` print the overall help (0); no or an unknown or
 * unavailable command print it to stderr (2).
 *
 * @param {string[]} argv arguments after `carlab`
 * @param {CommandIo} [io]
 * @returns {Promise<number>}
 */
export async function dispatch(argv, io = {}) {
  const { stdout = process.stdout, stderr = process.stderr } = io;
  const [name, ...rest] = argv;

  if (name === '--help' || name === '-h' || (name === 'help' && rest.length === 0)) {
    stdout.write(overallHelp());
    return 0;
  }
  if (name === 'help') return dispatch([rest[0], '--help'], io);
  if (name === undefined) {
    stderr.write(`carlab: missing command\n\n${overallHelp()}`);
    return 2;
  }
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!command) {
    stderr.write(`carlab: unknown command '${name}'\n\n${overallHelp()}`);
    return 2;
  }
  if (!command.load) {
    stderr.write(`carlab: '${name}' is not available yet\n\n${overallHelp()}`);
    return 2;
  }
  const module = await command.load();
  return module.run(rest, io);
}

/**
 * Whether this file is the process entry point, also through the npm bin symlink.
 *
 * @returns {boolean}
 */
function isMain() {
  if (!process.argv[1]) return false;
  try {
    return realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
  } catch {
    return false;
  }
}

if (isMain()) {
  // Exit explicitly: a subcommand is done when it resolves, and a stray
  // timer in a dependency must not keep the process alive after that.
  dispatch(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err) => {
      process.stderr.write(`carlab: ${err?.stack ?? err}\n`);
      process.exit(1);
    },
  );
}
