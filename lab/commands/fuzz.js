// `carlab fuzz`: throws seeded, repeatable garbage at a real carlab server's
// relay and PeerServer endpoints and its client-report intake while
// well-behaved clients keep exchanging updates, and checks every promise of
// docs/reliability.md "Bad input" and docs/security.md.
// The driver is lab/fuzz/fuzz.js (also used by its test).

import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { parseIntFlag } from '../shared/flags.js';
import { formatFuzzReport, runFuzz } from '../fuzz/fuzz.js';

/** Help text of `carlab fuzz`. */
export function fuzzHelp() {
  return `Usage: carlab fuzz [flags]

Starts a carlab server (relay + PeerServer, plain HTTP on a free loopback
port) in its own process, connects six well-behaved relay clients (two
groups, one locked with a token) and two PeerJS peers, and throws seeded
cases at it: malformed, truncated, oversized, random and valid-but-wrong
relay frames (bad version, unknown type, spoofed ids, pre-HELLO messages,
nested batches, huge counts, floods, text frames), garbage on the PeerServer
WebSocket, broken WebSocket handshakes and framing, and odd HTTP requests
under /peerjs. Beside them five scenarios (docs/security.md): fair-flood
(two members of a group of 5 flood UPDATEs at 75 % of the limit, then one
bursts over it, while three send one per 167 ms and ACK: no innocent is
closed or starved, the one over its limit is closed 4005), fair-flood-udp
(the same on relay-udp: the excess is dropped, nobody closed), peer-takeover
(a same-token second claim of a PeerJS id closes the older socket 4007;
another token gets ID-TAKEN), slow-headers (requests whose headers never
end are cut off within the headers timeout, others still answered) and
slow-consumer (a member of a group of 5 stops reading its socket: after
slowAckMs the relay stops waiting for it, nobody runs into an ACK timeout). Three
more throw bad client reports at POST /reports while the members of a relay
group exchange updates and send good reports (docs/security.md "Client
reports"): report-garbage (not JSON, truncated, over 64 KiB declared, sent
and chunked, another content type, a real report bent into the wrong shape
field by field: each gets exactly its 400/413/415/422), report-flood (one
session posting in a tight loop gets one report a second and its final one
accepted, the rest 429 with Retry-After) and report-claim (another session
naming a member's client id, a session moving to another group and an old
report number get 409; the member's own next report 204). The server records
the reports it accepts into a temporary folder: its carlab_reports_total must
count what the lanes were answered, and the recording must hold every
accepted report once and nothing refused (report-books).
Every socket must end as documented; the server must not
crash or report an unhandled rejection and must keep its memory bounded; the
good clients must see no gap, duplicate or reorder. Exit 0 when every
promise held, 1 otherwise, 2 on bad flags.

Flags:
  --frames N           frames, handshakes and HTTP requests to send (default 100000; 0: the
                       scenario lanes alone)
  --seed S             a number or any string: the same seed sends the same cases (default 1)
  --lanes N            cases in flight at once (default 8)
  --max-rss-growth MB  server RSS may grow this much over its start (default 96)
  --only LIST          run only these case names or targets (relay, peer, raw, http) and
                       scenarios (fair-flood, fair-flood-udp, peer-takeover, slow-headers,
                       slow-consumer, report-garbage, report-flood, report-claim; reports
                       for the three report lanes, scenario for all eight), comma-separated
  --json FILE          also write the full report as JSON
  -h, --help           this help

Example:
  carlab fuzz --frames 100000 --seed 1 --json fuzz.json`;
}

/**
 * @param {string[]} argv
 * @param {{ stdout?: NodeJS.WritableStream, stderr?: NodeJS.WritableStream }} [io]
 * @returns {Promise<number>}
 */
export async function run(argv, io = {}) {
  const stdout = io.stdout ?? process.stdout;
  const stderr = io.stderr ?? process.stderr;
  const usage = (/** @type {string} */ message) => {
    stderr.write(`carlab fuzz: ${message}\n\n${fuzzHelp()}\n`);
    return 2;
  };
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        frames: { type: 'string' },
        seed: { type: 'string' },
        lanes: { type: 'string' },
        'max-rss-growth': { type: 'string' },
        json: { type: 'string' },
        only: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (err) {
    return usage(String(/** @type {Error} */ (err).message).split('\n')[0]);
  }
  if (values.help) {
    stdout.write(`${fuzzHelp()}\n`);
    return 0;
  }
  let frames;
  let lanes;
  let growthMb;
  try {
    frames = parseIntFlag('frames', values.frames, 100000, 0);
    lanes = parseIntFlag('lanes', values.lanes, 8, 1, 64);
    growthMb = parseIntFlag('max-rss-growth', values['max-rss-growth'], 96, 1, 65536);
  } catch (err) {
    return usage(/** @type {Error} */ (err).message);
  }
  if (values.seed !== undefined && values.seed.trim() === '') return usage('--seed: empty');

  let lastTenth = -1;
  const report = await runFuzz({
    frames, seed: values.seed ?? 1, lanes, maxRssGrowthBytes: growthMb * 1024 * 1024,
    only: values.only ? values.only.split(',').map((x) => x.trim()).filter(Boolean) : undefined,
    onProgress: (p) => {
      const tenth = Math.floor((10 * p.units) / p.target);
      if (tenth === lastTenth) return;
      lastTenth = tenth;
      stderr.write(`carlab fuzz: ${p.units}/${p.target} after ${p.elapsedS.toFixed(0)} s, ${p.cases} cases, ${p.failures} not as documented\n`);
    },
  });
  stdout.write(formatFuzzReport(report));
  if (values.json) await writeFile(values.json, `${JSON.stringify(report, null, 2)}\n`);
  return report.ok ? 0 : 1;
}
