// The slow-consumer lane of `carlab fuzz` (docs/protocol.md §8.6 "Lagging"): four well-behaved
// members of a relay group and a fifth that stops reading its socket, as a phone whose app froze.
// Once it has not ACKed for slowAckMs the relay stops waiting for it: the group's updates are
// acknowledged by the others again, and nobody runs into the ACK timeout. How fast they are then is
// a real-time figure (slowConsumer.rtP95Ms), held by the `slow-consumer` gate (lab/gates/gates.js).

import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';
import { summarize } from '../../core/metrics.js';
import { HelloFlag, MsgType, decode, encode } from '../../core/protocol.js';
import { until } from '../shared/loop-stall.js';
import { result } from './fuzz-reports.js';
import { goodMember } from './fuzz-scenarios.js';

/** The lane's name, as `--only` takes it. */
export const SLOW_CONSUMER = 'slow-consumer';
/** How long the group is watched once the relay should have stopped waiting (slowAckMs + its sweep + 1 s): the gate's window. */
const AFTER_MS = 3000;
/** Updates each well-behaved member must complete once it is not waited for, however long a starved machine takes (up to 30 s). */
const COMPLETED_AFTER = 5;
const COMPLETED_WAIT_MS = 30_000;
/** The well-behaved members: their ACK timeout is far past slowAckMs, so only the relay's policy can free them. */
const GOOD_ACK_TIMEOUT_MS = 20_000;

/**
 * What the lane saw.
 * @typedef {object} SlowConsumerFacts
 * @property {number} slowAckMs the relay's lagging threshold
 * @property {{ id: number, closed: { code: number, reason: string } | null, ackTimeouts: number, rtAfter: number, completed: number }[]} good
 *   each well-behaved member: how it ended, its ACK timeouts, RTs completed in the 3 s once the relay stopped waiting
 *   (the gate's figure), and by the end of the wait for COMPLETED_AFTER of them (the verdict's)
 * @property {{ n: number, p95: number | null, max: number | null }} rtAfter the group's RTs from then on
 * @property {number} slowConsumersMarked the relay's slowConsumers counter moved this much (every lane's members count)
 * @property {number} updatesToSlow UPDATEs the slow member had read before it stopped
 */

/**
 * A member that reads and ACKs like the product until `pause()`, then never reads again.
 * @param {string} url @param {string} group
 */
async function slowReader(url, group) {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  ws.on('error', () => {});
  let id = 0;
  let updates = 0;
  ws.on('message', (data) => {
    const m = decode(/** @type {Buffer} */ (data));
    if (m instanceof Error) return;
    for (const x of m.type === MsgType.BATCH ? m.messages : [m]) {
      if (x.type === MsgType.WELCOME) id = x.clientId;
      if (x.type !== MsgType.UPDATE) continue;
      updates++;
      ws.send(encode({ type: MsgType.ACK, sender: x.sender, seq: x.seq, acker: id }));
    }
  });
  await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('close', () => reject(new Error('slow reader: no connection'))); });
  ws.send(encode({ type: MsgType.HELLO, flags: HelloFlag.BATCHED, clientId: 0, group, name: 'slow', token: '' }));
  if (!(await until(() => id !== 0, 5000))) throw new Error('slow reader: no WELCOME');
  return {
    get updates() { return updates; },
    pause() { /** @type {any} */ (ws)._socket?.pause(); },
    close() { ws.terminate(); },
  };
}

/**
 * The verdict (correctness only; how fast is the gate's).
 * @param {SlowConsumerFacts} f
 * @returns {string[]}
 */
