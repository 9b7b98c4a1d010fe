// Working groups: membership, the fan-out of UPDATEs, ACK forwarding or
// aggregation, and RTS (the slow-consumer policy that marks members lagging
// lives apart, in relay/slow-consumers.js). This is the relay's one place for group logic; the
// WebRTC relay (relay-udp) reuses it through the same Session interface, and
// a cluster (relay/cluster.js) adds members of other nodes as RemoteMembers.

import { randomBytes } from 'node:crypto';

import { CloseCode, HelloFlag, KEPT_SCENE_RECORDS_MAX, MoreFlag, MsgType, WelcomeFlag, ackedAllBody, encode } from '../core/protocol.js';
import { SHARE_BURST_SECONDS, forwardShare, newBudgetCounters } from './budget.js';
import { tokenHash } from './cluster.js';
import { reachOf } from './member.js';

/**
 * Compares token hashes in time independent of where they differ.
 * @param {string} a @param {string} b
 */
export function sameToken(a, b) {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/** The prefix of a group's key (its name follows): one key space for every transport. */
export const GROUP_KEY_PREFIX = 'g:';

/** @typedef {import('./session.js').Session} Session */
/** @typedef {import('./session.js').PendingUpdate} PendingUpdate */
/** @typedef {import('./cluster.js').RemoteMember} RemoteMember */
/** A member on this node (Session) or on another node of the cluster (relay/member.js). @typedef {import('./member.js').Member} Member */

/**
 * One working group: the members that exchange updates with each other.
 */
export class Group {
  /** @param {string} key @param {string} [hash] tokenHash() of the access token set by the first member */
  constructor(key, hash = '') {
    this.key = key;
    /** The name its members' HELLOs gave (the key without its 'g:' prefix). */
    this.name = key.slice(key.indexOf(':') + 1);
    this.tokenHash = hash;
    /** @type {Map<number, Member>} */
    this.members = new Map();
    /** Members connected to this node (the rest are RemoteMembers). */
    this.localCount = 0;
    /** Made again from a kept scene its first member (asking for it) has not been given yet. */
    this.keptScene = false;
  }
}

/**
 * All groups of a relay, plus the operations on them.
 */
export class GroupRegistry {
  /**
   * @param {import('./index.js').RelayContext} ctx
   * @param {((groups: GroupRegistry) => import('./cluster.js').ClusterLink) | null} [linkCluster]
   *   makes this node's link to the others of a cluster (it needs the registry it serves)
   */
  constructor(ctx, linkCluster = null) {
    this.ctx = ctx;
    /** @type {Map<string, Group>} */
    this.groups = new Map();
    // Ids start at a random point of the 32-bit space, not at 1: after a
    // relay restart, clients that have not rejoined yet still hold ids of the
    // old process, and a newcomer must not be handed one of them.
    this.nextId = 1 + Math.floor(Math.random() * 0x7fff0000);
    /** What the budgets shed or dropped (relay/budget.js). */
    this.budget = newBudgetCounters();
    /** The groups' scenes, kept when a group empties (relay/scene-keeper.js); null: not kept. @type {import('./scene-keeper.js').SceneKeeper | null} */
    this.scenes = null;
    /** This node's link to the rest of its cluster, or null for a relay on its own (made last: it reads the registry). @type {import('./cluster.js').ClusterLink | null} */
    this.cluster = linkCluster ? linkCluster(this) : null;
  }

  /**
   * The group with this key, created (with the first member's token hash) if new.
   * @param {string} key
   * @param {string} hash
   * @returns {Group}
   */
  groupFor(key, hash) {
    let group = this.groups.get(key);
    if (!group) {
      group = new Group(key, hash);
      this.groups.set(key, group);
      // A kept scene comes back with its group, and with its token: only a member holding it gets in.
      const kept = this.scenes?.groupMade(group);
      if (kept) {
        group.keptScene = true;
        if (kept.tokenHash !== '') group.tokenHash = kept.tokenHash;
      }
    }
    return group;
  }

  /** A group made for a HELLO that was then refused: nobody ever joined it. @param {Group} group */
  dropUnjoined(group) {
    if (group.members.size !== 0) return;
    this.groups.delete(group.key);
    this.scenes?.groupDropped(group.key);
  }

  /**
   * Adds a session to a group. Every member of a group name is in one group,
   * whatever its transport: relayed members' UPDATEs fan out to membership-only
   * (p2p) members too, and p2p members reach relayed ones with LINK (relay/link.js).
   * @param {Session} session
   * @param {string} name group name from HELLO
   * @param {number} requestedId 0 = assign one
   * @param {string} [token] access token from HELLO
   * @returns {[number, string] | null} a close code and reason, or null on success
   */
  join(session, name, requestedId, token = '') {
    if (session.claiming) return [CloseCode.PROTOCOL_VIOLATION, 'HELLO after joining'];
    const key = GROUP_KEY_PREFIX + name;
    // The first member sets the group's access token (empty: an open group);
    // it lives as long as the group has members, on any node.
    const hash = tokenHash(token);
    const group = this.groupFor(key, hash);
    if (group.tokenHash !== '' && !sameToken(group.tokenHash, hash)) {
      this.dropUnjoined(group);
      return [CloseCode.FORBIDDEN, 'wrong or missing access token for this group'];
    }
    let id = requestedId;
    const holder = group.members.get(id);
    if (id !== 0 && holder && !holder.local && this.cluster) {
      // A rejoin after its relay died asks for its old id, which the other
      // nodes hold until they notice the death: ask the holder's node first.
      this.cluster.claimFromRemote(session, holder, () => this.join(session, name, requestedId, token));
      return null;
    }
    if (id === 0) {
      do id = this.nextId++ >>> 0; while (id === 0 || group.members.has(id));
    } else if (group.members.has(id)) {
      this.dropUnjoined(group);
      return [CloseCode.ID_TAKEN, `client id ${id} is taken in group ${name}`];
    }
    session.id = id;
    session.group = group;
    // A relay-udp session is announced once its data channel opens (announce()):
    // until then nobody counts it as a neighbour, so nobody sends to it in vain.
    session.ready = !session.udp;
    if (session.ready) this.broadcastJoined(session);
    group.members.set(id, session);
    group.localCount++;
    this.cluster?.localJoined(session);
    this.welcome(session);
    this.giveKeptScene(session);
    return null;
  }

  /**
   * The first member of a group made again from a kept scene that asked for it gets the scene
   * (KEPT_SCENE, docs/protocol.md §5.14) right after its WELCOME; a member that did not ask gets it
   * from the relay never, from a member that did through the scene's own repair (§15.3).
   * @param {Session} session
   */
  giveKeptScene(session) {
    const group = /** @type {Group} */ (session.group);
    if (!group.keptScene || !this.scenes || ((session.more ?? 0) & MoreFlag.KEPT_SCENE) === 0) return;
    group.keptScene = false;
    session.push(encode({ type: MsgType.KEPT_SCENE, records: this.scenes.recordsFor(group.key).slice(0, KEPT_SCENE_RECORDS_MAX) }).subarray(1));
  }

  /**
   * Sends a joined (or resumed) session its WELCOME: its id, the members
   * announced so far and, for a HELLO that asked for capabilities, those
   * granted; with RESUME a fresh secret, the only key to taking it over (§8.10),
   * and the RESUMED bit when this WELCOME continues a session taken over.
   * @param {Session} session
   * @param {boolean} [resumed]
   */
  welcome(session, resumed = false) {
    const group = /** @type {Group} */ (session.group);
    const resume = session.capabilities !== null && (session.capabilities & HelloFlag.RESUME) !== 0;
    session.resumeSecret = resume ? randomBytes(18).toString('base64url') : '';
    session.push(encode({
      type: MsgType.WELCOME,
      clientId: session.id,
      serverTime: Date.now(),
      members: [...group.members.values()]
        .filter((m) => m.ready || m === session)
        .map((m) => ({ id: m.id, name: m.name, reach: reachOf(m) })),
      // Only a HELLO that asked for a capability gets the byte that answers it (docs/protocol.md §5.2).
      ...(session.capabilities !== null ? { capabilities: session.capabilities | (resumed && resume ? WelcomeFlag.RESUMED : 0) } : {}),
      ...(resume ? { resume: session.resumeSecret } : {}),
      ...(session.more !== null ? { more: session.more } : {}),
    }).subarray(1));
  }

  /**
   * A member of another node joins the group here.
   * @param {Group} group
   * @param {RemoteMember} member
   */
  addRemote(group, member) {
    member.group = group;
    group.members.set(member.id, member);
    if (member.ready) this.broadcastJoined(member);
  }

  /**
   * Fans an UPDATE of a member on another node out to this node's members.
   * The entry here only tracks local delivery; every ACK and drop goes back
   * to the sender's node, which holds the real pending entry.
   * @param {RemoteMember} sender
   * @param {number} seq
   * @param {Uint8Array} body
   */
  deliverRemote(sender, seq, body) {
    const group = /** @type {Group} */ (sender.group);
    this.scenes?.observe(group.key, body); // a member on another node: its edits are this node's to keep too
    /** @type {PendingUpdate} */
    const entry = { sender, seq, dest: new Map(), acked: 0, dropped: 0, createdAt: performance.now(), mirror: true };
    for (const member of group.members.values()) {
      if (!member.local || !member.ready) continue;
      entry.dest.set(member, NaN);
      member.push(body, entry);
    }
  }

  /**
   * Tells every other member of the session's group that it joined.
   * @param {Member} session
   */
  broadcastJoined(session) {
    const group = /** @type {Group} */ (session.group);
    const joined = encode({ type: MsgType.MEMBER_JOINED, id: session.id, name: session.name }).subarray(1);
    /** @type {Uint8Array | null} the form with how it is reached, for members granted REACHABILITY (§5.3) */
    let withReach = null;
    for (const other of group.members.values()) {
      if (other === session) continue;
      if (other.local && ((other.capabilities ?? 0) & HelloFlag.REACHABILITY) !== 0) {
        withReach ??= encode({ type: MsgType.MEMBER_JOINED, id: session.id, name: session.name, reach: reachOf(session) }).subarray(1);
        other.push(withReach);
      } else {
        other.push(joined);
      }
    }
  }

  /**
   * relay-udp: the session's data channel is open. It becomes a fan-out
   * destination and the group hears that it joined.
   * @param {Member} session
   */
  announce(session) {
    if (session.ready || !session.group || session.closed) return;
    session.ready = true;
    this.broadcastJoined(session);
    if (session.local) this.cluster?.localReady(session);
  }

  /**
   * relay-udp: the session's data channel closed (or its DTLS failed). It is
   * no destination until a new channel opens: it leaves every ACK set, what
   * was queued for it is dropped, and the group hears that it left. It stays
   * joined (its WebSocket is open, its id is kept) and may announce again.
   * @param {Member} session
   */
  retract(session) {
    if (!session.ready || !session.group) return;
    session.ready = false;
    if (session.local) this.cluster?.localReady(session);
    if (session.dataOut) {
      for (const entry of session.dataOut.takeQueuedEntries()) this.dropDestination(entry, session);
    }
    const left = encode({ type: MsgType.MEMBER_LEFT, id: session.id }).subarray(1);
    for (const other of session.group.members.values()) {
      if (other === session) continue;
      for (const entry of other.pending.values()) {
        if (entry.dest.has(session)) this.dropDestination(entry, session);
      }
      other.push(left);
    }
  }

  /**
   * A member that resumed its session on a new connection (relay/resume.js):
   * the copies its old connection was handed but never answered are queued
   * again, ahead of what waits for it, in each sender's order. Its client
   * skips any it did get (its ACK was what got lost). Senders on this node
   * only: a remote sender's node keeps its pending entries.
   * @param {Session} holder
   * @returns {number} copies queued again
   */
  replayTo(holder) {
    const group = holder.group;
    if (!group) return 0;
    // First what it was handed while it lagged (nobody waited on those), then what is still awaited.
    /** @type {import('./session.js').OutItem[]} */
    const items = holder.replayCopies.splice(0).map((body) => ({ body, entry: null }));
    for (const sender of group.members.values()) {
      if (sender === holder || !sender.local) continue;
      for (const entry of sender.pending.values()) {
        const writtenAt = entry.dest.get(holder);
        if (writtenAt !== undefined && !Number.isNaN(writtenAt) && entry.body) items.push({ body: entry.body, entry });
      }
    }
    holder.out.prepend(items);
    this.ctx.stats.replayed += items.length;
    return items.length;
  }

  /**
   * relay-udp: the session's open channel is being replaced by a new one
   * (its path moved). It stays announced; what was queued on the old channel
   * will not be delivered, so it leaves those updates' ACK sets.
   * @param {Member} session
   */
  unqueue(session) {
    if (!session.dataOut) return;
    for (const entry of session.dataOut.takeQueuedEntries()) this.dropDestination(entry, session);
  }

  /**
   * Removes a session from its group: it leaves every ACK set at once.
   * @param {Member} session
   */
  leave(session) {
    const group = session.group;
    if (!group) return;
    session.group = null;
    group.members.delete(session.id);
    if (session.local) {
      group.localCount--;
      this.cluster?.localLeft(session, group);
    }
    // Updates queued for it will never be delivered.
    for (const entry of session.takeQueuedEntries()) this.dropDestination(entry, session);
    // Its own updates need no more ACKs.
    session.pending.clear();
    const left = encode({ type: MsgType.MEMBER_LEFT, id: session.id }).subarray(1);
    for (const other of group.members.values()) {
      for (const entry of other.pending.values()) {
        if (entry.dest.has(session)) this.dropDestination(entry, session);
      }
      // Nobody heard of a member that was never announced.
      if (session.ready) other.push(left);
    }
    session.ready = false;
    if (group.members.size === 0) {
      this.groups.delete(group.key);
      void this.scenes?.groupEmptied(group);
    }
  }

  /**
   * Fans an UPDATE out to the sender's neighbours.
   * @param {Session} sender
   * @param {import('./intake.js').UpdateFields} msg its `body` is read once: every copy is the same bytes
   * @param {number} [now] performance.now() of the frame it came in
   */
  update(sender, msg, now = performance.now()) {
    const body = msg.body;
    const group = /** @type {Group} */ (sender.group);
    this.scenes?.observe(group.key, body);
    const stats = this.ctx.stats;
    stats.updatesIn++;
    if (msg.seq > sender.newestSeqIn) sender.newestSeqIn = msg.seq;
    /** @type {PendingUpdate} */
    const entry = {
      sender, seq: msg.seq, dest: new Map(), acked: 0, dropped: 0, createdAt: now, body,
    };
    // The group's fan-out is bounded, each member to its equal share
    // (relay/budget.js): an update over its sender's share is shed like a
    // stale pose, never a reason to close anyone. Counted over every node's members.
    const copies = group.members.size - 1;
    if (copies > 0) {
      const share = sender.share;
      share.rate = forwardShare(this.ctx.options.maxGroupForwardsPerSecond, group.members.size);
      share.burst = SHARE_BURST_SECONDS * share.rate;
      if (!share.take(copies, now)) {
        this.budget.shedUpdates++;
        this.budget.shedForwards += copies;
        entry.dropped = copies;
        this.complete(entry);
        return;
      }
    }
    /** @type {Member[]} members that get it but whose ACK nobody waits for */
    const lagging = [];
    let remote = false;
    for (const member of group.members.values()) {
      if (member === sender || !member.ready) continue;
      if (!member.local) remote = true;
      if (member.lagging && sender.batched) {
        lagging.push(member);
        entry.dropped++;
      } else {
        // A remote member's clock starts now: its node forwards on arrival.
        entry.dest.set(member, member.rtsClockAt(entry.createdAt));
      }
    }
    if (entry.dest.size === 0) {
      // Alone in the group (or with lagging members only): nothing to wait for.
      this.complete(entry);
    } else {
      sender.pending.set(msg.seq, entry);
      for (const member of entry.dest.keys()) member.push(body, entry);
    }
    // The entry goes along so a slow consumer's queue can replace it by the sender's next pose.
    for (const member of lagging) member.push(body, entry);
    // Once per update, whatever the number of members elsewhere.
    if (remote) this.cluster?.publishUpdate(group, body);
  }

  /**
   * Handles a destination's ACK: RTS, forwarding (faithful) or aggregation.
   * An ACK for a sender on another node goes back to that node.
   * @param {Member} acker
   * @param {import('./intake.js').AckFields} msg
   * @param {number} [now] performance.now() of the frame it came in
   */
  ack(acker, msg, now = performance.now()) {
    const stats = this.ctx.stats;
    stats.acksIn++;
    if (acker.lagging) {
      // It reads again: from its next update on, it is waited for again.
      acker.lagging = false;
      if (acker.local) acker.replayCopies = [];
      stats.slowConsumersRecovered++;
    }
    const sender = /** @type {Group} */ (acker.group).members.get(msg.sender);
    if (sender && !sender.local) {
      this.cluster?.routeAck(sender, msg);
      return;
    }
    if (sender?.local && sender.membershipOnly) {
      // A p2p member's update reached this relayed member through LINK, which keeps no pending
      // entry: the p2p sender does its own ACK accounting end to end, so its ACK goes straight on.
      stats.acksForwarded++;
      sender.push(msg.body);
      return;
    }
    const entry = sender?.pending.get(msg.seq);
    const forwardedAt = entry?.dest.get(acker);
    if (!sender || !entry || forwardedAt === undefined || Number.isNaN(forwardedAt)) {
      stats.unexpectedAcks++;
      return;
    }
    stats.recordRts(now - forwardedAt);
    entry.dest.delete(acker);
    entry.acked++;
    if (!sender.batched) {
      stats.acksForwarded++;
      sender.push(msg.body);
    }
    if (entry.dest.size === 0) this.complete(entry);
  }

  /**
   * A destination will never ACK this update (it left, or its stale copy was replaced).
   * @param {PendingUpdate} entry
   * @param {Member} dest
   */
  dropDestination(entry, dest) {
    if (!entry.dest.delete(dest)) return;
    if (entry.mirror) {
      // The sender's node holds the real entry: it must hear of the drop.
      if (!entry.sender.local) this.cluster?.routeDrop(entry.sender, entry.seq, dest.id);
      return;
    }
    entry.dropped++;
    if (entry.dest.size === 0) this.complete(entry);
  }

  /**
   * Every destination has answered: forget the entry, and in mode `relay`
   * tell the sender with one ACKED_ALL (never before the last ACK arrived).
   * @param {PendingUpdate} entry
   * @param {boolean} [notify] false when giving up: the sender times out on its own
   */
  complete(entry, notify = true) {
    const sender = entry.sender;
    if (sender.pending.get(entry.seq) === entry) sender.pending.delete(entry.seq);
    if (notify && sender.batched && !sender.closed && sender.group) {
      this.ctx.stats.ackedAllSent++;
      sender.push(ackedAllBody(sender.id, entry.seq, Math.min(entry.acked, 0xffff), Math.min(entry.dropped, 0xffff)));
    }
  }

  /**
   * Gives up on ACKs older than the ACK timeout so pending state cannot leak.
   * @param {number} ackTimeoutMs
   */
  sweep(ackTimeoutMs) {
    const cutoff = performance.now() - ackTimeoutMs;
    for (const group of this.groups.values()) {
      for (const member of group.members.values()) {
        for (const entry of member.pending.values()) {
          if (entry.createdAt > cutoff) continue;
          this.ctx.stats.ackTimeouts += entry.dest.size;
          entry.dropped += entry.dest.size;
          entry.dest.clear();
          this.complete(entry, false);
        }
      }
    }
  }

  /**
   * What the relay still holds for its members: updates awaiting ACKs
   * (`pending`) and messages waiting in outgoing queues (`queued`). Both
   * return to 0 when everyone has left: a leak shows here first.
   * @returns {{ pending: number, queued: number, lagging: number }}
   */
  backlog() {
    let pending = 0;
    let queued = 0;
    let lagging = 0;
    for (const g of this.groups.values()) {
      for (const m of g.members.values()) {
        if (!m.local) continue;
        pending += m.pending.size;
        queued += m.out.queue.length + (m.dataOut?.queue.length ?? 0);
        if (m.lagging) lagging++;
      }
    }
    return { pending, queued, lagging };
  }

  /** Number of joined clients connected to this node. */
  get memberCount() {
    let n = 0;
    for (const g of this.groups.values()) n += g.localCount;
    return n;
  }

  /** Number of groups with members on this node. */
  get localGroupCount() {
    let n = 0;
    for (const g of this.groups.values()) if (g.localCount > 0) n++;
    return n;
  }
}
