// The client core, the same in a phone's browser and in a Node load client:
// joins a working group through a transport, runs the action cycle, ACKs
// every update it receives, keeps the newest pose of every member and the
// group's shared scene (core/scene.js), and collects the measurements. No
// DOM, no Node built-ins.

import { DEFAULT_ACK_TIMEOUT_MS, DEFAULT_CYCLE_MS } from './defaults.js';
import { ActionCycle, CYCLE_MODES } from './cycle.js';
import { FREEZE_MS, ReceiveStream, summarize, summarizeFreshness } from './metrics.js';
import { CloseCode } from './protocol.js';
import { CAR_ID, SharedScene } from './scene.js';

/**
 * What every transport implements (web/src/transport/*).
 * @typedef {object} Transport
 * @property {string} name e.g. 'relay', 'relay-faithful', 'p2p'
 * @property {(join: JoinParams, handlers: TransportHandlers) => Promise<import('./protocol.js').WelcomeMsg>} connect
 * @property {(update: import('./protocol.js').UpdateMsg) => void} sendUpdate to every neighbour
 * @property {(sender: number, seq: number, acker: number) => void} sendAck to the update's sender
 * @property {(stats: object) => boolean} [sendStats] a report (or end-of-run counters) to the server as
 *   STATS on the client's relay session: false when no session is open to take it
 * @property {() => object | null} channelInfo live channel parameters, null where there is no channel
 * @property {() => object | null} [setupInfo] setup delays, where the transport measures them
 * @property {ServerClock | null} [serverClock] the server's clock as estimated at the join
 *   (web/src/transport/relay-connection.js): study reports put scene times on it
 * @property {() => void} close
 *
 * @typedef {object} ServerClock
 * @property {number} offsetMs server epoch ms = local epochNow() + offsetMs
 * @property {number} errorMs give or take (half the round trip it was measured over)
 *
 * @typedef {object} JoinParams
 * @property {string} group
 * @property {string} name
 * @property {number} [clientId] 0 or absent: the server assigns one
 * @property {string} [token]
 *
 * @typedef {object} TransportHandlers
 * @property {(m: import('./protocol.js').WelcomeMsg) => void} [onWelcome] call synchronously on
 *   WELCOME, before any later message of the same frame, so a MEMBER_LEFT batched behind it
 *   cannot be applied before the members it removes were added
 * @property {(m: import('./protocol.js').UpdateMsg, arrivalTime: number) => void} onUpdate
 * @property {(m: import('./protocol.js').AckMsg) => void} onAck
 * @property {(m: import('./protocol.js').AckedAllMsg) => void} onAckedAll
 * @property {(m: import('./protocol.js').SupersededMsg) => void} [onSuperseded] the relay replaced a
 *   sender's queued poses by a newer one (docs/protocol.md §5.13; only relays that granted the capability)
 * @property {(m: import('./protocol.js').Member) => void} onMemberJoined
 * @property {(id: number) => void} onMemberLeft
 * @property {(m: import('./protocol.js').KeptSceneMsg) => void} [onKeptScene] the scene the server kept of the
 *   group, to its first member back (docs/protocol.md §5.14)
 * @property {(m: import('./protocol.js').ErrorMsg) => void} [onServerError] an ERROR from the relay:
 *   informational, the session stays open (a refused report, docs/protocol.md §5.9)
 * @property {(code: number, reason: string) => void} onClose the connection is gone for good
 * @property {(info: { code: number, reason: string }) => void} [onReconnecting] the connection
 *   dropped and the transport is reconnecting (transports that can)
 * @property {(m: import('./protocol.js').WelcomeMsg) => void} [onReconnected] rejoined: the new
 *   WELCOME, called synchronously like onWelcome
 * @property {(s: ConnectionStatus) => void} [onConnectionStatus] for display only: a connection of
 *   the transport is up, or down and retried (every attempt); the data path may still work (p2p
 *   channels stay open while the PeerServer is away)
 *
 * @typedef {object} ConnectionStatus
 * @property {'connected' | 'reconnecting'} state
 * @property {string} part which connection: 'relay', or for p2p 'membership' | 'signaling'
 * @property {number} [attempt] reconnecting: the number of the attempt that comes next (1 = first)
 * @property {number} [delayMs] reconnecting: the wait before it
 * @property {number} [code] reconnecting: close code of the connection that dropped, when known
 */

