import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, describe, test } from 'node:test';

import { renderTables, runTables } from './output.js';
import { groupRuns } from './runs.js';
import { renderScaleOutTable } from './scale-out-tables.js';
import { renderSummaryLine } from './summary-line.js';
import { writeResults } from './files.js';
import { renderReportHtml } from './report-html.js';
import { buildCharts } from './charts.js';
import { setupPhases } from './charts-setup-cpu.js';
import { chartJsPath } from './chartjs-source.js';
import { escapeHtml, inlineScript, jsonForScript } from './html-escape.js';
import { envRows } from './html-tables.js';
import { withLoadFlags } from './saturation.js';

const CHROMIUM = process.env.CARLAB_CHROMIUM ?? '/usr/bin/chromium';
const SCREENSHOT = '/tmp/carlab-report.png';

const base = mkdtempSync(path.join(tmpdir(), 'carlab-report-html-'));
after(() => rmSync(base, { recursive: true, force: true }));

/** @typedef {import('./types.js').Results} Results */
/** @typedef {import('./charts-common.js').ChartSpec} ChartSpec */
/** A Chart.js dataset as the tests read it. @typedef {{ label: string, data: unknown[] }} Dataset */

/**
 * report.html's window once its script ran: Chart.js and the charts it drew.
 * @typedef {Window & typeof globalThis & {
 *   Chart: { instances: Record<string, unknown> },
 *   carlabCharts: { canvas: HTMLCanvasElement, data: { datasets: unknown[] }, getDatasetMeta(i: number): { data: unknown[] } }[],
 * }} ReportWindow
 */

/**
 * The chart of a kind; throws when there is none.
 * @param {ChartSpec[]} charts
 * @param {ChartSpec['kind']} kind
 * @returns {ChartSpec}
 */
function chartOf(charts, kind) {
  const chart = charts.find((c) => c.kind === kind);
  if (!chart) throw new Error(`no ${kind} chart`);
  return chart;
}

/**
 * A realistic results object: relay and relay-udp, 100/300/500 clients,
 * groups of 5 and 25 on the 167 ms cycle, and one p2p browser run with
 * setup delays.
 * @returns {Results}
 */
