/**
 * Many relay processes as one relay: working groups span nodes through a
 * broker (relay/broker.js, NATS). Every node keeps the cluster-wide
 * membership of every group (members on other nodes are {@link RemoteMember}s
 * in the same GroupRegistry), so joins, WELCOME lists, id checks, tokens and
 * MEMBER_JOINED/LEFT work as on one process. The data path is a subject per
 * group: an UPDATE is published once to `carlab.u.<group>`, and every node
 * with members of that group fans it out to its own; each ACK (and each drop)
 * goes back to the sender's node, whose pending entry counts it exactly as a
 * local one. Why a subject per group and not group affinity: docs/scale-out.md.
 *
 * @module relay/cluster
 */

import { createHash } from 'node:crypto';

import { CloseCode, MsgType, ProtocolError, decode, encode, frameOfBody } from '../core/protocol.js';
import { NodeDirectory } from './cluster-nodes.js';
import {
  EnvelopeBatcher, EnvelopeKind, MEMBERSHIP_SUBJECT, ackPayload, dropPayload, encodeEnvelope, readAckPayload,
  groupSubject, jsonBytes, linkPayload, nodeSubject, parseJsonBytes, readDropPayload, readLinkPayload, unpackEnvelopes,
} from './cluster-wire.js';

export { HEARTBEAT_MS, NODE_TIMEOUT_MS, NodeDirectory } from './cluster-nodes.js';

/** How long a node waits for another to say whether it still holds an id (a dead one never answers). */
export const CLAIM_TIMEOUT_MS = 300;

/**
 * The hash a group's access token travels as between nodes (never the token).
 *
 * @param {string} token
 * @returns {string} '' for an open group
 */
export function tokenHash(token) {
  return token === '' ? '' : createHash('sha256').update(token, 'utf8').digest('hex');
}

/**
 * A member of a group connected to another node: what the group registry
 * needs of a Session, with nothing to write to (its node delivers to it).
 */
export class RemoteMember {
  /**
   * @param {string} node the node it is connected to
   * @param {{ id: number, name: string, ready: boolean, udp: boolean, batched: boolean, peer?: boolean }} info
   *   peer: a p2p member (membership only), reached peer to peer
   */
  constructor(node, info) {
    /** Connected to another node, which writes to it (relay/member.js). @type {false} */
    this.local = false;
    /** @type {string} */
    this.node = node;
    this.id = info.id;
    this.name = info.name;
    this.ready = info.ready;
    this.udp = info.udp;
    this.batched = info.batched;
    this.membershipOnly = info.peer === true;
    this.lagging = false;
    this.closed = false;
    /** @type {import('./groups.js').Group | null} */
    this.group = null;
    /** Its updates are pending on its own node, never here. @type {Map<number, import('./session.js').PendingUpdate>} */
    this.pending = new Map();
    /** Never a data channel here: its node has it. @type {import('./session.js').Outbox | null} */
    this.dataOut = null;
  }

  /** Its own node tells it what it needs to know. @param {Uint8Array} _body @param {unknown} [_entry] */
  push(_body, _entry) {}

  /** @returns {import('./session.js').PendingUpdate[]} */
  takeQueuedEntries() { return []; }

  /** Its node forwards on arrival: the clock starts at fan-out. @param {number} createdAt */
  rtsClockAt(createdAt) { return createdAt; }
}

/**
 * @typedef {object} ClusterStats
 * @property {number} updatesPublished UPDATEs this node sent to other nodes (one per update)
 * @property {number} updatesReceived UPDATEs from other nodes fanned out here
 * @property {number} acksRouted ACKs sent back to a sender's node
 * @property {number} acksReceived ACKs from other nodes for senders here
 * @property {number} dropsRouted
 * @property {number} linksRouted LINK envelopes sent to other nodes (a p2p member's LINK naming members there)
 * @property {number} linksReceived LINK envelopes from other nodes handed to members here
 * @property {number} unknownSender UPDATEs for a sender this node does not know (dropped)
 * @property {number} idConflicts a remote member claimed an id a local member holds
 * @property {number} nodesLost nodes declared gone (timeout) since start
 * @property {number} membersLost remote members removed with their node
 * @property {number} claimsTakenOver ids taken over from a member whose node was gone (rejoins after a crash)
 * @property {number} reannounced times this node found itself silent for the node timeout (its process stalled)
 *   and announced its members to every node again
 */

