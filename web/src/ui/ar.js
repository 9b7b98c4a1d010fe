// The AR view (ar.html): the rear camera, AR.js marker tracking, the shared
// scene drawn on the marker, the client core running the action cycle over
// the chosen transport, and the HUD.
//
// Query parameters (a deep link skips the landing form):
//   group, name     working group and display name (required; else back to the form)
//   token           the group's access token, from the join link (optional: an open group)
//   transport       relay | relay-faithful | p2p | p2p-reliable | ... (default relay)
//   cycle           action cycle in ms (default 167), or its mode (gated | pipelined);  ackTimeout  ms (default 20000)
//   mode            action cycle mode: pipelined (default: every cycle sends) | gated (the paper's: waits for the ACKs)
//   marker          pattern (default) | barcode-N (3x3 matrix marker, N in 0..63)
//   size            marker side in metres (default 0.16)
//   source          camera (default) | synthetic (the test video, drawn live) | video (with src=URL)
//                   | none (no camera: send the fixed `pose`, for demos and tests)
//   pose            x,y,z,qx,qy,qz,qw: the camera pose sent with source=none
//   probe=1         log every processed frame with the synthetic video's frame index (tests)
//   dpr             renderer pixel ratio (default: the screen's, at most 2)
//   playout         newest | ease | interpolate | predict: how avatars are drawn between updates
//   drawn=MODES     the lab's drawn-error check (drawn-check.js): every neighbour also drawn in each of
//                   these modes at every frame and measured against its synthetic video's truth
// window.carlab exposes the state and test hooks (see the bottom of this file).

import { Peer } from 'peerjs';

import { CarClient, DEFAULT_CYCLE_MODE, parseCycleMode } from '../../../core/client.js';
import { LiveLoss } from '../../../core/live-loss.js';
import { DEFAULT_PLAYOUT, PLAYOUT_MODES } from '../../../core/playout.js';
import { CloseCode } from '../../../core/protocol.js';
import { createTransport, TRANSPORTS } from '../transport/index.js';
import { DEFAULT_ACK_TIMEOUT_MS, DEFAULT_CYCLE_MS } from '../../../core/defaults.js';
import { ArScene, isUntracked, memberColour } from '../ar/scene.js';
import { DEFAULT_MARKER_SIZE_M, markerKindName, parseMarkerKind } from '../ar/marker-pattern.js';
import { posePredictedAt, startTracking } from '../ar/tracking.js';
import { Hud } from './hud.js';
import { browserCapabilities } from './capabilities.js';
import { closeCodeText, joinErrorText, unsupportedTransportText, withTransport } from './join-errors.js';
import { tokenFrom } from './join-link.js';
import { showRecordingNotice, startReports, trackingCounts } from './reports.js';
import { showKeptScenesNotice } from './kept-notice.js';
import { createDrawnCheck } from './drawn-check.js';

/** @typedef {import('../../../core/protocol.js').Pose} Pose */

/** What we send before the marker was ever seen: "not tracking" (see scene.isUntracked). */
const UNTRACKED = /** @type {Pose} */ ([0, 0, 0, 0, 0, 0, 1]);
/** Marker not seen for this long: tell the user. */
const MARKER_HELP_MS = 10_000;

const q = new URLSearchParams(location.search);

/**
 * `?playout=newest|ease|interpolate|predict`: how avatars are drawn between updates; anything else is the default.
 * @param {string | null} value
 * @returns {import('../../../core/playout.js').PlayoutMode}
 */
function playoutOf(value) {
  return PLAYOUT_MODES.find((m) => m === value) ?? DEFAULT_PLAYOUT;
}
const num = (/** @type {string} */ key, /** @type {number} */ dflt) => {
  const v = Number(q.get(key));
  return q.has(key) && Number.isFinite(v) && v > 0 ? v : dflt;
};

const settings = {
  group: (q.get('group') ?? '').trim(),
  name: (q.get('name') ?? '').trim(),
  token: tokenFrom(q),
  transport: q.get('transport') ?? 'relay',
  cycleMs: num('cycle', DEFAULT_CYCLE_MS),
  cycleMode: parseCycleMode(q.get('mode')) ?? parseCycleMode(q.get('cycle')) ?? DEFAULT_CYCLE_MODE,
  ackTimeoutMs: num('ackTimeout', DEFAULT_ACK_TIMEOUT_MS),
  markerSize: num('size', DEFAULT_MARKER_SIZE_M),
  markerParam: q.get('marker') ?? 'pattern',
  source: q.get('source') ?? 'camera',
  src: q.get('src') ?? '',
  probe: q.get('probe') === '1',
  fixedPose: parsePose(q.get('pose')),
  pixelRatio: num('dpr', Math.min(window.devicePixelRatio || 1, 2)),
  playout: playoutOf(q.get('playout')),
};