function sampleResults() {
  /** @param {number} mean @param {number} dev @param {number} n */
  const rt = (mean, dev, n) => ({ mean, dev, p50: mean * 0.92, p95: mean + 1.9 * dev, p99: mean + 2.6 * dev, max: mean + 4 * dev, n });
  /** @param {number} clients @param {number} group @param {number} rtMean @param {number} dev @param {number} cpu @param {number} rts */
  const relay = (clients, group, rtMean, dev, cpu, rts) => ({
    transport: 'relay',
    clients,
    group,
    cycleMs: 167,
    sim: { engine: 'node', processes: 2 },
    rt: rt(rtMean, dev, Math.round(clients * 60 * 0.98)),
    rtWarmup: { mean: rtMean * 1.4, n: clients * 3 },
    rts: { mean: rts, max: rts * 9 },
    cpu: { server: cpu, clients: 40 + clients / 10 },
    lossPct: 0,
    ackLossPct: 0,
    dups: 0,
    reorders: 0,
    jitterMs: rtMean / 30,
    setupMs: null,
    channel: null,
    durationS: 10,
  });
  /** @param {number} clients @param {number} group @param {number} rtMean @param {number} dev @param {number} cpu @param {number} rts @param {number} lossPct */
  const udp = (clients, group, rtMean, dev, cpu, rts, lossPct) => ({
    ...relay(clients, group, rtMean, dev, cpu, rts),
    transport: 'relay-udp',
    lossPct,
    ackLossPct: lossPct * 0.9,
    dups: 0,
    reorders: Math.round(clients * lossPct),
    channel: { ordered: false, maxRetransmits: 0 },
  });
  return {
    env: {
      carlab: '0.1.0',
      node: 'v20.20.2',
      chromium: '140.0.7339.185',
      os: 'Linux 6.1.0 x64',
      cpus: [
        { model: 'Intel(R) Xeon(R) CPU @ 2.20GHz', speed: 2200 },
        { model: 'Intel(R) Xeon(R) CPU @ 2.20GHz', speed: 2200 },
      ],
      memGB: 7.8,
      flags: { transports: ['relay', 'relay-udp', 'p2p'], clients: [100, 300, 500], groups: [5, 25], warmupS: 3 },
      peersPerPage: 4,
      startedAt: '2026-03-01T10:00:00Z',
      note: '</script><script>window.pwned = 1</script> & "quoted"',
    },
    runs: [
      relay(100, 5, 38, 12, 18, 1.8),
      relay(300, 5, 61, 20, 46, 3.9),
      relay(500, 5, 104, 41, 78, 8.2),
      relay(100, 25, 72, 25, 31, 2.6),
      relay(300, 25, 168, 70, 74, 6.1),
      relay(500, 25, 291, 130, 97, 14.5),
      udp(100, 5, 29, 8, 12, 0.9, 0.02),
      udp(300, 5, 35, 10, 30, 1.3, 0.11),
      udp(500, 5, 44, 13, 52, 2.2, 0.35),
      udp(100, 25, 41, 12, 22, 1.4, 0.08),
      udp(300, 25, 58, 19, 55, 2.7, 0.6),
      udp(500, 25, 83, 27, 88, 4.9, 1.4),
      {
        transport: 'p2p',
        clients: 10,
        group: 5,
        cycleMs: 167,
        browser: 'chromium',
        peersPerPage: 5,
        rt: rt(12, 4, 580),
        rts: null,
        cpu: { server: 2.1, clients: 85 },
        lossPct: 0.3,
        ackLossPct: 0.25,
        dups: 0,
        reorders: 3,
        jitterMs: 0.8,
        setupMs: {
          signaling: { mean: 14, dev: 4, p50: 13, p95: 22, p99: 27, max: 31, n: 10 },
          peer: { mean: 182, dev: 40, p50: 171, p95: 262, p99: 290, max: 301, n: 20 },
          phases: {
            offerAnswerMs: { mean: 41, dev: 9, p50: 39, p95: 58, p99: 63, max: 66, n: 20 },
            iceConnectedMs: { mean: 118, dev: 30, p50: 110, p95: 175, p99: 190, max: 204, n: 20 },
            dtlsConnectedMs: { mean: 151, dev: 35, p50: 143, p95: 221, p99: 240, max: 259, n: 20 },
            channelOpenMs: { mean: 182, dev: 40, p50: 171, p95: 262, p99: 290, max: 301, n: 20 },
          },
          candidateTypes: { host: 20 },
          setupBytes: {
            sent: { mean: 5210, dev: 300, p50: 5180, p95: 5700, p99: 5800, max: 5900, n: 20 },
            received: { mean: 5050, dev: 280, p50: 5010, p95: 5500, p99: 5600, max: 5650, n: 20 },
            packetsSent: null,
            packetsReceived: null,
          },
        },
        channel: { ordered: false, maxRetransmits: 0 },
        durationS: 10,
      },
    ],
  };
}