/**
 * @typedef {object} ClientOptions
 * @property {Transport} transport
 * @property {string} group
 * @property {string} name
 * @property {number} [clientId]
 * @property {string} [token]
 * @property {number} [cycleMs] default DEFAULT_CYCLE_MS (core/defaults.js)
 * @property {number} [ackTimeoutMs] default DEFAULT_ACK_TIMEOUT_MS, as in the paper
 * @property {number} [warmupMs] default 0
 * @property {number} [maxUpdates] stop the cycle after this many updates (0 = run until stopped)
 * @property {import('./cycle.js').CycleMode} [cycleMode] 'pipelined' (the product's: the app and the
 *   bench pass it) or 'gated' (the paper's); absent: 'gated', so callers that predate the modes keep
 *   the cycle they were written against
 * @property {() => import('./protocol.js').Pose} pose the newest local pose
 * @property {() => number} [now] monotonic ms clock, default performance.now
 * @property {() => number} [epochNow] ms since 1970 for the scene log, which members of one run
 *   compare: default performance.timeOrigin + performance.now()
 * @property {(event: string, detail?: any) => void} [onEvent] UI hook:
 *   'member-joined', 'member-left', 'pose' (a member's newest pose), 'update' (every arrival: { update, arrivalTime }), 'object' (the legacy car moved), 'scene' (a scene record
 *   changed: { record, local }), 'rt', 'sent' (an update went out: { seq, sendTime }), 'closed',
 *   'reconnecting' ({ code, reason }), 'reconnected' ({ outageMs, id }),
 *   'connection' (a ConnectionStatus with `at`, the client clock when it came)
 */

/**
 * @typedef {{ at: number, local: boolean, record: import('./protocol.js').SceneRecord }} SceneLogEntry
 *   at: ms since 1970; local: our own edit
 */

/** Scene log entries a client keeps (a minute of heavy editing in a group of 25 is ~20 000). */
export const SCENE_LOG_MAX = 100_000;

export { DEFAULT_ACK_TIMEOUT_MS, DEFAULT_CYCLE_MS, CYCLE_MODES, FREEZE_MS };

/** The product's cycle mode: what the app and the bench use unless told otherwise. */
export const DEFAULT_CYCLE_MODE = CYCLE_MODES[0];

/**
 * A cycle mode from a URL or flag value ('pipelined' | 'gated'), else null.
 * @param {unknown} value
 * @returns {import('./cycle.js').CycleMode | null}
 */
export function parseCycleMode(value) {
  const v = String(value ?? '').trim().toLowerCase();
  return /** @type {readonly string[]} */ (CYCLE_MODES).includes(v) ? /** @type {import('./cycle.js').CycleMode} */ (v) : null;
}

/**
 * One participant of a working group.
 */
