// One connected client of the relay and its outgoing queues. An Outbox is
// where batching (mode `relay`), packet-sized frames (relay-udp) and the
// slow-consumer bound live; a session has one per socket it writes to.

import { HelloFlag, MsgType, SUPERSEDED_RANGES_MAX, encode, encodeBatchOfBodies, frameOfBody } from '../core/protocol.js';
import { SeqSet } from '../core/seqset.js';
import { SHARE_BURST_SECONDS } from './budget.js';

/**
 * An update the relay forwarded and is waiting on ACKs for.
 * @typedef {object} PendingUpdate
 * @property {Session | import('./cluster.js').RemoteMember} sender
 * @property {number} seq
 * @property {Map<Session | import('./cluster.js').RemoteMember, number>} dest destination -> forward
 *   time (ms, performance.now), NaN while still queued in the destination's outbox
 * @property {boolean} [mirror] a cluster node's copy of a remote sender's update: it tracks local
 *   delivery only, ACKs and drops go to the sender's node
 * @property {number} acked
 * @property {number} dropped destinations that never got it (slow consumer, left)
 * @property {number} createdAt
 * @property {Uint8Array} [body] the UPDATE's bytes, kept while its ACKs are awaited: a destination
 *   that resumes its session on a new connection gets the copies its old one swallowed (§8.10)
 */

/**
 * @typedef {object} OutItem
 * @property {Uint8Array} body message type + payload
 * @property {PendingUpdate | null} entry set for UPDATEs
 * @property {SeqSet} [superseded] the sender's seqs this UPDATE replaced in the queue: written
 *   as a SUPERSEDED just before it, for a client that asked (docs/protocol.md §5.13)
 */

/**
 * The UPDATE that replaces `old` (the same sender's) carries old's marks and
 * old's own seq. One set per chain of replacements, handed on, never copied.
 * @param {OutItem} old @param {OutItem} newer
 */
function markReplaced(old, newer) {
  const marks = newer.superseded ?? old.superseded ?? new SeqSet();
  if (old.superseded && old.superseded !== marks) for (let i = 0; i < old.superseded.flat.length; i += 2) marks.addRange(old.superseded.flat[i], old.superseded.flat[i + 1]);
  marks.add(/** @type {PendingUpdate} */ (old.entry).seq);
  newer.superseded = marks;
}

/**
 * The queue to write with a SUPERSEDED body before each UPDATE that replaced
 * others (only built when some item carries marks).
 * @param {OutItem[]} queue
 * @returns {OutItem[]}
 */
function withMarks(queue) {
  /** @type {OutItem[]} */
  const out = [];
  for (const item of queue) {
    if (item.superseded && item.entry) {
      // past SUPERSEDED_RANGES_MAX the oldest ranges go unmarked: counted as lost, never hidden
      const ranges = item.superseded.toJSON().slice(-2 * SUPERSEDED_RANGES_MAX);
      const mark = { type: MsgType.SUPERSEDED, sender: item.entry.sender.id, seq: item.entry.seq, ranges };
      out.push({ body: encode(/** @type {import('../core/protocol.js').SupersededMsg} */ (mark)).subarray(1), entry: null });
    }
    out.push(item);
  }
  return out;
}

/**
 * A token bucket: `rate` tokens per second, at most `burst` saved up.
 */
export class TokenBucket {
  /** @param {number} rate @param {number} burst */
  constructor(rate, burst) {
    this.rate = rate;
    this.burst = burst;
    this.tokens = burst;
    this.at = performance.now();
  }

  /**
   * Takes n tokens; false if there are not enough (nothing is taken then).
   * @param {number} n
   * @param {number} [now] performance.now(), when the caller has it already (one clock read per frame)
   */
  take(n, now = performance.now()) {
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.at) / 1000) * this.rate);
    this.at = now;
    if (this.tokens < n) return false;
    this.tokens -= n;
    return true;
  }
}

