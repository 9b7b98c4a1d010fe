// When relay-udp offers its channel again after an attempt failed or an open
// channel went away: soon after a channel that worked, with exponential
// backoff after attempts that never opened; 50..100 % jitter either way.

/**
 * The wait before the next offer.
 */
export class ChannelRetryPolicy {
  /**
   * @param {object} o
   * @param {number} o.baseMs first delay
   * @param {number} o.maxMs cap
   * @param {() => number} [o.random] [0, 1), default Math.random
   */
  constructor({ baseMs, maxMs, random = Math.random }) {
    this.baseMs = baseMs;
    this.maxMs = maxMs;
    this.random = random;
    /** Attempts since the last channel that opened. */
    this.consecutiveFailures = 0;
  }

  /** A channel opened: the next failure starts the backoff again. */
  opened() {
    this.consecutiveFailures = 0;
  }

  /**
   * The delay before the next offer, counting this failure.
   * @param {boolean} wasOpen a channel that worked is offered again soon
   */
  nextDelay(wasOpen) {
    const base = wasOpen ? this.baseMs : Math.min(this.maxMs, this.baseMs * 2 ** this.consecutiveFailures);
    this.consecutiveFailures++;
    return base * (0.5 + this.random() / 2);
  }
}