describe('pieces', () => {
  test('escapeHtml and jsonForScript keep data from breaking out', () => {
    assert.equal(escapeHtml(`<a href="x">'&'</a>`), '&#60;a href=&#34;x&#34;&#62;&#39;&#38;&#39;&#60;/a&#62;');
    assert.equal(escapeHtml(null), '');
    const json = jsonForScript({ s: '</script><!-- & \u2028' });
    assert.doesNotMatch(json, /[<>&\u2028]/);
    assert.deepEqual(JSON.parse(json), { s: '</script><!-- & \u2028' });
    assert.equal(inlineScript('a="</script>";b="<!--"'), 'a="<\\/script>";b="<\\!--"');
  });

  test('Chart.js UMD build is where we read it', () => {
    assert.match(chartJsPath(), /node_modules[\\/]chart\.js[\\/]dist[\\/]chart\.umd\.js$/);
    assert.match(readFileSync(chartJsPath(), 'utf8').slice(0, 200), /Chart\.js v4\./);
  });

  test('setupPhases: timeline order, no bytes or candidate counts, tolerant', () => {
    const phases = setupPhases({
      candidateTypes: { host: 3 },
      peer: { p50: 100 },
      setupBytes: { sent: { p50: 5000 } },
      phases: { channelOpenMs: { p50: 100 }, iceConnectedMs: { p50: 60 }, extraMs: { mean: 5 }, offerAnswerMs: null },
      signaling: { mean: 10 },
      turnMs: { p95: 7 },
    });
    assert.deepEqual(phases.map(([name]) => name), ['signaling', 'ICE connected', 'peer (channel open)', 'turnMs', 'extra']);
    assert.deepEqual(setupPhases({ signaling: null, peer: { n: 0, mean: null } }), []);
    assert.deepEqual(setupPhases(null), []);
    assert.deepEqual(setupPhases({ phases: { channelOpenMs: { p50: 9 } } }).map(([name]) => name), ['channel open']);
  });

  test('envRows flattens and summarises CPUs', () => {
    const rows = new Map(envRows(sampleResults().env));
    assert.equal(rows.get('cpus'), '2 × Intel(R) Xeon(R) CPU @ 2.20GHz');
    assert.equal(rows.get('flags.groups'), '5 25');
    assert.equal(rows.get('peersPerPage'), '4');
    assert.deepEqual(envRows({ memoryBytes: 8 * 2 ** 30, libraries: { ws: '8.23.0', peer: null }, argv: ['--out', 'x'] }), [
      ['memoryBytes', '8589934592 (8.0 GiB)'],
      ['libraries.ws', '8.23.0'],
      ['libraries.peer', '–'],
      ['argv', '--out x'],
    ]);
  });
});

