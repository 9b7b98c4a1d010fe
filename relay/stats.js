// Relay counters, server response time (RTS) and CPU sampling. Kept apart
// from the fan-out so the hot path only bumps numbers.

/** How often the CPU sampler runs, as docs/architecture.md requires. */
export const CPU_SAMPLE_MS = 500;

/**
 * Samples this process's CPU use every 0.5 s. 100 % = one core.
 */
export class CpuSampler {
  /** @param {number} [intervalMs] */
  constructor(intervalMs = CPU_SAMPLE_MS) {
    /** @type {number[]} CPU % of each interval since the last reset */
    this.samples = [];
    this.last = process.cpuUsage();
    this.lastAt = performance.now();
    this.timer = setInterval(() => this.sample(), intervalMs);
    this.timer.unref();
  }

  sample() {
    const now = performance.now();
    const usage = process.cpuUsage(this.last);
    const elapsedMs = now - this.lastAt;
    this.last = process.cpuUsage();
    this.lastAt = now;
    if (elapsedMs <= 0) return;
    const pct = ((usage.user + usage.system) / 1000 / elapsedMs) * 100;
    this.samples.push(pct);
    if (this.samples.length > 7200) this.samples.shift(); // one hour of 0.5 s samples
  }

  /** Latest sample, or null before the first. */
  get current() {
    return this.samples.length ? this.samples[this.samples.length - 1] : null;
  }

  /** Mean over the samples since the last reset, or null. */
  get mean() {
    if (!this.samples.length) return null;
    let sum = 0;
    for (const s of this.samples) sum += s;
    return sum / this.samples.length;
  }

  reset() {
    this.samples = [];
  }

  stop() {
    clearInterval(this.timer);
  }
}

/** Where RTS samples fall, in ms (upper bounds): 1 ms up to the 20 s ACK timeout. */
export const RTS_BUCKETS_MS = Object.freeze([1, 2.5, 5, 10, 25, 50, 100, 167, 250, 500, 1000, 2500, 5000, 10000, 20000]);

/**
 * Every RTS sample since the relay started, in plain buckets: one compare
 * loop and two additions per ACK, where a prom-client observe costs a
 * label hash and an object walk. server/metrics.js hands it to Prometheus
 * at scrape time. Never reset with the window (a Prometheus histogram only grows).
 */
export class RtsTally {
  /** @param {readonly number[]} [boundsMs] */
  constructor(boundsMs = RTS_BUCKETS_MS) {
    this.boundsMs = boundsMs;
    /** Samples per bucket (not cumulative); the last counts those over every bound. */
    this.counts = new Float64Array(boundsMs.length + 1);
    this.count = 0;
    this.sumMs = 0;
  }

  /** @param {number} ms */
  add(ms) {
    const bounds = this.boundsMs;
    let i = 0;
    while (i < bounds.length && ms > bounds[i]) i++;
    this.counts[i]++;
    this.count++;
    this.sumMs += ms;
  }

  /** Samples at or under each bound, as a Prometheus histogram counts them. */
  cumulative() {
    /** @type {number[]} */
    const out = [];
    let acc = 0;
    for (let i = 0; i < this.boundsMs.length; i++) out.push(acc += this.counts[i]);
    return out;
  }
}

/** The relay-udp counters of one measurement window, all zero. */
function newUdpCounters() {
  return {
    offers: 0,
    channelsOpened: 0,
    channelsClosed: 0,
    /** Peer connections given up before their channel opened (timeout, failure, replaced). */
    setupFailures: 0,
    framesIn: 0,
    framesOut: 0,
    bytesIn: 0,
    bytesOut: 0,
    /** Native sends that threw (the channel closed under us). */
    sendErrors: 0,
    /** ACKs and ACKED_ALLs for a session whose channel was not open: lost like packets. */
    noChannelDrops: 0,
    /** SIGNALs for an attempt that is no longer current. */
    staleSignals: 0,
    /** Remote candidates libdatachannel refused. */
    badCandidates: 0,
    /** Exceptions caught inside native callbacks (each would have aborted the process). */
    callbackErrors: 0,
    /** @type {Record<string, number>} peer connections taken down, by "setup|open: why" */
    lost: {},
  };
}

/**
 * The relay's counters. A measurement window starts at construction or at
 * `resetWindow()`; gauges (connected clients, groups) are not reset.
 */