/**
 * The link between one relay's group registry and the rest of the cluster.
 */
export class ClusterLink {
  /**
   * @param {import('./broker.js').Broker} broker
   * @param {import('./groups.js').GroupRegistry} groups
   * @param {NodeDirectory} [nodes] the process's node directory, shared with signaling
   */
  constructor(broker, groups, nodes = new NodeDirectory(broker)) {
    this.broker = broker;
    this.groups = groups;
    this.nodeId = broker.nodeId;
    // Before anything batched goes out (once per subject per event-loop turn, not per update):
    // after a stall, the others know this node's members again before its backlog reaches them.
    this.batcher = new EnvelopeBatcher((subject, data) => {
      this.directory.catchUp();
      broker.publish(subject, data);
    });
    this.directory = nodes;
    /** Update subscriptions of groups with local members. @type {Map<string, import('./broker.js').BrokerSubscription>} */
    this.groupSubs = new Map();
    /** @type {import('./broker.js').BrokerSubscription[]} */
    this.subs = [];
    /** Update subjects of groups with local members, by group key. @type {Map<string, string>} */
    this.subjects = new Map();
    /** Open askHolder questions by nonce. @type {Map<string, (connected: boolean) => void>} */
    this.asks = new Map();
    this.nonce = 0;
    /** Counters of the measurement window (resetWindow). @type {ClusterStats} */
    this.stats = ClusterLink.zeroStats();
  }

  /** @returns {ClusterStats} */
  static zeroStats() {
    return {
      updatesPublished: 0, updatesReceived: 0, acksRouted: 0, acksReceived: 0, dropsRouted: 0, linksRouted: 0, linksReceived: 0,
      unknownSender: 0, idConflicts: 0, nodesLost: 0, membersLost: 0, claimsTakenOver: 0, reannounced: 0,
    };
  }

  /** Starts a new measurement window (the relay's resetWindow). */
  resetWindow() {
    this.stats = ClusterLink.zeroStats();
    this.batcher.messages = 0;
    this.batcher.envelopes = 0;
  }

  /** Other live nodes, by id -> when last heard. */
  get nodes() { return this.directory.nodes; }

  /** Subscribes and starts the heartbeat. */
  start() {
    this.subs.push(this.broker.subscribe(MEMBERSHIP_SUBJECT, (data) => this.onMembership(parseJsonBytes(data))));
    this.subs.push(this.broker.subscribe(nodeSubject(this.nodeId), (data) => this.onData(data)));
    this.directory.listen({
      onNodeNew: (node) => this.sendState(node), onNodeGone: (node) => this.dropNode(node), onSilenced: () => this.announceState(),
    });
    this.directory.start();
  }

  /** @returns {{ ready: boolean, reason: string }} see NodeDirectory.readiness */
  readiness() {
    return this.directory.readiness();
  }

  // ------------------------------------------------------------ local events

  /**
   * A local session joined: the cluster hears of it, and this node listens
   * for its group's updates.
   *
   * @param {import('./session.js').Session} session
   */
  localJoined(session) {
    const group = /** @type {import('./groups.js').Group} */ (session.group);
    // p2p members too: relayed members of their group on other nodes send them UPDATEs.
    if (!this.groupSubs.has(group.key)) {
      // Subscribed before the join is announced: a node that learns of the
      // member (same connection, in order) can only publish after our SUB.
      const key = group.key;
      this.groupSubs.set(key, this.broker.subscribe(this.subjectOf(key), (data) => this.onData(data)));
    }
    this.broker.publish(MEMBERSHIP_SUBJECT, jsonBytes({ t: 'joined', node: this.nodeId, ...this.memberRecord(session) }));
  }

