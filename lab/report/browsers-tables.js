// The tables of `carlab browsers`, in the WebRTC-on-mobile study's layout:
// built once as data (title, legend, header, rows) so tables.md and
// report.html show the same numbers. output.js renderTables() appends the
// markdown of runs that carry an `experiment` (other than `car`, whose runs
// are bench runs and go into the CAR tables as they are).

import { fmt, markdownTable, num } from './format.js';

/** Experiments in the study's order. */
export const EXPERIMENT_ORDER = Object.freeze(['setup', 'overhead', 'keepalive', 'memory', 'cpu', 'transfer', 'car']);
const PAIR_ORDER = ['C-C', 'F-F', 'C-F', 'F-C', 'C+F'];

/**
 * Whether a run belongs to a `carlab browsers` experiment with its own tables.
 * @param {any} run
 */
export function isLabRun(run) {
  return typeof run?.experiment === 'string' && run.experiment !== 'car';
}

/**
 * @typedef {object} LabTable
 * @property {string} title
 * @property {string} [legend]
 * @property {string[]} header
 * @property {string[][]} rows
 * @property {('left' | 'right')[]} align
 */

/**
 * @typedef {object} LabSection
 * @property {string} experiment
 * @property {string} title
 * @property {string} intro
 * @property {LabTable[]} tables
 */

/** @typedef {ReturnType<typeof import('../browsers/cpu.js').cpuStepRecord>} CpuStep one step of a cpu run */
/** @typedef {ReturnType<typeof import('../browsers/transfer.js').approachFigures>} ApproachFigures one approach of a transfer run */

/** Pair order of tables and charts. @param {any} a @param {any} b */
export const byPair = (a, b) => (PAIR_ORDER.indexOf(a.pair) + 1 || 99) - (PAIR_ORDER.indexOf(b.pair) + 1 || 99) || String(a.pair).localeCompare(String(b.pair));