describe('buildCharts', () => {
  test('RT, loss, setup and CPU charts with the 250 ms line', () => {
    const charts = buildCharts(sampleResults());
    assert.deepEqual(charts.map((c) => c.kind), ['rt', 'supported', 'loss', 'setup', 'cpu']);
    assert.equal(new Set(charts.map((c) => c.id)).size, charts.length);
    const rt = charts[0].config;
    const labels = rt.data.datasets.map((/** @type {Dataset} */ d) => d.label);
    assert.deepEqual(labels, ['relay · group 5', 'relay · group 25', 'relay-udp · group 5', 'relay-udp · group 25', 'p2p · group 5', '250 ms limit']);
    const limit = rt.data.datasets.at(-1);
    assert.deepEqual(limit.data, [{ x: 0, y: 250 }, { x: 500, y: 250 }]);
    assert.ok(limit.borderDash.length);
    assert.deepEqual(rt.data.datasets[1].data.map((/** @type {{ x: number }} */ p) => p.x), [100, 300, 500]);

    const loss = charts[2].config;
    assert.deepEqual(loss.data.labels, ['group 5', 'group 25']);
    const udpLoss = loss.data.datasets.find((/** @type {Dataset} */ d) => d.label === 'relay-udp');
    assert.deepEqual(udpLoss.data, [0.35, 1.4]);

    const setup = charts[3].config;
    assert.deepEqual(setup.data.labels, ['signaling', 'offer/answer', 'ICE connected', 'DTLS connected', 'peer (channel open)']);
    assert.deepEqual(setup.data.datasets[0].data, [[13, 22], [39, 58], [110, 175], [143, 221], [171, 262]]);

    // JSON only: the page gets them through a <script type="application/json">.
    assert.deepEqual(JSON.parse(JSON.stringify(charts)), charts);
  });

  test('supported clients: grouped bars, transport x group size (x cycle when several)', () => {
    const supported = chartOf(buildCharts(sampleResults()), 'supported').config;
    assert.equal(supported.type, 'bar');
    assert.deepEqual(supported.data.labels, ['group 5', 'group 25']);
    // relay at group 25 fails at 500 (291 ms); relay-udp at 500 loses 1.4 %, under the 2 % bar.
    assert.deepEqual(supported.data.datasets.map((/** @type {Dataset} */ d) => [d.label, d.data]), [
      ['relay', [500, 300]],
      ['relay-udp', [500, 500]],
      ['p2p', [10, null]],
    ]);
    assert.deepEqual(supported.data.datasets[0].tips[1], ['tested 100–500 clients', '300 supported']);
    assert.deepEqual(supported.data.datasets[0].tips[0], ['tested 100–500 clients', 'every tested population passed: the limit may be higher']);

    // Several cycles: one category per group x cycle; a transport passing nowhere gets a 0 bar.
    const results = sampleResults();
    results.runs = results.runs.filter((run) => run.transport === 'relay');
    results.runs.push({ ...results.runs[0], clients: 200, group: 5, cycleMs: 698, rt: { ...results.runs[0].rt, mean: 260 } });
    const byCycle = chartOf(buildCharts(results), 'supported').config;
    assert.deepEqual(byCycle.data.labels, ['group 5 · 167 ms', 'group 25 · 167 ms', 'group 5 · 698 ms']);
    assert.deepEqual(byCycle.data.datasets[0].data, [500, 300, 0]);
    assert.deepEqual(byCycle.data.datasets[0].tips[2], ['tested 200 clients', 'none passed (supported < 200)']);
  });

  test('one RT chart per cycle, no setup chart without setupMs, none without data', () => {
    const results = sampleResults();
    results.runs = results.runs.filter((run) => !run.setupMs);
    results.runs.push({ ...results.runs[0], cycleMs: 698 });
    const kinds = buildCharts(results).map((c) => `${c.kind}:${c.title}`);
    assert.deepEqual(kinds, [
      'rt:Response time vs clients · cycle 167 ms',
      'rt:Response time vs clients · cycle 698 ms',
      'supported:Supported clients per transport and group size',
      'loss:Loss vs group size · cycle 167 ms',
      'loss:Loss vs group size · cycle 698 ms',
      'cpu:CPU vs clients · cycle 167 ms',
      'cpu:CPU vs clients · cycle 698 ms',
    ]);
    assert.deepEqual(buildCharts({ runs: [] }), []);
    assert.deepEqual(buildCharts({ runs: [{ transport: 'relay', clients: 5, rt: null, cpu: null, lossPct: null }] }), []);
  });
});

