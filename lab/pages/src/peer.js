// The browser fleet page: hosts one or more simulated peers (scripted poses,
// no camera) for the e2e tests and `carlab bench`. Query parameters:
//   group      group name (peers=K > 1: K peers split into groups of `size`)
//   token      the group's access token, from the join link (optional)
//   transport  relay | relay-faithful | p2p | p2p-reliable
//   peers      peers hosted in this page (default 1)
//   size       group size (default: all in one group); offset: index of this
//              page's first peer in the population; total: population size
//              (so the last, smaller group knows its size); stride: step between
//              this page's peers (default 1; the bench under --net interleaves
//              pages so a group's members sit in different network namespaces)
//   cycle      action cycle ms (default 167);  ackTimeout ms (default 20000)
//   mode       action cycle mode: pipelined (default, the product's) | gated (the paper's)
//   warmup     ms;  updates  max updates per peer (0 = until stopped)
//   autostart  0 to wait for window.carlab.start() (default 1)
//   discard    p2p test knob: fraction of received updates to drop
// window.carlab exposes ready (a promise), start(), stop(), stats(), close().

import { Peer } from 'peerjs';
import { CarClient, DEFAULT_CYCLE_MODE, parseCycleMode } from '../../../core/client.js';
import { scriptedPose } from '../../../core/path.js';
import { summarize } from '../../../core/metrics.js';
import { createTransport } from '../../../web/src/transport/index.js';
import { joinErrorText } from '../../../web/src/ui/join-errors.js';
import { tokenFrom } from '../../../web/src/ui/join-link.js';

const q = new URLSearchParams(location.search);
const num = (/** @type {string} */ name, /** @type {number} */ dflt) => (q.has(name) ? Number(q.get(name)) : dflt);
const settings = {
  group: q.get('group') ?? 'fleet',
  token: tokenFrom(q),
  transport: q.get('transport') ?? 'relay',
  peers: num('peers', 1),
  size: num('size', 0),
  offset: num('offset', 0),
  stride: num('stride', 1),
  total: num('total', 0),
  cycleMs: num('cycle', 167),
  cycleMode: parseCycleMode(q.get('mode')) ?? DEFAULT_CYCLE_MODE,
  ackTimeoutMs: num('ackTimeout', 20000),
  warmupMs: num('warmup', 0),
  maxUpdates: num('updates', 0),
  autostart: q.get('autostart') !== '0',
  discard: num('discard', 0),
  name: q.get('name') ?? 'peer',
};

const summaryEl = /** @type {HTMLElement} */ (document.getElementById('summary'));
const tbody = /** @type {HTMLElement} */ (document.querySelector('#peers tbody'));

/** @type {CarClient[]} */
const clients = [];

async function boot() {
  const res = await fetch('/config.json');
  if (!res.ok) throw new Error(`GET /config.json: ${res.status}`);
  const config = await res.json();
  const t0 = performance.now();
  const joins = [];
  for (let i = 0; i < settings.peers; i++) {
    const index = settings.offset + i * settings.stride;
    const group = settings.size > 0 ? `${settings.group}-${Math.floor(index / settings.size)}` : settings.group;
    const transport = createTransport(settings.transport, {
      baseUrl: location.origin, config, Peer, discardIncomingFraction: settings.discard || undefined,
    });
    const client = new CarClient({
      transport, group, name: `${settings.name}${index}`, token: settings.token || undefined,
      cycleMs: settings.cycleMs, cycleMode: settings.cycleMode, ackTimeoutMs: settings.ackTimeoutMs,
      warmupMs: settings.warmupMs, maxUpdates: settings.maxUpdates,
      pose: () => scriptedPose(index, performance.now()),
    });
    clients.push(client);
    joins.push(client.connect());
  }
  await Promise.all(joins);
  return { joinMs: performance.now() - t0 };
}

function render() {
  const rows = clients.map((c, i) => {
    const rt = summarize(c.rt.slice(-200));
    // the live channel's parameters (relay-udp, p2p): core types them as a plain object
    const ch = /** @type {{ ordered?: boolean, maxRetransmits?: number | null } | null} */ (c.transport.channelInfo());
    const loss = c.transport.name.startsWith('p2p')
      ? /** @type {{ counters?: { discarded?: number } }} */ (c.transport).counters?.discarded ?? 0 : 0;
    return `<tr><td>${c.options.name}</td><td>${c.options.group}</td><td>${c.id}</td><td>${c.members.size}</td>`
      + `<td>${c.cycle.updatesSent}</td><td>${fmt(rt.mean)}</td><td>${fmt(rt.p95)}</td><td>${loss}</td>`
      + `<td>${ch ? `${ch.ordered ? 'ordered' : 'unordered'}, rtx ${ch.maxRetransmits ?? '∞'}` : ''}</td></tr>`;
  });
  tbody.innerHTML = rows.slice(0, 50).join('');
  const all = summarize(clients.flatMap((c) => c.rt));
  summaryEl.textContent = `${clients.length} peers on ${settings.transport} (${settings.cycleMode}), RT mean ${fmt(all.mean)} ms, p95 ${fmt(all.p95)} ms, n ${all.n}`;
}

/** @param {number | null} v */
function fmt(v) {
  return v === null ? '–' : v.toFixed(1);
}

const ready = boot();
window.carlab = {
  settings,
  clients,
  ready,
  start() { for (const c of clients) c.start(); },
  stop() { for (const c of clients) c.stop(); },
  stats() { return clients.map((c) => c.stats()); },
  /** Every hosted peer sees its whole working group (channels open, for p2p). */
  meshed() {
    return clients.every((c, i) => {
      if (settings.size <= 0 || settings.total <= 0) return true;
      const g = Math.floor((settings.offset + i * settings.stride) / settings.size);
      return c.members.size === Math.min(settings.size, settings.total - g * settings.size) - 1;
    });
  },
  /** Live RT of the last second, for progress bars. */
  liveRt() {
    let sum = 0; let n = 0;
    for (const c of clients) for (let i = Math.max(0, c.rt.length - 6); i < c.rt.length; i++) { sum += c.rt[i]; n++; }
    return { sum, n };
  },
  close() { for (const c of clients) c.close(); },
};
ready.then(() => {
  if (settings.autostart) window.carlab.start();
  render();
  setInterval(render, 1000);
}, (err) => {
  summaryEl.textContent = `failed: ${joinErrorText(err, {
    group: settings.group, transport: settings.transport, hasToken: settings.token !== '',
  })}`;
  summaryEl.classList.add('error');
});
