// Calibration: before a profile is measured, probe the same links with a
// bounded UDP burst (achieved loss each way) and a bounded TCP transfer each
// way (achieved rate), and compare with the profile's targets. A figure more
// than 20 % off its target is flagged, unless the UDP sample is too small to
// tell (the difference inside 5.2 standard errors of the estimate: a right link flagged with a chance of 2e-7).

import { spawn } from 'node:child_process';
import { inNamespace } from './commands.js';

const PROBE = new URL('./probe.js', import.meta.url).pathname;

/** Relative tolerance before a figure is flagged. */
export const TOLERANCE = 0.2;
/** Rates above this are not checked: a short transfer on this machine cannot tell them apart. */
export const MAX_CHECKED_KBIT = 1_000_000;
/** Loss a target of 0 % may show before it is flagged (probe receive buffers). */
const ZERO_LOSS_SLACK_PCT = 0.2;
/** Wire size of one probe datagram in bits (64 B payload + UDP/IP/Ethernet). */
const DATAGRAM_BITS = (64 + 8 + 20 + 14) * 8;

/**
 * Probe sizes for one link, bounded in count and time: the UDP burst keeps
 * under half the link rate (so queues, not loss rules, would not drop it),
 * the TCP transfers last about 1.2 s at the target rate.
 * @param {{ upKbit: number | null, downKbit: number | null }} link rates of the whole link
 */
export function probePlan({ upKbit, downKbit }) {
  const slowest = Math.min(upKbit ?? Infinity, downKbit ?? Infinity);
  const pps = Math.max(20, Math.min(5000, Math.floor((slowest * 1000 * 0.5) / DATAGRAM_BITS)));
  const bytesFor = (/** @type {number | null} */ kbit) => (kbit === null
    ? 8 << 20
    : Math.max(32 << 10, Math.min(8 << 20, Math.round((kbit * 1000 / 8) * 1.2))));
  return { datagrams: Math.min(5000, Math.round(pps * 1.5)), pps, upBytes: bytesFor(upKbit), downBytes: bytesFor(downKbit), timeoutMs: 8000 };
}

/**
 * How many standard errors of the binomial estimate a loss may be off before it
 * is flagged: 5.2 is a two-sided chance of 2e-7 that a right link is flagged, so
 * a run calibrating 2 directions of a few links stays under 1e-6. (At 3.29, the
 * 99.9 % interval used before, a test run of 4 calibrated directions flagged a
 * right link once in ~250 runs: "loss down 2.7 % vs 2 %" at 5000 datagrams.)
 * A link that is really wrong (no netem, a doubled loss) is still flagged: at
 * 5000 datagrams and 2 % the bound is 1.0 point.
 */
export const LOSS_SAMPLING_Z = 5.2;

/**
 * Is an achieved loss off its target? More than 20 % off and outside
 * LOSS_SAMPLING_Z standard errors of the estimate from n datagrams.
 * @param {number} targetPct
 * @param {number | null} achievedPct
 * @param {number} n datagrams the estimate rests on
 */
export function lossFlagged(targetPct, achievedPct, n) {
  if (achievedPct === null || n <= 0) return true;
  const diff = Math.abs(achievedPct - targetPct);
  if (targetPct === 0) return achievedPct > ZERO_LOSS_SLACK_PCT;
  const p = targetPct / 100;
  const sampling = LOSS_SAMPLING_Z * Math.sqrt((p * (1 - p)) / n) * 100;
  return diff > TOLERANCE * targetPct && diff > sampling;
}

/**
 * Is an achieved rate off its target? null target: nothing to check.
 * @param {number | null} targetKbit
 * @param {number | null} achievedKbit
 */
export function rateFlagged(targetKbit, achievedKbit) {
  if (targetKbit === null || targetKbit > MAX_CHECKED_KBIT) return false;
  if (achievedKbit === null) return true;
  return Math.abs(achievedKbit - targetKbit) > TOLERANCE * targetKbit;
}

/**
 * Turns a probe's raw counts into achieved figures and flags, per peer.
 * @param {any} raw probe client output
 * @param {import('./profiles.js').NetProfile} profile
 * @param {number} peers peers on this link
 */