/** mean ± Dev @param {any} s @param {number} [digits] */
const pm = (s, digits = 0) => (num(s?.mean) === null ? '–' : `${fmt(s.mean, digits)} ± ${fmt(s.dev, digits)}`);
/** @param {boolean} hide */
const obf = (hide) => (hide ? 'on' : 'off');
/** @param {Record<string, number> | undefined} counts */
const counts = (counts) => Object.entries(counts ?? {}).sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ×${n}`).join(', ') || '–';
/** bytes as KB (1000) @param {unknown} v */
const kb = (v) => fmt(num(v) === null ? null : /** @type {number} */ (v) / 1000, 1);

/**
 * @param {number} n columns
 * @param {number} [left] leading left-aligned columns
 * @param {number} [trailing] trailing left-aligned (text) columns
 * @returns {('left' | 'right')[]}
 */
const aligns = (n, left = 1, trailing = 0) => Array.from({ length: n }, (_, i) => (i < left || i >= n - trailing ? 'left' : 'right'));

/** @param {any[]} runs */
function setupTables(runs) {
  /** @type {LabTable[]} */
  const tables = [];
  const header = ['Pair', 'Signaling', 'p50', 'Peer setup', 'p50', 'p95', 'p99', 'Offer/answer', 'ICE', 'DTLS', 'Gathering', 'Receiver signaling', 'OK', 'Candidate pair'];
  for (const hide of [false, true]) {
    const rs = runs.filter((r) => Boolean(r.hideHostAddresses) === hide).sort(byPair);
    if (!rs.length) continue;
    tables.push({
      title: `Setup delay (ms), host-address obfuscation ${obf(hide)}`,
      legend: 'Signaling: new Peer -> open (initiator). Peer setup: connect -> channel open on the initiator, split into '
        + 'offer/answer (answer applied), ICE connected and DTLS connected (means). Gathering: the initiator\'s ICE gathering complete '
        + '(what waiting for all candidates, i.e. no trickle ICE, would add before the offer). mean ± Dev. OK: repetitions that opened.',
      header,
      rows: rs.map((r) => {
        const s = r.setupMs ?? {};
        return [r.pair, pm(s.signaling, 1), fmt(s.signaling?.p50, 1), pm(s.peer, 1), fmt(s.peer?.p50, 1), fmt(s.peer?.p95, 1), fmt(s.peer?.p99, 1),
          fmt(s.offerAnswer?.mean, 1), fmt(s.iceConnected?.mean, 1), fmt(s.dtlsConnected?.mean, 1), fmt(s.gathering?.mean, 1), pm(s.signalingReceiver, 1),
          `${fmt(r.completed)}/${fmt(r.attempted)}${r.gaveUp ? ' (gave up)' : ''}`, counts(r.candidateTypes)];
      }),
      align: aligns(header.length, 1, 1),
    });
  }
  const pairs = [...new Set(runs.map((r) => r.pair))];
  const both = pairs.filter((pair) => runs.some((r) => r.pair === pair && !r.hideHostAddresses) && runs.some((r) => r.pair === pair && r.hideHostAddresses));
  if (both.length) {
    const h = ['Pair', 'Peer setup off', 'Peer setup on', 'Change', 'ICE off', 'ICE on', 'Failed off', 'Failed on', 'Candidate pairs on'];
    tables.push({
      title: 'What host-address obfuscation changes',
      legend: 'Obfuscation on: Chromium hides host addresses behind mDNS names (WebRtcHideLocalIpsWithMdns), Firefox likewise '
        + '(media.peerconnection.ice.obfuscate_host_addresses). Means in ms; Change = on - off.',
      header: h,
      rows: both.sort((a, b) => byPair({ pair: a }, { pair: b })).map((pair) => {
        const off = runs.find((r) => r.pair === pair && !r.hideHostAddresses);
        const on = runs.find((r) => r.pair === pair && r.hideHostAddresses);
        const d = num(on.setupMs?.peer?.mean) !== null && num(off.setupMs?.peer?.mean) !== null ? on.setupMs.peer.mean - off.setupMs.peer.mean : null;
        return [pair, fmt(off.setupMs?.peer?.mean, 1), fmt(on.setupMs?.peer?.mean, 1), d === null ? '–' : `${d >= 0 ? '+' : ''}${fmt(d, 1)}`,
          fmt(off.setupMs?.iceConnected?.mean, 1), fmt(on.setupMs?.iceConnected?.mean, 1), fmt(off.failures), fmt(on.failures), counts(on.candidateTypes)];
      }),
      align: aligns(h.length, 1, 1),
    });
  }
  return tables;
}

/** @param {any[]} runs */
function overheadTables(runs) {
  const header = ['Pair', 'End', 'Signaling open sent/recv', 'Signaling setup sent/recv', 'getStats sent/recv', 'getStats pkts',
    'Wire sent/recv', 'Wire pkts', 'STUN req sent', 'Total sent', 'Total recv', 'Total pkts'];
  const rows = [];
  for (const r of [...runs].sort(byPair)) {
    for (const role of ['initiator', 'receiver']) {
      const e = r[role] ?? {};
      const two = (/** @type {any} */ part, /** @type {string} */ a, /** @type {string} */ b, digits = 0) => (part ? `${fmt(part[a]?.mean, digits)} / ${fmt(part[b]?.mean, digits)}` : '–');
      rows.push([
        `${r.pair}${r.hideHostAddresses ? ' (obf.)' : ''}`, `${role} (${e.browser ?? '?'})`,
        two(e.signalingOpen, 'sent', 'received'), two(e.signalingSetup, 'sent', 'received'),
        two(e.p2p, 'sent', 'received'), two(e.p2p, 'packetsSent', 'packetsReceived'),
        two(e.wire, 'sent', 'received'), two(e.wire, 'packetsSent', 'packetsReceived'),
        fmt(e.wire?.stunRequestsSent?.mean ?? e.stun?.requestsSent?.mean, 1),
        pm(e.total?.sent), pm(e.total?.received), two(e.total, 'packetsSent', 'packetsReceived'),
      ]);
    }
  }
  return [{
    title: 'Setup overhead per connection (bytes, packets; means over repetitions)',
    legend: 'Until the channel opens. Signaling: the peer\'s WebSocket to PeerServer through a counting proxy (open: new Peer -> open, '
      + 'incl. the HTTP upgrade; setup: connect -> channel open), packets = TCP segments incl. ACKs (ss). getStats: DTLS/SCTP payload '
      + '(Chromium transport/candidate-pair, Firefox candidate-pair sums; STUN not counted, Firefox reports no packets). Wire: every '
      + 'UDP packet of the connection\'s ICE ports incl. STUN and IP/UDP headers (nftables). Total = signaling + wire (getStats without wire).',
    header,
    rows,
    align: aligns(header.length, 2),
  }];
}

/** @param {any[]} runs */
function keepaliveTables(runs) {
  const header = ['Pair', 'End', 'Wire kbit/s sent', 'Wire kbit/s recv', 'Pkts/s sent', 'STUN req/s sent', 'STUN req/s recv',
    'Consent req/s (getStats)', 'Payload kbit/s sent (getStats)', 'Signaling kbit/s sent'];
  const rows = [];
  for (const r of [...runs].sort(byPair)) {
    for (const role of ['initiator', 'receiver']) {
      const e = r[role] ?? {};
      rows.push([
        `${r.pair}${r.hideHostAddresses ? ' (obf.)' : ''}`, `${role} (${e.browser ?? '?'})`,
        fmt(e.wireKbitSent?.mean, 3), fmt(e.wireKbitReceived?.mean, 3), fmt(e.wirePacketsSent?.mean, 2),
        fmt(e.wireStunRequestsSent?.mean, 3), fmt(e.wireStunRequestsReceived?.mean, 3),
        fmt(e.consentRequestsSent?.mean, 3), fmt(e.payloadKbitSent?.mean, 3), fmt(r.signaling?.[role]?.kbitSent, 3),
      ]);
    }
  }
  const windowS = runs.map((r) => r.windowS).filter((v) => typeof v === 'number');
  return [{
    title: `Idle keepalive per connection (${windowS.length ? `${Math.round(Math.min(...windowS))} s window, ` : ''}means over ${runs[0]?.connections ?? '?'} connections)`,
    legend: 'Idle open channels. Wire: every UDP packet incl. STUN and IP/UDP headers (nftables); STUN req = Binding requests '
      + '(consent freshness and ICE keepalive). getStats columns where the browser reports them (Firefox counts no STUN requests). '
      + 'Signaling: the peer\'s PeerServer WebSocket (PeerJS heartbeat), per peer, not per connection.',
    header,
    rows,
    align: aligns(header.length, 2),
  }];
}

/** @param {any[]} runs */
function memoryTables(runs) {
  const header = ['Pair', 'Client', 'm0 USS (MB)', 'd max', 'm max USS (MB)', 'm1 USS (KB)', 'm1 PSS (KB)', 'm1 RSS (KB)', 'Slope USS (KB)', 'Limit', 'Why it stopped'];
  const mb = (/** @type {unknown} */ v) => fmt(num(v) === null ? null : /** @type {number} */ (v) / 1e6, 1);
  return [{
    title: 'Memory per idle connection',
    legend: 'm1 = (m_max - m_0) / d_max over the client browser\'s process tree. USS: its private pages; PSS: shared pages split '
      + 'among all processes mapping them (machine-wide); RSS: resident pages, shared ones in full. Slope: least squares over all steps. '
      + 'Limit: open connections when the next one failed (– = not reached).',
    header,
    rows: [...runs].sort(byPair).map((r) => [
      `${r.pair}${r.hideHostAddresses ? ' (obf.)' : ''}`, r.client ?? '?', mb(r.m0?.ussBytes), fmt(r.dMax), mb(r.mMax?.ussBytes),
      kb(r.m1Bytes?.uss), kb(r.m1Bytes?.pss), kb(r.m1Bytes?.rss), kb(r.slopeBytes?.uss), fmt(r.limitReached), String(r.limitReason ?? '–'),
    ]),
    align: aligns(header.length, 2, 1),
  }];
}

/** @param {any[]} runs */
function cpuTables(runs) {
  const rs = [...runs].sort(byPair);
  const ks = [...new Set(rs.flatMap((r) => (r.steps ?? []).map((/** @type {CpuStep} */ s) => s.k)))].sort((a, b) => a - b);
  const header = ['k', ...rs.flatMap((r) => [`${r.pair} client CPU %`, `${r.pair} server CPU %`, `${r.pair} MB/s`])];
  return [{
    title: 'Client browser CPU under k simultaneous transfers',
    legend: `Each of k connections carries a ${fmt((rs[0]?.fileSize ?? 1e6) / 1e6, 1)} MB file in an endless loop to one client page; `
      + 'CPU of the client browser\'s process tree (100 % = one core), of the sending (server) browser, and the throughput the client '
      + 'received. The pair\'s first browser is the client. Both browsers share this machine\'s cores.'
      + rs.filter((r) => r.stoppedBy).map((r) => ` ${r.pair} stopped at ${r.stoppedBy}.`).join(''),
    header,
    rows: ks.map((k) => [String(k), ...rs.flatMap((r) => {
      const s = (r.steps ?? []).find((/** @type {CpuStep} */ x) => x.k === k);
      return [fmt(s?.clientCpuPct, 1), fmt(s?.serverCpuPct, 1), fmt(s?.throughputMBps, 1)];
    })]),
    align: aligns(header.length),
  }];
}

/** @param {any[]} runs */
function transferTables(runs) {
  const rs = [...runs].sort(byPair);
  const approaches = rs[0]?.approaches ?? [];
  const header = ['Approach', ...rs.map((r) => `${r.pair}${r.hideHostAddresses ? ' (obf.)' : ''}`)];
  const r0 = rs[0];
  return [{
    title: `File transfer of ${fmt((r0?.fileSize ?? 1e6) / 1e6, 1)} MB as ${fmt(r0?.pieces)} x ${fmt((r0?.pieceSize ?? 1e5) / 1000)} kB (ms, mean ± Dev)`,
    legend: `Reliable ordered channels, ${fmt(r0?.chunk)}-byte messages; from first byte to the receiver's ACK of the last piece; `
      + `${fmt(r0?.repetitions)} repetitions per approach and pair.`,
    header,
    rows: approaches.map((/** @type {ApproachFigures} */ a) => [a.label, ...rs.map((r) => pm((r.approaches ?? []).find((/** @type {ApproachFigures} */ x) => x.id === a.id)?.ms))]),
    align: aligns(header.length),
  }];
}