  /**
   * A local relay-udp session's data channel opened (ready) or closed.
   *
   * @param {import('./session.js').Session} session
   */
  localReady(session) {
    const group = session.group;
    if (!group) return;
    this.broker.publish(MEMBERSHIP_SUBJECT, jsonBytes({ t: 'ready', node: this.nodeId, group: group.key, id: session.id, ready: session.ready }));
  }

  /**
   * A local session left its group.
   *
   * @param {import('./session.js').Session} session
   * @param {import('./groups.js').Group} group
   */
  localLeft(session, group) {
    this.broker.publish(MEMBERSHIP_SUBJECT, jsonBytes({ t: 'left', node: this.nodeId, group: group.key, id: session.id }));
    if (group.localCount === 0) {
      this.groupSubs.get(group.key)?.unsubscribe();
      this.groupSubs.delete(group.key);
      this.subjects.delete(group.key);
    }
  }

  /**
   * Sends an UPDATE to every other node with members of the group (once).
   *
   * @param {import('./groups.js').Group} group
   * @param {Uint8Array} body
   */
  publishUpdate(group, body) {
    this.stats.updatesPublished++;
    this.batcher.add(this.subjectOf(group.key), encodeEnvelope(EnvelopeKind.UPDATE, group.key, body));
  }

  /**
   * A group's update subject, computed once per group while it has local
   * members (publishUpdate is on the per-update path; base64 is not free).
   *
   * @param {string} key
   * @returns {string}
   */
  subjectOf(key) {
    let subject = this.subjects.get(key);
    if (subject === undefined) this.subjects.set(key, (subject = groupSubject(key)));
    return subject;
  }

  /**
   * A local member ACKed an update of a member on another node.
   *
   * @param {RemoteMember} sender
   * @param {{ seq: number, acker: number }} ack
   */
  routeAck(sender, ack) {
    this.stats.acksRouted++;
    const group = /** @type {import('./groups.js').Group} */ (sender.group);
    this.batcher.add(nodeSubject(sender.node), encodeEnvelope(EnvelopeKind.ACK, group.key, ackPayload(sender.id, ack.seq, ack.acker)));
  }

  /**
   * A p2p member's LINK'd UPDATE or ACK for members of other nodes: one envelope per node, naming
   * its members there (docs/protocol.md §14.1).
   *
   * @param {import('./groups.js').Group} group
   * @param {RemoteMember[]} dests
   * @param {Uint8Array} body the carried message's body
   */
  routeLink(group, dests, body) {
    /** @type {Map<string, number[]>} */
    const byNode = new Map();
    for (const d of dests) byNode.set(d.node, [...(byNode.get(d.node) ?? []), d.id]);
    for (const [node, ids] of byNode) {
      this.stats.linksRouted++;
      this.batcher.add(nodeSubject(node), encodeEnvelope(EnvelopeKind.LINK, group.key, linkPayload(ids, body)));
    }
  }

  /**
   * A local destination will never ACK a remote sender's update.
   *
   * @param {RemoteMember} sender
   * @param {number} seq
   * @param {number} destId
   */
  routeDrop(sender, seq, destId) {
    this.stats.dropsRouted++;
    const group = sender.group;
    if (!group) return;
    this.batcher.add(nodeSubject(sender.node), encodeEnvelope(EnvelopeKind.DROP, group.key, dropPayload(sender.id, seq, destId)));
  }

