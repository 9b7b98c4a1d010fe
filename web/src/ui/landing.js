// Landing page: prefill the join form from a shared link (?group=&transport=&token=&mode=),
// remember the name and recent groups, make up new group names, list the
// transports this browser can run (without WebRTC only the relay ones, with a
// line saying why), and show the group's join link as a QR code for the next
// phone, with the group's access token when it has one. The form itself works
// without this script.

import QRCode from 'qrcode';

import { transportInfo } from '../../../core/transports.js';
import { browserCapabilities, cameraWarningText, canRun, missingTransportsText, usableTransports } from './capabilities.js';
import { joinLink as makeJoinLink, makeToken } from './join-link.js';
import { showRecordingNotice } from './reports.js';
import { showKeptScenesNotice } from './kept-notice.js';

const form = /** @type {HTMLFormElement} */ (document.getElementById('join'));
const field = (/** @type {string} */ name) => /** @type {HTMLInputElement | HTMLSelectElement} */ (form.elements.namedItem(name));
const groupInput = /** @type {HTMLInputElement} */ (field('group'));
const nameInput = /** @type {HTMLInputElement} */ (field('name'));
const transportSelect = /** @type {HTMLSelectElement} */ (field('transport'));
const tokenInput = /** @type {HTMLInputElement} */ (field('token'));

// Every transport of the registry this browser can run, with what it is.
const caps = browserCapabilities();
transportSelect.replaceChildren(...usableTransports(caps).map((name) => {
  const option = document.createElement('option');
  option.value = name;
  option.textContent = `${name}: ${transportInfo(name)?.label ?? ''}`;
  return option;
}));
transportSelect.value = 'relay';

const params = new URLSearchParams(location.search);
// One line on why some transports are missing (and what a link that asked for one gets instead).
const missingLine = missingTransportsText(caps);
if (missingLine) {
  const asked = params.get('transport') ?? '';
  const hint = /** @type {HTMLElement} */ (document.getElementById('transport-hint'));
  hint.textContent = transportInfo(asked) && !canRun(asked, caps)
    ? `${missingLine} The link asked for ${asked}, so relay is chosen instead.`
    : missingLine;
  hint.hidden = false;
}
// Tell before the tap when the camera cannot work here (plain http, an in-app browser).
const cameraLine = cameraWarningText(caps);
if (cameraLine) {
  const warning = /** @type {HTMLElement} */ (document.getElementById('camera-warning'));
  warning.textContent = cameraLine;
  warning.hidden = false;
}
// The action cycle's mode: ?mode=, or ?cycle=gated|pipelined (the radio group).
const modeParam = params.get('mode') ?? (['gated', 'pipelined'].includes(params.get('cycle') ?? '') ? params.get('cycle') : null);
const modeInputs = /** @type {HTMLInputElement[]} */ (Array.from(form.querySelectorAll('input[name="mode"]')));
for (const input of modeInputs) if (modeParam && input.value === modeParam) input.checked = true;

for (const key of ['group', 'token', 'name', 'transport', 'cycle', 'marker', 'size']) {
  const value = params.get(key);
  const input = field(key);
  if (key === 'cycle' && !/^\d+$/.test(value ?? '')) continue; // a mode, handled above
  if (!value || !input) continue;
  // A select set to an unknown value would submit nothing: ignore those.
  if (input instanceof HTMLSelectElement && !Array.from(input.options).some((o) => o.value === value)) continue;
  input.value = value;
}

const storage = {
  get(/** @type {string} */ key) {
    try { return localStorage.getItem(key); } catch { return null; }
  },
  set(/** @type {string} */ key, /** @type {string} */ value) {
    try { localStorage.setItem(key, value); } catch { /* storage disabled (private browsing) */ }
  },
};

