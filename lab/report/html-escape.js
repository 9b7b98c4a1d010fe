// Text made safe for report.html: escaped HTML text and attributes, JSON for
// a data <script> element, JavaScript for an inline <script>.

/**
 * JavaScript made safe for an inline <script>: no `</script` and no `<!--`
 * (both only ever appear inside strings or regexps, where `<\/` and `<\!`
 * mean the same).
 *
 * @param {string} code
 * @returns {string}
 */
export function inlineScript(code) {
  return code.replace(/<\/(script)/gi, '<\\/$1').replace(/<!--/g, '<\\!--');
}

/**
 * Text or an attribute value made safe for HTML.
 *
 * @param {unknown} value
 * @returns {string}
 */
export function escapeHtml(value) {
  return String(value ?? '').replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

/**
 * JSON for a `<script type="application/json">` element: `<`, `>`, `&` and
 * the JavaScript line separators are escaped, so no data can end the element.
 *
 * @param {unknown} value
 * @returns {string}
 */
export function jsonForScript(value) {
  return JSON.stringify(value ?? null)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}