export class CarClient {
  /** @param {ClientOptions} options */
  constructor(options) {
    this.options = options;
    this.transport = options.transport;
    this.now = options.now ?? (() => performance.now());
    this.id = 0;
    /** @type {Map<number, { id: number, name: string, pose: import('./protocol.js').Pose | null, seq: number, sendTime: number, at: number }>} at: arrival */
    this.members = new Map();
    /** @type {Map<number, ReceiveStream>} by sender id */
    this.streams = new Map();
    /** @type {number[]} */
    this.rt = [];
    /** @type {number[]} */
    this.rtWarmup = [];
    const epochNow = options.epochNow ?? (() => performance.timeOrigin + performance.now());
    this.epochNow = epochNow;
    /** @type {number | null} when we joined (ms since 1970): our scene log's start */
    this.joinedEpoch = null;
    /** @type {SceneLogEntry[]} every change of what this member holds, for convergence and disagreement */
    this.sceneLog = [];
    /** The group's shared scene; the legacy single object is its car (CAR_ID). */
    this.scene = new SharedScene({
      now: this.now,
      onChange: (record, local) => {
        if (this.sceneLog.length < SCENE_LOG_MAX) this.sceneLog.push({ at: epochNow(), local, record });
        this.emit('scene', { record, local });
        if (record.id === CAR_ID) this.emit('object', this.object);
      },
    });
    /**
     * Updates that arrive in the same frame as the WELCOME (a relay BATCH),
     * before our id is known: applied right after connect(), so their ACKs
     * carry our id instead of 0 (which the relay rejects as spoofed).
     * @type {[import('./protocol.js').UpdateMsg, number][] | null}
     */
    this.early = [];
    this.connected = false;
    /** @type {{ code: number, reason: string } | null} */
    this.closedWith = null;
    /** Rejoins after the connection dropped, and the time spent without one (ms). */
    this.reconnects = 0;
    this.outageMs = 0;
    /** @type {{ at: number, ms: number, code: number }[]} each outage: start (client clock), length, close code */
    this.outages = [];
    /** @type {{ at: number, code: number } | null} the outage going on */
    this.outage = null;
    /** @type {number | null} start of the freshness window (our clock): after our warm-up */
    this.freshFrom = null;
    /** @type {Record<string, number>} reports the relay refused (ERROR REPORT_REFUSED), by reason code */
    this.reportsRefused = {};
    /** The kept scene the server gave us when we were the first member back, or null. @type {{ records: number, applied: number, at: number } | null} */
    this.sceneRestored = null;
    this.cycle = new ActionCycle({
      mode: options.cycleMode ?? 'gated',
      cycleMs: options.cycleMs ?? DEFAULT_CYCLE_MS,
      ackTimeoutMs: options.ackTimeoutMs ?? DEFAULT_ACK_TIMEOUT_MS,
      warmupMs: options.warmupMs ?? 0,
      maxUpdates: options.maxUpdates ?? 0,
      now: this.now,
      neighbours: () => [...this.members.keys()],
      send: (seq, sendTime) => this.sendUpdate(seq, sendTime),
      onRt: (rt, warmup) => {
        (warmup ? this.rtWarmup : this.rt).push(rt);
        this.emit('rt', rt);
      },
    });
  }

  /** @param {string} event @param {any} [detail] */
  emit(event, detail) {
    this.options.onEvent?.(event, detail);
  }

  /**
   * Joins the group. Resolves with the WELCOME once the server accepted us.
   */
  async connect() {
    const welcome = await this.transport.connect(
      { group: this.options.group, name: this.options.name, clientId: this.options.clientId, token: this.options.token },
      {
        onWelcome: (w) => this.welcome(w),
        onUpdate: (m, arrivalTime) => this.receiveUpdate(m, arrivalTime),
        onAck: (m) => { if (m.sender === this.id) this.cycle.ack(m.acker, m.seq); },
        onAckedAll: (m) => { if (m.sender === this.id) this.cycle.ackedAll(m.seq, m.dropped, m.acked); },
        onSuperseded: (m) => { if (!this.early && m.sender !== this.id) this.streamOf(m.sender).supersededBy(m.seq, m.ranges); },
        onMemberJoined: (m) => this.addMember(m.id, m.name),
        onMemberLeft: (id) => this.removeMember(id),
        onServerError: (m) => this.serverError(m),
        onKeptScene: (m) => this.restoreScene(m.records),
        onClose: (code, reason) => {
          this.connected = false;
          this.closedWith = { code, reason };
          this.outage = null;
          this.cycle.stop();
          this.emit('closed', { code, reason });
        },
        onReconnecting: ({ code, reason }) => this.disconnected(code, reason),
        onReconnected: (w) => this.rejoined(w),
        onConnectionStatus: (s) => this.emit('connection', { ...s, at: this.now() }),
      },
    );
    this.welcome(welcome); // idempotent: transports that called onWelcome already did this
    this.connected = true;
    this.joinedEpoch ??= this.epochNow();
    /** @type {[import('./protocol.js').UpdateMsg, number][]} */
    const early = this.early ?? [];
    this.early = null;
    for (const [m, arrivalTime] of early) this.receiveUpdate(m, arrivalTime);
    return welcome;
  }