if (!nameInput.value) nameInput.value = storage.get('carlab.name') ?? '';
const recent = /** @type {string[]} */ (JSON.parse(storage.get('carlab.groups') ?? '[]'));
/** @type {HTMLDataListElement} */ (document.getElementById('recent-groups')).replaceChildren(...recent.map((g) => {
  const option = document.createElement('option');
  option.value = g;
  return option;
}));

form.addEventListener('submit', () => {
  // An open group: leave `token=` out of the AR page's URL. (The token itself is
  // never stored: it belongs to the link, not to this device.)
  tokenInput.value = tokenInput.value.trim();
  if (!tokenInput.value) tokenInput.disabled = true;
  storage.set('carlab.name', nameInput.value.trim());
  const group = groupInput.value.trim();
  storage.set('carlab.groups', JSON.stringify([group, ...recent.filter((g) => g !== group)].slice(0, 8)));
});

/** A fresh group name such as `lab-k3f9`. */
function newGroupName() {
  const alphabet = 'abcdefghjkmnpqrstuvwxyz23456789';
  const bytes = crypto.getRandomValues(new Uint8Array(4));
  return `lab-${[...bytes].map((b) => alphabet[b % alphabet.length]).join('')}`;
}

document.getElementById('new-group')?.addEventListener('click', () => {
  groupInput.value = newGroupName();
  updateShare();
  groupInput.focus();
});

document.getElementById('new-token')?.addEventListener('click', () => {
  tokenInput.value = makeToken();
  updateShare();
});
// Back from the AR page (bfcache): the field may still be disabled by the submit.
window.addEventListener('pageshow', () => { tokenInput.disabled = false; });

/** The link others open to join this group (they pick their own name). */
function joinLink() {
  return makeJoinLink(location.href, {
    group: groupInput.value.trim() || 'lab',
    transport: transportSelect.value,
    token: tokenInput.validity.valid ? tokenInput.value : '',
  });
}

const qr = /** @type {HTMLElement} */ (document.getElementById('qr'));
const shareLink = /** @type {HTMLAnchorElement} */ (document.getElementById('share-link'));
let shown = '';
async function updateShare() {
  const link = joinLink();
  if (link === shown) return;
  shown = link;
  /** @type {HTMLElement} */ (document.getElementById('share-group')).textContent = groupInput.value.trim() || 'lab';
  /** @type {HTMLElement} */ (document.getElementById('share-locked')).hidden = !new URL(link).searchParams.has('token');
  shareLink.href = link;
  shareLink.textContent = link;
  try {
    qr.innerHTML = await QRCode.toString(link, { type: 'svg', margin: 1, errorCorrectionLevel: 'M' });
    qr.dataset.link = link;
  } catch (err) {
    qr.textContent = `QR code failed: ${/** @type {Error} */ (err).message}`;
  }
}
if (['localhost', '127.0.0.1', '[::1]'].includes(location.hostname)) {
  const warn = document.createElement('p');
  warn.className = 'hint warn';
  warn.textContent = 'This link names this computer as "localhost", which other phones cannot reach: open the LAN '
    + 'address that `carlab start` printed instead, and share from there.';
  qr.after(warn);
}
groupInput.addEventListener('input', updateShare);
tokenInput.addEventListener('input', updateShare);
transportSelect.addEventListener('change', updateShare);
updateShare();

document.getElementById('copy')?.addEventListener('click', async (event) => {
  const button = /** @type {HTMLButtonElement} */ (event.currentTarget);
  try {
    await navigator.clipboard.writeText(joinLink());
    button.textContent = 'Copied';
  } catch {
    button.textContent = 'Copy failed';
  }
  setTimeout(() => { button.textContent = 'Copy'; }, 1500);
});

// Say before anyone joins whether this server records measurements for a study, and keeps objects.
fetch('/config.json', { cache: 'no-store' })
  .then((res) => (res.ok ? res.json() : null))
  .then((config) => {
    showRecordingNotice(document.getElementById('study-notice'), config?.reports);
    showKeptScenesNotice(document.getElementById('kept-notice'), config?.keptScenes);
  })
  .catch(() => {});
