import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';

import { renderTables, runTables } from './output.js';
import { deviceRow, recordingSummary, timeText } from './recording-tables.js';
import { isFamilyRun, mdData, showSources, sourceLabel } from './runs.js';
import { renderSummaryLine } from './summary-line.js';
import { isUnreliable, supportedClients } from './supported.js';
import { CSV_BASE_COLUMNS, csvField, flatten, renderCsv } from './csv.js';
import { validateResults, writeResults } from './files.js';
import { fmt } from './format.js';
import { SATURATED_RULE, withLoadFlags } from './saturation.js';

const base = mkdtempSync(path.join(tmpdir(), 'carlab-output-'));
after(() => rmSync(base, { recursive: true, force: true }));

/** @typedef {import('./types.js').Run} Run */
/** @typedef {import('./types.js').Results} Results */

/**
 * A run with defaults; `over` replaces fields.
 * @param {Partial<Run>} [over]
 * @returns {Run}
 */
function makeRun(over = {}) {
  return {
    transport: 'relay',
    clients: 100,
    group: 25,
    cycleMs: 167,
    sim: true,
    rt: { mean: 50, dev: 10, p50: 48, p95: 70, p99: 80, max: 95, n: 1000 },
    rts: { mean: 1.25, max: 9 },
    cpu: { server: 20, clients: 60 },
    lossPct: 0,
    ackLossPct: 0,
    dups: 0,
    reorders: 0,
    jitterMs: 1.5,
    setupMs: null,
    channel: null,
    ...over,
  };
}

/**
 * A minimal RFC 4180 parser, for round trips.
 * @param {string} text
 * @returns {string[][]}
 */
function parseCsv(text) {
  const rows = [];
  /** @type {string[]} */
  let row = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else field += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') {
      row.push(field);
      field = '';
    } else if (ch === '\n') {
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else field += ch;
  }
  assert.equal(field, '', 'CSV ends with a newline');
  return rows;
}

describe('fmt', () => {
  test('fixed decimals, dash for missing, never -0', () => {
    assert.equal(fmt(12.6), '13');
    assert.equal(fmt(0.125, 2), '0.13');
    assert.equal(fmt(null), '–');
    assert.equal(fmt(undefined, 2), '–');
    assert.equal(fmt(NaN), '–');
    assert.equal(fmt('12'), '–');
    assert.equal(fmt(-0.001, 2), '0.00');
    assert.equal(fmt(-0.4), '0');
  });
});

describe('isUnreliable', () => {
  test('by channel maxRetransmits 0 or transport relay-udp', () => {
    assert.equal(isUnreliable(makeRun({ transport: 'p2p', channel: { ordered: false, maxRetransmits: 0 } })), true);
    assert.equal(isUnreliable(makeRun({ transport: 'relay-udp', channel: null })), true);
    assert.equal(isUnreliable(makeRun({ transport: 'p2p-reliable', channel: { ordered: true, maxRetransmits: null } })), false);
    assert.equal(isUnreliable(makeRun({ transport: 'relay' })), false);
    // p2p without a reported channel is still the unreliable mesh.
    assert.equal(isUnreliable(makeRun({ transport: 'p2p', channel: null })), true);
    // Clients that disagree: unreliable if any channel was.
    assert.equal(isUnreliable(makeRun({ transport: 'p2p', channel: { mixed: [{ maxRetransmits: null }, { maxRetransmits: 0 }] } })), true);
    assert.equal(isUnreliable(makeRun({ transport: 'p2p', channel: { mixed: [{ maxRetransmits: null }] } })), false);
    // ...but a channel read back as reliable wins.
    assert.equal(isUnreliable(makeRun({ transport: 'p2p', channel: { ordered: false, maxRetransmits: null } })), false);
  });
});