export class RelayStats {
  // The window's counters, declared as fields so their types are known;
  // resetWindow() (the constructor calls it) sets them back to these values.
  /** @type {number} */ windowStartedAt = 0;
  /** @type {number} */ framesIn = 0;
  /** @type {number} */ framesOut = 0;
  /** @type {number} */ messagesIn = 0;
  /** @type {number} */ messagesOut = 0;
  /** @type {number} */ bytesIn = 0;
  /** @type {number} */ bytesOut = 0;
  /** @type {number} */ updatesIn = 0;
  /** @type {number} */ updatesForwarded = 0;
  /** @type {number} */ acksIn = 0;
  /** @type {number} */ acksForwarded = 0;
  /** @type {number} */ ackedAllSent = 0;
  /** @type {number} */ droppedUpdates = 0;
  /** @type {number} */ unexpectedAcks = 0;
  /** @type {number} */ ackTimeouts = 0;
  /** @type {number} */ slowConsumers = 0;
  /** @type {number} */ slowConsumersRecovered = 0;
  /** @type {number} */ silentEnded = 0;
  /** @type {number} */ resumed = 0;
  /** @type {number} */ replayed = 0;
  /** @type {number} */ replaysDropped = 0;
  /** @type {number} */ replayOverflow = 0;
  /** @type {number} */ peerSignalsDropped = 0;
  /** @type {number} */ rtsCount = 0;
  /** @type {number} */ rtsSum = 0;
  /** @type {number} */ rtsMax = 0;
  /** @type {Record<string, number>} */ closedByCode = {};
  udp = newUdpCounters();
  /** Every RTS sample since start, for /metrics (not the window's). */
  rtsTally = new RtsTally();

  constructor() {
    this.cpu = new CpuSampler();
    this.startedAt = Date.now();
    this.resetWindow();
  }

  resetWindow() {
    this.windowStartedAt = Date.now();
    this.framesIn = 0;
    this.framesOut = 0;
    this.messagesIn = 0;
    this.messagesOut = 0;
    this.bytesIn = 0;
    this.bytesOut = 0;
    this.updatesIn = 0;
    this.updatesForwarded = 0;
    this.acksIn = 0;
    this.acksForwarded = 0;
    this.ackedAllSent = 0;
    /** Pose updates replaced by a newer one in a slow consumer's queue. */
    this.droppedUpdates = 0;
    /** ACKs for unknown or already-acknowledged (update, destination) pairs. */
    this.unexpectedAcks = 0;
    /** (update, destination) pairs never ACKed within the ACK timeout. */
    this.ackTimeouts = 0;
    /** Members found lagging (no ACK for slowAckMs) and no longer waited for; and those that came back. */
    this.slowConsumers = 0;
    this.slowConsumersRecovered = 0;
    /** Sessions ended because nothing (no frame, no pong) came for livenessTimeoutMs (relay/liveness.js). */
    this.silentEnded = 0;
    /** Sessions taken over by a resuming HELLO (relay/resume.js). */
    this.resumed = 0;
    /** Copies written again to a resumed member (its old connection swallowed them), and its own replays dropped as known. */
    this.replayed = 0;
    this.replaysDropped = 0;
    /** Copies a lagging member could not keep for a resume (more than REPLAY_COPIES_MAX). */
    this.replayOverflow = 0;
    /** SIGNALs between p2p members with nobody to take them (the member left, or is on another node). */
    this.peerSignalsDropped = 0;
    this.rtsCount = 0;
    this.rtsSum = 0;
    this.rtsMax = 0;
    /** @type {Record<string, number>} sockets closed by the relay, by close code */
    this.closedByCode = {};
    /** relay-udp: data channels, and the frames that went over them (also counted above). */
    this.udp = newUdpCounters();
    this.cpu.reset();
  }

  /** @param {number} ms */
  recordRts(ms) {
    this.rtsTally.add(ms);
    this.rtsCount++;
    this.rtsSum += ms;
    if (ms > this.rtsMax) this.rtsMax = ms;
  }

  /** @param {number} code */
  recordClose(code) {
    this.closedByCode[code] = (this.closedByCode[code] ?? 0) + 1;
  }

  /**
   * The window's counters and the gauges, JSON-able.
   * @template {Record<string, number>} G
   * @param {G} gauges clients, groups, ...
   */
  snapshot(gauges) {
    return {
      ...gauges,
      uptimeS: (Date.now() - this.startedAt) / 1000,
      windowS: (Date.now() - this.windowStartedAt) / 1000,
      framesIn: this.framesIn,
      framesOut: this.framesOut,
      messagesIn: this.messagesIn,
      messagesOut: this.messagesOut,
      bytesIn: this.bytesIn,
      bytesOut: this.bytesOut,
      updatesIn: this.updatesIn,
      updatesForwarded: this.updatesForwarded,
      acksIn: this.acksIn,
      acksForwarded: this.acksForwarded,
      ackedAllSent: this.ackedAllSent,
      droppedUpdates: this.droppedUpdates,
      unexpectedAcks: this.unexpectedAcks,
      ackTimeouts: this.ackTimeouts,
      slowConsumers: this.slowConsumers,
      slowConsumersRecovered: this.slowConsumersRecovered,
      silentEnded: this.silentEnded,
      resumed: this.resumed,
      replayed: this.replayed,
      replaysDropped: this.replaysDropped,
      replayOverflow: this.replayOverflow,
      rts: this.rtsCount
        ? { mean: this.rtsSum / this.rtsCount, max: this.rtsMax, n: this.rtsCount }
        : { mean: null, max: null, n: 0 },
      cpuPct: this.cpu.current,
      cpuPctMean: this.cpu.mean,
      closedByCode: { ...this.closedByCode },
      udp: { ...this.udp, lost: { ...this.udp.lost } },
    };
  }

  stop() {
    this.cpu.stop();
  }
}