export function judgeSlowConsumer(f) {
  const problems = [];
  for (const g of f.good) {
    if (g.closed) problems.push(`well-behaved member ${g.id} was closed: ${g.closed.code} "${g.closed.reason}"`);
    if (g.ackTimeouts > 0) problems.push(`well-behaved member ${g.id} ran into its ACK timeout ${g.ackTimeouts} time(s): the relay waited for the member that stopped reading`);
    if (g.completed < COMPLETED_AFTER) {
      problems.push(`well-behaved member ${g.id} completed ${g.completed} updates in ${(AFTER_MS + COMPLETED_WAIT_MS) / 1000} s once the relay should have stopped waiting`);
    }
  }
  if (f.slowConsumersMarked < 1) problems.push('the relay never counted a slow consumer (metrics relay.slowConsumers)');
  if (f.updatesToSlow === 0) problems.push('the slow member got no UPDATE before it stopped reading');
  return problems;
}

/**
 * Runs the lane.
 * @param {{ wsBase: string, group: string, cycleMs: number, slowAckMs: number, metrics: () => Promise<any> }} p
 * @returns {Promise<import('./fuzz-scenarios.js').ScenarioResult>}
 */
export async function runSlowConsumer(p) {
  const url = `${p.wsBase}/relay`;
  /** @type {Awaited<ReturnType<typeof goodMember>>[]} */
  const good = [];
  /** @type {Awaited<ReturnType<typeof slowReader>> | null} */
  let slow = null;
  try {
    for (let i = 0; i < 4; i++) good.push(await goodMember({ url, group: p.group, cycleMs: p.cycleMs, udp: false, ackTimeoutMs: GOOD_ACK_TIMEOUT_MS }));
    slow = await slowReader(url, p.group);
    if (!(await until(() => good.every((g) => g.client.members.size >= 4), 10_000))) throw new Error('the group of 5 did not form within 10 s');
    for (const g of good) g.client.start();
    const reader = slow;
    if (!(await until(() => reader.updates > 0 && good.every((g) => g.client.rt.length >= 5), 10_000))) throw new Error('the group exchanged nothing within 10 s');
    const before = (await p.metrics()).relay?.slowConsumers ?? 0;
    slow.pause();
    await sleep(p.slowAckMs + 1000);
    const mark = good.map((g) => g.client.rt.length);
    await sleep(AFTER_MS);
    const after = good.map((g, i) => g.client.rt.slice(mark[i]));
    const rt = summarize(after.flat());
    await until(() => good.every((g, i) => g.client.rt.length - mark[i] >= COMPLETED_AFTER), COMPLETED_WAIT_MS, 50);
    /** @type {SlowConsumerFacts} */
    const facts = {
      slowAckMs: p.slowAckMs,
      good: good.map((g, i) => ({
        id: g.client.id, closed: g.client.closedWith, ackTimeouts: g.client.cycle.ackTimeouts, rtAfter: after[i].length, completed: g.client.rt.length - mark[i],
      })),
      rtAfter: { n: rt.n, p95: rt.p95, max: rt.max },
      slowConsumersMarked: ((await p.metrics()).relay?.slowConsumers ?? 0) - before,
      updatesToSlow: slow.updates,
    };
    const summary = `4 well-behaved, one stopped reading after ${facts.updatesToSlow} UPDATEs; once the relay stopped waiting `
      + `(slowAckMs ${p.slowAckMs} ms): ${rt.n} updates ACKed, RT p95 ${rt.p95?.toFixed(1)} ms, max ${rt.max?.toFixed(1)} ms`;
    return result(SLOW_CONSUMER, judgeSlowConsumer(facts), summary, facts);
  } finally {
    for (const g of good) { g.client.stop(); g.client.close(); }
    slow?.close();
  }
}

/**
 * The `slow-consumer` gate's figures; nulls where the lane did not run.
 * @param {readonly import('./fuzz-scenarios.js').ScenarioResult[]} scenarios
 * @returns {{ rtP95Ms: number | null, updatesAfter: number | null }}
 */
export function slowConsumerFigures(scenarios) {
  const lane = scenarios.find((sc) => sc.name === SLOW_CONSUMER && !sc.skipped && sc.facts?.rtAfter);
  const rt = /** @type {SlowConsumerFacts['rtAfter'] | undefined} */ (lane?.facts.rtAfter);
  return { rtP95Ms: rt?.p95 ?? null, updatesAfter: rt ? rt.n : null };
}