describe('supportedClients', () => {
  test('largest population with mean RT < 250 ms, per transport x group x cycle', () => {
    const runs = [
      makeRun({ clients: 300, rt: { mean: 180 } }),
      makeRun({ clients: 100, rt: { mean: 60 } }),
      makeRun({ clients: 500, rt: { mean: 250 } }), // not < 250
      makeRun({ clients: 100, group: 5, rt: { mean: 20 } }),
      makeRun({ clients: 500, group: 5, rt: { mean: 90 } }),
      makeRun({ clients: 100, cycleMs: 698, rt: { mean: 40 } }),
    ];
    const result = supportedClients(runs);
    assert.deepEqual(
      result.map(({ transport, group, cycleMs, supported, label }) => ({ transport, group, cycleMs, supported, label })),
      [
        { transport: 'relay', group: 5, cycleMs: 167, supported: 500, label: '500' },
        { transport: 'relay', group: 25, cycleMs: 167, supported: 300, label: '300' },
        { transport: 'relay', group: 25, cycleMs: 698, supported: 100, label: '100' },
      ],
    );
    assert.equal(result[1].smallest, 100);
    assert.equal(result[1].largest, 500);
  });

  test("'< smallest' when no population passes, '–' when none has a client count", () => {
    const [none] = supportedClients([makeRun({ clients: 200, rt: { mean: 400 } }), makeRun({ clients: 400, rt: { mean: 900 } })]);
    assert.equal(none.supported, null);
    assert.equal(none.label, '< 200');
    const [untested] = supportedClients([makeRun({ clients: null })]);
    assert.equal(untested.label, '–');
  });

  test('unreliable runs must also lose < 2 %; reliable runs ignore loss', () => {
    const udp = (/** @type {number} */ clients, /** @type {number | null} */ lossPct) => makeRun({ transport: 'relay-udp', clients, lossPct, rt: { mean: 100 } });
    const [entry] = supportedClients([udp(100, 0.5), udp(200, 1.99), udp(300, 2), udp(400, null)]);
    assert.equal(entry.unreliable, true);
    assert.equal(entry.supported, 200);
    const p2p = (/** @type {number} */ clients, /** @type {number} */ lossPct) =>
      makeRun({ transport: 'p2p', clients, lossPct, rt: { mean: 100 }, channel: { ordered: false, maxRetransmits: 0 } });
    assert.equal(supportedClients([p2p(10, 0), p2p(20, 5)])[0].supported, 10);
    const [reliable] = supportedClients([makeRun({ clients: 100, lossPct: 7 })]);
    assert.equal(reliable.unreliable, false);
    assert.equal(reliable.supported, 100);
  });

  test('a missing RT never passes; a size passes only if all its runs pass', () => {
    const [entry] = supportedClients([
      makeRun({ clients: 100, rt: { mean: 50 } }),
      makeRun({ clients: 200, rt: null }),
      makeRun({ clients: 300, rt: { mean: 120 } }),
      makeRun({ clients: 300, rt: { mean: 260 } }),
    ]);
    assert.equal(entry.supported, 100);
  });

  test('the largest passing population counts even past a failing one', () => {
    const [entry] = supportedClients([
      makeRun({ clients: 100, rt: { mean: 50 } }),
      makeRun({ clients: 200, rt: { mean: 300 } }),
      makeRun({ clients: 300, rt: { mean: 200 } }),
    ]);
    assert.equal(entry.supported, 300);
  });

  test('is pure and tolerates junk', () => {
    const runs = [makeRun({ clients: 100 })];
    const copy = structuredClone(runs);
    supportedClients(runs);
    assert.deepEqual(runs, copy);
    assert.deepEqual(supportedClients([]), []);
    assert.deepEqual(supportedClients(/** @type {Run[]} */ (/** @type {unknown} */ (null))), []);
  });
});

