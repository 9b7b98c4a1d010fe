// The marker page: carlab's marker full-screen for showing on a second
// screen, and at its true size for printing. The SVG is drawn from the same
// description as the .patt file the AR view matches (ar/marker-pattern.js).

import { DEFAULT_MARKER_SIZE_M, MARGIN, markerKindName, markerSvg, parseMarkerKind } from '../ar/marker-pattern.js';

const params = new URLSearchParams(location.search);
const form = /** @type {HTMLFormElement} */ (document.getElementById('controls'));
const markerSelect = /** @type {HTMLSelectElement} */ (form.elements.namedItem('marker'));
const sizeInput = /** @type {HTMLInputElement} */ (form.elements.namedItem('size'));
const figure = /** @type {HTMLElement} */ (document.getElementById('marker'));
const caption = /** @type {HTMLElement} */ (document.getElementById('caption'));

for (let n = 0; n < 64; n++) {
  const option = document.createElement('option');
  option.value = `barcode-${n}`;
  option.textContent = `3x3 barcode ${n}`;
  markerSelect.append(option);
}

let kind = parseMarkerKind('pattern');
try {
  kind = parseMarkerKind(params.get('marker'));
} catch {
  // unknown marker: show the pattern marker
}
const sizeM = Number(params.get('size')) > 0 ? Number(params.get('size')) : DEFAULT_MARKER_SIZE_M;
markerSelect.value = markerKindName(kind);
sizeInput.value = String(Math.round(sizeM * 1000) / 10);

function render() {
  const sizeCm = Number(sizeInput.value) > 0 ? Number(sizeInput.value) : DEFAULT_MARKER_SIZE_M * 100;
  kind = parseMarkerKind(markerSelect.value);
  figure.innerHTML = markerSvg({ kind, sizeMm: sizeCm * 10 });
  figure.dataset.marker = markerKindName(kind);
  // printed: the whole sheet (black square plus white margin) at true size
  document.documentElement.style.setProperty('--print-size', `${sizeCm * (1 + 2 * MARGIN)}cm`);
  const sizeParam = (sizeCm / 100).toFixed(3).replace(/0+$/, '').replace(/\.$/, '');
  const markerParam = kind.type === 'pattern' ? '' : `&marker=${markerKindName(kind)}`;
  caption.textContent = `${kind.type === 'pattern' ? 'carlab marker' : `3x3 barcode marker ${kind.value}`}. `
    + `Printed at 100 % the black square is ${sizeCm} cm wide. On a screen, measure the black square and `
    + `join with that size (in metres), e.g. …&size=${sizeParam}${markerParam}.`;
  const url = new URL(location.href);
  url.searchParams.set('marker', markerKindName(kind));
  url.searchParams.set('size', sizeParam);
  history.replaceState(null, '', url);
}

markerSelect.addEventListener('change', render);
sizeInput.addEventListener('input', render);
document.getElementById('print')?.addEventListener('click', () => window.print());
render();
