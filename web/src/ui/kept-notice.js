// The notice a page shows when the server keeps groups' scenes (/config.json
// `keptScenes`, docs/operations.md "Kept scenes"): people should know before
// they place objects that the server holds them after they leave.

/**
 * How long, in words: hours up to two days, days beyond.
 * @param {number} ttlS
 */
export function keptForText(ttlS) {
  const hours = ttlS / 3600;
  if (hours < 48) {
    const h = Math.max(1, Math.round(hours));
    return `${h} hour${h === 1 ? '' : 's'}`;
  }
  const d = Math.round(hours / 24);
  return `${d} days`;
}

/**
 * The notice's text, or null when the server keeps nothing.
 * @param {{ ttlS: number } | null | undefined} kept
 * @returns {string | null}
 */
export function keptScenesText(kept) {
  if (!kept || !(kept.ttlS > 0)) return null;
  return `This server keeps each group's objects for ${keptForText(kept.ttlS)} after everyone leaves, `
    + 'for whoever joins the group next (a locked group\'s only for someone with its link).';
}

/**
 * Shows the notice in `element` when the server keeps scenes.
 * @param {HTMLElement | null} element
 * @param {{ ttlS: number } | null | undefined} kept
 */
export function showKeptScenesNotice(element, kept) {
  const text = keptScenesText(kept);
  if (!element || !text) return;
  element.textContent = text;
  element.hidden = false;
}