  /**
   * Starts the action cycle (with a random phase unless given).
   * @param {number} [phaseMs]
   */
  start(phaseMs) {
    const cycleMs = this.options.cycleMs ?? DEFAULT_CYCLE_MS;
    this.cycle.start(phaseMs ?? Math.random() * cycleMs);
    // Freshness is measured from the end of our warm-up until stop().
    this.freshFrom = this.cycle.startedAt + (this.options.warmupMs ?? 0);
    for (const stream of this.streams.values()) stream.freshness.startWindow(this.freshFrom);
  }

  stop() {
    this.cycle.stop();
    const now = this.now();
    for (const stream of this.streams.values()) stream.freshness.endWindow(now);
  }

  close() {
    this.cycle.stop();
    this.transport.close();
  }

  /**
   * Takes in the server's WELCOME: our id and the members already there.
   * @param {import('./protocol.js').WelcomeMsg} w
   */
  welcome(w) {
    if (this.id === w.clientId) return;
    this.id = w.clientId;
    for (const m of w.members) if (m.id !== this.id) this.addMember(m.id, m.name);
  }

  /**
   * The connection dropped; the transport is reconnecting. The outstanding
   * update can no longer complete (the relay that held it is gone): it is
   * abandoned, and the cycle sends nothing until we are back (sequence
   * numbers go on where they were).
   * @param {number} code @param {string} reason
   */
  disconnected(code, reason) {
    this.connected = false;
    this.outage = { at: this.now(), code };
    this.cycle.pause();
    this.emit('reconnecting', { code, reason });
  }

  /**
   * Rejoined after an outage: members are re-learned from the new WELCOME
   * (members that did not come back leave the ACK set, those who did are
   * kept with their streams), and the cycle resumes.
   * @param {import('./protocol.js').WelcomeMsg} w
   */
  rejoined(w) {
    const started = this.outage;
    const ms = started ? this.now() - started.at : 0;
    this.reconnects++;
    this.outageMs += ms;
    if (started && this.outages.length < 1000) this.outages.push({ at: started.at, ms, code: started.code });
    this.outage = null;
    this.id = w.clientId; // the same unless it stayed taken
    const present = new Set(w.members.map((m) => m.id).filter((id) => id !== this.id));
    for (const id of [...this.members.keys()]) if (!present.has(id)) this.removeMember(id);
    for (const m of w.members) if (m.id !== this.id) this.addMember(m.id, m.name);
    // Edits may have been missed while away, or made here while the others could not hear.
    this.scene.startRepair();
    this.connected = true;
    this.cycle.resume();
    this.emit('reconnected', { outageMs: ms, id: this.id });
  }

  /** @param {number} id @param {string} name */
  addMember(id, name) {
    if (id === this.id || this.members.has(id)) return;
    this.members.set(id, { id, name, pose: null, seq: 0, sendTime: 0, at: 0 });
    this.scene.joined(id);
    this.emit('member-joined', { id, name });
  }

  /** @param {number} id */
  removeMember(id) {
    if (!this.members.delete(id)) return;
    this.scene.forget(id);
    this.streams.get(id)?.freshness.endWindow(this.now()); // gone: its silence from now on is no freeze
    this.cycle.memberLeft(id);
    this.emit('member-left', { id });
  }

  /**
   * The scene the server kept of our group, to us as its first member back (docs/protocol.md §5.14):
   * each record applied as one from a neighbour (last writer wins); members who join later get
   * them from us. The scene log and the view hear of them through the scene's onChange.
   * @param {import('./protocol.js').SceneRecord[]} records
   */
  restoreScene(records) {
    let applied = 0;
    for (const record of records) if (this.scene.apply(record)) applied++;
    this.sceneRestored = { records: records.length, applied, at: this.now() };
    this.emit('scene-restored', this.sceneRestored);
  }

