// LINK (docs/protocol.md §14.1): the relay carries one p2p link's UPDATEs and
// ACKs when the two phones cannot reach each other directly (UDP blocked, no
// TURN, ICE failed, or the other member is relayed), to this node's members
// and, through the cluster (relay/cluster.js routeLink), to other nodes'. Only membership-only (p2p) sessions send it; the carried
// message is checked like one sent to the relay directly (the sender's own id
// in UPDATE `sender` / ACK `acker`) and forwarded, as a plain UPDATE or ACK
// with its bytes unchanged, to each named member of the sender's group. No pending entry, no RTS, no ACKED_ALL:
// the p2p clients do their own ACK accounting end to end, exactly as on their
// data channels. Budgets (relay/budget.js): a LINK'd UPDATE spends the UPDATE
// bucket once and its copies the sender's fan-out share; every copy handed to
// a member buys that member one ACK credit, so the ACKs it owes come back free.

import { CloseCode, MsgType } from '../core/protocol.js';
import { SHARE_BURST_SECONDS, forwardShare } from './budget.js';

/** @typedef {import('./session.js').Session} Session */

/**
 * What the relay carried for p2p links since it started (relay metrics `links`).
 * @typedef {object} LinkCounters
 * @property {number} in LINK messages received
 * @property {number} updates of them carrying an UPDATE
 * @property {number} forwarded copies handed to members
 * @property {number} unknownPeer copies not made: the named member is not here (left, another node, itself)
 * @property {number} shed LINK'd UPDATEs over the sender's fan-out share, not forwarded
 * @property {number} acksToRelayed LINK'd ACKs for updates of relayed members, handled as plain ACKs
 * @property {number} forwardedRemote copies for members of other cluster nodes, handed to their node
 */

/** @type {WeakMap<object, LinkCounters>} */
const countersByRegistry = new WeakMap();

/**
 * The LINK counters of one relay (keyed by its group registry).
 * @param {object} registry
 * @returns {LinkCounters}
 */
export function linkCounters(registry) {
  let c = countersByRegistry.get(registry);
  if (!c) {
    c = { in: 0, updates: 0, forwarded: 0, unknownPeer: 0, shed: 0, acksToRelayed: 0, forwardedRemote: 0 };
    countersByRegistry.set(registry, c);
  }
  return c;
}

/**
 * One LINK from a joined session.
 * @param {{ ctx: import('./index.js').RelayContext, groups: Pick<import('./groups.js').GroupRegistry, 'budget' | 'ack' | 'cluster'> }} deps
 * @param {Session} s
 * @param {import('../core/protocol.js').LinkMsg} m as decode() returns it (the carried message has its `body`)
 * @returns {[number, string] | null} a close code and reason if the client misbehaved
 */
export function onLink(deps, s, m) {
  if (!s.membershipOnly) return [CloseCode.PROTOCOL_VIOLATION, 'LINK is only for membership-only (p2p) sessions'];
  const inner = /** @type {(import('../core/protocol.js').UpdateMsg | import('../core/protocol.js').AckMsg) & { body: Uint8Array }} */ (m.message);
  if (inner.type === MsgType.UPDATE && inner.sender !== s.id) return [CloseCode.SPOOFED_SENDER, `LINK UPDATE from ${s.id} claims sender ${inner.sender}`];
  if (inner.type === MsgType.ACK && inner.acker !== s.id) return [CloseCode.SPOOFED_SENDER, `LINK ACK from ${s.id} claims acker ${inner.acker}`];
  const group = /** @type {import('./groups.js').Group} */ (s.group);
  const c = linkCounters(deps.groups);
  c.in++;
  if (inner.type === MsgType.ACK && ackForRelayedSender(deps, s, group, m.peers, inner)) return null;
  /** @type {Session[]} */
  const dests = [];
  /** @type {import('./cluster.js').RemoteMember[]} members of other cluster nodes: their node hands it on */
  const remote = [];
  for (const id of new Set(m.peers)) {
    const d = group.members.get(id);
    if (d && !d.local && d.ready && deps.groups.cluster) { remote.push(d); continue; }
    if (!d?.local || d === s || d.closed || !d.ready) { c.unknownPeer++; continue; }
    dests.push(d);
  }
  if (dests.length + remote.length === 0) return null;
  if (inner.type === MsgType.UPDATE) {
    c.updates++;
    // The same fan-out share as a relayed UPDATE (GroupRegistry.update): shed, never closed.
    const share = s.share;
    share.rate = forwardShare(deps.ctx.options.maxGroupForwardsPerSecond, group.members.size);
    share.burst = SHARE_BURST_SECONDS * share.rate;
    if (!share.take(dests.length + remote.length)) {
      c.shed++;
      deps.groups.budget.shedUpdates++;
      deps.groups.budget.shedForwards += dests.length + remote.length;
      return null;
    }
  }
  if (remote.length > 0) {
    deps.groups.cluster?.routeLink(group, remote, inner.body);
    c.forwardedRemote += remote.length;
  }
  // The receiver gets the carried message itself: a membership-only session
  // gets no other UPDATE or ACK, and its sender/acker was checked above.
  for (const d of dests) {
    d.push(inner.body);
    // The ACK this copy obliges d to send is paid for (relay/budget.js).
    if (inner.type === MsgType.UPDATE) d.ackCredit++;
  }
  c.forwarded += dests.length;
  return null;
}

/**
 * A p2p member's ACK for an update of a relayed member (relay, relay-faithful, relay-udp, or one
 * on another node): the relay delivered that update, so the ACK goes through the relay's own ACK
 * handling (RTS, aggregation into ACKED_ALL, forwarding, or back to the sender's node) as if the
 * p2p member had sent it plainly.
 * @param {{ groups: Pick<import('./groups.js').GroupRegistry, 'ack'> }} deps
 * @param {Session} s
 * @param {import('./groups.js').Group} group
 * @param {number[]} peers
 * @param {import('../core/protocol.js').AckMsg & { body: Uint8Array }} ack
 * @returns {boolean} it was such an ACK
 */
function ackForRelayedSender(deps, s, group, peers, ack) {
  const sender = group.members.get(ack.sender);
  if (!sender || !peers.includes(ack.sender)) return false;
  if (sender?.local && sender.membershipOnly) return false;
  linkCounters(deps.groups).acksToRelayed++;
  deps.groups.ack(s, ack);
  return true;
}
