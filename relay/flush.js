// When outboxes write: mode `relay` coalesces everything a turn of the event
// loop queued into one frame per socket (flushed on setImmediate), and a
// socket over its soft bound is held back (blocked) and retried on a timer
// until the client has read enough. Apart from createRelay so the timing can
// be tested with fake outboxes.

/** @typedef {import('./session.js').Outbox} Outbox */

/** How often blocked outboxes are retried, in ms. */
export const BLOCKED_RETRY_MS = 20;

/**
 * Schedules outbox flushes for one relay.
 */
export class FlushScheduler {
  /**
   * @param {number} queueSoftBytes a blocked outbox is retried once its socket holds at most this many bytes
   * @param {number} [retryMs] how often blocked outboxes are retried
   */
  constructor(queueSoftBytes, retryMs = BLOCKED_RETRY_MS) {
    this.queueSoftBytes = queueSoftBytes;
    /** Outboxes with something to write at the end of this turn. @type {Set<Outbox>} */
    this.queue = new Set();
    /** Outboxes held back as slow consumers. @type {Set<Outbox>} */
    this.blocked = new Set();
    this.pending = false;
    this.timer = setInterval(() => this.retryBlocked(), retryMs);
    this.timer.unref();
  }

  /**
   * Flushes the outbox at the end of this turn (RelayContext.scheduleFlush).
   * @param {Outbox} o
   */
  schedule(o) {
    if (o.blocked) return; // retried by the blocked timer
    this.queue.add(o);
    if (!this.pending) {
      this.pending = true;
      setImmediate(() => this.flushAll());
    }
  }

  /** Writes every scheduled outbox. */
  flushAll() {
    this.pending = false;
    const outboxes = [...this.queue];
    this.queue.clear();
    for (const o of outboxes) o.flush();
  }

  /**
   * Holds the outbox back until its socket drains (RelayContext.markBlocked).
   * @param {Outbox} o
   */
  markBlocked(o) { this.blocked.add(o); }

  /** Flushes the blocked outboxes whose socket drained; forgets those gone. */
  retryBlocked() {
    for (const o of this.blocked) {
      if (!o.active || o.session.closed) { this.blocked.delete(o); continue; }
      if (o.socket.bufferedAmount <= this.queueSoftBytes) {
        this.blocked.delete(o);
        o.flush();
      }
    }
  }

  /**
   * The outbox's session closed: nothing of it is written any more.
   * @param {Outbox} o
   */
  forget(o) {
    this.blocked.delete(o);
    this.queue.delete(o);
  }

  /** Stops the retry timer (on relay close). */
  stop() { clearInterval(this.timer); }
}