  /**
   * An ERROR from the relay: the session goes on. A refused report is counted
   * by its reason's code (`too_frequent: ...` -> too_frequent).
   * @param {import('./protocol.js').ErrorMsg} m
   */
  serverError(m) {
    if (m.code === CloseCode.REPORT_REFUSED) {
      const code = m.reason.split(':')[0] || 'refused';
      this.reportsRefused[code] = (this.reportsRefused[code] ?? 0) + 1;
    }
    this.emit('server-error', { code: m.code, reason: m.reason });
  }

  /**
   * The legacy single object (the car of old links): scene object CAR_ID.
   * @returns {{ pose: import('./protocol.js').Pose, version: number, owner: number }}
   */
  get object() {
    const car = this.scene.get(CAR_ID);
    return car ? { pose: car.pose, version: car.version, owner: car.writer } : { pose: [0, 0, 0, 0, 0, 0, 1], version: 0, owner: 0 };
  }

  /**
   * The user moved the car: it goes out with the next update, as a scene record.
   * @param {import('./protocol.js').Pose} pose
   */
  moveObject(pose) {
    if (this.scene.get(CAR_ID)) this.scene.move(CAR_ID, pose, this.id);
  }

  /**
   * Adds an object of the palette (SCENE_KINDS) to the group's scene.
   * @param {string} kind @param {import('./protocol.js').Pose} pose
   * @returns {import('./protocol.js').SceneRecord} throws a SceneError when the scene is full
   */
  addObject(kind, pose) {
    return this.scene.add(kind, pose, this.id);
  }

  /** @param {number} id @param {import('./protocol.js').Pose} pose */
  moveSceneObject(id, pose) {
    return this.scene.move(id, pose, this.id);
  }

  /** @param {number} id */
  removeObject(id) {
    return this.scene.remove(id, this.id);
  }

  /** @param {number} seq @param {number} sendTime */
  sendUpdate(seq, sendTime) {
    const scene = this.scene.nextBlock(this.members.keys());
    this.transport.sendUpdate({ type: 5, sender: this.id, seq, sendTime, pose: this.options.pose(), object: null, scene });
    if (this.options.onEvent) this.emit('sent', { seq, sendTime });
  }

  /**
   * What we know of a sender's stream, started on first use.
   * @param {number} sender
   */
  streamOf(sender) {
    let stream = this.streams.get(sender);
    if (!stream) {
      stream = new ReceiveStream();
      if (this.freshFrom !== null) stream.freshness.startWindow(this.freshFrom);
      this.streams.set(sender, stream);
    }
    return stream;
  }

  /**
   * @param {import('./protocol.js').UpdateMsg} m
   * @param {number} arrivalTime
   */
  receiveUpdate(m, arrivalTime) {
    if (this.early) {
      this.early.push([m, arrivalTime]);
      return;
    }
    if (m.sender === this.id) return;
    const stream = this.streamOf(m.sender);
    const newest = stream.arrive(m.seq, m.sendTime, arrivalTime);
    // Every arrival, stale ones too: a playout refines its curve with them (core/playout-probe.js).
    if (this.options.onEvent) this.emit('update', { update: m, arrivalTime });
    // Every update is ACKed, also a stale one: its sender is waiting on it.
    stream.acksSent++;
    this.transport.sendAck(m.sender, m.seq, this.id);
    // Scene records apply whatever the order (last writer wins); a stale update's digest is old news.
    if (m.scene) this.scene.receive(m.sender, m.scene, newest);
    if (m.object) this.mergeLegacyObject(m.object, m.sender);
    if (!newest) return; // older than what we have: its pose is never applied
    stream.freshness.applied(arrivalTime); // counted inside the measured window only (see start())
    const member = this.members.get(m.sender);
    if (member) {
      member.pose = m.pose;
      member.seq = m.seq;
      member.sendTime = m.sendTime;
      member.at = arrivalTime;
      this.emit('pose', member);
    }
  }