if (!settings.group || !settings.name) {
  // Not a complete deep link: let the landing form ask for the rest.
  const back = new URLSearchParams();
  for (const key of ['group', 'token', 'name', 'transport', 'cycle', 'mode']) if (q.get(key)) back.set(key, /** @type {string} */ (q.get(key)));
  location.replace(`/?${back}`);
  await new Promise(() => {}); // the page is going away: run nothing else

}

const hud = new Hud(/** @type {HTMLElement} */ (document.getElementById('hud')));
const canvas = /** @type {HTMLCanvasElement} */ (document.getElementById('scene'));
const scene = new ArScene(canvas, { markerSize: settings.markerSize, pixelRatio: settings.pixelRatio, playout: settings.playout });
/** ?drawn=: the lab's drawn-error check, null otherwise. */
const drawnCheck = createDrawnCheck(q.get('drawn'), () => client);
document.title = `carlab · ${settings.group}`;
if (scene.webglError) {
  hud.showError('webgl', 'This browser cannot draw 3D graphics (WebGL is off or unsupported), so the shared scene stays '
    + 'invisible; tracking and updates still run. Enable WebGL or try another browser.');
}

/** @type {CarClient | null} */
let client = null;
/** @type {import('../../../core/report.js').Reporter | null} the study reports, once joined */
let reporter = null;
/** @type {Awaited<ReturnType<typeof startTracking>> | null} */
let tracking = null;
const status = { connection: 'starting', rtLast: /** @type {number | null} */ (null) };
/** The newest ConnectionStatus of each of the transport's connections (relay | membership | signaling). */
const links = new Map();
/** Poses we sent, by seq (newest 300), for the tests: seq -> { pose, epoch ms }. */
const sent = new Map();
/**
 * Updates applied from others (newest 1000): { sender, seq, epoch ms of arrival }.
 * @type {{ sender: number, seq: number, epoch: number }[]}
 */
const received = [];
/** The HUD's loss estimate from what we received, re-based at each rejoin (core/live-loss.js). */
const liveLoss = new LiveLoss();
/** @type {import('../ar/tracking.js').FrameInfo[]} Processed frames (probe mode). */
const frames = [];
let lastVisible = false;

/** @type {import('../ar/marker-pattern.js').MarkerKind} */
let marker;
try {
  marker = parseMarkerKind(settings.markerParam);
} catch (err) {
  hud.showError('marker-kind', `${/** @type {Error} */ (err).message}. Using the car pattern marker.`);
  marker = parseMarkerKind('pattern');
}

/**
 * @param {string | null} text @returns {Pose | null}
 */
function parsePose(text) {
  if (!text) return null;
  const v = text.split(',').map(Number);
  if (v.length !== 7 || v.some((x) => !Number.isFinite(x))) return null;
  const n = Math.hypot(v[3], v[4], v[5], v[6]) || 1;
  return /** @type {Pose} */ ([v[0], v[1], v[2], v[3] / n, v[4] / n, v[5] / n, v[6] / n]);
}

/** The pose sent with the next update: where the camera is now relative to the marker (tracking.js posePredictedAt). */
function currentPose() {
  const pose = (tracking && posePredictedAt(tracking.latest, performance.now())) ?? settings.fixedPose ?? UNTRACKED;
  if (client) {
    sent.set(client.cycle.seq, { pose, epoch: performance.timeOrigin + performance.now() });
    if (sent.size > 300) sent.delete(sent.keys().next().value);
  }
  return pose;
}

/**
 * Client core events -> scene.
 * @param {string} event @param {any} detail
 */