  /**
   * A local session asks for an id a member of another node holds (a client
   * rejoining after its relay died, before the death is noticed). The
   * holder's node is asked whether that member is still connected: if it is,
   * the claim is refused with 4007 as on one process; if its node says no or
   * does not answer within CLAIM_TIMEOUT_MS (dead), the stale member leaves
   * here and the join goes on.
   *
   * @param {import('./session.js').Session} session
   * @param {RemoteMember} holder
   * @param {() => [number, string] | null} retry joins again once the id is free
   */
  claimFromRemote(session, holder, retry) {
    session.claiming = true;
    this.askHolder(holder).then((connected) => {
      session.claiming = false;
      if (session.closed) return;
      if (connected) {
        this.groups.ctx.closeSession(session, CloseCode.ID_TAKEN, `client id ${holder.id} is taken in group ${holder.group?.key.slice(2) ?? ''}`);
        return;
      }
      this.stats.claimsTakenOver++;
      if (holder.group) this.groups.leave(holder);
      const problem = retry();
      if (problem) this.groups.ctx.closeSession(session, problem[0], problem[1]);
    });
  }

  /**
   * Whether a remote member is still connected to its node: false at once
   * when that node is not among the live ones, or when it does not answer.
   *
   * @param {RemoteMember} member
   * @returns {Promise<boolean>}
   */
  askHolder(member) {
    if (!this.directory.nodes.has(member.node) || !member.group) return Promise.resolve(false);
    const nonce = `${this.nodeId}-${++this.nonce}`;
    return new Promise((resolve) => {
      const timer = setTimeout(() => { this.asks.delete(nonce); resolve(false); }, CLAIM_TIMEOUT_MS);
      this.asks.set(nonce, (connected) => { clearTimeout(timer); this.asks.delete(nonce); resolve(connected); });
      const ask = jsonBytes({ t: 'holds?', node: this.nodeId, group: member.group?.key, id: member.id, nonce });
      this.batcher.add(nodeSubject(member.node), encodeEnvelope(EnvelopeKind.MEMBERSHIP, '', ask));
    });
  }

  /**
   * Answers another node's askHolder.
   *
   * @param {Record<string, unknown>} m
   */
  answerHolds(m) {
    if (typeof m.node !== 'string' || typeof m.group !== 'string' || typeof m.id !== 'number') return;
    const member = this.groups.groups.get(m.group)?.members.get(m.id);
    const connected = Boolean(member?.local && !member.closed);
    const answer = jsonBytes({ t: 'holds', node: this.nodeId, nonce: m.nonce, connected });
    this.batcher.add(nodeSubject(m.node), encodeEnvelope(EnvelopeKind.MEMBERSHIP, '', answer));
  }

  // --------------------------------------------------------- remote events

  /** @param {Uint8Array} data a packed list of envelopes */
  onData(data) {
    for (const envelope of unpackEnvelopes(data)) {
      switch (envelope.kind) {
        case EnvelopeKind.UPDATE: this.onRemoteUpdate(envelope.groupKey, envelope.payload); break;
        case EnvelopeKind.ACK: this.onRemoteAck(envelope.groupKey, envelope.payload); break;
        case EnvelopeKind.DROP: this.onRemoteDrop(envelope.groupKey, envelope.payload); break;
        case EnvelopeKind.MEMBERSHIP: this.onMembership(parseJsonBytes(envelope.payload)); break;
        case EnvelopeKind.LINK: this.onRemoteLink(envelope.groupKey, envelope.payload); break;
        default: break; // a newer node's kind: ignore
      }
    }
  }

  /**
   * An UPDATE of a member on another node: fan it out to the members here.
   *
   * @param {string} groupKey
   * @param {Uint8Array} body
   */
  onRemoteUpdate(groupKey, body) {
    const msg = decode(frameOfBody(body));
    if (msg instanceof ProtocolError || msg.type !== MsgType.UPDATE) return;
    const sender = this.groups.groups.get(groupKey)?.members.get(msg.sender);
    if (!sender || sender.local) {
      this.stats.unknownSender++;
      return;
    }
    this.stats.updatesReceived++;
    this.groups.deliverRemote(sender, msg.seq, body);
  }

