// What a person reads when joining a group fails or the connection closes:
// close codes (docs/protocol.md §9) turned into text that says what to do, and
// a link asking for a transport this browser cannot run.
// Pure, so it is unit-tested in Node.

import { CloseCode } from '../../../core/protocol.js';
import { transportInfo } from '../../../core/transports.js';
import { canRun, missingWebRtcApis } from './capabilities.js';

/**
 * Readable text for a close code, or null when the code has none of its own.
 * @param {number | undefined} code
 * @param {{ group: string, hasToken?: boolean }} ctx
 */
export function closeCodeText(code, ctx) {
  switch (code) {
    case CloseCode.FORBIDDEN:
      return ctx.hasToken
        ? `Group "${ctx.group}" is locked with another access token than the one in your link. Ask whoever `
          + 'invited you for the current join link (or its QR code) and open that.'
        : `Group "${ctx.group}" is locked with an access token and your link has none. Ask whoever invited you `
          + 'for the join link with the token (or its QR code) and open that.';
    case CloseCode.ID_TAKEN:
      return 'Your place in the group is still taken by an earlier connection. Wait a few seconds and reload.';
    case CloseCode.RATE_LIMITED:
      return 'The server closed the connection: this device sent more messages than it allows. Reload to join again.';
    case CloseCode.SLOW_CONSUMER:
      return 'The server closed the connection: this device fell too far behind reading updates (slow network?). '
        + 'Reload to join again.';
    case CloseCode.GOING_AWAY:
      return 'The carlab server shut down. Reload once it is running again.';
    case 1006:
      return 'The connection to the carlab server dropped. Check the network and reload.';
    default:
      return null;
  }
}

/**
 * The message for a failed join (connect() rejected with `err`, whose `code`
 * is the close code when the server closed the connection).
 * @param {{ code?: number, message?: string }} err
 * @param {{ group: string, transport: string, hasToken?: boolean }} ctx
 */
export function joinErrorText(err, ctx) {
  return closeCodeText(err.code, ctx)
    ?? `Could not join group "${ctx.group}" over ${ctx.transport}: ${err.message ?? err}.`;
}

/**
 * What the AR page says when its link asks for a transport this browser
 * cannot run (p2p, p2p-reliable or relay-udp without WebRTC), or null when it
 * can. Never "unreachable": nothing is wrong with the network.
 * @param {string} transport
 * @param {import('./capabilities.js').BrowserCapabilities} caps
 */
export function unsupportedTransportText(transport, caps) {
  if (!transportInfo(transport) || canRun(transport, caps)) return null;
  return `This link asks for ${transport}, which needs WebRTC, and this browser has none (no `
    + `${missingWebRtcApis(caps)}). Nothing is wrong with the network: join over the relay, which works in every browser.`;
}

/**
 * The same page's URL with another transport: the one-tap way from a
 * transport this browser cannot run to the relay.
 * @param {string} href the page's URL
 * @param {string} transport
 */
export function withTransport(href, transport) {
  const url = new URL(href);
  url.searchParams.set('transport', transport);
  return url.href;
}
