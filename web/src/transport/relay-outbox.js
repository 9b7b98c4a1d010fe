// Sending on the relay's WebSocket. Mode `relay` holds a turn's messages and
// sends them in one frame at the end of the turn (a BATCH when there are
// several); `relay-faithful` sends every message in its own frame at once.

import { MsgType, encode } from '../../../core/protocol.js';

/**
 * A message the client sends to the relay (an UPDATE, ACK, STATS or SIGNAL).
 * @typedef {import('../../../core/protocol.js').Message} OutgoingMessage
 */

/**
 * The transport's outgoing queue on whichever socket is current.
 */
export class RelayOutbox {
  /**
   * @param {boolean} batched mode `relay`: one frame per turn
   * @param {() => import('./relay-socket.js').RelaySocket | null} socket the current socket, if any
   */
  constructor(batched, socket) {
    this.batched = batched;
    this.socket = socket;
    /** @type {OutgoingMessage[]} messages waiting for the end of this turn */
    this.queued = [];
    this.flushQueued = false;
  }

  /**
   * Sends `msg`, now or at the end of the turn; dropped while no socket is open.
   * @param {OutgoingMessage} msg
   * @returns {boolean} whether a socket was open to take it
   */
  send(msg) {
    const ws = this.socket();
    if (!ws || ws.readyState !== 1) return false;
    if (!this.batched) {
      ws.send(encode(msg));
      return true;
    }
    this.queued.push(msg);
    if (!this.flushQueued) {
      this.flushQueued = true;
      // Everything this turn produces (e.g. ACKs for a whole BATCH) goes in one frame.
      queueMicrotask(() => this.flush());
    }
    return true;
  }

  /** Sends what is queued in one frame (dropped if the socket is no longer open). */
  flush() {
    this.flushQueued = false;
    const ws = this.socket();
    if (this.queued.length === 0 || !ws || ws.readyState !== 1) {
      this.queued = [];
      return;
    }
    const msg = this.queued.length === 1 ? this.queued[0] : { type: MsgType.BATCH, messages: this.queued };
    this.queued = [];
    ws.send(encode(msg));
  }
}