describe('renderReportHtml', () => {
  test('self-contained: no external references, scripts balanced, data escaped', () => {
    const html = renderReportHtml(sampleResults());
    assert.match(html, /^<!doctype html>/);
    assert.equal((html.match(/<script[\s>]/g) ?? []).length, 4);
    assert.equal((html.match(/<\/script>/g) ?? []).length, 4);
    assert.doesNotMatch(html, /\b(?:src|href)\s*=\s*["']?(?:https?:)?\/\//i);
    assert.doesNotMatch(html, /<link[^>]+stylesheet/i);
    assert.doesNotMatch(html, /@import|@font-face/);
    assert.match(html, /Content-Security-Policy" content="default-src 'none'/);
    assert.ok(!html.includes('<script>window.pwned'));
    assert.ok(html.includes('&#60;/script&#62;&#60;script&#62;window.pwned = 1&#60;/script&#62; &#38; &#34;quoted&#34;'));
    assert.match(html, /<h3>relay · group 25 · cycle 167 ms<\/h3>/);
    assert.match(html, /<td class="num bad">291<\/td>/);
  });

  test('hostile strings in runs are escaped everywhere', () => {
    const evil = '<img src=x onerror=alert(1)>';
    const html = renderReportHtml({
      env: { [evil]: evil },
      runs: [{ transport: evil, clients: 1, group: 2, cycleMs: 3, browser: evil, rt: { mean: 1 }, lossPct: 0, setupMs: { [evil]: { p50: 1, p95: 2 } } }],
    });
    assert.ok(!html.includes('<img'), 'no raw tag from the data');
  });

  test('failed runs and mixed channels show in the runs table', () => {
    const html = renderReportHtml({
      runs: [
        { transport: 'relay', clients: 700, group: 25, cycleMs: 167, sim: {}, error: 'relay did not start: EADDRINUSE' },
        { transport: 'p2p', clients: 10, group: 5, cycleMs: 167, browser: 'chromium', rt: { mean: 20 }, lossPct: 3, channel: { mixed: [{ maxRetransmits: 0 }, { maxRetransmits: null }] } },
      ],
    });
    assert.match(html, /<th scope="col">Error<\/th>/);
    assert.match(html, /<td class="err">relay did not start: EADDRINUSE<\/td>/);
    assert.match(html, /<td>mixed \(2 settings\)<\/td>/);
    assert.match(html, /<td class="num bad">3\.00<\/td>/, 'mixed with an unreliable channel counts loss');
  });

  test('a saturated run: the size marked, the note and the rule under its table, escaped', () => {
    const run = withLoadFlags({
      transport: 'relay', clients: 300, group: 5, cycleMs: 167, browser: 'chromium', rt: { mean: 10242 }, cpu: { server: 8, clients: 172 }, lossPct: 11.65,
    }, { cores: 2 });
    assert.ok(run.saturated);
    const html = renderReportHtml({ runs: [{ ...run, saturated: { ...run.saturated, rule: '<b>rule</b>' } }] });
    assert.match(html, /<td class="num warn">300 \[saturated\]<\/td>/);
    assert.match(html, /<ul class="flags"><li>300 clients, saturated: browsers at 172 % of the 192 % left to them \(2 cores × 100 % − server 8\.0 %\); this point measures the load generator, not the transport<\/li><\/ul>/);
    assert.ok(html.includes('Rule — &#60;b&#62;rule&#60;/b&#62;.'));
    assert.ok(!html.includes('<b>rule'));
    assert.match(html, /<th scope="col">Flags<\/th>/);
    assert.doesNotMatch(renderReportHtml({ runs: [{ ...run, saturated: null }] }), /\[saturated\]|class="flags"|scope="col">Flags/);
  });

  test('renders an empty results object', () => {
    const html = renderReportHtml({ runs: [] });
    assert.match(html, /No data to chart/);
    assert.match(html, /0 runs/);
  });
});

describe('report.html in headless Chromium', { skip: existsSync(CHROMIUM) ? false : `no ${CHROMIUM}` }, () => {
  test('opens offline from file:// and draws every chart', { timeout: 60_000 }, async () => {
    const dir = path.join(base, 'browser');
    const { html } = await writeResults(dir, sampleResults());
    const { chromium } = await import('@playwright/test');
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    try {
      const page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
      /** @type {string[]} */
      const errors = [];
      /** @type {string[]} */
      const failed = [];
      /** @type {string[]} */
      const requests = [];
      page.on('console', (msg) => {
        if (msg.type() === 'error' || msg.type() === 'warning') errors.push(`${msg.type()}: ${msg.text()}`);
      });
      page.on('pageerror', (err) => errors.push(`pageerror: ${err.message}`));
      page.on('requestfailed', (req) => failed.push(`${req.url()} ${req.failure()?.errorText}`));
      page.on('request', (req) => requests.push(req.url()));

      if (!html) throw new Error('writeResults wrote no report.html');
      const url = pathToFileURL(html).href;
      await page.goto(url, { waitUntil: 'load' });
      await page.waitForFunction(() => {
        const { carlabCharts } = /** @type {ReportWindow} */ (window);
        return Array.isArray(carlabCharts) && carlabCharts.length > 0;
      });

      const state = await page.evaluate(() => {
        const w = /** @type {ReportWindow} */ (window);
        const canvases = Array.from(document.querySelectorAll('canvas'));
        return {
          pwned: 'pwned' in window,
          chartInstances: Object.keys(w.Chart.instances).length,
          charts: w.carlabCharts.map((chart) => ({
            id: chart.canvas.id,
            points: chart.data.datasets.reduce((/** @type {number} */ sum, _, i) => sum + chart.getDatasetMeta(i).data.length, 0),
          })),
          canvases: canvases.map((canvas) => {
            const { width, height } = canvas;
            const context = canvas.getContext('2d');
            if (!context) throw new Error(`${canvas.id}: no 2d context`);
            const data = context.getImageData(0, 0, width, height).data;
            let painted = 0;
            const colors = new Set();
            for (let i = 0; i < data.length; i += 4) {
              if (data[i + 3] > 0) {
                painted++;
                colors.add((data[i] << 16) | (data[i + 1] << 8) | data[i + 2]);
              }
            }
            return { id: canvas.id, width, height, painted, colors: colors.size };
          }),
          tables: document.querySelectorAll('table').length,
        };
      });

      await page.screenshot({ path: SCREENSHOT, fullPage: true });

      assert.deepEqual(errors, []);
      assert.deepEqual(failed, []);
      assert.deepEqual(requests.filter((r) => r !== url), [], 'no request but the file itself');
      assert.equal(state.pwned, false);
      assert.equal(state.canvases.length, 5);
      assert.equal(state.chartInstances, 5);
      assert.deepEqual(state.charts.map((c) => c.id), state.canvases.map((c) => c.id));
      for (const chart of state.charts) assert.ok(chart.points > 0, `${chart.id} has drawn elements`);
      for (const canvas of state.canvases) {
        assert.ok(canvas.width > 100 && canvas.height > 100, `${canvas.id} has a size`);
        // Axes and grid alone are a few grey shades; data lines and bars add colours.
        assert.ok(canvas.painted > 0.02 * canvas.width * canvas.height, `${canvas.id} is painted: ${canvas.painted}`);
        assert.ok(canvas.colors > 20, `${canvas.id} has coloured data: ${canvas.colors}`);
      }
      // 5 CAR tables + supported clients + all runs + environment.
      assert.equal(state.tables, 8);
    } finally {
      await browser.close();
    }
  });
});

// ---------------------------------------------------------------------------
// The receivers' freshness, the cycle mode and the scale-out fields in tables.md,
// report.html and the terminal summary.

/**
 * @param {string} transport @param {'gated' | 'pipelined'} cycleMode @param {number} fresh @param {number} p99
 * @returns {import('./types.js').Run}
 */
const run = (transport, cycleMode, fresh, p99) => ({
  transport, clients: 20, group: 5, cycleMs: 167, cycleMode, sim: {}, net: { profile: 'lossy-5' },
  rt: { mean: 40, dev: 5, p50: 38, p95: 60, p99: 90, max: 120, n: 1000 }, rts: null, cpu: { server: 5, clients: 20 },
  lossPct: 5.1, ackLossPct: 4.9, dups: 0, reorders: 3, jitterMs: 1.2, setupMs: null, channel: null,
  freshness: { updatesPerStreamPerS: fresh, freezeMs: { p50: 167, p99, max: p99 * 2 }, frozenPct: p99 > 1000 ? 40 : 0 },
});

const freshResults = { env: { cpus: 2 }, runs: [run('relay-udp', 'pipelined', 5.66, 334), run('relay-udp', 'gated', 0.4, 20000)] };

test('tables: one CAR table per cycle mode, a freshness table with every run, the mode in the title', () => {
  assert.deepEqual(groupRuns(freshResults.runs).map((g) => g.cycleMode), ['gated', 'pipelined']);
  assert.deepEqual(runTables(freshResults).map((t) => t.title), [
    'relay-udp · group 5 · cycle 167 ms gated · net lossy-5', 'relay-udp · group 5 · cycle 167 ms pipelined · net lossy-5',
  ]);
  const md = renderTables(freshResults);
  assert.match(md, /## Freshness at the receiver/);
  assert.match(md, /\| relay-udp +\| gated +\| lossy-5 +\| +20 \| +5 \| +167 \| +0\.40 \| +167 \| +20000 \| +40000 \| +40\.00 \|/);
  assert.match(md, /\| relay-udp +\| pipelined +\| lossy-5 +\|.*\| +5\.66 \| +167 \| +334 \|/);
  assert.match(md, /Fresh\/s/, 'and in the network table');
  assert.doesNotMatch(md, /## Scale-out/, 'no cluster run');
  assert.match(renderSummaryLine(freshResults.runs[0]), /167 ms pipelined .*fresh 5\.66\/stream\/s, freeze p99 334 ms/);
  assert.equal(renderTables({ runs: [{ transport: 'relay', clients: 1, group: 1, cycleMs: 167 }] }).includes('Freshness'), false, 'older records: no section');
});

test('scale-out columns when a run has cluster or failover', () => {
  const clustered = {
    ...run('relay', 'pipelined', 5.9, 200),
    cluster: { nodes: 3, crossNodeUpdates: 4800, natsVersion: '2.10.22' },
    failover: { clientsMoved: 7, reconnectMs: { p50: 310, p99: 920, max: 990 }, lostUpdates: 14 },
  };
  const md = renderScaleOutTable([clustered, run('relay', 'gated', 1, 1)]);
  assert.match(md, /## Scale-out/);
  assert.match(md, /\| relay +\| pipelined +\| lossy-5 +\| +20 \| +3 \| +4800 \| 2\.10\.22 +\| +7 \| +310 \| +920 \| +990 \| +14 \|/);
  assert.equal(md.split('\n').filter((l) => l.startsWith('| relay')).length, 1, 'only the clustered run');
  const html = renderReportHtml({ env: { cpus: 2 }, runs: [clustered] });
  assert.match(html, /<section id="scale-out">/);
  assert.match(html, /href="#scale-out"/);
});

test('report.html: freshness charts per transport x mode and the freshness section', () => {
  const charts = buildCharts(freshResults);
  const fresh = charts.find((c) => c.kind === 'fresh');
  const freeze = charts.find((c) => c.kind === 'freeze');
  assert.ok(fresh && freeze);
  assert.deepEqual(fresh.config.data.labels, ['lossy-5 · 20 clients · group 5']);
  assert.deepEqual(fresh.config.data.datasets.map((/** @type {Dataset} */ d) => [d.label, d.data[0]]), [['relay-udp · gated', 0.4], ['relay-udp · pipelined', 5.66]]);
  assert.deepEqual(freeze.config.data.datasets.map((/** @type {Dataset} */ d) => d.data[0]), [20000, 334]);
  const html = renderReportHtml(freshResults);
  assert.match(html, /<section id="freshness">/);
  assert.match(html, /href="#freshness"/);
  assert.match(html, /<td class="num bad">20000<\/td>/, 'a freeze p99 of 1 s or more is red');
  assert.equal(buildCharts({ runs: [{ transport: 'relay', clients: 1, group: 1, cycleMs: 167 }] }).some((c) => c.kind === 'fresh'), false);
});

test('report.html: the Recordings section, escaped; the families kept out of the charts; a Source column when sources are combined', () => {
  const evil = '<img src=x onerror=alert(1)>';
  const fresh = { updatesPerStreamPerS: 5.5, freezeMs: { p50: 170, p99: 1200, max: 1400 }, frozenPct: 0.5 };
  /** @param {Record<string, unknown>} over */
  const recorded = (over) => ({
    transport: 'relay', clients: 2, group: 2, cycleMs: 167, cycleMode: 'pipelined', source: 'recording', sourceName: 'study', groupName: evil,
    rt: { mean: 300, dev: 5, p50: 290, p95: 320, p99: 330, max: 340, n: 50 }, rts: null, cpu: { server: null, clients: null },
    lossPct: 0.5, ackLossPct: 0, dups: 0, reorders: 0, jitterMs: 1, setupMs: null, channel: null, freshness: fresh, sessions: 2, ...over,
  });
  /** @type {Results} */
  const results = {
    env: { cpus: 2 },
    runs: [recorded({ browser: evil, family: evil, clients: 1 }), recorded({ browser: 'Safari iOS', family: 'Safari iOS', clients: 1 }), recorded({ browser: 'all', families: [evil, 'Safari iOS'] })],
    devices: [{ session: 'abcdef01', name: evil, family: evil, browser: evil, browserVersion: '1', os: 'Android', osVersion: '14', device: 'mobile', effectiveType: '4g',
      transport: 'relay', group: evil, clientId: 1, kind: 'app', reports: 3, seq: 3, final: true, firstSeen: '2026-11-25T15:00:00.000Z', lastSeen: '2026-11-25T15:01:00.000Z' }],
    recording: { name: evil, sessions: 2, segments: [{ file: 'a' }], counts: { lines: 4, reports: 3, tornLines: 1, invalid: 0 } },
  };
  const html = renderReportHtml(results);
  assert.ok(!html.includes('<img'), 'no raw tag from the data');
  assert.match(html, /<section id="recordings">/);
  assert.match(html, /<a href="#recordings">Recordings<\/a><a href="#supported">/);
  assert.match(html, /<h3 class="recording">Recording &#60;img src=x onerror=alert\(1\)&#62;<\/h3>/);
  assert.match(html, /<h3>relay · group &#34;&#60;img src=x onerror=alert\(1\)&#62;&#34; · 2 clients · cycle 167 ms pipelined<\/h3>/);
  assert.match(html, /<td>&#60;img src=x onerror=alert\(1\)&#62;<\/td><td class="num">1<\/td>/, 'a family row');
  assert.match(html, /<td class="num bad">300<\/td>/, 'RT over the limit is red here too');
  assert.match(html, /<td class="num bad">1200<\/td>/, 'so is a freeze p99 of 1 s');
  assert.match(html, /<th scope="col" class="num">Marker seen %<\/th>/);
  assert.match(html, /<td>abcdef01<\/td><td>&#60;img src=x onerror=alert\(1\)&#62;<\/td>/, 'the devices table');
  assert.ok(html.indexOf('id="freshness"') < html.indexOf('id="recordings"') && html.indexOf('id="recordings"') < html.indexOf('id="supported"'));
  const rt = chartOf(buildCharts(results), 'rt');
  assert.equal(rt.config.data.datasets.filter((/** @type {Dataset} */ d) => !/limit/.test(d.label)).flatMap((/** @type {Dataset} */ d) => d.data).length, 1, 'the group only');
  assert.doesNotMatch(html, /<th scope="col">Source<\/th><th scope="col" class="num">Size<\/th>/, 'one source: no Source column in the CAR tables');
  assert.match(html, /<th scope="col">Source<\/th><th scope="col">Transport<\/th><th scope="col">Driver<\/th>/, 'all runs: which recording and group');

  const combined = { ...results, runs: [...results.runs, recorded({ source: 'bench-1', sourceName: 'bench-1', groupName: undefined, browser: 'chromium' })] };
  const both = renderReportHtml(combined);
  assert.match(both, /<table><thead><tr><th scope="col">Source<\/th><th scope="col" class="num">Size<\/th>/, 'CAR tables');
  assert.match(both, /<td>bench-1<\/td><td class="num">2<\/td>/);
  assert.match(both, /<td>recording study · &#60;img src=x onerror=alert\(1\)&#62;<\/td>/);
  assert.ok(!both.includes('<img'));
});
