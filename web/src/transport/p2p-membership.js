// The p2p transports' membership: a membership-only join on the relay (no
// updates flow there). Its events drive the mesh; its outages only reach the
// display, since open channels carry on without the relay.

import { createRelayTransport } from './relay.js';

/**
 * @typedef {object} MembershipOptions
 * @property {string} relayUrl ws(s) URL of the relay
 * @property {any} [WebSocket] the browser's WebSocket or Node's `ws`, as createRelayTransport takes it
 * @property {() => number} now
 * @property {boolean | import('./relay.js').ReconnectOptions} [reconnect] rejoin after the relay
 *   went away (default true)
 * @property {(m: import('../../../core/protocol.js').SignalMsg) => void} [onSignal] a neighbour's SIGNAL (an ICE restart)
 */

/**
 * The relay connection that tells us who is in the group.
 * @param {MembershipOptions} options
 */
export function createMembership(options) {
  return createRelayTransport({
    url: options.relayUrl, batched: false, membershipOnly: true, WebSocket: options.WebSocket, now: options.now,
    reconnect: options.reconnect ?? true, onSignal: options.onSignal,
  });
}

/**
 * @typedef {object} MembershipHooks
 * @property {() => { code: number, reason: string } | null} fatal why the transport closed
 *   itself, reported instead of the membership socket's own close
 * @property {() => void} onIdChanged a rejoin was welcomed under another client id
 * @property {(w: import('../../../core/protocol.js').WelcomeMsg, sameId: boolean) => void} [onRejoined] any rejoin's WELCOME
 * @property {(fromId: number, m: import('../../../core/protocol.js').Message, arrival: number) => void} deliver
 *   an UPDATE or ACK a neighbour sent through the relay, for the receiving side
 */

/**
 * Handlers for the membership connection: members drive the mesh, a final
 * close empties it and is passed on, a rejoin re-learns the members.
 * @param {import('./p2p-mesh.js').P2PMesh} mesh
 * @param {import('../../../core/client.js').TransportHandlers} h the client core's
 * @param {MembershipHooks} hooks
 * @returns {import('../../../core/client.js').TransportHandlers}
 */
export function membershipHandlers(mesh, h, hooks) {
  return {
    // Only a neighbour on the relay fallback sends us UPDATEs and ACKs here
    // (LINK, docs/protocol.md §14.1); the relay checked their sender/acker.
    onUpdate: (m, arrival) => { if (mesh.relayedFrom(m.sender)) hooks.deliver(m.sender, m, arrival); },
    onAck: (m) => { if (mesh.relayedFrom(m.acker)) hooks.deliver(m.acker, m, 0); },
    onAckedAll: () => {},
    onMemberJoined: (m) => mesh.memberAppeared(m.id, m.name, m.reach),
    onMemberLeft: (id) => mesh.memberGone(id),
    onServerError: (m) => h.onServerError?.(m),
    onKeptScene: (m) => h.onKeptScene?.(m),
    onClose: (code, reason) => {
      mesh.leaveAll();
      const fatal = hooks.fatal();
      h.onClose(fatal?.code ?? code, fatal?.reason ?? reason);
    },
    // The relay is away: the channels carry on, so the cycle is not paused
    // (no onReconnecting to the client core); the display hears of it.
    onReconnected: (w) => {
      const sameId = mesh.rejoined(w);
      hooks.onRejoined?.(w, sameId);
      if (!sameId) hooks.onIdChanged();
    },
    onConnectionStatus: (st) => h.onConnectionStatus?.({ ...st, part: 'membership' }),
  };
}
