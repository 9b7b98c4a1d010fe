// One connected client of the relay and its outgoing queue. The outbox is
// where batching (mode `relay`) and the slow-consumer bound live.

import { encodeBatchOfBodies, frameOfBody } from '../web/src/core/protocol.js';

/**
 * An update the relay forwarded and is waiting on ACKs for.
 * @typedef {object} PendingUpdate
 * @property {Session} sender
 * @property {number} seq
 * @property {Map<Session, number>} dest destination -> forward time (ms,
 *   performance.now), NaN while still queued in the destination's outbox
 * @property {number} acked
 * @property {number} dropped destinations that never got it (slow consumer, left)
 * @property {number} createdAt
 */

/**
 * @typedef {object} OutItem
 * @property {Uint8Array} body message type + payload
 * @property {PendingUpdate | null} entry set for UPDATEs
 */

/** Most messages the relay puts in one BATCH frame (the count is a u16). */
export const MAX_BATCH = 4096;

/** WebSocket readyState OPEN. */
const OPEN = 1;

/**
 * What a session writes to: a `ws` WebSocket has this shape, and so can an
 * adapter around another channel (the relay-udp transport's data channels).
 * @typedef {object} SessionSocket
 * @property {(bytes: Uint8Array) => void} send
 * @property {number} bufferedAmount bytes accepted but not yet written out
 * @property {number} readyState 1 = open
 * @property {(code: number, reason: string) => void} close
 */

/**
 * A client connection. Created by the relay on upgrade; joins a group on HELLO.
 */
export class Session {
  /**
   * @param {SessionSocket} socket
   * @param {import('./index.js').RelayContext} ctx
   */
  constructor(socket, ctx) {
    this.socket = socket;
    this.ctx = ctx;
    /** Client id in its group (0 until joined). */
    this.id = 0;
    this.name = '';
    /** @type {import('./groups.js').Group | null} */
    this.group = null;
    /** Mode `relay`: coalesce frames, aggregate ACKs. False = `relay-faithful`. */
    this.batched = false;
    this.membershipOnly = false;
    /** Updates this client sent that await ACKs, by seq. @type {Map<number, PendingUpdate>} */
    this.pending = new Map();
    /** @type {OutItem[]} */
    this.queue = [];
    this.queuedBytes = 0;
    /** Queued UPDATE index per sender id, only kept while blocked. @type {Map<number, number>} */
    this.queuedUpdateBySender = new Map();
    this.blocked = false;
    this.flushScheduled = false;
    this.closed = false;
  }

  /**
   * Queues a message body for this client. UPDATEs carry their pending entry
   * so the forward time is stamped when the bytes are really handed to the socket.
   * @param {Uint8Array} body
   * @param {PendingUpdate | null} [entry]
   */
  push(body, entry = null) {
    if (this.closed) {
      if (entry) this.ctx.dropDestination(entry, this);
      return;
    }
    if (this.blocked && entry) {
      // Slow consumer: a newer pose from the same sender replaces the queued one.
      const senderId = entry.sender.id;
      const at = this.queuedUpdateBySender.get(senderId);
      if (at !== undefined) {
        const old = this.queue[at];
        this.queuedBytes += body.length - old.body.length;
        this.queue[at] = { body, entry };
        this.ctx.stats.droppedUpdates++;
        this.ctx.dropDestination(/** @type {PendingUpdate} */ (old.entry), this);
        return;
      }
      this.queuedUpdateBySender.set(senderId, this.queue.length);
    }
    this.queue.push({ body, entry });
    this.queuedBytes += body.length;
    if (this.blocked) {
      // Only a client that is not reading can reach the hard limit: a fast one
      // has its queue handed to the socket at the latest once it passes the soft bound.
      if (this.queuedBytes + this.socket.bufferedAmount > this.ctx.options.queueHardBytes) {
        this.ctx.closeSession(this, 4004, 'slow consumer: outgoing queue over its hard limit');
      }
      return;
    }
    if (!this.batched || this.queuedBytes > this.ctx.options.queueSoftBytes) this.flush();
    else this.ctx.scheduleFlush(this);
  }

  /**
   * Writes what is queued: one BATCH frame in mode `relay`, one frame per
   * message in `relay-faithful`. Holds back while the socket is over its soft bound.
   */
  flush() {
    this.flushScheduled = false;
    if (this.closed || this.queue.length === 0) return;
    if (this.socket.readyState !== OPEN) return;
    if (this.socket.bufferedAmount > this.ctx.options.queueSoftBytes) {
      if (!this.blocked) {
        this.blocked = true;
        this.indexQueuedUpdates();
        this.ctx.markBlocked(this);
      }
      return;
    }
    const queue = this.queue;
    this.queue = [];
    this.queuedBytes = 0;
    this.blocked = false;
    this.queuedUpdateBySender.clear();
    const now = performance.now();
    const stats = this.ctx.stats;
    for (const item of queue) {
      if (item.entry) {
        item.entry.dest.set(this, now);
        stats.updatesForwarded++;
      }
    }
    stats.messagesOut += queue.length;
    if (this.batched && queue.length > 1) {
      // A BATCH counts its messages in a u16: split very long queues.
      for (let i = 0; i < queue.length; i += MAX_BATCH) {
        const part = queue.slice(i, i + MAX_BATCH);
        const frame = part.length === 1 ? frameOfBody(part[0].body) : encodeBatchOfBodies(part.map((item) => item.body));
        stats.framesOut++;
        stats.bytesOut += frame.length;
        this.socket.send(frame);
      }
    } else {
      for (const item of queue) {
        const frame = frameOfBody(item.body);
        stats.framesOut++;
        stats.bytesOut += frame.length;
        this.socket.send(frame);
      }
    }
  }

  /** Builds the sender -> queue index used to replace stale poses. */
  indexQueuedUpdates() {
    this.queuedUpdateBySender.clear();
    this.queue.forEach((item, i) => {
      if (item.entry) this.queuedUpdateBySender.set(item.entry.sender.id, i);
    });
  }

  /** Queue entries whose updates will now never be delivered. */
  takeQueuedEntries() {
    const entries = [];
    for (const item of this.queue) if (item.entry) entries.push(item.entry);
    this.queue = [];
    this.queuedBytes = 0;
    return entries;
  }
}
