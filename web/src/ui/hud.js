// The AR view's heads-up display: a collapsible panel with the connection,
// the live channel parameters, the members and the measurements, and a
// banner for errors a person can act on. Plain DOM, no framework.

/**
 * @typedef {object} HudState
 * @property {string} connection e.g. 'connecting', 'connected', 'reconnecting', 'closed'
 * @property {(import('../../../core/client.js').ConnectionStatus & { at: number })[]} [links] the newest
 *   status of each of the transport's connections (client 'connection' events)
 * @property {number} [now] the clock of `links[].at`, now
 * @property {string} transport
 * @property {{ ordered?: boolean, maxRetransmits?: number | null, channels?: number } | null} channel
 * @property {{ id: number, name: string, colour: string, tracking: boolean, ageMs?: number | null, stale?: boolean, path?: string,
 *   behindMs?: number | null }[]} members
 *   `ageMs`: how long ago the member's last fresh update arrived (null: none yet); `stale`: longer than 1 s;
 *   `behindMs`: how far behind its present its avatar is drawn (core/playout.js behindMs; null: not drawn);
 *   `path` (p2p): how the link to it goes, 'direct' | 'turn' | 'relay' | 'connecting'
 *   (core/metrics.js FREEZE_MS), its avatar stands still
 * @property {number | null} clientId
 * @property {{ last: number | null, mean: number | null, p95: number | null, n: number }} rt
 * @property {number | null} lossPct
 * @property {number | null} jitterMs
 * @property {number} trackingFps
 * @property {number} trackingMs time per processed frame
 * @property {boolean} markerVisible
 * @property {number} cycleMs
 * @property {string} [cycleMode] 'pipelined' | 'gated'
 * @property {{ objects: number, behind: string[] } | null} [scene] the shared scene: live objects, and the
 *   members whose latest digest is not ours (core/scene.js notAgreeing)
 */

const STORAGE_KEY = 'carlab.hud.collapsed';

/** What each of a transport's connections is called on screen. */
const PART_LABELS = /** @type {Record<string, string>} */ ({ relay: '', membership: 'group list ', signaling: 'PeerServer ' });

/**
 * The connection line: the state, and for every connection being retried
 * "reconnecting… attempt N, next in X s" (counting down; "attempt N…" while
 * it runs). On p2p the channels keep working while the relay or the
 * PeerServer is away, so the state says connected and names what is retried.
 * @param {Pick<HudState, 'connection' | 'links' | 'now'>} s
 */
export function connectionText(s) {
  const now = s.now ?? 0;
  const retrying = (s.links ?? []).filter((l) => l.state === 'reconnecting').map((l) => {
    const wait = (l.at ?? now) + (l.delayMs ?? 0) - now;
    const label = PART_LABELS[l.part] ?? `${l.part} `;
    return `${label}reconnecting… attempt ${l.attempt ?? 1}${wait > 0 ? `, next in ${(wait / 1000).toFixed(1)} s` : '…'}`;
  });
  if (retrying.length === 0) return s.connection === 'reconnecting' ? 'reconnecting…' : s.connection;
  if (s.connection === 'connected') return `connected · ${retrying.join(' · ')}`;
  return retrying.join(' · ');
}

/**
 * How a p2p link to a member goes, in words a person reads at a glance.
 * @param {string} path 'direct' | 'turn' | 'relay' | 'connecting'
 * @returns {string}
 */
export function pathText(path) {
  return path === 'turn' ? 'via TURN' : path === 'relay' ? 'via relay' : path;
}

/**
 * How long ago a member's last fresh update arrived, for the members row:
 * "0.2 s", "stale 3.4 s" past the freeze limit, "no update yet" before any.
 * @param {{ ageMs?: number | null, stale?: boolean }} m
 */
export function ageText(m) {
  if (m.ageMs === null || m.ageMs === undefined) return 'no update yet';
  const s = m.ageMs / 1000;
  const text = s < 10 ? `${s.toFixed(1)} s` : `${Math.round(s)} s`;
  return m.stale ? `stale ${text}` : text;
}

/**
 * How far behind a member's avatar is drawn, for the members row: "drawn 120 ms behind", '' when not drawn.
 * @param {{ behindMs?: number | null }} m
 */
export function behindText(m) {
  if (m.behindMs === null || m.behindMs === undefined) return '';
  return m.behindMs < 1000 ? `drawn ${Math.round(m.behindMs)} ms behind` : `drawn ${(m.behindMs / 1000).toFixed(1)} s behind`;
}

/**
 * The scene row: "3 objects · in sync", or what is missing: "3 objects · syncing with Bo, Cy".
 * @param {{ objects: number, behind: string[] } | null | undefined} scene
 */
export function sceneText(scene) {
  if (!scene) return '–';
  const objects = `${scene.objects} object${scene.objects === 1 ? '' : 's'}`;
  return scene.behind.length === 0 ? `${objects} · in sync` : `${objects} · syncing with ${scene.behind.join(', ')}`;
}