function onClientEvent(event, detail) {
  drawnCheck?.onClientEvent(event, detail);
  switch (event) {
    case 'member-joined':
      scene.addAvatar(detail.id, detail.name);
      break;
    case 'member-left':
      scene.removeAvatar(detail.id);
      liveLoss.left(detail.id);
      break;
    case 'update': {
      // every arrival, a late one too: the avatar's playout refines its curve with it
      const m = detail.update;
      scene.setAvatarPose(m.sender, m.pose, { seq: m.seq, sendTime: m.sendTime, arrival: detail.arrivalTime });
      break;
    }
    case 'pose':
      liveLoss.applied(detail.id, detail.seq, client?.streams.get(detail.id));
      received.push({ sender: detail.id, seq: detail.seq, epoch: performance.timeOrigin + detail.at });
      if (received.length > 1000) received.splice(0, received.length - 1000);
      break;
    case 'scene':
      // our own edits while we drag or turn are already drawn where the finger is
      if (!(detail.local && scene.dragging && scene.dragId === detail.record.id)) scene.setSceneObject(detail.record, { remote: !detail.local });
      break;
    case 'rt':
      status.rtLast = detail;
      break;
    case 'connection':
      links.set(detail.part, detail);
      updateHud();
      break;
    case 'reconnecting':
      status.connection = 'reconnecting';
      break;
    case 'reconnected':
      status.connection = 'connected';
      if (client) liveLoss.rejoined(client.streams);
      break;
    case 'closed':
      status.connection = 'closed';
      links.clear();
      if (detail.code !== 1000) {
        hud.showError('network', closeCodeText(detail.code, { group: settings.group, hasToken: settings.token !== '' })
          ?? `Disconnected from the group (${detail.code}${detail.reason ? `: ${detail.reason}` : ''}). Reload to join again.`);
      }
      updateHud();
      break;
    default:
  }
}

async function joinGroup() {
  status.connection = 'connecting';
  if (!TRANSPORTS.includes(settings.transport)) {
    status.connection = 'error';
    hud.showError('network', `Unknown transport "${settings.transport}". Choose one of: ${TRANSPORTS.join(', ')}.`);
    throw new Error(`unknown transport ${settings.transport}`);
  }
  // A link asking for p2p, p2p-reliable or relay-udp in a browser without WebRTC: say so and offer the relay.
  const unsupported = unsupportedTransportText(settings.transport, browserCapabilities());
  if (unsupported) {
    status.connection = 'unsupported';
    hud.showError('transport', unsupported);
    offerRelay();
    updateHud();
    throw new Error(`transport ${settings.transport} needs WebRTC`);
  }
  let config;
  try {
    const res = await fetch('/config.json', { cache: 'no-store' });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    config = await res.json();
  } catch (err) {
    status.connection = 'unreachable';
    hud.showError('network', `Cannot reach the carlab server at ${location.host}. Check that it is running and that this `
      + `device is on the same network, then reload. (${/** @type {Error} */ (err).message})`);
    throw err;
  }
  const transport = createTransport(settings.transport, { baseUrl: location.origin, config, Peer });
  client = new CarClient({
    transport,
    group: settings.group,
    name: settings.name,
    token: settings.token || undefined,
    cycleMs: settings.cycleMs,
    cycleMode: settings.cycleMode,
    ackTimeoutMs: settings.ackTimeoutMs,
    pose: currentPose,
    onEvent: onClientEvent,
  });
  scene.onObjectMoved = (pose, id) => editScene(() => client?.moveSceneObject(id, pose));
  try {
    await withTimeout(client.connect(), 20_000, 'no answer within 20 s');
  } catch (caught) {
    // a join refusal carries the relay's close code; a network failure has none
    const err = /** @type {{ code?: number, message?: string }} */ (caught);
    status.connection = err.code === CloseCode.FORBIDDEN ? 'refused' : 'unreachable';
    const cert = location.protocol === 'https:' && err.code === undefined
      ? ` If this browser has not accepted the server's certificate, open ${location.origin}/ once and accept it.`
      : '';
    hud.showError('network', joinErrorText(err, {
      group: settings.group, transport: settings.transport, hasToken: settings.token !== '',
    }) + cert);
    throw err;
  }
  status.connection = 'connected';
  hud.clearError('network');
  client.start();
  showRecordingNotice(document.getElementById('study-notice'), config.reports);
  showKeptScenesNotice(document.getElementById('kept-notice'), config.keptScenes);
  reporter = startReports(client, { baseUrl: location.origin, config: config.reports, tracking: () => trackingCounts(tracking), playout: playoutReport });
  return client;
}

/** One tap to the same group over the relay, beside the page's links. */
function offerRelay() {
  const link = document.createElement('a');
  link.id = 'use-relay';
  link.href = withTransport(location.href, 'relay');
  link.textContent = 'Join over relay';
  link.style.background = '#2563eb'; // the relay's colour (core/transports.js)
  link.style.fontWeight = '700';
  document.querySelector('.ar-links')?.prepend(link);
}

