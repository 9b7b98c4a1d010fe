/**
 * `carlab churn`: stable members of a few relay groups run their action cycle
 * while other clients join and leave beside them (cleanly, by dropping the
 * connection, or as silent members that never ACK); prints the longest gap
 * between two sends of a stable member, their streams, and whether the relay
 * returns to its baseline once everyone has left (lab/sim/churn.js).
 *
 * @module lab/commands/churn
 */

import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

import { parseIntFlag } from '../shared/flags.js';
import { churnProblems, runChurn } from '../sim/churn.js';

const FLAGS = /** @type {const} */ ({
  steps: { type: 'string' },
  groups: { type: 'string' },
  stable: { type: 'string' },
  cycle: { type: 'string' },
  'ack-timeout': { type: 'string' },
  seed: { type: 'string' },
  json: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
});

/** @returns {string} */
export function churnHelp() {
  return [
    'Usage: carlab churn [options]',
    '',
    'Starts a carlab server in its own process; stable members of a few relay groups (one in',
    'relay-faithful) run their action cycle while other clients join and leave their groups every',
    '100-400 ms: cleanly, by dropping the TCP connection, or as silent members that never ACK.',
    'Exit 0 when the stable members\' streams among themselves are complete and in order, none was',
    'closed, and the relay is back to its baseline (gauges, heap after GC) once everyone left; 1',
    'otherwise; 2 on bad flags. How long a stable member went without sending is a figure',
    '(maxGapMs), held by the gate `churn` (lab/gates/gates.js).',
    '',
    'Options:',
    '  --steps N         joins and leaves (default 32: with a seed, the same churn on any machine)',
    '  --groups N        groups (default 3)',
    '  --stable N        stable members per group (default 3)',
    '  --cycle MS        the action cycle (default 100)',
    '  --ack-timeout MS  the clients\' ACK timeout, which bounds a wait on a silent member (default 2000)',
    '  --seed N          the churn follows from it (default 8)',
    '  --json FILE       also write the report as JSON',
    '  -h, --help        this help',
    '',
  ].join('\n');
}

/**
 * @param {string[]} argv
 * @param {{ stdout?: NodeJS.WritableStream, stderr?: NodeJS.WritableStream }} [io]
 * @returns {Promise<number>}
 */
export async function run(argv, { stdout = process.stdout, stderr = process.stderr } = {}) {
  const usage = (/** @type {string} */ why) => { stderr.write(`carlab churn: ${why}\n\n${churnHelp()}`); return 2; };
  let values;
  try {
    ({ values } = parseArgs({ args: argv, options: FLAGS }));
  } catch (err) {
    return usage(/** @type {Error} */ (err).message);
  }
  if (values.help) { stdout.write(churnHelp()); return 0; }
  /** @param {keyof typeof FLAGS} name @param {number} fallback @param {number} min @param {number} max */
  const int = (name, fallback, min, max) => parseIntFlag(name, /** @type {string | undefined} */ (values[name]), fallback, min, max);
  let o;
  try {
    o = {
      steps: int('steps', 32, 1, 100_000), groups: int('groups', 3, 1, 100), stablePerGroup: int('stable', 3, 2, 50),
      cycleMs: int('cycle', 100, 10, 10_000), ackTimeoutMs: int('ack-timeout', 2000, 100, 120_000), seed: int('seed', 8, 0, 2 ** 31),
    };
  } catch (err) {
    return usage(/** @type {Error} */ (err).message);
  }
  const r = await runChurn({ ...o, durationS: 8 });
  const problems = churnProblems(r);
  stdout.write([
    `churn: ${r.counts.joins} joins (${r.counts.silentJoins} silent), ${r.counts.cleanLeaves} clean and ${r.counts.abruptLeaves} abrupt leaves, peak ${r.relay.during.peakClients} clients`,
    `stable members: ${r.stable.clients}, ${r.stable.updatesSent} updates, longest gap between two sends ${r.maxGapMs.toFixed(0)} ms `
      + `(ACK timeout ${r.ackTimeoutMs} ms; this process's longest stall ${r.loopStallMs} ms), ${r.stable.ackTimeouts} ACK timeouts`,
    `relay after: ${JSON.stringify(r.relay.after)}; heap after GC ${(r.heapUsedBytes.baseline / 1024).toFixed(0)} -> ${(r.heapUsedBytes.after / 1024).toFixed(0)} KiB`,
    problems.length ? `BROKEN:\n  ${problems.join('\n  ')}` : 'every promise held',
    '',
  ].join('\n'));
  if (values.json) writeFileSync(values.json, `${JSON.stringify({ ...r, ok: problems.length === 0, problems }, null, 2)}\n`);
  return problems.length ? 1 : 0;
}