export class Hud {
  /** @param {HTMLElement} root */
  constructor(root) {
    this.root = root;
    root.classList.add('hud');
    root.innerHTML = `
      <button type="button" class="hud-toggle" aria-expanded="true" aria-controls="hud-body">
        <span class="hud-dot" aria-hidden="true"></span><span class="hud-title">carlab</span>
        <span class="hud-brief"></span><span class="hud-chevron" aria-hidden="true">▾</span>
      </button>
      <dl class="hud-body" id="hud-body"></dl>`;
    this.toggle = /** @type {HTMLButtonElement} */ (root.querySelector('.hud-toggle'));
    this.body = /** @type {HTMLElement} */ (root.querySelector('.hud-body'));
    this.brief = /** @type {HTMLElement} */ (root.querySelector('.hud-brief'));
    this.dot = /** @type {HTMLElement} */ (root.querySelector('.hud-dot'));
    let collapsed = false;
    try { collapsed = localStorage.getItem(STORAGE_KEY) === '1'; } catch { /* storage disabled */ }
    this.setCollapsed(collapsed);
    this.toggle.addEventListener('click', () => this.setCollapsed(!this.collapsed));

    this.banner = document.createElement('div');
    this.banner.className = 'hud-banner';
    this.banner.setAttribute('role', 'alert');
    this.banner.hidden = true;
    document.body.append(this.banner);
    /** @type {Map<string, string>} error key -> message, newest last */
    this.errors = new Map();
  }

  /** @param {boolean} collapsed */
  setCollapsed(collapsed) {
    this.collapsed = collapsed;
    this.root.classList.toggle('collapsed', collapsed);
    this.toggle.setAttribute('aria-expanded', String(!collapsed));
    try { localStorage.setItem(STORAGE_KEY, collapsed ? '1' : '0'); } catch { /* storage disabled */ }
  }

  /**
   * Shows an actionable error under a key (replacing that key's previous one).
   * @param {string} key @param {string} message
   */
  showError(key, message) {
    this.errors.delete(key);
    this.errors.set(key, message);
    this.renderErrors();
  }

  /** @param {string} key */
  clearError(key) {
    if (this.errors.delete(key)) this.renderErrors();
  }

  renderErrors() {
    const messages = [...this.errors.entries()];
    this.banner.hidden = messages.length === 0;
    this.banner.replaceChildren(...messages.map(([key, text]) => {
      const p = document.createElement('p');
      p.dataset.error = key;
      p.textContent = text;
      return p;
    }));
  }

  /** @param {HudState} s */
  update(s) {
    const line = connectionText(s);
    const ok = line === 'connected';
    this.dot.dataset.state = ok ? (s.markerVisible ? 'good' : 'warn')
      : ['connecting', 'reconnecting'].includes(s.connection) || line.startsWith('connected') ? 'warn' : 'bad';
    this.root.dataset.connection = s.connection;
    // Collapsed, the brief is all one sees: an outage shows there, not the numbers.
    const stale = s.members.filter((m) => m.stale).length;
    this.brief.textContent = ok
      ? `${s.members.length + (s.clientId ? 1 : 0)} in group · RT ${ms(s.rt.mean)} · ${s.markerVisible ? 'marker ✓' : 'no marker'}`
        + (stale ? ` · ${stale} stale` : '')
      : line;
    this.root.dataset.stale = String(stale);
    const channel = s.channel
      ? `${s.channel.ordered ? 'ordered' : 'unordered'}, maxRetransmits ${s.channel.maxRetransmits ?? '∞ (reliable)'}`
        + (s.channel.channels !== undefined ? ` · ${s.channel.channels} channel${s.channel.channels === 1 ? '' : 's'}` : '')
      : '–';
    const members = s.members.length
      ? s.members.map((m) => `<span class="hud-member${m.stale ? ' hud-stale' : ''}" data-member="${m.id}" data-stale="${m.stale ? '1' : '0'}"`
        + ` style="--c:${m.colour}" title="last fresh update ${escapeHtml(ageText(m))}${m.stale ? ' ago: the avatar stands still' : ' ago'}">`
        + `${escapeHtml(m.name)}${m.tracking ? '' : ' (no pose)'} <span class="hud-age">${escapeHtml(ageText(m))}</span>`
        + `${behindText(m) ? ` <span class="hud-behind">${escapeHtml(behindText(m))}</span>` : ''}`
        + `${m.path ? ` <span class="hud-path" data-path="${escapeHtml(m.path)}">${escapeHtml(pathText(m.path))}</span>` : ''}</span>`).join(' ')
      : '<span class="hud-muted">nobody else yet</span>';
    const rows = [
      ['connection', `${escapeHtml(line)}${s.clientId ? ` · id ${s.clientId}` : ''}`],
      ['transport', `${escapeHtml(s.transport)} · cycle ${s.cycleMs} ms${s.cycleMode ? ` ${escapeHtml(s.cycleMode)}` : ''}`],
      ['channel', escapeHtml(channel)],
      ['members', members],
      ['RT', `last ${ms(s.rt.last)} · mean ${ms(s.rt.mean)} · p95 ${ms(s.rt.p95)} <span class="hud-muted">(n ${s.rt.n})</span>`],
      ['loss', s.lossPct === null ? '–' : `${s.lossPct.toFixed(1)} %`],
      ['jitter', s.jitterMs === null ? '–' : `${s.jitterMs.toFixed(1)} ms`],
      ['tracking', `${s.trackingFps.toFixed(1)} fps <span class="hud-muted">(${s.trackingMs.toFixed(0)} ms/frame)</span>`],
      ['marker', s.markerVisible ? '<span class="hud-good">visible</span>' : '<span class="hud-bad">not visible</span>'],
      ['scene', `<span class="${s.scene && s.scene.behind.length ? 'hud-warn' : 'hud-good'}">${escapeHtml(sceneText(s.scene))}</span>`],
    ];
    this.body.innerHTML = rows.map(([k, v]) => `<dt>${k}</dt><dd data-field="${k}">${v}</dd>`).join('');
  }
}

/** @param {number | null} v */
function ms(v) {
  return v === null || v === undefined ? '–' : `${v.toFixed(0)} ms`;
}

/** @param {string} s */
function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}