  /**
   * The legacy OBJECT block of an independent client (docs/protocol.md §10.3): a record of the car,
   * written by its sender, so the old rule (higher version, then higher id) is last writer wins.
   * @param {{ pose: import('./protocol.js').Pose, version: number }} incoming
   * @param {number} from
   */
  mergeLegacyObject(incoming, from) {
    if (incoming.version === 0 || !incoming.pose.every(Number.isFinite)) return;
    this.scene.apply({ id: CAR_ID, version: incoming.version, writer: from, kind: 0, removed: false, pose: incoming.pose });
  }

  /**
   * This member as the scene measures see it (core/scene-metrics.js SceneMember): its log from its
   * join until `endedAt` (ms since 1970), or until its last change if its session closed for good.
   * @param {number} endedAt
   * @returns {import('./scene-metrics.js').SceneMember}
   */
  sceneMember(endedAt) {
    const to = this.closedWith ? Math.min(endedAt, this.sceneLog.at(-1)?.at ?? endedAt) : endedAt;
    return { from: this.joinedEpoch ?? endedAt, to, log: this.sceneLog, digest: this.scene.digest, stayed: !this.closedWith };
  }

  /**
   * The record the bench aggregates (metrics.ClientStats) plus live summaries.
   * @returns {import('./metrics.js').ClientStats & Record<string, any>}
   */
  stats() {
    /** @type {Record<string, any>} */
    const recv = {};
    const now = this.now();
    for (const [id, s] of this.streams) recv[id] = s.toJSON(now);
    return {
      id: this.id,
      name: this.options.name,
      group: this.options.group,
      transport: this.transport.name,
      cycleMode: this.cycle.mode,
      rt: this.rt,
      rtWarmup: this.rtWarmup,
      sentTo: this.cycle.sentTo,
      ...this.cycle.lossRecord(now),
      takenBack: this.cycle.takenBack,
      acksFrom: this.cycle.acksFrom,
      recv,
      updatesSent: this.cycle.updatesSent,
      completed: this.cycle.completed,
      ackTimeouts: this.cycle.ackTimeouts,
      skippedCycles: this.cycle.skippedCycles,
      lateAcks: this.cycle.lateAcks,
      evicted: this.cycle.evicted,
      inFlight: this.cycle.inFlight(),
      freshness: this.freshness(),
      reconnects: this.reconnects,
      reconnecting: this.outage !== null,
      outageMs: this.outageMs + (this.outage ? this.now() - this.outage.at : 0),
      outages: this.outages,
      abandoned: this.cycle.abandoned,
      pausedCycles: this.cycle.pausedCycles,
      channel: this.transport.channelInfo(),
      setup: this.transport.setupInfo?.() ?? null,
      closedWith: this.closedWith,
      scene: this.scene.summary(),
    };
  }

  /**
   * Freshness over every stream this client received (core/metrics.js summarizeFreshness).
   * @returns {import('./metrics.js').FreshnessSummary}
   */
  freshness() {
    const now = this.now();
    return summarizeFreshness([...this.streams.values()].map((s) => s.freshness.toJSON(now)));
  }

  /**
   * Per current member: how long ago its last fresh update arrived (ms, null
   * before any) and whether its avatar is stale (nothing fresh for FREEZE_MS).
   * @param {number} [now] this client's clock
   * @returns {Map<number, { ageMs: number | null, stale: boolean }>}
   */
  freshnessAges(now = this.now()) {
    /** @type {Map<number, { ageMs: number | null, stale: boolean }>} */
    const ages = new Map();
    for (const id of this.members.keys()) {
      const m = this.members.get(id);
      const ageMs = m && m.at > 0 ? now - m.at : null;
      ages.set(id, { ageMs, stale: ageMs !== null && ageMs > FREEZE_MS });
    }
    return ages;
  }

  /** RT summary of the measured (non-warm-up) updates, for a HUD. */
  rtSummary() {
    return summarize(this.rt);
  }
}