/** Most messages the relay puts in one BATCH frame (the count is a u16). */
export const MAX_BATCH = 4096;

/**
 * Frames come from Node's Buffer pool: a frame is written once and dropped,
 * and a fresh ArrayBuffer each would cost a malloc and a sweep.
 * @type {import('../core/protocol.js').ByteAlloc}
 */
const pooledBytes = (size) => Buffer.allocUnsafe(size);

/**
 * The bodies of queue[from..to), in one array (the fan-out path: no slice-then-map copy).
 * @param {OutItem[]} queue @param {number} from @param {number} to
 */
function bodiesOf(queue, from, to) {
  const bodies = new Array(to - from);
  for (let i = from; i < to; i++) bodies[i - from] = queue[i].body;
  return bodies;
}

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
 * The messages a relay-udp session gets on its data channel; everything else
 * (WELCOME, MEMBER_*, SIGNAL) goes on its WebSocket.
 * @param {number} type
 */
export function isDataPathType(type) {
  return type === MsgType.UPDATE || type === MsgType.ACK || type === MsgType.ACKED_ALL || type === MsgType.SUPERSEDED;
}

/**
 * Most UPDATE copies a lagging member keeps for a resume (about 20 s of a group of 5 at the
 * default cycle); past it the oldest go, counted as replayOverflow.
 */
export const REPLAY_COPIES_MAX = 512;

/**
 * The queue of one socket of a session: what is waiting to be written, and
 * how it is written (coalesced or not, frames up to how many bytes).
 */
export class Outbox {
  /**
   * @param {Session} session
   * @param {SessionSocket} socket
   * @param {{ kind: 'ws' | 'dc', maxFrameBytes?: number }} options maxFrameBytes:
   *   BATCH frames are cut so that none is longer (a single message always goes)
   */
  constructor(session, socket, options) {
    this.session = session;
    this.socket = socket;
    this.kind = options.kind;
    this.maxFrameBytes = options.maxFrameBytes ?? Infinity;
    /** @type {OutItem[]} */
    this.queue = [];
    this.queuedBytes = 0;
    /** Queued UPDATE index per sender id, only kept while blocked. @type {Map<number, number>} */
    this.queuedUpdateBySender = new Map();
    this.blocked = false;
    /** False once the session closed or this socket was taken away from it. */
    this.active = true;
    /** Some queued item carries superseded marks (the flush writes them). */
    this.marked = false;
  }

  /**
   * Puts items at the head of the queue: a resumed member's replayed copies,
   * which are older than anything queued for it.
   * @param {OutItem[]} items
   */
  prepend(items) {
    if (items.length === 0) return;
    this.queue.unshift(...items);
    for (const item of items) this.queuedBytes += item.body.length;
    if (this.blocked) this.indexQueuedUpdates();
  }

  /**
   * Whether a blocked outbox may replace this queued UPDATE by a newer one of
   * the same sender: only between two members in mode relay, where a stale
   * pose is worth less than a fresh one (docs/protocol.md §8.6). A
   * relay-faithful sender or receiver is promised every update, in order: its
   * queue grows instead, up to the hard bound.
   * @param {PendingUpdate | null} entry the queued item's (null: not an UPDATE)
   */
  replaceable(entry) {
    return this.session.batched && Boolean(entry?.sender.batched);
  }

  get ctx() { return this.session.ctx; }