  /** @param {string} groupKey @param {Uint8Array} payload */
  onRemoteAck(groupKey, payload) {
    const ids = readAckPayload(payload);
    const acker = ids && this.groups.groups.get(groupKey)?.members.get(ids.ackerId);
    if (!ids || !acker || acker.local) return;
    this.stats.acksReceived++;
    /** @type {import('../core/protocol.js').AckMsg} */
    const ack = { type: MsgType.ACK, sender: ids.senderId, seq: ids.seq, acker: ids.ackerId };
    // The body is only needed by a relay-faithful sender (every ACK forwarded): made on demand.
    const withBody = /** @type {import('../core/protocol.js').AckMsg & { body: Uint8Array }} */ (
      Object.defineProperty(ack, 'body', { get: () => encode(ack).subarray(1) }));
    this.groups.ack(acker, withBody);
  }

  /**
   * A p2p member of another node LINK'd an UPDATE or ACK to members here: each gets the body
   * itself, and an UPDATE buys it the credit for its ACK, as on one node (relay/link.js).
   *
   * @param {string} groupKey
   * @param {Uint8Array} payload
   */
  onRemoteLink(groupKey, payload) {
    const link = readLinkPayload(payload);
    const group = this.groups.groups.get(groupKey);
    if (!link || !group) return;
    this.stats.linksReceived++;
    const isUpdate = link.body[0] === MsgType.UPDATE;
    for (const id of link.ids) {
      const d = group.members.get(id);
      if (!d?.local || d.closed || !d.ready) continue;
      d.push(link.body);
      if (isUpdate) d.ackCredit++;
    }
  }

  /** @param {string} groupKey @param {Uint8Array} payload */
  onRemoteDrop(groupKey, payload) {
    const drop = readDropPayload(payload);
    const group = this.groups.groups.get(groupKey);
    if (!drop || !group) return;
    const sender = group.members.get(drop.senderId);
    const dest = group.members.get(drop.destId);
    const entry = sender?.local ? sender.pending.get(drop.seq) : undefined;
    if (entry && dest) this.groups.dropDestination(entry, dest);
  }

  /** @param {Record<string, unknown> | null} m */
  onMembership(m) {
    if (!m || typeof m.node !== 'string' || m.node === this.nodeId) return;
    if (m.t !== 'bye') this.directory.heard(m.node);
    switch (m.t) {
      case 'joined': this.remoteJoined(m.node, m); break;
      case 'ready': this.remoteReady(m); break;
      case 'left': this.remoteLeft(m); break;
      case 'state':
        if (Array.isArray(m.members)) for (const record of m.members) this.remoteJoined(m.node, record);
        break;
      case 'bye': this.directory.gone(m.node); break;
      case 'holds?': this.answerHolds(m); break;
      case 'holds': if (typeof m.nonce === 'string') this.asks.get(m.nonce)?.(m.connected === true); break;
      default: break;
    }
  }

  /**
   * @param {string} node
   * @param {Record<string, unknown>} m
   */
  remoteJoined(node, m) {
    if (typeof m.group !== 'string' || typeof m.id !== 'number') return;
    const group = this.groups.groupFor(m.group, typeof m.tokenHash === 'string' ? m.tokenHash : '');
    const existing = group.members.get(m.id);
    if (existing?.local) {
      this.stats.idConflicts++;
      return;
    }
    if (existing && !existing.local && existing.node === node) {
      // Heard twice (its join and a state sync): keep it, take the newer flags.
      if (m.ready === true) this.groups.announce(existing);
      return;
    }
    if (existing) this.groups.leave(existing); // a stale copy from a node that restarted: replace it
    const member = new RemoteMember(node, {
      id: m.id, name: String(m.name ?? ''), ready: m.ready === true, udp: m.udp === true, batched: m.batched === true, peer: m.peer === true,
    });
    this.groups.addRemote(group, member);
  }