async function startCamera() {
  if (settings.source === 'none') return null;
  /** @type {import('../ar/tracking.js').TrackingOptions['source']} */
  const source = settings.source === 'synthetic' ? { type: 'synthetic' }
    : settings.source === 'video' ? { type: 'video', url: settings.src }
      : { type: 'camera' };
  try {
    tracking = await startTracking({
      source,
      marker,
      markerSize: settings.markerSize,
      markerRoot: scene.markerRoot,
      probe: settings.probe,
      onFrame: (info) => {
        if (settings.probe) {
          frames.push(info);
          if (frames.length > 20000) frames.splice(0, 10000);
        }
        // show "marker found / lost" at once, not at the next HUD tick
        if (info.visible !== lastVisible) {
          lastVisible = info.visible;
          updateHud();
        }
      },
      onCamera: (camera) => {
        if (tracking) scene.setCamera(camera, tracking.element.videoWidth, tracking.element.videoHeight);
      },
    });
  } catch (err) {
    hud.showError('camera', /** @type {Error} */ (err).message);
    throw err;
  }
  scene.setCamera(tracking.camera, tracking.element.videoWidth, tracking.element.videoHeight);
  return tracking;
}

/**
 * @template T
 * @param {Promise<T>} promise @param {number} ms @param {string} message
 * @returns {Promise<T>}
 */
function withTimeout(promise, ms, message) {
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(message)), ms); }),
  ]).finally(() => clearTimeout(timer));
}

/**
 * One edit of the shared scene; a refusal (the scene is full, the object was just removed by
 * someone else) is said in the banner, and the next edit clears it.
 * @param {() => unknown} edit
 */
function editScene(edit) {
  try {
    edit();
    hud.clearError('scene');
  } catch (err) {
    const e = /** @type {{ code?: string, message?: string }} */ (err);
    if (e.code === 'NO_SUCH_OBJECT') { scene.dragging = false; return; }
    hud.showError('scene', String(e.message ?? err));
  }
}

/** The palette and the buttons that act on the selected object (ar.html #palette). */
function installPalette() {
  const palette = document.getElementById('palette');
  if (!palette) return;
  palette.addEventListener('click', (event) => {
    const button = /** @type {HTMLElement} */ (event.target).closest('button');
    if (!button || !client) return;
    const { add, turn, action } = button.dataset;
    if (add) {
      // near the marker's centre, a little apart from each other
      const a = Math.random() * Math.PI * 2;
      const r = settings.markerSize * (0.3 + Math.random() * 0.4);
      editScene(() => { const rec = client?.addObject(add, [Math.cos(a) * r, 0, Math.sin(a) * r, 0, 0, 0, 1]); if (rec) scene.select(rec.id); });
    } else if (turn) {
      scene.turnSelected((Number(turn) * Math.PI) / 180);
    } else if (action === 'remove' && scene.selectedId !== null) {
      const id = scene.selectedId;
      editScene(() => client?.removeObject(id));
    }
  });
  const selectionButtons = palette.querySelectorAll('[data-needs-selection]');
  scene.onSelect = (id) => { selectionButtons.forEach((b) => { /** @type {HTMLButtonElement} */ (b).disabled = id === null; }); };
  scene.onSelect(null);
}
installPalette();

/** The HUD's scene row: how many objects, and whether every member holds what we hold. */
function sceneState() {
  if (!client) return null;
  const behind = client.scene.notAgreeing(client.members.keys()).map((id) => client?.members.get(id)?.name ?? `#${id}`);
  return { objects: client.scene.live, behind };
}

/** How far behind its present a member's avatar is drawn now (ms), null when it is not drawn. @param {number} id */
function behindOf(id) {
  const a = scene.avatars.get(id);
  return a?.hasPose ? a.behindMs(performance.now()) : null;
}

/** How this page draws each neighbour, as far as it can know without the truth: the study report's `playout`. */
function playoutReport() {
  /** @type {Record<string, ReturnType<import('../../../core/playout.js').PlayoutWatch['summary']>>} */
  const streams = {};
  for (const [id, a] of scene.avatars) if (a.watch.ms > 0) streams[String(id)] = a.watch.summary();
  return { mode: settings.playout, streams };
}