  /**
   * Queues a message body. UPDATEs carry their pending entry so the forward
   * time is stamped when the bytes are really handed to the socket.
   * @param {Uint8Array} body
   * @param {PendingUpdate | null} entry
   */
  push(body, entry) {
    const session = this.session;
    if (this.blocked && entry && this.replaceable(entry)) {
      // Slow consumer: a newer pose from the same sender replaces the queued one.
      const senderId = entry.sender.id;
      const at = this.queuedUpdateBySender.get(senderId);
      if (at !== undefined) {
        const old = this.queue[at];
        this.queuedBytes += body.length - old.body.length;
        const item = { body, entry };
        if (this.session.marks) { markReplaced(old, item); this.marked = true; }
        this.queue[at] = item;
        this.ctx.stats.droppedUpdates++;
        this.ctx.dropDestination(/** @type {PendingUpdate} */ (old.entry), session);
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
        this.ctx.closeSession(session, 4004, 'slow consumer: outgoing queue over its hard limit');
      }
      return;
    }
    if (!session.batched || this.queuedBytes > this.ctx.options.queueSoftBytes) this.flush();
    else this.ctx.scheduleFlush(this);
  }

  /**
   * Writes what is queued: BATCH frames in mode `relay`, one frame per
   * message in `relay-faithful`. Holds back while the socket is over its soft bound.
   */
  flush() {
    if (!this.active || this.session.closed || this.queue.length === 0) return;
    if (this.socket.readyState !== OPEN) return;
    if (this.socket.bufferedAmount > this.ctx.options.queueSoftBytes) {
      if (!this.blocked) {
        this.blocked = true;
        this.indexQueuedUpdates();
        this.ctx.markBlocked(this);
      }
      return;
    }
    const queue = this.marked ? withMarks(this.queue) : this.queue;
    this.queue = [];
    this.queuedBytes = 0;
    this.marked = false;
    this.blocked = false;
    this.queuedUpdateBySender.clear();
    const now = performance.now();
    const stats = this.ctx.stats;
    let sent = 0;
    for (const item of queue) {
      if (item.entry) {
        // A destination nobody waits on (a lagging consumer) is not put back in the ACK set.
        if (item.entry.dest.has(this.session)) item.entry.dest.set(this.session, now);
        else if (this.session.lagging && this.kind === 'ws') this.session.keepForReplay(item.body);
        sent++;
      }
    }
    stats.updatesForwarded += sent;
    // Each UPDATE handed to the socket buys its receiver exactly one ACK (relay/budget.js):
    // counted here, where it is really sent, not when queued (a queued copy may be replaced).
    this.session.ackCredit += sent;
    stats.messagesOut += queue.length;
    if (this.session.batched && queue.length > 1) {
      // A BATCH counts its messages in a u16, and on a data channel one
      // frame should fit one packet: cut long queues into several frames.
      let start = 0;
      let size = 4;
      for (let i = 0; i < queue.length; i++) {
        const len = 2 + queue[i].body.length;
        if (i > start && (i - start >= MAX_BATCH || size + len > this.maxFrameBytes)) {
          this.write(queue, start, i);
          start = i;
          size = 4;
        }
        size += len;
      }
      this.write(queue, start, queue.length);
    } else {
      for (let i = 0; i < queue.length; i++) this.write(queue, i, i + 1);
    }
  }

  /**
   * Sends queue[from..to) as one frame (a plain frame for one message).
   * @param {OutItem[]} queue @param {number} from @param {number} to
   */
  write(queue, from, to) {
    const frame = to - from === 1
      ? frameOfBody(queue[from].body, pooledBytes)
      : encodeBatchOfBodies(bodiesOf(queue, from, to), pooledBytes);
    const stats = this.ctx.stats;
    stats.framesOut++;
    stats.bytesOut += frame.length;
    if (this.kind === 'dc') {
      stats.udp.framesOut++;
      stats.udp.bytesOut += frame.length;
    }
    this.socket.send(frame);
  }