describe('renderTables', () => {
  const results = {
    env: {},
    runs: [
      makeRun({ clients: 300, rt: { mean: 168.4, dev: 70.6 }, cpu: { server: 74.25 }, rts: { mean: 3.94 }, lossPct: 0 }),
      makeRun({ clients: 100, rt: { mean: 72.5, dev: 25.2 }, cpu: { server: 31 }, rts: { mean: 1.8 }, lossPct: 0 }),
      makeRun({ transport: 'relay-udp', group: 5, clients: 100, rt: { mean: 29 }, rts: null, cpu: null, lossPct: 0.0234 }),
      makeRun({ transport: 'relay', group: 5, clients: 500, rt: { mean: 300 } }),
    ],
  };

  test('one table per transport, group and cycle, sorted by size, in the CAR layout', () => {
    const md = renderTables(results);
    const headings = md.split('\n').filter((line) => line.startsWith('### '));
    assert.deepEqual(headings, [
      '### relay · group 5 · cycle 167 ms',
      '### relay · group 25 · cycle 167 ms',
      '### relay-udp · group 5 · cycle 167 ms',
    ]);
    const table = md.split('### relay · group 25 · cycle 167 ms\n\n')[1].split('\n\n')[0].split('\n');
    assert.equal(table.length, 4);
    assert.match(table[0], /^\| Size \| +RT \| +Dev \| +CPU \| +RTS \| % loss \|$/);
    assert.match(table[1], /^\| -+: \|/);
    const cells = (/** @type {string} */ line) => line.split('|').slice(1, -1).map((cell) => cell.trim());
    assert.deepEqual(cells(table[2]), ['100', '73', '25', '31.0', '1.8', '0.00']);
    assert.deepEqual(cells(table[3]), ['300', '168', '71', '74.3', '3.9', '0.00']);
    const udp = md.split('### relay-udp · group 5 · cycle 167 ms\n\n')[1].split('\n\n')[0].split('\n');
    assert.deepEqual(cells(udp[2]), ['100', '29', '–', '–', '–', '0.02']);
  });

  test('a mixed fleet gets a row per browser; single-browser runs none', () => {
    assert.doesNotMatch(renderTables(results), /Per browser in mixed fleets/);
    const mixed = makeRun({ transport: 'p2p', clients: 10, group: 5, rt: { mean: 6 },
      byBrowser: { chromium: { clients: 5, rt: { mean: 4.4, dev: 1.2, p95: 7 }, lossPct: 0, jitterMs: 1.1 },
        firefox: { clients: 5, rt: { mean: 7.6, dev: 2, p95: 12 }, lossPct: 0.25, jitterMs: 1.9 } } });
    const md = renderTables({ env: {}, runs: [mixed] });
    const part = md.split('## Per browser in mixed fleets\n')[1];
    assert.ok(part);
    assert.match(part, /\| p2p +\| chromium +\| +10 \| +5 \| +5 \| +4 \| +1 \| +7 \| +0\.00 \| +1\.10 \|/);
    assert.match(part, /\| p2p +\| firefox +\| +10 \| +5 \| +5 \| +8 \| +2 \| +12 \| +0\.25 \| +1\.90 \|/);
  });

  test('ends with the supported clients table', () => {
    const md = renderTables(results);
    const supported = md.split('## Supported clients\n')[1];
    assert.ok(supported);
    const rows = supported.split('\n').filter((line) => line.startsWith('| ') && !/^\| -/.test(line));
    assert.match(rows[0], /Transport .*Group .*Cycle \(ms\) .*Tested .*Supported clients/);
    assert.match(rows[1], /^\| relay +\| +5 \| +167 \| +500 \| +< 500 \|$/);
    assert.match(rows[2], /^\| relay +\| +25 \| +167 \| 100–300 \| +300 \|$/);
    assert.match(rows[3], /^\| relay-udp \| +5 \| +167 \| +100 \| +100 \|$/);
  });

  test('escapes pipes and line breaks from the data; no runs renders a note', () => {
    const md = renderTables({ runs: [makeRun({ transport: 'a|b\nc' })] });
    assert.match(md, /^### a\|b c · group 25/m);
    assert.match(md, /^\| a\\\|b c +\|/m);
    assert.match(renderTables({ runs: [] }), /_No runs\._/);
  });

  test('failed runs keep their row and their reason', () => {
    const md = renderTables({ runs: [makeRun(), makeRun({ clients: 700, rt: undefined, cpu: undefined, rts: undefined, lossPct: undefined, error: 'relay did not start' })] });
    assert.match(md, /^\| +700 \| +– \| +– \| +– \| +– \| +– \|$/m);
    assert.match(md, /^- 700 clients failed: relay did not start$/m);
    assert.match(md, /\| 100–700 \| +100 \|$/m);
  });

  test('runTables groups runs with a null group or cycle last', () => {
    const tables = runTables({ runs: [makeRun({ group: null }), makeRun(), makeRun({ group: 5 }), makeRun({ transport: 'zeta' }), makeRun({ transport: 'p2p' })] });
    assert.deepEqual(tables.map((t) => t.title), [
      'relay · group 5 · cycle 167 ms',
      'relay · group 25 · cycle 167 ms',
      'relay · group – · cycle 167 ms',
      'p2p · group 25 · cycle 167 ms',
      'zeta · group 25 · cycle 167 ms',
    ]);
  });
});

describe('CSV', () => {
  test('csvField quotes commas, quotes, line breaks and outer spaces', () => {
    assert.equal(csvField('relay'), 'relay');
    assert.equal(csvField('a,b'), '"a,b"');
    assert.equal(csvField('say "hi"'), '"say ""hi"""');
    assert.equal(csvField('two\nlines'), '"two\nlines"');
    assert.equal(csvField('cr\rhere'), '"cr\rhere"');
    assert.equal(csvField(' padded'), '" padded"');
    assert.equal(csvField(null), '');
    assert.equal(csvField(undefined), '');
    assert.equal(csvField(12.5), '12.5');
    assert.equal(csvField(NaN), '');
    assert.equal(csvField(false), 'false');
    assert.equal(csvField(['a', 'b']), '"[""a"",""b""]"');
  });

  test('flatten makes dotted keys and drops nulls', () => {
    assert.deepEqual(
      [...flatten({ a: 1, b: { c: 2, d: null, e: { f: 'x' } }, g: null, h: [1, 2] })],
      [['a', 1], ['b.c', 2], ['b.e.f', 'x'], ['h', [1, 2]]],
    );
  });

  test('one row per run, flattened columns in a stable order, round-trips', () => {
    const p2p = makeRun({
      transport: 'p2p',
      browser: 'chromium, "headless"',
      sim: undefined,
      rts: null,
      channel: { ordered: false, maxRetransmits: 0 },
      setupMs: { signaling: { mean: 14, p50: 13 }, peer: { p95: 262, mean: 182 } },
      peersPerPage: 4,
    });
    const results = { runs: [makeRun({ rtWarmup: { mean: 80, n: 12 } }), p2p] };
    const rows = parseCsv(renderCsv(results));
    assert.equal(rows.length, 3);
    const [header, relay, peer] = rows;
    for (const column of CSV_BASE_COLUMNS) assert.ok(header.includes(column), column);
    assert.deepEqual(header.slice(0, 6), ['transport', 'clients', 'group', 'cycleMs', 'browser', 'sim']);
    assert.deepEqual(header.slice(6, 13), ['rt.mean', 'rt.dev', 'rt.p50', 'rt.p95', 'rt.p99', 'rt.max', 'rt.n']);
    assert.ok(header.indexOf('cpu.server') < header.indexOf('lossPct'));
    assert.deepEqual(
      header.filter((h) => h.startsWith('setupMs.')),
      ['setupMs.signaling.mean', 'setupMs.signaling.p50', 'setupMs.peer.mean', 'setupMs.peer.p95'],
    );
    // Unknown fields follow, related columns together.
    assert.deepEqual(header.slice(-3), ['rtWarmup.mean', 'rtWarmup.n', 'peersPerPage']);
    const get = (/** @type {string[]} */ row, /** @type {string} */ column) => row[header.indexOf(column)];
    assert.equal(get(relay, 'rt.mean'), '50');
    assert.equal(get(relay, 'rts.mean'), '1.25');
    assert.equal(get(relay, 'sim'), 'true');
    assert.equal(get(peer, 'browser'), 'chromium, "headless"');
    assert.equal(get(peer, 'rts.mean'), '');
    assert.equal(get(peer, 'channel.maxRetransmits'), '0');
    assert.equal(get(peer, 'setupMs.peer.p95'), '262');
    assert.equal(get(peer, 'rtWarmup.mean'), '');
    assert.ok(renderCsv(results).includes('"chromium, ""headless"""'));
  });

  test('the base columns are there even without runs', () => {
    assert.equal(renderCsv({ runs: [] }), `${CSV_BASE_COLUMNS.join(',')}\n`);
  });
});

describe('renderSummaryLine', () => {
  test('one line with the key numbers', () => {
    const line = renderSummaryLine(makeRun());
    assert.equal(
      line,
      'relay (sim) 100 clients · group 25 · 167 ms · RT 50 ± 10 ms (p95 70, max 95, n 1000) · RTS 1.3 ms · CPU server 20.0 %, clients 60.0 % · loss 0.00 % · jitter 1.5 ms',
    );
    assert.doesNotMatch(line, /\n/);
  });

  test('marks runs over the limits, shows setup and survives nulls', () => {
    const line = renderSummaryLine(
      makeRun({
        transport: 'p2p',
        sim: undefined,
        browser: { name: 'firefox', version: '140' },
        rt: { mean: 300, dev: 20 },
        lossPct: 3,
        channel: { ordered: false, maxRetransmits: 0 },
        setupMs: { signaling: { p50: 12 }, peer: { mean: 150 } },
      }),
    );
    assert.match(line, /^p2p \(firefox 140\) /);
    assert.match(line, /setup signaling 12, peer 150 ms/);
    assert.match(line, /over limit \(RT ≥ 250 ms or loss ≥ 2 %\)$/);
    assert.equal(
      renderSummaryLine({ transport: 'relay', clients: 700, group: 25, cycleMs: 167, sim: {}, error: 'boom' }),
      'relay (sim) 700 clients · group 25 · 167 ms · failed: boom',
    );
    assert.match(renderSummaryLine({ transport: 'relay' }), /^relay – clients · group – · – ms · RT – ± – ms · loss – %/);
  });
});

describe('saturated and unsettled runs', () => {
  // the point: 300 browser peers at 172 % of the 192 % two cores left them
  const saturated = withLoadFlags(makeRun({
    sim: undefined, browser: 'chromium', clients: 300, group: 5, rt: { mean: 10242, dev: 5000, p95: 20992 }, cpu: { server: 8, clients: 172 }, lossPct: 11.65,
  }), { cores: 2 });
  const calm = withLoadFlags(makeRun({ sim: undefined, browser: 'chromium', clients: 50, group: 5, cpu: { server: 8, clients: 40 } }), { cores: 2 });

  test('the summary line says so after the figures', () => {
    const line = renderSummaryLine(saturated);
    assert.match(line, /RT 10242 ± 5000 ms .* loss 11\.65 %/, 'the figures as measured');
    assert.match(line, / · SATURATED: browsers at 172 % of the 192 % left to them — this point measures the load generator$/);
    assert.doesNotMatch(renderSummaryLine(calm), /SATURATED|UNSETTLED/);
    const unsettled = withLoadFlags(makeRun({ updates: { inFlight: 400, streams: 100 } }), { cores: 64 });
    assert.match(renderSummaryLine(unsettled), / · UNSETTLED: 400 updates still in flight over 100 streams when loss was counted \(more than 3 per stream\)$/);
  });

  test('tables.md marks the size and says why under the table, naming the rule', () => {
    const md = renderTables({ env: {}, runs: [calm, saturated] });
    const rows = md.split('\n').filter((line) => /^\| +\d/.test(line));
    assert.match(rows[0], /^\| +50 \| +50 \|/, 'the calm run unmarked');
    assert.match(rows[1], /^\| 300 \[saturated\] \| 10242 \| 5000 \| +8\.0 \| +1\.3 \| +11\.65 \|$/, 'marked, figures unchanged');
    assert.ok(md.includes('- 300 clients, saturated: browsers at 172 % of the 192 % left to them (2 cores × 100 % − server 8.0 %); '
      + 'this point measures the load generator, not the transport'));
    assert.ok(md.includes(`Rule — ${SATURATED_RULE}.`));
    assert.doesNotMatch(renderTables({ env: {}, runs: [calm] }), /saturated|Rule —/);
  });
});

describe('writeResults', () => {
  const results = {
    env: { node: 'v20.20.2' },
    runs: [makeRun(), makeRun({ transport: 'relay-udp', lossPct: 0.5, channel: { ordered: false, maxRetransmits: 0 } })],
  };

  test('writes results.json, results.csv, tables.md and report.html', async () => {
    const dir = path.join(base, 'all', 'nested');
    const written = await writeResults(dir, results);
    assert.deepEqual(written, {
      json: path.join(dir, 'results.json'),
      csv: path.join(dir, 'results.csv'),
      md: path.join(dir, 'tables.md'),
      html: path.join(dir, 'report.html'),
    });
    const json = readFileSync(written.json, 'utf8');
    assert.deepEqual(JSON.parse(json), results);
    assert.match(json, /^\{\n {2}"env": \{\n/);
    assert.equal(readFileSync(written.csv, 'utf8'), renderCsv(results));
    assert.equal(readFileSync(written.md, 'utf8'), renderTables(results));
    assert.match(readFileSync(written.html, 'utf8'), /^<!doctype html>/);
  });

  test('can skip results.json and report.html', async () => {
    const dir = path.join(base, 'some');
    const written = await writeResults(dir, results, { json: false, html: false });
    assert.equal(written.json, null);
    assert.equal(written.html, null);
    assert.throws(() => readFileSync(path.join(dir, 'results.json')), { code: 'ENOENT' });
    assert.throws(() => readFileSync(path.join(dir, 'report.html')), { code: 'ENOENT' });
    readFileSync(written.csv);
  });

  test('rejects what is not a results object', async () => {
    await assert.rejects(writeResults(path.join(base, 'bad'), /** @type {Results} */ (/** @type {unknown} */ ({ runs: 'no' }))), TypeError);
    assert.equal(validateResults(null), 'results must be a JSON object');
    assert.equal(validateResults({ runs: [1] }), 'runs[0] is not an object');
    assert.equal(validateResults({ env: [], runs: [] }), '"env" must be an object');
    assert.equal(validateResults({ runs: [] }), null);
  });
});

describe('recordings and combined sources', () => {
  const rt = { mean: 40, dev: 5, p50: 38, p95: 52, p99: 60, max: 70, n: 300 };
  const fresh = { updatesPerStreamPerS: 5.5, freezeMs: { p50: 170, p99: 900, max: 1400 }, frozenPct: 0.5 };
  /** @param {Partial<Run>} over */
  const recorded = (over) => makeRun({
    sim: undefined, source: 'recording', sourceName: 'study', groupName: 'lab1', clients: 4, group: 4, cycleMs: 167, cycleMode: 'pipelined',
    rt, rts: null, cpu: { server: null, clients: null }, freshness: fresh, sessions: 4, ...over,
  });
  /** @type {Results} */
  const results = {
    env: { cpus: 2 },
    runs: [
      recorded({
        browser: 'Chrome Android', family: 'Chrome Android', clients: 3, sessions: 3, tracking: { fps: 24.46, msPerFrame: 11, visiblePct: 81.25, clients: 3 },
        playout: { modes: ['predict'], streams: 6, seconds: 300, behindMs: 12, holdingPct: 3.25, extrapolatingPct: 96.7, jumpsPerMinute: 0.4 },
      }),
      recorded({ browser: 'Safari iOS', family: 'Safari iOS', clients: 1, sessions: 2, lossPct: 1.5 }),
      recorded({ browser: 'all', families: ['Chrome Android', 'Safari iOS'], sessions: 5, lossPct: 0.4 }),
    ],
    devices: [
      { session: 'abcdef01', name: '<img src=x onerror=alert(1)>', family: 'Chrome Android', browser: 'Chrome', browserVersion: '126.0', os: 'Android', osVersion: '14',
        device: 'mobile', effectiveType: '4g', transport: 'relay', group: 'lab1', clientId: 3, kind: 'app', reports: 12, seq: 12, final: true,
        firstSeen: '2026-11-25T15:00:01.500Z', lastSeen: '2026-11-25T15:20:00.000Z', sourceName: 'study' },
    ],
    recording: { name: 'study', sessions: 5, segments: [{ file: 'a' }, { file: 'b' }], firstAt: '2026-11-25T15:00:01.500Z', lastAt: '2026-11-25T15:20:00.000Z',
      counts: { lines: 70, reports: 60, tornLines: 1, invalid: 2, other: 0, superseded: 55, idCollisions: 0 } },
  };

  test('a recording: the group in the CAR tables, every family in the Recordings section with freshness and tracking, then the devices', () => {
    const md = renderTables(results);
    const car = md.split('## Supported clients')[0];
    assert.match(car, /### relay · group 4 · cycle 167 ms pipelined\n\n\| Size \|/, 'one source: no Source column');
    assert.equal(runTables(results)[0].runs.length, 1, 'the families are parts of the group\'s run');
    assert.equal(isFamilyRun(results.runs[0]), true);
    assert.equal(isFamilyRun(results.runs[2]), false);
    const rec = md.split('## Recordings\n')[1];
    assert.ok(rec);
    assert.match(rec, /_Recording study: 5 sessions in 2 segments; 2026-11-25 15:00:01 to 2026-11-25 15:20:00 UTC; 70 lines, 60 reports; skipped 1 torn line, 2 invalid reports\._/);
    assert.match(rec, /### relay · group "lab1" · 4 clients · cycle 167 ms pipelined/);
    const rows = rec.split('\n').filter((line) => /^\| (Chrome|Safari|all)/.test(line)).map((line) => line.split('|').slice(1, -1).map((c) => c.trim()));
    assert.deepEqual(rows, [
      ['Chrome Android', '3', '3', '40', '5', '52', '–', '–', '0.00', '1.50', '5.50', '900', '0.50', '24.5', '81.3', '12', '3.3', '0.40'],
      ['Safari iOS', '1', '2', '40', '5', '52', '–', '–', '1.50', '1.50', '5.50', '900', '0.50', '–', '–', '–', '–', '–'],
      ['all', '4', '5', '40', '5', '52', '–', '–', '0.40', '1.50', '5.50', '900', '0.50', '–', '–', '–', '–', '–'],
    ]);
    assert.match(rec, /### Devices/);
    assert.match(rec, /\| abcdef01 \| \\<img src=x onerror=alert\(1\)\\> \| Chrome Android \| Chrome 126\.0 \| Android 14 \| mobile \| 4g +\| relay +\| lab1 +\| +3 \| +12 \| 2026-11-25 15:00:01 \| 2026-11-25 15:20:00 \|/);
    assert.doesNotMatch(md, /(?<!\\)<img/, 'no raw HTML from the data');
  });

  test('the data cannot format markdown; sources label runs', () => {
    assert.equal(mdData('a_b *c* `d` [e](f) <g> \\'), 'a\\_b \\*c\\* \\`d\\` \\[e\\](f) \\<g\\> \\\\');
    assert.equal(sourceLabel(results.runs[2]), 'recording study · lab1');
    assert.equal(sourceLabel(makeRun({ source: 'bench-1' })), 'bench-1');
    assert.equal(sourceLabel(makeRun()), null);
    assert.equal(showSources([makeRun(), makeRun()]), false);
    assert.equal(showSources([makeRun({ source: 'a' }), makeRun({ source: 'b' })]), true);
    assert.equal(timeText('2026-11-25T15:00:01.500Z'), '2026-11-25 15:00:01');
    assert.equal(timeText(null), '–');
    assert.deepEqual(deviceRow(/** @type {any} */ ({ name: '' })).slice(0, 3), ['–', '', '–']);
    assert.equal(recordingSummary({ name: 'x', sessions: 2, counts: { idCollisions: 2 } }), '2 sessions; 2 sessions shared a client id with another at the same time (their streams are matched to one of them)');
  });

  test('combined sources: a Source column in the CAR, supported clients and freshness tables; same shapes share a table', () => {
    const combined = { env: { cpus: 2 }, runs: [...results.runs, makeRun({ source: 'bench-1', clients: 4, group: 4, cycleMode: 'pipelined', freshness: fresh })], devices: results.devices, recordings: [results.recording] };
    const md = renderTables(/** @type {Results} */ (combined));
    const table = md.split('### relay · group 4 · cycle 167 ms pipelined\n\n')[1].split('\n\n')[0].split('\n');
    assert.match(table[0], /^\| Source +\| Size \| +RT \| +Dev \| +CPU \| +RTS \| % loss \|$/);
    assert.match(table[2], /^\| bench-1 +\| +4 \|/);
    assert.match(table[3], /^\| recording study · lab1 \| +4 \|/);
    assert.match(md.split('## Supported clients')[1], /^\| Source +\| Transport/m);
    assert.match(md.split('## Freshness at the receiver')[1], /^\| recording study · lab1 \| relay +\| pipelined \|/m);
    assert.match(renderCsv(/** @type {Results} */ (combined)).split('\n')[0], /,source,sourceName,groupName,family,families,sessions,/);
  });
});