export function judgeLink(raw, profile, peers) {
  const upLoss = raw.sent > 0 ? (100 * (raw.sent - raw.counted)) / raw.sent : null;
  const downLoss = raw.counted > 0 ? (100 * (raw.counted - raw.echoed)) / raw.counted : null;
  const perPeer = (/** @type {number | null} */ kbit) => (kbit === null ? null : kbit / peers);
  const side = (/** @type {'up' | 'down'} */ d, /** @type {number | null} */ lossPct, /** @type {number} */ n, /** @type {any} */ tcp) => {
    const target = profile[d];
    const linkTarget = target.rateKbit === null ? null : target.rateKbit * peers;
    const flags = [];
    if (lossFlagged(target.lossPct, lossPct, n)) flags.push(`loss ${d} ${round(lossPct)} % vs ${target.lossPct} %`);
    if (rateFlagged(linkTarget, tcp.kbit)) flags.push(`rate ${d} ${round(perPeer(tcp.kbit))} vs ${target.rateKbit} kbit/s per peer`);
    return {
      lossPct: round(lossPct, 3),
      datagrams: n,
      rateKbit: round(perPeer(tcp.kbit)),
      linkRateKbit: round(tcp.kbit),
      rateChecked: linkTarget !== null && linkTarget <= MAX_CHECKED_KBIT,
      tcpTimedOut: tcp.timedOut,
      flags,
    };
  };
  return { peers, up: side('up', upLoss, raw.sent, raw.up), down: side('down', downLoss, raw.counted, raw.down) };
}

/** @param {number | null} v @param {number} [digits] */
function round(v, digits = 1) {
  if (v === null || !Number.isFinite(v)) return null;
  const f = 10 ** digits;
  return Math.round(v * f) / f;
}

/**
 * Runs a command and resolves with its first stdout line that parses as JSON.
 * @param {string[]} argv
 * @param {number} timeoutMs
 * @returns {{ result: Promise<any>, child: import('node:child_process').ChildProcess }}
 */
function runJson(argv, timeoutMs) {
  const child = spawn(argv[0], argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe'] });
  const result = new Promise((resolve, reject) => {
    let out = ''; let err = '';
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`calibration probe timed out after ${timeoutMs} ms`)); }, timeoutMs);
    child.stdout?.on('data', (d) => {
      out += d;
      const nl = out.indexOf('\n');
      if (nl >= 0) { clearTimeout(timer); try { resolve(JSON.parse(out.slice(0, nl))); } catch (e) { reject(e); } }
    });
    child.stderr?.on('data', (d) => { err += d; });
    child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`calibration probe exited ${code}: ${err.trim().slice(0, 500)}`)); });
  });
  return { result, child };
}

/**
 * Calibrates every link of a shaped topology, one link at a time (parallel
 * probes would share the probe server's CPU and buffers).
 * @param {import('./commands.js').Topology} t
 * @param {import('./profiles.js').NetProfile} profile
 * @param {number[]} peersPerLink
 */
export async function calibrate(t, profile, peersPerLink) {
  const node = process.execPath;
  const srv = runJson(inNamespace(t.serverNs, [node, PROBE, 'server', t.serverIp]), 10000);
  try {
    const ports = await srv.result;
    const links = [];
    for (let i = 0; i < t.clientNs.length; i++) {
      const k = peersPerLink[i];
      const plan = probePlan({
        upKbit: profile.up.rateKbit === null ? null : profile.up.rateKbit * k,
        downKbit: profile.down.rateKbit === null ? null : profile.down.rateKbit * k,
      });
      const job = { udpPort: ports.udp, tcpPort: ports.tcp, ...plan };
      const budget = (plan.datagrams / plan.pps) * 1000 + 2 * plan.timeoutMs + 5000;
      const raw = await runJson(inNamespace(t.clientNs[i], [node, PROBE, 'client', t.serverIp, JSON.stringify(job)]), budget).result;
      links.push({ link: i, ...judgeLink(raw, profile, k) });
    }
    return summarize(links);
  } finally {
    srv.child.stdin?.end();
    srv.child.kill('SIGKILL');
  }
}

/**
 * The run-record form: per-link figures plus the weighted means and all flags.
 * @param {ReturnType<typeof judgeLink>[]} links
 */
export function summarize(links) {
  const mean = (/** @type {'up' | 'down'} */ d, /** @type {'lossPct' | 'rateKbit'} */ k) => {
    const vals = links.map((l) => l[d][k]).filter((v) => typeof v === 'number');
    return vals.length ? round(vals.reduce((a, b) => a + b, 0) / vals.length, k === 'lossPct' ? 3 : 1) : null;
  };
  const flags = links.flatMap((l, i) => [...l.up.flags, ...l.down.flags].map((f) => `link ${i}: ${f}`));
  return {
    up: { lossPct: mean('up', 'lossPct'), rateKbit: mean('up', 'rateKbit') },
    down: { lossPct: mean('down', 'lossPct'), rateKbit: mean('down', 'rateKbit') },
    flagged: flags.length > 0,
    flags,
    links,
  };
}