  /**
   * Becoming blocked: keeps only the newest queued pose of each sender whose
   * poses may be replaced (the older ones are stale: replaced, counted as
   * dropped, like those replaced later) and builds the sender -> queue index
   * used to replace stale poses.
   */
  indexQueuedUpdates() {
    this.queuedUpdateBySender.clear();
    /** @type {Set<number>} */
    const seen = new Set();
    /** @type {OutItem[]} */
    const stale = [];
    /** @type {Map<number, OutItem>} the newest queued UPDATE per sender */
    const newest = new Map();
    for (let i = this.queue.length - 1; i >= 0; i--) {
      const item = this.queue[i];
      if (!item.entry || !this.replaceable(item.entry)) continue;
      if (seen.has(item.entry.sender.id)) stale.push(item);
      else { seen.add(item.entry.sender.id); newest.set(item.entry.sender.id, item); }
    }
    if (stale.length) {
      const drop = new Set(stale);
      this.queue = this.queue.filter((item) => !drop.has(item));
      for (let i = stale.length - 1; i >= 0; i--) {
        const item = stale[i];
        const kept = /** @type {OutItem} */ (newest.get(/** @type {PendingUpdate} */ (item.entry).sender.id));
        if (this.session.marks) { markReplaced(item, kept); this.marked = true; }
      }
      for (const item of stale) {
        this.queuedBytes -= item.body.length;
        this.ctx.stats.droppedUpdates++;
        this.ctx.dropDestination(/** @type {PendingUpdate} */ (item.entry), this.session);
      }
    }
    this.queue.forEach((item, i) => {
      if (item.entry && this.replaceable(item.entry)) this.queuedUpdateBySender.set(item.entry.sender.id, i);
    });
  }