  /** @param {Record<string, unknown>} m */
  remoteReady(m) {
    const member = typeof m.group === 'string' && typeof m.id === 'number' ? this.groups.groups.get(m.group)?.members.get(m.id) : undefined;
    if (!member || member.local) return;
    if (m.ready === true) this.groups.announce(member);
    else this.groups.retract(member);
  }

  /** @param {Record<string, unknown>} m */
  remoteLeft(m) {
    const member = typeof m.group === 'string' && typeof m.id === 'number' ? this.groups.groups.get(m.group)?.members.get(m.id) : undefined;
    if (member && !member.local && member.node === m.node) this.groups.leave(member);
  }

  // ------------------------------------------------------------- liveness

  /**
   * A node new to us (new, restarted, back after a cut) gets this node's
   * whole membership, addressed to it alone.
   *
   * @param {string} node
   */
  sendState(node) {
    this.batcher.add(nodeSubject(node), encodeEnvelope(EnvelopeKind.MEMBERSHIP, '', this.stateMessage()));
  }

  /**
   * This node was silent long enough for the others to drop its members (its
   * process stalled): every node gets its whole membership again, published
   * now, so that it arrives before the updates of those members this node
   * forwards next (the others would drop them as from unknown senders).
   */
  announceState() {
    this.stats.reannounced++;
    this.broker.publish(MEMBERSHIP_SUBJECT, this.stateMessage());
  }

  /** This node's members, as one `state` membership message. */
  stateMessage() {
    const members = [];
    for (const group of this.groups.groups.values()) {
      for (const member of group.members.values()) {
        if (member.local) members.push(this.memberRecord(member));
      }
    }
    return jsonBytes({ t: 'state', node: this.nodeId, members });
  }

  /**
   * A node is gone: its members leave every group here.
   *
   * @param {string} node
   */
  dropNode(node) {
    this.stats.nodesLost++;
    for (const group of [...this.groups.groups.values()]) {
      for (const member of [...group.members.values()]) {
        if (!member.local && member.node === node) {
          this.stats.membersLost++;
          this.groups.leave(member);
        }
      }
    }
  }

  /**
   * @param {import('./session.js').Session} session
   * @returns {Record<string, unknown>}
   */
  memberRecord(session) {
    const group = /** @type {import('./groups.js').Group} */ (session.group);
    return {
      group: group.key, id: session.id, name: session.name, ready: session.ready, udp: session.udp,
      batched: session.batched, peer: session.membershipOnly, tokenHash: group.tokenHash,
    };
  }

  /** What /metrics shows of the cluster. */
  snapshot() {
    const status = this.broker.status();
    return {
      nodeId: this.nodeId,
      nodes: this.nodes.size + 1,
      nats: {
        connected: status.connected, url: status.url, version: status.serverVersion, disconnects: status.disconnects, outageMs: status.outageMs,
        // a broker that fell silent on a live connection (waited out), and what a silence past the bounds cost
        stalls: status.stalls ?? 0, stalledMs: Math.round(this.directory.brokerStalledMs),
        droppedWhileSilent: status.droppedWhileSilent ?? 0, unconfirmedAtDisconnect: status.unconfirmedAtDisconnect ?? 0,
      },
      brokerMessagesOut: this.batcher.messages,
      brokerEnvelopesOut: this.batcher.envelopes,
      ...this.stats,
      crossNodeUpdates: this.stats.updatesPublished,
    };
  }

  /** Says goodbye (the others drop our members at once) and stops. */
  async close() {
    this.directory.stop();
    this.batcher.flush();
    this.broker.publish(MEMBERSHIP_SUBJECT, jsonBytes({ t: 'bye', node: this.nodeId }));
    for (const sub of [...this.subs, ...this.groupSubs.values()]) sub.unsubscribe();
    this.groupSubs.clear();
  }
}
