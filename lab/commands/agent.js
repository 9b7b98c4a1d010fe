// `carlab agent`: offers this machine's browsers to `carlab bench --agents`
// through NATS until stopped (lab/fleet/agent.js; docs/fleet.md).

import { parseArgs } from 'node:util';

import { agentNameProblem } from '../fleet/fleet.js';
import { parseNatsFlag } from '../shared/flags.js';
import { defaultAgentName, startAgent } from '../fleet/agent.js';
import { ensureLabPages } from '../pages/build.js';

/** The shortest shared token accepted. */
export const MIN_TOKEN_LENGTH = 8;

/** Help text of `carlab agent`. */
export function agentHelp() {
  return `Usage: carlab agent --nats URL --token T [--name N] [--capacity W] [--pages-port N]

Offers this machine's headless browsers to \`carlab bench --agents\` (docs/fleet.md):
joins NATS, says what it has (name, cores, memory, browsers), and runs the peers
a bench gives it, with the bench's own launch settings and DevTools driver, its
peer pages served from here and pointed at the server under test. It opens
nothing for a bench without the shared token, runs one point at a time, and
closes its browsers when the bench goes quiet for 10 s. Runs until Ctrl-C.

Options (each falls back to the environment variable in brackets):
  --nats URL          the lab's NATS server, nats://host:4222 [CARLAB_NATS]
  --token T           the shared token, at least ${MIN_TOKEN_LENGTH} characters (prefer the variable:
                      a flag shows in ps) [CARLAB_TOKEN]
  --name N            this agent's name: letters, digits, - and _ (default: the host name, or
                      NAME-2, NAME-3, ... when an agent on the NATS has it already)
                      [CARLAB_AGENT_NAME]
  --capacity W        its weight when a bench splits peers (default: its cores) [CARLAB_AGENT_CAPACITY]
  --pages-port N      the port its peer pages are served on, on 127.0.0.1 (default: a free one);
                      the server under test must allow http://127.0.0.1:N [CARLAB_PAGES_PORT]
  -h, --help          this help`;
}

/**
 * @param {string[]} argv
 * @param {import('../../scripts/carlab.js').CommandIo & { signal?: AbortSignal }} [io]
 *   signal: stops the agent (tests); without it, SIGINT and SIGTERM do
 * @returns {Promise<number>}
 */
export async function run(argv, io = {}) {
  const stdout = io.stdout ?? process.stdout;
  const stderr = io.stderr ?? process.stderr;
  const env = io.env ?? process.env;
  const usage = (/** @type {string} */ m) => { stderr.write(`carlab agent: ${m}\n\n${agentHelp()}\n`); return 2; };
  let values;
  try {
    ({ values } = parseArgs({
      args: argv, strict: true, allowPositionals: false,
      options: {
        nats: { type: 'string' }, token: { type: 'string' }, name: { type: 'string' }, capacity: { type: 'string' },
        'pages-port': { type: 'string' }, help: { type: 'boolean', short: 'h', default: false },
      },
    }));
  } catch (err) {
    return usage(/** @type {Error} */ (err).message);
  }
  if (values.help) { stdout.write(`${agentHelp()}\n`); return 0; }
  const natsUrl = values.nats ?? env.CARLAB_NATS;
  if (!natsUrl) return usage('--nats URL (or CARLAB_NATS) is required');
  try { parseNatsFlag(natsUrl); } catch (err) { return usage(/** @type {Error} */ (err).message); }
  const token = values.token ?? env.CARLAB_TOKEN ?? '';
  if (token.length < MIN_TOKEN_LENGTH) return usage(`--token T (or CARLAB_TOKEN) of at least ${MIN_TOKEN_LENGTH} characters is required`);
  const given = values.name ?? env.CARLAB_AGENT_NAME;
  const name = given ?? defaultAgentName();
  const nameProblem = agentNameProblem(name);
  if (nameProblem) return usage(`--name: ${nameProblem}`);
  const capacityText = values.capacity ?? env.CARLAB_AGENT_CAPACITY;
  const capacity = capacityText === undefined ? undefined : Number(capacityText);
  if (capacity !== undefined && !(Number.isFinite(capacity) && capacity > 0)) return usage(`--capacity: "${capacityText}" is not a positive number`);
  const portText = values['pages-port'] ?? env.CARLAB_PAGES_PORT ?? '0';
  const pagesPort = Number(portText);
  if (!Number.isInteger(pagesPort) || pagesPort < 0 || pagesPort > 65535) return usage(`--pages-port: "${portText}" is not a port 0..65535`);

  /** @type {Awaited<ReturnType<typeof startAgent>> | undefined} */
  let agent;
  // the default name may become NAME-2, ... on a host that runs several agents: the started agent's
  const log = (/** @type {string} */ line) => stderr.write(`carlab agent ${agent?.name ?? name}: ${line}\n`);
  await ensureLabPages({ log });
  try {
    agent = await startAgent({ natsUrl, token, name, nameIsDefault: given === undefined, capacity, pagesPort, log });
  } catch (err) {
    stderr.write(`carlab agent: ${/** @type {Error} */ (err).message}\n`);
    return 1;
  }
  const a = agent.advert();
  stdout.write(`carlab agent ${agent.name}: on ${natsUrl}; ${a.cores} cores, ${a.memoryMb} MB, browsers ${a.browsers.join(', ') || 'none'}; `
    + `capacity ${a.capacity}; peer pages from ${a.pagesOrigin}\n`);
  const stop = new Promise((resolve) => {
    if (io.signal) {
      if (io.signal.aborted) resolve('stopped');
      io.signal.addEventListener('abort', () => resolve('stopped'), { once: true });
      return;
    }
    // Ctrl-C reaches the browsers' process groups only through us: they are closed before we go.
    for (const sig of /** @type {const} */ (['SIGINT', 'SIGTERM'])) process.once(sig, () => resolve(sig));
  });
  const why = await Promise.race([stop, agent.closed.then(() => 'closed')]);
  if (why === 'closed') {
    log('NATS connection closed for good');
    await agent.close().catch(() => {});
    return 1;
  }
  log(`stopping (${why})`);
  await agent.close();
  return 0;
}