  /** Queue entries whose updates will now never be delivered; empties the queue. */
  takeQueuedEntries() {
    const entries = [];
    for (const item of this.queue) if (item.entry) entries.push(item.entry);
    this.queue = [];
    this.queuedBytes = 0;
    this.marked = false;
    this.queuedUpdateBySender.clear();
    return entries;
  }
}

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
    /** Connected here: the group logic writes to it itself (relay/member.js). @type {true} */
    this.local = true;
    /** The node it is connected to: null, this one. @type {string | null} */
    this.node = null;
    /** Client id in its group (0 until joined). */
    this.id = 0;
    this.name = '';
    /** @type {import('./groups.js').Group | null} */
    this.group = null;
    /**
     * The group its WebSocket URL named (`?g=`), or null: its HELLO must name the
     * same one, since the connection was placed (balancer, cluster primary) by it.
     * @type {string | null}
     */
    this.urlGroup = null;
    /** @type {string} the upgrade request's User-Agent (first 512 characters): what a report's browser is read from */
    this.userAgent = '';
    /** Mode `relay`: coalesce frames, aggregate ACKs. False = `relay-faithful`. */
    this.batched = false;
    /** The capability flags granted to its HELLO; null when it asked for none (its WELCOME then has no capabilities byte). @type {number | null} */
    this.capabilities = null;
    /** The MoreFlag capabilities granted (docs/protocol.md §5.1); null when its HELLO had no flag MORE. @type {number | null} */
    this.more = null;
    this.membershipOnly = false;
    /** relay-udp: updates and ACKs travel on a data channel (HELLO flag UDP). */
    this.udp = false;
    /**
     * A fan-out destination, announced to the group. A relay-udp session is
     * only ready while its data channel is open; every other session at join.
     */
    this.ready = false;
    /** Updates this client sent that await ACKs, by seq. @type {Map<number, PendingUpdate>} */
    this.pending = new Map();
    /** The newest UPDATE seq it sent (0: none yet). */
    this.newestSeqIn = 0;
    /**
     * After a resume (relay/resume.js), its UPDATEs at or below this seq are replays of
     * what its old connection may have carried already: dropped, as the relay has them.
     */
    this.replayFloor = 0;
    /**
     * While it is lagging (its path may be dead), copies of the UPDATEs written to it that nobody
     * waits on, oldest first, at most REPLAY_COPIES_MAX: a resume writes them again (relay/groups.js replayTo).
     * @type {Uint8Array[]}
     */
    this.replayCopies = [];
    /** The WebSocket's queue: everything, or for relay-udp the control messages. */
    this.out = new Outbox(this, socket, { kind: 'ws' });
    /** relay-udp: the open data channel's queue (UPDATE, ACK, ACKED_ALL). @type {Outbox | null} */
    this.dataOut = null;
    this.closed = false;
    /** With capability RESUME: the secret its WELCOME gave, that a HELLO takes it over with (relay/resume.js); '' without. */
    this.resumeSecret = '';
    /** The liveness tick it was last heard at: a frame or a pong (relay/liveness.js). */
    this.heardTick = 0;
    /** Its HELLO asked for an id another node holds; the answer is on its way (relay/cluster.js). */
    this.claiming = false;
    /**
     * A consumer that stopped ACKing (mode relay's slow-consumer policy, see
     * relay/slow-consumers.js): it still gets every update, but nobody waits
     * for its ACKs until it sends one again.
     */
    this.lagging = false;
    /** Per-socket message rate limit: every message but an ACK paid by credit (relay/budget.js). */
    this.rate = new TokenBucket(ctx.options.maxMessagesPerSecond, ctx.options.maxMessagesBurst);
    /** Its UPDATE rate limit: one per cycle at the shortest sane cycle, with a long burst. */
    this.updateRate = new TokenBucket(ctx.options.maxUpdatesPerSecond, ctx.options.maxUpdatesBurst);
    /**
     * Its share of its group's fan-out (forwards per second); GroupRegistry.update
     * sets the rate from the group's size before each take.
     */
    this.share = new TokenBucket(ctx.options.maxGroupForwardsPerSecond, SHARE_BURST_SECONDS * ctx.options.maxGroupForwardsPerSecond);
    /**
     * ACKs it may send without spending its message bucket: one per UPDATE the
     * relay wrote to it, minus the ACKs it sent. Never negative.
     */
    this.ackCredit = 0;
  }

  /**
   * Keeps a copy of an UPDATE written to it while it lags, for a resume to write again.
   * @param {Uint8Array} body
   */
  keepForReplay(body) {
    this.replayCopies.push(body.slice());
    if (this.replayCopies.length > REPLAY_COPIES_MAX) {
      this.replayCopies.shift();
      this.ctx.stats.replayOverflow++;
    }
  }

  /** It gets SUPERSEDED marks for the queued poses the relay replaces (HELLO capability). */
  get marks() { return ((this.capabilities ?? 0) & HelloFlag.SUPERSEDED_MARKS) !== 0; }

  /** The WebSocket's queued messages (tests look at it). */
  get queue() { return this.out.queue; }

  /** Whether any of its sockets is held back as a slow consumer. */
  get blocked() { return this.out.blocked || Boolean(this.dataOut?.blocked); }

  /**
   * Queues a message body for this client, on the socket its type goes on.
   * @param {Uint8Array} body
   * @param {PendingUpdate | null} [entry]
   */
  push(body, entry = null) {
    if (this.closed) {
      if (entry) this.ctx.dropDestination(entry, this);
      return;
    }
    if (this.udp && isDataPathType(body[0])) {
      if (!this.dataOut) {
        // No data channel right now: never a destination then, so only an
        // ACK or ACKED_ALL can end up here, and it is lost like a packet.
        if (entry) this.ctx.dropDestination(entry, this);
        this.ctx.stats.udp.noChannelDrops++;
        return;
      }
      this.dataOut.push(body, entry);
      return;
    }
    this.out.push(body, entry);
  }

  /** Writes whatever its queues hold. */
  flush() {
    this.out.flush();
    this.dataOut?.flush();
  }

  /** A local member's RTS clock starts when its bytes are written (Outbox.flush stamps it). @param {number} _createdAt */
  rtsClockAt(_createdAt) { return NaN; }

  /** Queue entries whose updates will now never be delivered (all queues). */
  takeQueuedEntries() {
    const entries = this.out.takeQueuedEntries();
    if (this.dataOut) entries.push(...this.dataOut.takeQueuedEntries());
    return entries;
  }
}