/** The HUD's numbers. */
function hudState() {
  const rt = client ? client.rtSummary() : { mean: null, p95: null, n: 0 };
  /** `client` as of now: a const stays narrowed inside the callback below */
  const current = client;
  const jitters = [];
  if (client) {
    for (const [sender, stream] of client.streams) {
      if (liveLoss.tracks(sender) && client.members.has(sender)) jitters.push(stream.jitterMs);
    }
  }
  const ages = client ? client.freshnessAges() : new Map();
  const channel = client ? /** @type {import('./hud.js').HudState['channel'] & { links?: { id: number, path: string }[] }} */ (client.transport.channelInfo()) : null;
  // p2p transports say per neighbour how the link goes: direct, via TURN, or through the relay.
  const paths = new Map((channel?.links ?? []).map((l) => [l.id, l.path]));
  return {
    connection: status.connection,
    links: [...links.values()],
    now: performance.now(),
    transport: settings.transport,
    channel,
    clientId: client?.id ?? null,
    members: client ? [...client.members.values()].map((m) => ({
      id: m.id, name: m.name, colour: memberColour(m.id), tracking: !isUntracked(m.pose),
      ageMs: ages.get(m.id)?.ageMs ?? null, stale: ages.get(m.id)?.stale ?? false, path: paths.get(m.id),
      behindMs: behindOf(m.id),
    })) : [],
    rt: { last: status.rtLast, mean: rt.mean, p95: rt.p95, n: rt.n },
    lossPct: current ? liveLoss.lossPct(current.streams, (id) => current.members.has(id)) : null,
    jitterMs: jitters.length ? jitters.reduce((a, b) => a + b, 0) / jitters.length : null,
    trackingFps: tracking ? tracking.fps() : 0,
    trackingMs: tracking ? tracking.stats.processMs : 0,
    markerVisible: Boolean(scene.markerRoot.visible),
    cycleMs: settings.cycleMs,
    cycleMode: settings.cycleMode,
    scene: sceneState(),
  };
}

function updateHud() {
  hud.update(hudState());
  if (tracking) {
    const since = tracking.stats.lastSeenAt ?? tracking.stats.startedAt;
    if (performance.now() - since > MARKER_HELP_MS) {
      hud.showError('marker', `Marker not found for ${Math.round((performance.now() - since) / 1000)} s. Point the camera `
        + 'at the carlab marker: print it or open /marker.html on another screen.');
    } else {
      hud.clearError('marker');
    }
  }
}

// Draw at most ~30 times a second: the avatars' playout (core/playout.js) fills in between updates.
let lastFrame = 0;
function animate(/** @type {number} */ now) {
  requestAnimationFrame(animate);
  if (now - lastFrame < 30) return;
  lastFrame = now;
  const at = performance.now();
  scene.render(at);
  drawnCheck?.frame(at);
}
requestAnimationFrame(animate);
window.addEventListener('resize', () => scene.resize());
setInterval(updateHud, 250); // often enough that a neighbour's age ticks and a freeze shows within a second
updateHud();

const ready = joinGroup();
const trackingReady = startCamera();
ready.catch(() => {});
trackingReady.catch(() => {});
/** Leaves the group: the final report first (it says what this page measured), then the transport. */
function leave() {
  reporter?.finish();
  client?.close();
}
window.addEventListener('pagehide', leave);
// A phone may never fire pagehide (a killed tab): report what we have when the page is hidden.
document.addEventListener('visibilitychange', () => { if (document.visibilityState === 'hidden') reporter?.send(false); });

window.carlab = {
  settings: { ...settings, marker: markerKindName(marker) },
  /** Resolves with the client once it joined the group. */
  ready,
  /** Resolves once camera frames are being tracked. */
  trackingReady,
  get client() { return client; },
  get tracking() { return tracking; },
  get reporter() { return reporter; },
  leave,
  scene,
  sent,
  received,
  frames,
  hudState,
  /** Others' avatars: where they are drawn and where their newest pose says. */
  avatars() {
    return [...scene.avatars.entries()].map(([id, a]) => ({
      id,
      name: a.name,
      /** has a tracked pose */
      visible: a.hasPose,
      /** drawn on screen now (marker in view, not at our own camera) */
      drawn: a.group.visible && scene.markerRoot.visible,
      position: a.group.position.toArray(),
      target: a.newestPosition(),
      playout: a.playout.mode,
      behindMs: a.behindMs(),
      quaternion: a.group.quaternion.toArray(),
      seq: client?.members.get(id)?.seq ?? 0,
      screen: scene.screenPosition(a.group.position),
    }));
  },
  object() {
    return client ? { ...client.object, drawn: scene.objectPose() } : null;
  },
  /** The shared scene: every live object this member holds, with where it is drawn. */
  sceneObjects() {
    return client ? client.scene.objects().map((r) => ({ ...r, drawn: scene.objectPose(r.id), screen: scene.objectScreenPosition(r.id) })) : [];
  },
  /** The scene's digest and whom we agree with (the HUD's scene row). */
  sceneSync() {
    return client ? { digest: client.scene.digest, ...sceneState() } : null;
  },
  objectScreen() { return scene.objectScreenPosition(); },
  /** The synthetic video's first frame (ms since 1970), null for a camera: the truth's clock for other pages. */
  syntheticStart() { return tracking?.syntheticStartEpoch ?? null; },
  /** ?drawn=: the check (start, stop, truthOf, toJSON), else null. */
  drawnCheck,
};