/** @param {any[]} runs */
function carTables(runs) {
  const header = ['Fleet', 'Transport', 'Clients', 'Group', 'RT', 'Dev', 'p95', 'Loss %', 'Jitter (ms)', 'Client CPU %'];
  return [{
    title: 'Location updates per browser fleet',
    legend: 'The `carlab bench` run of each fleet (C = Chromium, F = Firefox, C+F = pages alternating). RT in ms. '
      + 'A mixed fleet also gets a row per browser: RT of the updates its peers sent, loss and jitter of what its peers received.',
    header,
    rows: [...runs].sort((a, b) => byPair(a, b) || String(a.transport).localeCompare(String(b.transport))).flatMap((r) => [
      [
        r.pair ?? r.browser ?? '?', String(r.transport), fmt(r.clients), fmt(r.group), fmt(r.rt?.mean, 1), fmt(r.rt?.dev, 1), fmt(r.rt?.p95, 1),
        fmt(r.lossPct, 2), fmt(r.jitterMs, 2), fmt(r.cpu?.clients, 1),
      ],
      ...Object.entries(r.byBrowser ?? {}).map(([name, b]) => [
        `${r.pair ?? r.browser ?? '?'} · ${name}`, String(r.transport), fmt(b.clients), fmt(r.group), fmt(b.rt?.mean, 1), fmt(b.rt?.dev, 1),
        fmt(b.rt?.p95, 1), fmt(b.lossPct, 2), fmt(b.jitterMs, 2), '–',
      ]),
    ]),
    align: aligns(header.length, 2),
  }];
}

const SECTIONS = {
  setup: { title: 'Setup delay', intro: 'Signaling open and peer setup per browser pair (initiator first).', build: setupTables },
  overhead: { title: 'Setup overhead', intro: 'Bytes and packets each way until the channel opens.', build: overheadTables },
  keepalive: { title: 'Idle keepalive', intro: 'Traffic of idle open connections.', build: keepaliveTables },
  memory: { title: 'Memory per idle connection', intro: 'Idle connections from one page, ramped to the limit.', build: memoryTables },
  cpu: { title: 'CPU under simultaneous transfers', intro: 'Client CPU as the number of concurrent transfers grows.', build: cpuTables },
  transfer: { title: 'File-transfer approaches', intro: 'One file over one channel, several channels or several connections.', build: transferTables },
  car: { title: 'Location updates per browser', intro: 'RT, loss and jitter of Chromium, Firefox and mixed fleets.', build: carTables },
};

/**
 * Sections with tables for the experiments present, in the study's order.
 * `car` runs make a section only when other experiment runs are present too
 * (a `carlab browsers` result), with their errors left out.
 * @param {any[]} runs
 * @returns {LabSection[]}
 */
export function experimentSections(runs) {
  const lab = runs.filter((r) => typeof r?.experiment === 'string');
  /** @type {LabSection[]} */
  const out = [];
  for (const experiment of EXPERIMENT_ORDER) {
    const rs = lab.filter((r) => r.experiment === experiment);
    const ok = rs.filter((r) => !r.error);
    const failed = rs.filter((r) => r.error);
    if (!rs.length) continue;
    const s = SECTIONS[/** @type {keyof typeof SECTIONS} */ (experiment)];
    /** @type {LabTable[]} */
    const tables = ok.length ? s.build(ok) : [];
    if (failed.length) {
      tables.push({
        title: `${s.title}: failed cells`,
        header: ['Pair', 'Obfuscation', 'Error'],
        rows: failed.map((r) => [String(r.pair ?? '?'), obf(Boolean(r.hideHostAddresses)), String(r.error)]),
        align: ['left', 'left', 'left'],
      });
    }
    out.push({ experiment, title: s.title, intro: s.intro, tables });
  }
  return out;
}

/**
 * The markdown of every experiment section.
 * @param {any[]} runs
 * @returns {string}
 */
export function renderExperimentTables(runs) {
  const out = [];
  for (const section of experimentSections(runs)) {
    out.push(`## ${section.title}`, '', section.intro, '');
    for (const t of section.tables) {
      out.push(`### ${t.title}`, '');
      if (t.legend) out.push(t.legend, '');
      out.push(markdownTable(t.header, t.rows, t.align), '');
    }
  }
  return out.join('\n');
}
